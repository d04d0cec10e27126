"""Loaders for the QA benchmarks in ``../shared/data`` and users' files of the same shape.

Records follow the common schema of that folder's README: ``id, question, answers,
gold_titles, gold_sentences, type, level, context`` (``context`` is a list of
``{title, text, ...}`` paragraphs, or null for pooled-corpus sets with a ``corpus.jsonl``).

:func:`load_eval_set` gives ``ragnet eval`` everything it needs in one call: the selected
questions (split, ``--ids``, ``-n``) and the documents retrieval searches, in one of two
corpus modes:

``pooled`` (default)
    Distractor sets (HotpotQA, 2Wiki, MuSiQue): the context paragraphs of *every* question of
    the file merged into one corpus, so retrieval faces real distractors. Sets with a
    ``corpus.jsonl`` (2Wiki pooled, NQ-open, SQuAD) use that corpus.
``per-question``
    Only the question's own context paragraphs (the datasets' original distractor setting).

Example:
    >>> import json, pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "toy"
    >>> folder.mkdir()
    >>> rows = [{"id": f"q{i}", "question": f"Capital of {c}?", "answers": [city], "gold_titles": [city],
    ...          "context": [{"title": city, "text": f"{city} is the capital of {c}."},
    ...                      {"title": "Oslo", "text": "Oslo is the capital of Norway."}]}
    ...         for i, (c, city) in enumerate([("France", "Paris"), ("Italy", "Rome")])]
    >>> _ = (folder / "questions.jsonl").write_text("\\n".join(json.dumps(r) for r in rows) + "\\n")
    >>> ev = load_eval_set(folder, n=1)          # no splits/ folder: every question is "dev"
    >>> len(ev.questions), [d.title for d in ev.documents]
    (1, ['Paris', 'Oslo', 'Rome'])
    >>> ev = load_eval_set(folder, n=1, mode="per-question")
    >>> [d.title for d in ev.question_documents(ev.questions[0])]
    ['Paris', 'Oslo']
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragnet.corpus.loader import check_record_question, parse_jsonl_record
from ragnet.corpus.types import Document
from ragnet.errors import InputError

MODES = ("pooled", "per-question")
SPLITS = ("dev", "acceptance")


@dataclass(frozen=True)
class QARecord:
    """One benchmark question with its gold labels.

    ``gold_passage_ids`` name gold documents by id (pooled-corpus sets, and sets whose gold is
    a paragraph rather than a title, see :func:`load_eval_set`); otherwise ``gold_titles`` do.
    """

    id: str
    question: str
    answers: list[str]
    gold_titles: list[str] = field(default_factory=list)
    gold_sentences: list[list[Any]] | None = None
    gold_passage_ids: list[str] | None = None
    type: str | None = None
    level: Any = None
    context: list[dict[str, Any]] | None = None
    gold_paragraph_idxs: list[int] | None = None


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
    # a prefix of a set's name; not a glob pattern (an absolute path made Path.glob raise, and
    # "*" or "[" in a name would match other sets)
    matches = sorted(d for d in root.iterdir() if d.name.startswith(str(name_or_path))
                     and (d / "questions.jsonl").is_file()) if root.is_dir() else []
    exact = [d for d in matches if d.name == str(name_or_path)]
    if len(exact) == 1:
        return exact[0] / "questions.jsonl"
    if len(matches) == 1:
        return matches[0] / "questions.jsonl"
    known = ", ".join(sorted(d.name for d in root.iterdir() if (d / "questions.jsonl").is_file())) if root.is_dir() else "none"
    what = "several sets match" if len(matches) > 1 else "no dataset"
    raise InputError(
        f"{what} {str(name_or_path)!r} (as a file, folder, or set name under {root}); known sets: {known}",
        argument="data",
    )


def set_name(dataset_path: str | Path) -> str:
    """The set's name: the folder of a ``questions.jsonl``, else the file's stem.

    Example:
        >>> set_name("data/hotpotqa_dev_distractor/questions.jsonl"), set_name("mine.jsonl")
        ('hotpotqa_dev_distractor', 'mine')
    """
    p = Path(dataset_path)
    return p.parent.name if p.name == "questions.jsonl" else p.stem


def split_file(dataset_path: Path, split: str) -> Path:
    """``<data>/splits/<set>.<split>.txt`` for a set folder's ``questions.jsonl``."""
    return Path(dataset_path).parent.parent / "splits" / f"{Path(dataset_path).parent.name}.{split}.txt"


