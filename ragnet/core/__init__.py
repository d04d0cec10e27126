"""The numpy-only core: no LLM, no DSPy, no torch.

* :mod:`ragnet.core.knapsack` - Token-Constrained Top-Kmax (0/1 knapsack over chunk tokens).
* :mod:`ragnet.core.noise` - ReflectiveRAG noise removal and the redundancy metric.
* :mod:`ragnet.core.rules` - the Chunk Filter metadata rules (drop contradicting, add matching).

Example:
    >>> from ragnet.core import knapsack, noise
    >>> knapsack.select([0.9, 0.2], [100, 50], budget=120).tolist()
    [0]
    >>> noise.filter([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], keep=1).tolist()
    [0]
"""

from __future__ import annotations

from ragnet.core import knapsack, noise, rules

__all__ = ["knapsack", "noise", "rules"]
