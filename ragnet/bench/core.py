"""Micro-benchmarks of the numpy core (``ragnet bench core``).

Times the knapsack (exact and greedy) and noise removal on synthetic data shaped like real
retrieval output, using ``time.perf_counter``. It reports medians over repeats in milliseconds and
the knapsack's optimality figures. Pin BLAS threads (``OMP_NUM_THREADS=1``) before Python starts,
or timings swing.

Example:
    >>> r = run_core_bench(repeats=1, sizes=(100,), noise_sizes=(50,), gap_instances=1)
    >>> sorted(r)
    ['environment', 'knapsack', 'noise', 'optimality', 'repeats']
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ragnet.core import knapsack, noise
from ragnet.errors import InputError

__all__ = ["run_core_bench", "synthetic_candidates", "synthetic_vectors"]


def synthetic_candidates(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Relevance scores and token counts resembling ``n`` retrieved chunks.

    * Tokens: lognormal around 130 (sigma 0.5), rounded and clipped to [20, 600].
    * Relevance: calibrated ``exp((cos - max cos) / 0.05)`` from cosines ~ N(0.35, 0.12).
      The best chunk scores 1 and the tail decays fast, as a temperature-scaled retriever's does.

    Example:
        >>> rel, tok = synthetic_candidates(5)
        >>> float(rel.max()), int(tok.min()) >= 20
        (1.0, True)
    """
    rng = np.random.default_rng(seed)
    cos = np.clip(rng.normal(0.35, 0.12, n), -1.0, 1.0)
    relevance = np.exp((cos - cos.max()) / 0.05)
    tokens = np.clip(np.round(rng.lognormal(np.log(130.0), 0.5, n)), 20, 600).astype(np.int64)
    return relevance, tokens


def synthetic_vectors(n: int, dim: int = 384, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A unit query vector and ``n`` unit chunk vectors (float32, like the embedder's), mildly query-aligned.

    Example:
        >>> q, c = synthetic_vectors(3, dim=4)
        >>> c.shape, c.dtype.name
        ((3, 4), 'float32')
    """
    rng = np.random.default_rng(seed)
    q = rng.normal(size=dim)
    q /= np.linalg.norm(q)
    c = rng.normal(size=(n, dim)) + 3.0 * q
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    return q.astype(np.float32), c.astype(np.float32)


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1e3, 4)


def run_core_bench(
    repeats: int = 50,
    *,
    budget: int = 32_000,
    sizes: Sequence[int] = (100, 1000, 5000),
    noise_sizes: Sequence[int] = (50, 200, 1000),
    dim: int = 384,
    gap_instances: int = 20,
    seed: int = 0,
) -> dict[str, Any]:
    """Time the core and return a JSON-able dict of medians (ms) and optimality gaps.

    Args:
        repeats: timed calls per measurement (after one warm-up call).
        budget: knapsack token budget.
        sizes: candidate counts for the knapsack.
        noise_sizes: chunk counts for ``noise.filter``.
        dim: embedding dimension for ``noise.filter``.
        gap_instances: random instances at n=1000 over which the certified gap is summarised.
        seed: seed of the synthetic data.

    Returns:
        A dict with these keys:

        * ``knapsack``: one row per (n, method), with ``median_ms``, ``value``, ``upper_bound``,
          ``certified_gap``, ``tokens_used`` and ``selected``.
        * ``optimality``: for exact at n=1000, the certified gap to the LP bound and the true gap
          to the optimum (full DP), plus mean and max certified gaps over ``gap_instances`` seeds.
        * ``noise``: one row per n, with ``median_ms``.
        * ``environment`` and ``repeats``.

    Raises:
        InputError: ``repeats`` or ``gap_instances`` below 1.

    Example:
        >>> r = run_core_bench(repeats=1, sizes=(100,), noise_sizes=(50,), gap_instances=1)
        >>> r["knapsack"][0]["method"], r["noise"][0]["n"]
        ('exact', 50)
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InputError(f"repeats must be an int >= 1, got {repeats!r}", argument="repeats")
    if isinstance(gap_instances, bool) or not isinstance(gap_instances, int) or gap_instances < 1:
        raise InputError(f"gap_instances must be an int >= 1, got {gap_instances!r}", argument="gap_instances")

    rows = []
    for n in sizes:
        rel, tok = synthetic_candidates(n, seed)
        for method in knapsack.METHODS:
            ms = _median_ms(lambda: knapsack.select(rel, tok, budget, method=method), repeats)
            info = knapsack.select_with_info(rel, tok, budget, method=method)
            rows.append(
                {
                    "n": n,
                    "method": method,
                    "budget": budget,
                    "median_ms": ms,
                    "value": info.value,
                    "upper_bound": info.upper_bound,
                    "certified_gap": info.gap,
                    "optimal": info.optimal,
                    "tokens_used": info.tokens_used,
                    "selected": int(info.indices.size),
                }
            )

    rel, tok = synthetic_candidates(1000, seed)
    exact = knapsack.select_with_info(rel, tok, budget)
    greedy = knapsack.select_with_info(rel, tok, budget, method="greedy")
    best = knapsack.optimum(rel, tok, budget)
    gaps = {"exact": [], "greedy": []}
    for s in range(gap_instances):
        r, t = synthetic_candidates(1000, seed + s)
        for method in knapsack.METHODS:
            gaps[method].append(knapsack.select_with_info(r, t, budget, method=method).gap)
    optimality = {
        "n": 1000,
        "budget": budget,
        "exact_certified_gap": exact.gap,
        "exact_gap_to_optimum": float(max(0.0, (best - exact.value) / best)),
        "greedy_certified_gap": greedy.gap,
        "greedy_gap_to_optimum": float(max(0.0, (best - greedy.value) / best)),
        "instances": gap_instances,
        "exact_certified_gap_mean": float(np.mean(gaps["exact"])),
        "exact_certified_gap_max": float(np.max(gaps["exact"])),
        "greedy_certified_gap_mean": float(np.mean(gaps["greedy"])),
        "greedy_certified_gap_max": float(np.max(gaps["greedy"])),
    }

    noise_rows = []
    for n in noise_sizes:
        q, c = synthetic_vectors(n, dim, seed)
        noise_rows.append({"n": n, "dim": dim, "median_ms": _median_ms(lambda: noise.filter(q, c), repeats)})

    return {
        "repeats": repeats,
        "knapsack": rows,
        "optimality": optimality,
        "noise": noise_rows,
        "environment": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpu_count": os.cpu_count(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        },
    }