def read_split(dataset_path: Path, split: str) -> set[str]:
    """Question ids of ``split`` (``dev`` or ``acceptance``) from ``<data>/splits/<set>.<split>.txt``."""
    path = split_file(dataset_path, split)
    if not path.is_file():
        raise InputError(f"no split file {path}", argument="split")
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def parse_ids(spec: str | Sequence[str] | None) -> list[str] | None:
    """Question ids from ``--ids``: a comma list, or ``@file`` (ids separated by newlines or commas;
    ``#`` starts a comment).

    Example:
        >>> parse_ids("q1, q2,,q3")
        ['q1', 'q2', 'q3']
    """
    if spec is None:
        return None
    if not isinstance(spec, str):
        return [str(s) for s in spec]
    spec = spec.strip()
    if spec.startswith("@"):
        path = Path(spec[1:]).expanduser()
        if not path.is_file():
            raise InputError(f"no such id file {path}", argument="ids")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise InputError("id file is not UTF-8 text", path=path) from None
        parts = [p for line in text.splitlines() for p in line.split("#", 1)[0].split(",")]
    else:
        parts = spec.split(",")
    ids = list(dict.fromkeys(p.strip() for p in parts if p.strip()))
    if not ids:
        raise InputError(f"no question ids in {spec!r}", argument="ids")
    return ids


def _check_paragraphs(context: Any, qpath: Path, lineno: int) -> list[dict[str, Any]] | None:
    if context is None:
        return None
    if not isinstance(context, list):
        raise InputError("'context' must be a list of {title, text} paragraphs or null", path=qpath, line=lineno)
    for i, para in enumerate(context):
        if not isinstance(para, dict) or "title" not in para:
            raise InputError(f"context paragraph {i} must be an object with a 'title'", path=qpath, line=lineno)
        text = para.get("text")
        if text is None and not isinstance(para.get("sentences"), list):
            raise InputError(f"context paragraph {i} ({para['title']!r}) has no 'text' or 'sentences'",
                             path=qpath, line=lineno)
        if text is not None and not isinstance(text, str):
            raise InputError(f"context paragraph {i} ({para['title']!r}): 'text' must be a string",
                             path=qpath, line=lineno)
    return context


def _record(rec: dict[str, Any], qpath: Path, lineno: int) -> QARecord:
    for key in ("id", "question", "answers"):
        if key not in rec:
            raise InputError(f"record has no {key!r} field", path=qpath, line=lineno)
    check_record_question(rec["question"], qpath, lineno)
    answers = rec["answers"]
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, (str, int, float)) for a in answers):
        raise InputError("'answers' must be a list of strings", path=qpath, line=lineno)
    for key in ("gold_titles", "gold_passage_ids", "gold_paragraph_idxs"):
        if rec.get(key) is not None and not isinstance(rec[key], list):
            raise InputError(f"{key!r} must be a list or null", path=qpath, line=lineno)
    context = _check_paragraphs(rec.get("context"), qpath, lineno)
    idxs = rec.get("gold_paragraph_idxs")
    if idxs is not None and context is not None:
        bad = [i for i in idxs if not isinstance(i, int) or not 0 <= i < len(context)]
        if bad:
            raise InputError(f"'gold_paragraph_idxs' {bad} out of range for {len(context)} paragraphs",
                             path=qpath, line=lineno)
    return QARecord(
        id=str(rec["id"]),
        question=rec["question"],
        answers=[str(a) for a in answers],
        gold_titles=[str(t) for t in rec.get("gold_titles") or []],
        gold_sentences=rec.get("gold_sentences"),
        gold_passage_ids=[str(p) for p in rec["gold_passage_ids"]] if rec.get("gold_passage_ids") else None,
        type=rec.get("type"),
        level=rec.get("level"),
        context=context,
        gold_paragraph_idxs=list(idxs) if idxs is not None else None,
    )


