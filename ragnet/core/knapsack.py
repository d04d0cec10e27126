"""Token-Constrained Top-Kmax: pick the chunks with the most total relevance that fit a token budget.

This is the 0/1 knapsack problem: item ``i`` has value ``relevance[i]`` and integer weight
``tokens[i]``; the selection's total weight may not exceed ``budget``. Two methods:

``"greedy"``
    Sort by density (relevance per token), take every item that still fits (so small items fill
    the space a large one left), then compare with the single most relevant item that fits.
    O(n log n); at least half the optimum, usually within a fraction of a percent of it.

``"exact"``
    * **Small problems are solved to optimality.** When ``items x (budget + 1)`` is at most
      ``DENSE_CELL_LIMIT`` (2**21 cells), a vectorised dynamic program runs over exact integer
      weights and keeps a decision bitmap to recover the selection.
    * **Large problems use core reduction** (Balas-Zemel, Pisinger). Items are sorted by density
      and the greedy *break item* is found: the first one that no longer fits. In an optimal
      solution, items far above the break item are almost always in and those far below it are
      almost always out. Those are fixed, and only a *core* of ``2 * CORE_HALF_WIDTH`` items
      around the break item is solved exactly, with the capacity the fixed items leave. The core
      is solved by the dense program when it fits the cell limit. Otherwise a Pareto
      (Nemhauser-Ullmann) program runs, which is exact whatever the capacity. If even that grows
      past ``PARETO_WORK_LIMIT`` states, the core falls back to the dense program over weights
      scaled down by a granularity ``g``. Scaled weights are rounded *up* (``ceil(w / g)``), so
      whatever it picks always fits. Leftover capacity is then filled greedily with exact weights.
    * **Every answer is checked against the LP (Dantzig) upper bound** ``U >= optimum``. If the
      certified gap ``(U - value) / U`` exceeds ``GAP_TOLERANCE`` (0.2 %), the core is made 4x
      wider and solved again, up to ``CORE_ATTEMPTS`` times. Widening stops early when it found
      nothing better, since then the LP bound itself is what is loose. A core that covers every
      item with an exact core solver is the full optimum. The greedy answer is always computed
      too and the better of the two is returned, so ``exact >= greedy`` holds by construction.

How close to optimal "exact" is:

* **It is optimal** when the dense program covers all items. With n <= 15 items the Pareto
  program is exact for any budget too. It is also optimal whenever the core spans all items
  without scaling, and whenever ``value == upper_bound``. ``KnapsackResult.optimal`` tells
  which case applies.
* **Otherwise the result carries its own certificate**: ``value >= (1 - gap) * optimum``, with
  ``gap = KnapsackResult.gap`` computed against the LP bound. On realistic retrieval data
  (a thousand chunks, a 32k budget, calibrated relevance) the certified gap stays far inside
  the target and the answer matches the full-DP optimum (:func:`optimum`); ``ragnet bench core``
  (:mod:`ragnet.bench.core`) measures both. With that many items the LP bound and the optimum
  differ by less than a sliver of the break item's value, and the core captures the region
  where they differ.
* **The LP bound can be loose.** When only a handful of very large items fit, the bound can sit
  several percent above the optimum. In such tests the answer was still optimal, but ``gap``
  cannot certify it.
* **Reduction is a heuristic; the bound is not.** In adversarial instances (for example a few
  huge items that fit only in an exact combination) the scaled fallback can lose value that the
  greedy fill and greedy comparison do not recover. Such cases show up as a large ``gap``
  rather than going unnoticed.

Cost: well under a millisecond for a thousand candidates, so it never shows next to
retrieval; pathological shapes (huge items, or strongly correlated relevance with a huge
budget) cost more, bounded by the work limits above. ``ragnet bench core`` times it.

Example:
    >>> select([0.9, 0.6, 0.5], [300, 200, 200], budget=400).tolist()
    [1, 2]
    >>> select([0.9, 0.6, 0.5], [300, 200, 200], budget=400, method="greedy").tolist()
    [0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ragnet.errors import InputError

__all__ = ["METHODS", "KnapsackResult", "optimum", "select", "select_with_info", "upper_bound"]

METHODS = ("exact", "greedy")

#: Largest ``items x (capacity + 1)`` table the dense dynamic program may fill (about 2 MB of bitmap).
DENSE_CELL_LIMIT = 1 << 21
#: Largest total number of Pareto states (summed over items) before falling back to scaled weights.
PARETO_WORK_LIMIT = 1 << 17
#: Items on each side of the break item in the first core.
CORE_HALF_WIDTH = 16
#: How many times the core may be widened (x4 each time) while the certified gap is too large.
CORE_ATTEMPTS = 4
#: Relative gap to the LP bound below which a core solution is accepted.
GAP_TOLERANCE = 2e-3


@dataclass(frozen=True)
class KnapsackResult:
    """A selection together with its quality certificate.

    Attributes:
        indices: selected item indices, most relevant first.
        value: total relevance of the selection.
        tokens_used: total tokens of the selection (never more than the budget).
        upper_bound: LP (Dantzig) upper bound on the optimal value; ``value <= optimum <= upper_bound``.
        method: ``"exact"`` or ``"greedy"``.
        optimal: True when the selection is proven optimal (not merely within ``gap``).

    Example:
        >>> r = select_with_info([1.0, 1.0], [60, 60], budget=100)
        >>> (r.indices.tolist(), r.value, r.tokens_used, r.upper_bound)
        ([0], 1.0, 60, 1.6666666666666665)
    """

    indices: np.ndarray
    value: float
    tokens_used: int
    upper_bound: float
    method: str
    optimal: bool = False

    @property
    def gap(self) -> float:
        """Certified relative optimality gap ``(upper_bound - value) / upper_bound`` (0.0 when optimal)."""
        if self.optimal or self.upper_bound <= 0:
            return 0.0
        return max(0.0, (self.upper_bound - self.value) / self.upper_bound)


def select(relevance, tokens, budget, method: str = "exact") -> np.ndarray:
    """Choose the items with the largest total relevance whose tokens fit ``budget``.

    Items with relevance <= 0, or with more tokens than the whole budget, are never selected.

    Args:
        relevance: one finite score per item (higher is better).
        tokens: one positive whole token count per item.
        budget: token budget (>= 0); a float is rounded down.
        method: ``"exact"`` (optimal or certified near-optimal, see the module docstring) or
            ``"greedy"`` (relevance-per-token order with fill).

    Returns:
        Selected indices as an int64 array, sorted by relevance descending (ties by index).

    Raises:
        InputError: lengths differ, NaN/infinite relevance, non-positive or fractional tokens,
            negative budget, or unknown method.

    Example:
        >>> select([3.0, 2.0, 2.0], [5, 3, 3], budget=6).tolist()
        [1, 2]
    """
    return select_with_info(relevance, tokens, budget, method).indices


def select_with_info(relevance, tokens, budget, method: str = "exact") -> KnapsackResult:
    """Like :func:`select`, but also return the value, tokens used and the LP upper bound.

    Example:
        >>> r = select_with_info([3.0, 2.0, 2.0], [5, 3, 3], budget=6)
        >>> r.indices.tolist(), r.value, r.tokens_used, r.optimal
        ([1, 2], 4.0, 6, True)
    """
    v, w, cap = _validate(relevance, tokens, budget, method)
    eligible = np.flatnonzero((v > 0) & (w <= cap))
    if eligible.size == 0:
        return _result(v, w, np.empty(0, np.int64), 0.0, method, True)
    order = _density_order(v, w, eligible)
    cum_w = np.cumsum(w[order])
    brk = int(np.searchsorted(cum_w, cap, side="right"))  # items order[:brk] fit; order[brk] does not
    if brk == order.size:  # everything fits
        return _result(v, w, order, float(v[order].sum()), method, True)
    bound = _lp_bound(v, w, cap, order, cum_w, brk)
    greedy = _greedy(v, w, cap, order, brk, cum_w)
    if method == "greedy":
        return _result(v, w, greedy, bound, method, False)
    chosen, optimal = _exact(v, w, cap, order, brk, cum_w, bound)
    if not optimal and v[greedy].sum() > v[chosen].sum():  # a proven optimum only loses to rounding noise
        chosen = greedy
    return _result(v, w, chosen, bound, method, optimal)


def upper_bound(relevance, tokens, budget) -> float:
    """LP-relaxation (Dantzig) upper bound on the best achievable total relevance.

    Example:
        >>> upper_bound([1.0, 1.0], [60, 60], 100)
        1.6666666666666665
    """
    v, w, cap = _validate(relevance, tokens, budget, "exact")
    eligible = np.flatnonzero((v > 0) & (w <= cap))
    if eligible.size == 0:
        return 0.0
    order = _density_order(v, w, eligible)
    cum_w = np.cumsum(w[order])
    brk = int(np.searchsorted(cum_w, cap, side="right"))
    return _lp_bound(v, w, cap, order, cum_w, brk)



def optimum(relevance, tokens, budget) -> float:
    """The best achievable total relevance, by a full dynamic program over every capacity.

    Costs ``items x budget`` time and memory, so it is for checking the solvers' gaps on
    benchmark-sized problems, not for selecting.

    Example:
        >>> optimum([1.0, 1.0, 1.5], [60, 60, 100], 120)
        2.0
    """
    v, w, cap = _validate(relevance, tokens, budget, "exact")
    eligible = np.flatnonzero((v > 0) & (w <= cap))
    return float(v[eligible][_dense_dp(v[eligible], w[eligible], cap)].sum())


# --------------------------------------------------------------------------- validation


def _validate(relevance, tokens, budget, method) -> tuple[np.ndarray, np.ndarray, int]:
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; use one of {', '.join(METHODS)}", argument="method")
    try:
        v = np.asarray(relevance, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"relevance must be numbers ({exc})", argument="relevance") from None
    try:
        t = np.asarray(tokens)
        if t.dtype.kind not in "iuf" and t.size:
            t = t.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"tokens must be numbers ({exc})", argument="tokens") from None
    if v.ndim != 1:
        raise InputError(f"relevance must be one-dimensional, got shape {v.shape}", argument="relevance")
    if t.ndim != 1:
        raise InputError(f"tokens must be one-dimensional, got shape {t.shape}", argument="tokens")
    if v.size != t.size:
        raise InputError(f"relevance has {v.size} items but tokens has {t.size}", argument="tokens")
    bad = np.flatnonzero(~np.isfinite(v))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"relevance must be finite; item {i} is {v[i]}", argument="relevance")
    if t.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(t) | (t != np.floor(t)))
        if bad.size:
            i = int(bad[0])
            raise InputError(f"tokens must be whole numbers; item {i} is {t[i]}", argument="tokens")
    bad = np.flatnonzero(t <= 0)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"tokens must be positive; item {i} has {t[i]}", argument="tokens")
    w = t.astype(np.int64)
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, float, np.integer, np.floating)):
        raise InputError(f"budget must be a number of tokens, got {budget!r}", argument="budget")
    if not math.isfinite(float(budget)) or budget < 0:
        raise InputError(f"budget must be a finite number >= 0, got {budget!r}", argument="budget")
    # A budget above the total tokens is the same problem; clipping keeps the integer maths in int64.
    return v, w, min(int(math.floor(budget)), int(w.sum()))


def _result(v, w, chosen, bound, method, optimal) -> KnapsackResult:
    chosen = np.sort(np.asarray(chosen, dtype=np.int64))
    chosen = chosen[np.argsort(-v[chosen], kind="stable")]
    value = float(v[chosen].sum())
    if not optimal and value >= bound * (1 - 1e-12):
        optimal = True
    return KnapsackResult(
        indices=chosen,
        value=value,
        tokens_used=int(w[chosen].sum()),
        upper_bound=max(float(bound), value),
        method=method,
        optimal=bool(optimal),
    )


# --------------------------------------------------------------------------- bounds and greedy


def _density_order(v, w, eligible) -> np.ndarray:
    """Eligible indices by relevance per token, highest first (ties by index)."""
    return eligible[np.argsort(-(v[eligible] / w[eligible]), kind="stable")]


def _lp_bound(v, w, cap, order, cum_w, brk) -> float:
    if brk == order.size:
        return float(v[order].sum())
    used = int(cum_w[brk - 1]) if brk else 0
    b = order[brk]
    return float(v[order[:brk]].sum() + (cap - used) * v[b] / w[b])


def _fill(w, rem, rest) -> tuple[list[np.ndarray], int]:
    """Greedily add items of ``rest`` (already in density order) that still fit ``rem``.

    Takes whole runs of consecutive fitting items per step, so it costs a few vectorised passes.
    """
    extra: list[np.ndarray] = []
    cand = rest[w[rest] <= rem]
    while cand.size:
        cum = np.cumsum(w[cand])
        k = int(np.searchsorted(cum, rem, side="right"))  # >= 1: cand[0] fits
        extra.append(cand[:k])
        rem -= int(cum[k - 1])
        cand = cand[k + 1 :]
        cand = cand[w[cand] <= rem]
    return extra, rem


def _greedy(v, w, cap, order, brk, cum_w) -> np.ndarray:
    used = int(cum_w[brk - 1]) if brk else 0
    extra, _ = _fill(w, cap - used, order[brk:])
    chosen = np.concatenate([order[:brk], *extra])
    best_single = order[np.argmax(v[order])]  # every eligible item fits on its own
    if v[best_single] > v[chosen].sum():
        return np.asarray([best_single], dtype=np.int64)
    return chosen


# --------------------------------------------------------------------------- exact


def _exact(v, w, cap, order, brk, cum_w, bound) -> tuple[np.ndarray, bool]:
    m = order.size
    if m * (cap + 1) <= DENSE_CELL_LIMIT:
        mask = _dense_dp(v[order], w[order], cap)
        return order[mask], True
    best, best_value, optimal = np.empty(0, np.int64), -1.0, False
    half = CORE_HALF_WIDTH
    for attempt in range(CORE_ATTEMPTS):
        lo, hi = max(0, brk - half), min(m, brk + half)
        residual = cap - (int(cum_w[lo - 1]) if lo else 0)
        core = order[lo:hi]
        mask, exact = _solve_core(v[core], w[core], residual)
        rem = residual - int(w[core[mask]].sum())
        unchosen = np.concatenate([core[~mask], order[hi:]])  # still density-ordered
        extra, _ = _fill(w, rem, unchosen)
        chosen = np.concatenate([order[:lo], core[mask], *extra])
        value = float(v[chosen].sum())
        improved = value > best_value
        if improved:
            best, best_value = chosen, value
            optimal = exact and lo == 0 and hi == m
        if optimal or bound <= 0 or (bound - best_value) / bound <= GAP_TOLERANCE:
            break
        if (lo == 0 and hi == m) or (attempt and not improved):
            break  # the core spans everything, or widening found nothing better: the LP bound is loose
        half *= 4
    return best, optimal


def _solve_core(v, w, cap) -> tuple[np.ndarray, bool]:
    """Solve a (small) knapsack; returns (selection mask, proven optimal)."""
    k = v.size
    if k * (cap + 1) <= DENSE_CELL_LIMIT:
        return _dense_dp(v, w, cap), True
    mask = _pareto_dp(v, w, cap, PARETO_WORK_LIMIT)
    if mask is not None:
        return mask, True
    return _scaled_dp(v, w, cap, DENSE_CELL_LIMIT), False


def _dense_dp(v, w, cap) -> np.ndarray:
    """Exact 0/1 knapsack by dynamic programming over capacities 0..cap (vectorised per item)."""
    k = v.size
    dp = np.zeros(cap + 1)  # dp[c] = best value with total weight <= c
    take = np.zeros((k, cap + 1), dtype=bool)
    for i in range(k):
        wi = int(w[i])
        if wi > cap:
            continue
        cand = dp[: cap + 1 - wi] + v[i]
        upper = dp[wi:]
        np.greater(cand, upper, out=take[i, wi:])
        np.maximum(upper, cand, out=upper)
    mask = np.zeros(k, dtype=bool)
    c = cap
    for i in range(k - 1, -1, -1):
        if take[i, c]:
            mask[i] = True
            c -= int(w[i])
    return mask


def _pareto_dp(v, w, cap, work_limit) -> np.ndarray | None:
    """Exact knapsack over Pareto-optimal (weight, value) states, independent of the capacity size.

    Returns None when the total number of states would exceed ``work_limit``.
    """
    k = v.size
    weights = np.zeros(1, dtype=np.int64)
    values = np.zeros(1)
    parents: list[np.ndarray] = []
    takes: list[np.ndarray] = []
    work = 0
    for i in range(k):
        wi, vi = int(w[i]), float(v[i])
        n_old = weights.size
        n_new = int(np.searchsorted(weights, cap - wi, side="right"))  # states that can take item i
        total = n_old + n_new
        new_pos = np.searchsorted(weights, weights[:n_new] + wi, side="right") + np.arange(n_new)
        is_new = np.zeros(total, dtype=bool)
        is_new[new_pos] = True
        all_w = np.empty(total, dtype=np.int64)
        all_v = np.empty(total)
        parent = np.empty(total, dtype=np.int64)
        all_w[is_new], all_w[~is_new] = weights[:n_new] + wi, weights
        all_v[is_new], all_v[~is_new] = values[:n_new] + vi, values
        parent[is_new], parent[~is_new] = np.arange(n_new), np.arange(n_old)
        # Keep states whose value beats every lighter (or equal-weight, earlier) state ...
        keep = np.empty(total, dtype=bool)
        keep[0] = True
        keep[1:] = all_v[1:] > np.maximum.accumulate(all_v)[:-1]
        idx = np.flatnonzero(keep)
        # ... and of equal weights only the last kept one (the most valuable).
        last = np.ones(idx.size, dtype=bool)
        last[:-1] = all_w[idx[:-1]] != all_w[idx[1:]]
        idx = idx[last]
        weights, values = all_w[idx], all_v[idx]
        parents.append(parent[idx])
        takes.append(is_new[idx])
        work += idx.size
        if work > work_limit:
            return None
    mask = np.zeros(k, dtype=bool)
    s = weights.size - 1  # values increase with weight: the heaviest state is the best
    for i in range(k - 1, -1, -1):
        mask[i] = takes[i][s]
        s = int(parents[i][s])
    return mask


def _scaled_dp(v, w, cap, cell_limit) -> np.ndarray:
    """Dense DP on weights scaled by a granularity g, rounded up so the answer always fits."""
    k = v.size
    g = max(1, math.ceil(k * (cap + 1) / cell_limit))
    return _dense_dp(v, -(-w // g), cap // g)
