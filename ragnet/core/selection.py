"""Budgeted selections over a ranked candidate list (candidates given best first).

One dispatcher, :func:`select`, serves both OneShotRAG's packing
(``ragnet.programs.packing.pack``) and its measurement (``ragnet eval retrieval``), so the
program and the figures that chose its defaults run the same code.

Methods:

* ``"protected"``: :func:`rank_prefix`, then the exact knapsack on the remaining candidates
  with the leftover budget. Its selection always contains the strict rank prefix, so it can
  never lose evidence that prefix had.
* ``"exact"`` / ``"greedy"``: the knapsack (``ragnet.core.knapsack.select``) over all candidates.
* ``"rank"``: :func:`rank_fill`, candidates in rank order, skipping any that no longer fit.
* ``"rank-prefix"``: :func:`rank_prefix`, the longest prefix of the ranking that fits.
* ``"top"``: the first ``k`` candidates, whatever the budget.

The knapsack methods maximise calibrated relevance (:func:`relevance`: ``ragnet.core.calibrate``
with a small floor, so leftover budget can still take the next-best candidates).

Example:
    >>> import numpy as np
    >>> tokens = np.array([50, 60, 30, 10])
    >>> rank_fill(tokens, 100).tolist(), rank_prefix(tokens, 100).tolist()
    ([0, 2, 3], [0])
    >>> protected(np.array([1.0, 0.9, 0.5, 0.4]), tokens, 100).tolist()
    [0, 2, 3]
    >>> select(tokens, 100, "exact", scores=np.array([0.9, 0.8, 0.5, 0.4]), temperature=0.1).tolist()
    [0, 2, 3]
"""

from __future__ import annotations

import numpy as np

from ragnet.core import knapsack
from ragnet.core.calibrate import relevance as _calibrate
from ragnet.errors import InputError

__all__ = ["METHODS", "protected", "rank_fill", "rank_prefix", "relevance", "select"]

#: Methods :func:`select` dispatches on.
METHODS = ("protected", "exact", "greedy", "rank", "rank-prefix", "top")
#: A relevance of exactly 0 (e.g. ``"linear"`` at the minimum) would never be selected.
RELEVANCE_FLOOR = 1e-12


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


def relevance(scores: np.ndarray, transform: str = "exp", temperature: float = 0.05) -> np.ndarray:
    """Knapsack values of retrieval scores: ``ragnet.core.calibrate.relevance``, floored at 1e-12.

    Example:
        >>> relevance(np.array([1.0, 0.5, 0.0]), "linear").tolist()
        [1.0, 0.5, 1e-12]
    """
    return np.maximum(_calibrate(np.asarray(scores, dtype=np.float64), transform, temperature), RELEVANCE_FLOOR)


def _by_relevance(idx: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """``idx`` ordered by relevance, best first (ties: lower index first)."""
    idx = np.asarray(idx, dtype=np.int64)
    return idx[np.lexsort((idx, -rel[idx]))] if idx.size else idx


def select(
    tokens: np.ndarray,
    budget: int,
    method: str = "protected",
    *,
    scores: np.ndarray | None = None,
    rel: np.ndarray | None = None,
    transform: str = "exp",
    temperature: float = 0.05,
    k: int = 5,
) -> np.ndarray:
    """Indices of the candidates ``method`` selects within ``budget`` tokens, best first.

    Args:
        tokens: cost of each candidate, candidates in rank order (best first).
        budget: tokens available.
        method: one of :data:`METHODS` (see the module docstring).
        scores: retrieval scores, calibrated into relevance for the knapsack methods.
        rel: ready relevance values (:func:`relevance`); wins over ``scores``. Pass it when
            one calibration serves several budgets.
        transform, temperature: the calibration of ``scores`` (``ragnet.core.calibrate``).
        k: how many candidates ``"top"`` takes.

    Returns:
        int64 indices. Rank-order methods keep rank order; ``"protected"`` gives its rank
        prefix first, then the knapsack's additions by relevance; ``"exact"``/``"greedy"``
        give everything by relevance.

    Raises:
        InputError: an unknown method, or a knapsack method without ``scores`` or ``rel``.

    Example:
        >>> tokens = np.array([50, 60, 30, 10])
        >>> select(tokens, 100, "rank").tolist(), select(tokens, 100, "top", k=2).tolist()
        ([0, 2, 3], [0, 1])
        >>> select(tokens, 100, rel=np.array([1.0, 0.9, 0.5, 0.4])).tolist()
        [0, 2, 3]
    """
    tokens = np.asarray(tokens)
    if method == "top":
        return np.arange(min(int(k), tokens.size), dtype=np.int64)
    if method == "rank":
        return rank_fill(tokens, budget)
    if method == "rank-prefix":
        return rank_prefix(tokens, budget)
    if method not in METHODS:
        raise InputError(f"unknown selection method {method!r}; choose from {', '.join(METHODS)}", argument="method")
    if rel is None:
        if scores is None:
            raise InputError(f"the {method!r} selection needs scores or relevance values", argument="scores")
        rel = relevance(scores, transform, temperature)
    rel = np.asarray(rel, dtype=np.float64)
    if tokens.size == 0 or budget <= 0:
        return np.empty(0, dtype=np.int64)
    if method == "protected":
        picked = protected(rel, tokens, budget)
        prefix = rank_prefix(tokens, budget).size
        return np.concatenate([picked[:prefix], _by_relevance(picked[prefix:], rel)])
    return _by_relevance(knapsack.select(rel, tokens, budget, method=method), rel)