def load_questions(
    path: str | Path,
    *,
    split: str | None = None,
    ids: Iterable[str] | None = None,
    limit: int | None = None,
    data_dir: str | Path | None = None,
) -> list[QARecord]:
    """Load benchmark questions, optionally restricted to a split, an id list and a count.

    Every line is checked (fields, types, paragraph shape, unique ids) and a bad one raises an
    :class:`~ragnet.errors.InputError` naming the file and line.
    """
    qpath = resolve_dataset(path, data_dir)
    keep = read_split(qpath, split) if split else None
    wanted = set(ids) if ids is not None else None
    out: list[QARecord] = []
    seen: dict[str, int] = {}
    try:
        fh = open(qpath, encoding="utf-8")  # noqa: SIM115 - closed by the `with` below
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=qpath) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                rec = _record(parse_jsonl_record(line, qpath, lineno), qpath, lineno)
                if rec.id in seen:
                    raise InputError(f"duplicate question id {rec.id!r} (first on line {seen[rec.id]})",
                                     path=qpath, line=lineno)
                seen[rec.id] = lineno
                if keep is not None and rec.id not in keep:
                    continue
                if wanted is not None and rec.id not in wanted:
                    continue
                out.append(rec)
                if limit is not None and len(out) >= limit:
                    break
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text (is it a JSONL file?)", path=qpath) from None
    return out


def paragraph_text(para: dict[str, Any]) -> str:
    """A context paragraph's text (``text``, or its ``sentences`` joined)."""
    return para.get("text") or "".join(para.get("sentences") or [])


def _pool(records: Iterable[QARecord], dedup: str) -> tuple[list[Document], dict[tuple[str, str], str]]:
    """Documents of the records' paragraphs, and ``(title, text) -> document id``."""
    if dedup not in ("title", "text"):
        raise InputError(f"unknown dedup {dedup!r}; use 'title' or 'text'", argument="dedup")
    docs: dict[str, Document] = {}
    by_title: dict[str, str] = {}
    by_key: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for rec in records:
        for para in rec.context or []:
            title, text = str(para["title"]), paragraph_text(para)
            key = (title, text)
            if key in by_key:
                continue
            if dedup == "title" and title in by_title:
                by_key[key] = by_title[title]
                continue
            doc_id, n = title, 1
            while doc_id in taken:  # same title, other text (dedup="text")
                n += 1
                doc_id = f"{title} ({n})"
            taken.add(doc_id)
            by_title.setdefault(title, doc_id)
            by_key[key] = doc_id
            docs[doc_id] = Document(id=doc_id, title=title, text=text, metadata={}, source=rec.id)
    return list(docs.values()), by_key


def pooled_documents(records: Iterable[QARecord], dedup: str = "title") -> list[Document]:
    """Merge every record's context paragraphs into one corpus.

    Args:
        records: the questions whose paragraphs are pooled.
        dedup: ``"title"`` keeps the first paragraph of each title; the document id *is* the
            title, so gold titles map directly onto chunk ``doc_id``\\ s. ``"text"`` keeps every
            distinct (title, text); a later paragraph reusing a title gets id ``"Title (2)"``
            (MuSiQue reuses titles for different paragraphs).

    Example:
        >>> r = QARecord(id="q", question="?", answers=["a"],
        ...              context=[{"title": "T", "text": "one"}, {"title": "T", "text": "two"}])
        >>> [d.id for d in pooled_documents([r])], [d.id for d in pooled_documents([r], dedup="text")]
        (['T'], ['T', 'T (2)'])
    """
    return _pool(records, dedup)[0]


