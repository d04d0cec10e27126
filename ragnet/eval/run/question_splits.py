"""Tune and check splits of a questions file, so a change is chosen on one set and accepted on another.

A question's split is fixed by a hash of its id alone: adding, removing or reordering questions
never moves another question between splits, and anyone can recompute it. About 60% of ids fall in
``tune`` (choose prompts, rules and thresholds there) and 40% in ``check`` (accept a change only if
its right answers there hold). A file listing ids, one per line (``#`` comments allowed), selects
its own split instead.

Example:
    >>> split_of("rd-001"), split_of("rd-002")
    ('tune', 'check')
    >>> split_ids(["rd-001", "rd-002", "rd-003"], "check")
    ['rd-002', 'rd-003']
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from ragnet.errors import InputError

__all__ = ["SPLITS", "TUNE_SHARE", "read_split_file", "split_ids", "split_of"]

#: The named splits of a questions file; ``all`` keeps every question.
SPLITS = ("tune", "check", "all")
#: The share of ids in ``tune``; the rest are ``check``.
TUNE_SHARE = 0.6


def split_of(question_id: str) -> str:
    """``"tune"`` or ``"check"``: the split of a question id, from the SHA-256 of the id."""
    bucket = int.from_bytes(hashlib.sha256(str(question_id).encode("utf-8")).digest()[:8], "big") / 2**64
    return "tune" if bucket < TUNE_SHARE else "check"


def read_split_file(path: str | Path) -> list[str]:
    """The question ids a split file lists, one per line; blank lines and ``#`` comments skipped.

    Raises:
        InputError: the file is missing, not UTF-8 or lists no id.
    """
    where = Path(path)
    try:
        lines = where.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError("no such split file (give tune, check, all or a file of question ids)", path=where,
                         argument="split") from None
    except UnicodeDecodeError:
        raise InputError("a split file is UTF-8 text, one question id a line", path=where) from None
    ids = [line.split("#", 1)[0].strip() for line in lines]
    ids = [i for i in ids if i]
    if not ids:
        raise InputError("the split file lists no question id", path=where, argument="split")
    return ids


def split_ids(question_ids: Sequence[str], split: str) -> list[str]:
    """The ids of ``question_ids`` that belong to ``split`` (a name of :data:`SPLITS` or a split file), in order.

    Raises:
        InputError: an unknown split name that is no file either, or a split file naming unknown ids.
    """
    if split == "all":
        return list(question_ids)
    if split in ("tune", "check"):
        return [q for q in question_ids if split_of(q) == split]
    listed = read_split_file(split)
    known = set(question_ids)
    unknown = [q for q in listed if q not in known]
    if unknown:
        raise InputError(f"the split file names unknown question id(s): {', '.join(unknown[:5])}", path=split,
                         argument="split")
    wanted = set(listed)
    return [q for q in question_ids if q in wanted]
