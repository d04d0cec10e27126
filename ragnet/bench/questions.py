"""What a benchmark runs on: the first dev questions and the pooled paragraphs of a benchmark.

Every ``ragnet bench`` command and study picks its questions and paragraphs here, so they all
measure the same ones and never touch the acceptance split.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ragnet.eval.run.datasets import QARecord
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "splits").mkdir()
    >>> _ = (root / "splits" / "toy.dev.txt").write_text("q2\\nq3\\n")
    >>> records = [QARecord(id=f"q{i}", question=f"question {i}?", answers=["x"]) for i in range(1, 5)]
    >>> [r.question for r in dev_questions(records, root / "toy" / "questions.jsonl", limit=1)]
    ['question 2?']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["REAL_SET", "benchmark_inputs", "dev_questions", "passage_texts"]

#: The benchmark whose paragraphs and dev questions the index benchmarks time by default.
REAL_SET = "hotpotqa_dev_distractor"


def dev_questions(records: Sequence[Any], dataset_path: str | Path, limit: int | None = None) -> list[Any]:
    """The first ``limit`` of ``records`` (all when None) that are in the dev split, in file order.

    Args:
        records: the benchmark's questions (``QARecord``), in file order.
        dataset_path: its ``questions.jsonl`` (the split file is found next to the data folder).
        limit: how many to keep.

    Raises:
        InputError: the benchmark has no dev split file.
    """
    from ragnet.eval.run.datasets import read_split

    dev = read_split(Path(dataset_path), "dev")
    return [r for r in records if r.id in dev][:limit]


def benchmark_inputs(data: str | Path = REAL_SET, data_dir: str | Path | None = None, *,
                     documents: int | None = None, questions: int | None = 0) -> tuple[list[Any], list[str]]:
    """The first ``documents`` pooled paragraphs of a benchmark (all when None) and the texts of
    its first ``questions`` dev questions (all when None; none by default).

    Raises:
        InputError: an unknown benchmark, or one without a dev split when questions are asked for.
    """
    from ragnet.eval.run.datasets import load_questions, pooled_documents, resolve_dataset

    path = resolve_dataset(data, data_dir)
    records = load_questions(path)
    texts = [] if questions == 0 else [r.question for r in dev_questions(records, path, questions)]
    return pooled_documents(records)[:documents], texts


def passage_texts(documents: Sequence[Any]) -> list[str]:
    """The texts the embedder sees for ``documents`` indexed as one chunk each (title and text).

    Example:
        >>> from ragnet.corpus.types import Document
        >>> passage_texts([Document(id="d", title="Paris", text="Capital of France.")])[0].count("Paris")
        1
    """
    from ragnet.corpus.types import Chunk
    from ragnet.index.passages import passage_text

    return [passage_text(Chunk(id=d.id, doc_id=d.id, title=d.title, text=d.text, tokens=0)) for d in documents]
