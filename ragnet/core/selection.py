"""Budgeted selections over a ranked candidate list (candidates given best first).

These are the baselines and the protected knapsack that OneShotRAG and ``ragnet eval retrieval``
share, so the program and its measurement run the same code.

* ``rank_fill``: take candidates in rank order, skipping any that no longer fit.
* ``rank_prefix``: the longest prefix of the ranking that fits (stops at the first misfit).
* ``protected``: ``rank_prefix``, then the exact knapsack on the remaining candidates with the
  leftover budget. Its selection always contains the strict rank prefix, so it can never lose
  evidence that prefix had.

Example:
    >>> import numpy as np
    >>> tokens = np.array([50, 60, 30, 10])
    >>> rank_fill(tokens, 100).tolist(), rank_prefix(tokens, 100).tolist()
    ([0, 2, 3], [0])
    >>> protected(np.array([1.0, 0.9, 0.5, 0.4]), tokens, 100).tolist()
    [0, 2, 3]
"""

from __future__ import annotations

import numpy as np

from ragnet.core import knapsack


def rank_fill(tokens: np.ndarray, budget: int) -> np.ndarray:
    """Indices taken in rank order, skipping candidates that no longer fit."""
    picked, used = [], 0
    for i, t in enumerate(np.asarray(tokens).tolist()):
        if used + t <= budget:
            picked.append(i)
            used += t
    return np.asarray(picked, dtype=np.int64)


def rank_prefix(tokens: np.ndarray, budget: int) -> np.ndarray:
    """Indices of the longest rank-order prefix whose tokens fit the budget."""
    return np.arange(int(np.searchsorted(np.cumsum(np.asarray(tokens)), budget, side="right")), dtype=np.int64)


def protected(relevance: np.ndarray, tokens: np.ndarray, budget: int) -> np.ndarray:
    """The rank prefix, then the exact knapsack over the rest on the leftover budget."""
    tokens = np.asarray(tokens)
    relevance = np.asarray(relevance, dtype=np.float64)
    prefix = rank_prefix(tokens, budget)
    p = prefix.size
    left = budget - int(tokens[:p].sum())
    if p == tokens.size or left <= 0:
        return prefix
    rest = knapsack.select(relevance[p:], tokens[p:], left, method="exact") + p
    return np.concatenate([prefix, rest])
