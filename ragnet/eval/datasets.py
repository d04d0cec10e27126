"""Loaders for the QA benchmarks in ``../shared/data`` and users' files of the same shape.

Records follow the common schema of that folder's README: ``id, question, answers,
gold_titles, gold_sentences, type, level, context`` (``context`` is a list of
``{title, text, ...}`` paragraphs, or null for pooled-corpus sets with a ``corpus.jsonl``).

Example:
    >>> # qs = load_questions("../shared/data/hotpotqa_dev_distractor/questions.jsonl", split="dev")
    >>> # docs = pooled_documents(qs)   # every question's paragraphs, de-duplicated by title
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ragnet.corpus.loader import parse_jsonl_record
from ragnet.corpus.types import Document
from ragnet.errors import InputError


@dataclass(frozen=True)
class QARecord:
    """One benchmark question with its gold labels."""

    id: str
    question: str
    answers: list[str]
    gold_titles: list[str] = field(default_factory=list)
    gold_sentences: list[list[Any]] | None = None
    gold_passage_ids: list[str] | None = None
    type: str | None = None
    level: Any = None
    context: list[dict[str, Any]] | None = None


def default_data_dir() -> Path:
    """``$RAGNET_DATA`` or ``../shared/data`` (relative to the working directory)."""
    return Path(os.environ.get("RAGNET_DATA", Path.cwd().parent / "shared" / "data"))


def resolve_dataset(name_or_path: str | Path, data_dir: str | Path | None = None) -> Path:
    """Path of a ``questions.jsonl``: given directly, as a folder, or as a set name in the data dir."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    if p.is_dir() and (p / "questions.jsonl").is_file():
        return p / "questions.jsonl"
    root = Path(data_dir) if data_dir else default_data_dir()
    matches = sorted(d for d in root.glob(f"{name_or_path}*") if (d / "questions.jsonl").is_file()) if root.is_dir() else []
    if len(matches) == 1:
        return matches[0] / "questions.jsonl"
    known = ", ".join(sorted(d.name for d in root.iterdir() if (d / "questions.jsonl").is_file())) if root.is_dir() else "none"
    raise InputError(
        f"no dataset {str(name_or_path)!r} (as a file, folder, or set name under {root}); known sets: {known}",
        argument="data",
    )


def read_split(dataset_path: Path, split: str) -> set[str]:
    """Question ids of ``split`` (``dev`` or ``acceptance``) from ``<data>/splits/<set>.<split>.txt``."""
    set_name = dataset_path.parent.name
    split_file = dataset_path.parent.parent / "splits" / f"{set_name}.{split}.txt"
    if not split_file.is_file():
        raise InputError(f"no split file {split_file}", argument="split")
    return {line.strip() for line in split_file.read_text().splitlines() if line.strip()}


def load_questions(
    path: str | Path,
    *,
    split: str | None = None,
    ids: Iterable[str] | None = None,
    limit: int | None = None,
    data_dir: str | Path | None = None,
) -> list[QARecord]:
    """Load benchmark questions, optionally restricted to a split, an id list and a count."""
    qpath = resolve_dataset(path, data_dir)
    keep = read_split(qpath, split) if split else None
    wanted = set(ids) if ids is not None else None
    out: list[QARecord] = []
    with open(qpath, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            rec = parse_jsonl_record(line, qpath, lineno)
            for key in ("id", "question", "answers"):
                if key not in rec:
                    raise InputError(f"record has no {key!r} field", path=qpath, line=lineno)
            if keep is not None and rec["id"] not in keep:
                continue
            if wanted is not None and rec["id"] not in wanted:
                continue
            out.append(
                QARecord(
                    id=str(rec["id"]),
                    question=rec["question"],
                    answers=list(rec["answers"]),
                    gold_titles=list(rec.get("gold_titles") or []),
                    gold_sentences=rec.get("gold_sentences"),
                    gold_passage_ids=rec.get("gold_passage_ids"),
                    type=rec.get("type"),
                    level=rec.get("level"),
                    context=rec.get("context"),
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


def pooled_documents(records: Iterable[QARecord]) -> list[Document]:
    """Merge every record's context paragraphs into one corpus, de-duplicated by title.

    The document id is the paragraph title (unique after de-duplication), so gold titles map
    directly onto chunk ``doc_id``s.
    """
    seen: dict[str, Document] = {}
    for rec in records:
        for para in rec.context or []:
            title = para["title"]
            if title not in seen:
                text = para.get("text") or "".join(para.get("sentences") or [])
                seen[title] = Document(id=title, title=title, text=text, metadata={}, source=rec.id)
    return list(seen.values())