def dedup_policy(records: Sequence[QARecord]) -> str:
    """``"text"`` when gold evidence is given per paragraph (``gold_paragraph_idxs``, MuSiQue),
    else ``"title"`` (Wikipedia-page sets: one paragraph per title; HotpotQA's two conflicts are
    the same paragraph in two revisions)."""
    return "text" if any(r.gold_paragraph_idxs for r in records) else "title"


def load_corpus(path: str | Path) -> list[Document]:
    """Documents of a ``corpus.jsonl`` (``{"id", "title", "text"}`` per line; ids unique)."""
    path = Path(path)
    docs: list[Document] = []
    seen: dict[str, int] = {}
    with open(path, encoding="utf-8") as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                rec = parse_jsonl_record(line, path, lineno)
                for key in ("id", "text"):
                    if key not in rec:
                        raise InputError(f"corpus record has no {key!r} field", path=path, line=lineno)
                if not isinstance(rec["text"], str):
                    raise InputError("'text' must be a string", path=path, line=lineno)
                doc_id = str(rec["id"])
                if doc_id in seen:
                    raise InputError(f"duplicate document id {doc_id!r} (first on line {seen[doc_id]})",
                                     path=path, line=lineno)
                seen[doc_id] = lineno
                docs.append(Document(id=doc_id, title=str(rec.get("title") or ""), text=rec["text"],
                                     metadata={}, source=f"{path}:{lineno}"))
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text (is it a JSONL file?)", path=path) from None
    if not docs:
        raise InputError("corpus file is empty", path=path)
    return docs


def _with_paragraph_gold(rec: QARecord, by_key: dict[tuple[str, str], str]) -> QARecord:
    """Name a record's gold paragraphs by document id (for sets with ``gold_paragraph_idxs``)."""
    if not rec.gold_paragraph_idxs or not rec.context:
        return rec
    ids = [by_key[(str(rec.context[i]["title"]), paragraph_text(rec.context[i]))] for i in rec.gold_paragraph_idxs]
    return replace(rec, gold_passage_ids=list(dict.fromkeys(ids)))


@dataclass
class EvalSet:
    """Questions to evaluate and the documents retrieval searches.

    Attributes:
        name: set name (e.g. ``hotpotqa_dev_distractor``).
        path: the ``questions.jsonl``.
        mode: ``"pooled"`` or ``"per-question"``.
        split: the split the questions come from (None: all).
        questions: the selected questions, in file order.
        documents: the pooled corpus (None in per-question mode).
        dedup: how paragraphs were de-duplicated (``"title"`` / ``"text"``; ``"corpus"`` for a corpus file).
    """

    name: str
    path: Path
    mode: str
    split: str | None
    questions: list[QARecord]
    documents: list[Document] | None
    dedup: str

    def question_documents(self, record: QARecord) -> list[Document]:
        """A question's own paragraphs as documents (per-question mode)."""
        docs = _pool([record], self.dedup if self.dedup != "corpus" else "title")[0]
        ids = {str(p.get("id")) for p in record.context or [] if p.get("id") is not None}
        if ids and len(ids) == len(record.context or []):  # paragraphs with corpus ids (NQ, SQuAD): keep them
            docs = [Document(id=str(p["id"]), title=str(p["title"]), text=paragraph_text(p), metadata={},
                             source=record.id) for p in record.context]
        return docs


