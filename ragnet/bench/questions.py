"""The questions a benchmark times or scores: the first ones of a benchmark's dev split.

Every ``ragnet bench`` command that needs questions picks them here, so they all measure the
same ones and never touch the acceptance split.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ragnet.eval.datasets import QARecord
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

__all__ = ["dev_questions"]


def dev_questions(records: Sequence[Any], dataset_path: str | Path, limit: int | None = None) -> list[Any]:
    """The first ``limit`` of ``records`` (all when None) that are in the dev split, in file order.

    Args:
        records: the benchmark's questions (``QARecord``), in file order.
        dataset_path: its ``questions.jsonl`` (the split file is found next to the data folder).
        limit: how many to keep.

    Raises:
        InputError: the benchmark has no dev split file.
    """
    from ragnet.eval.datasets import read_split

    dev = read_split(Path(dataset_path), "dev")
    return [r for r in records if r.id in dev][:limit]
