"""Map retrieval scores to additive relevance for the knapsack.

Retrieval scores are not additive utilities: a knapsack on raw cosine packs many short,
weakly related chunks, because ten chunks at 0.30 "outweigh" one at 0.80; on pooled HotpotQA
the exponential transform puts all the gold in context far more often than raw cosine
(``ragnet eval retrieval``, docs/results/README.md). The transforms here make relevance decay
fast with distance from the best score, so the knapsack follows rank order where it matters
and uses the leftover space well.

Transforms:
    ``exp``:    exp((s - max(s)) / temperature)  (default; temperature chosen on dev data with
                ``ragnet eval retrieval``)
    ``rank``:   1 / (rank + 1) ** (1 / temperature)  (ignores score gaps; temperature < 1
                keeps it steep)
    ``linear``: max(s - min(s), 0) / (max(s) - min(s))  (the raw shape, min-max scaled)
    ``raw``:    s unchanged (negative scores then never get selected)

Example:
    >>> import numpy as np
    >>> relevance(np.array([0.9, 0.8, 0.5]), "exp", temperature=0.1).round(3).tolist()
    [1.0, 0.368, 0.018]
"""

from __future__ import annotations

import numpy as np

TRANSFORMS = ("exp", "rank", "linear", "raw")


def relevance(scores: np.ndarray, transform: str = "exp", temperature: float = 0.05) -> np.ndarray:
    """Relevance per candidate (higher is better, > 0 for anything worth selecting).

    Args:
        scores: retrieval scores, higher is better, in rank order or not.
        transform: one of ``TRANSFORMS``.
        temperature: decay scale for ``exp`` and ``rank``; must be > 0.

    Returns:
        float64 array of the same length.
    """
    s = np.asarray(scores, dtype=np.float64)
    if transform not in TRANSFORMS:
        raise ValueError(f"unknown relevance transform {transform!r}; choose from {TRANSFORMS}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if s.size == 0:
        return s
    if transform == "exp":
        return np.exp((s - s.max()) / temperature)
    if transform == "rank":
        ranks = np.empty(s.size)
        ranks[np.argsort(-s, kind="stable")] = np.arange(s.size)
        return 1.0 / (ranks + 1.0) ** (1.0 / temperature)
    if transform == "linear":
        span = s.max() - s.min()
        return np.ones_like(s) if span == 0 else (s - s.min()) / span
    return s.copy()
