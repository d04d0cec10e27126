"""Seeded, deterministic train/validation splits of question ids for prompt compilation.

The ids are sorted first, so the split depends only on the set of ids, the fraction and the
seed, never on file order or Python's hash seed. Train and validation never share an id; the
validation part is what before/after scores are measured on and the optimizers never see it.

Example:
    >>> train, val = train_val_split([f"q{i}" for i in range(10)], val_fraction=0.3, seed=0)
    >>> len(train), len(val), set(train) & set(val)
    (7, 3, set())
    >>> train_val_split([f"q{i}" for i in range(10)], val_fraction=0.3, seed=0) == (train, val)
    True
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

from ragnet.errors import InputError

__all__ = ["seeded_order", "train_val_split"]


def seeded_order(ids: Iterable[str], seed: int = 0) -> list[str]:
    """The distinct ``ids`` in a seeded pseudo-random order (sorted first, then shuffled).

    Example:
        >>> seeded_order(["b", "a", "c"], seed=1) == seeded_order(["c", "b", "a"], seed=1)
        True
    """
    ordered = sorted({str(i) for i in ids})
    random.Random(f"ragnet-split:{seed}").shuffle(ordered)
    return ordered


def train_val_split(ids: Iterable[str], val_fraction: float = 0.3, seed: int = 0) -> tuple[list[str], list[str]]:
    """Split ``ids`` into (train, val) with ``round(n * val_fraction)`` ids in val (at least 1 each).

    Args:
        ids: question (or case) ids; duplicates are ignored.
        val_fraction: share of ids held out for validation, strictly between 0 and 1.
        seed: any integer; the same ids, fraction and seed always give the same split.

    Raises:
        InputError: fewer than 2 ids, or a fraction outside (0, 1).
    """
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) or not 0 < val_fraction < 1:
        raise InputError(f"must be a number strictly between 0 and 1, got {val_fraction!r}", argument="val_fraction")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"must be an integer, got {seed!r}", argument="seed")
    ordered = seeded_order(ids, seed)
    if len(ordered) < 2:
        raise InputError(f"need at least 2 distinct ids to split into train and validation, got {len(ordered)}",
                         argument="n")
    n_val = min(max(1, int(math.floor(len(ordered) * val_fraction + 0.5))), len(ordered) - 1)
    return ordered[n_val:], ordered[:n_val]