def load_eval_set(
    data: str | Path,
    *,
    data_dir: str | Path | None = None,
    split: str | None = "dev",
    n: int | None = None,
    ids: str | Sequence[str] | None = None,
    mode: str = "pooled",
) -> EvalSet:
    """Load questions and retrieval documents for ``ragnet eval``.

    Args:
        data: set name under ``data_dir``, a set folder, or a user's ``questions.jsonl``
            (same fields; a ``corpus.jsonl`` beside it is used as the pooled corpus).
        data_dir: benchmark folder (default ``$RAGNET_DATA`` or ``../shared/data``).
        split: ``"dev"``, ``"acceptance"`` or None (all questions). A file without a
            ``splits/`` folder beside its set folder uses all its questions for ``"dev"``.
        n: at most this many questions (first in file order, after split and ids).
        ids: a comma list, ``@file``, or a list of ids; unknown ids are an error.
        mode: ``"pooled"`` or ``"per-question"`` (see the module docstring).

    Raises:
        InputError: unknown set/split/mode/ids, an empty selection, malformed lines (file:line).
    """
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}", argument="mode")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise InputError(f"must be a positive integer, got {n!r}", argument="n")
    if split is not None and split not in SPLITS:
        raise InputError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}", argument="split")
    qpath = resolve_dataset(data, data_dir)
    name = set_name(qpath)
    wanted = parse_ids(ids)
    all_records = load_questions(qpath)
    if not all_records:
        raise InputError("no questions in file", path=qpath)

    records = all_records
    if split is not None:
        sfile = split_file(qpath, split)
        if sfile.is_file():
            keep = read_split(qpath, split)
            if not keep:
                raise InputError(f"split {split!r} of {name} is empty ({sfile}); "
                                 f"use another --split", argument="split")
            records = [r for r in records if r.id in keep]
        elif split != "dev" or sfile.parent.is_dir():
            raise InputError(f"no split file {sfile}", argument="split")
        # else: a user's own file with no splits folder: every question is "dev".
    if wanted is not None:
        known = {r.id for r in all_records}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise InputError(f"unknown question id(s) in {name}: {shown}", argument="ids")
        chosen = set(wanted)
        outside = [i for i in wanted if i not in {r.id for r in records}]
        if outside:
            raise InputError(f"{len(outside)} id(s) are not in split {split!r} (e.g. {outside[0]}); "
                             "pass the matching --split", argument="ids")
        records = [r for r in records if r.id in chosen]
    if n is not None:
        records = records[:n]
    if not records:
        raise InputError(f"no questions selected from {qpath}", argument="data")

    corpus_file = qpath.parent / "corpus.jsonl" if qpath.name == "questions.jsonl" else None
    dedup = dedup_policy(all_records)
    documents: list[Document] | None = None
    if mode == "pooled":
        if corpus_file is not None and corpus_file.is_file():
            documents, dedup = load_corpus(corpus_file), "corpus"
        else:
            documents, by_key = _pool(all_records, dedup)
            if not documents:
                raise InputError("pooled mode needs context paragraphs or a corpus.jsonl beside the file; "
                                 "none found", path=qpath)
            records = [_with_paragraph_gold(r, by_key) for r in records]
    else:
        for r in records:
            if not r.context:
                raise InputError(f"question {r.id!r} has no context paragraphs; use --mode pooled",
                                 path=qpath, argument="mode")
        records = [_with_paragraph_gold(r, _pool([r], dedup)[1]) for r in records]
    return EvalSet(name=name, path=qpath, mode=mode, split=split, questions=records, documents=documents, dedup=dedup)


def to_examples(records: Iterable[QARecord]) -> list[Any]:
    """``dspy.Example``\\ s (inputs: ``question``) carrying every gold field, for ``dspy.Evaluate``
    and the optimizers.

    Example:
        >>> ex = to_examples([QARecord(id="q1", question="Capital of France?", answers=["Paris"])])[0]
        >>> ex.inputs().toDict(), ex.answers
        ({'question': 'Capital of France?'}, ['Paris'])
    """
    import dspy

    out = []
    for r in records:
        out.append(
            dspy.Example(
                id=r.id, question=r.question, answers=list(r.answers), gold_titles=list(r.gold_titles),
                gold_passage_ids=list(r.gold_passage_ids) if r.gold_passage_ids else None,
                type=r.type, level=r.level,
            ).with_inputs("question")
        )
    return out
