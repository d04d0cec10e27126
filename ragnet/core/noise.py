"""ReflectiveRAG noise removal and the redundancy metric, on embedding vectors.

A chunk is *noise* when it is only weakly related to the query, or when it mostly repeats what the
other chunks already say. The score of chunk ``i`` among ``n`` retrieved chunks is::

    rho_i = cos(c_i, q) - 1/(n-1) * sum_{j != i} cos(c_i, c_j)        (rho_i = cos(c_i, q) when n == 1)

The weights are ``softmax(alpha * rho)`` with ``alpha = 5``. ``filter`` keeps the best ``p = 70 %``.
The redundancy of a selection is its mean pairwise cosine.

Vectors are L2-normalised here, so callers may pass raw embeddings. Zero vectors have cosine 0 with
everything. The off-chunk sum uses ``sum_j cos(c_i, c_j) = u_i . sum_j u_j`` (``u`` the unit
vectors), so scoring costs O(n d), not O(n^2 d).

Example:
    >>> import numpy as np
    >>> q = np.array([1.0, 0.0])
    >>> chunks = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> filter(q, chunks, keep=2).tolist()
    [0, 1]
    >>> round(redundancy_ratio(chunks), 3)
    0.333
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ragnet.errors import InputError

__all__ = ["filter", "normalize", "redundancy_ratio", "redundant_pair_share", "scores", "weights"]


def normalize(vectors) -> np.ndarray:
    """Return float64 copies of ``vectors`` scaled to unit length along the last axis (zeros stay zero).

    Example:
        >>> normalize([[0.0, 2.0], [0.0, 0.0]]).tolist()
        [[0.0, 1.0], [0.0, 0.0]]
    """
    x = np.array(vectors, dtype=np.float64)
    if x.ndim == 0 or x.size == 0:
        return x
    rows = x.reshape(-1, x.shape[-1])
    rows, inv = _inverse_norms(rows, "vectors")
    return (rows * inv[:, None]).reshape(x.shape)


def scores(query_vec, chunk_vecs) -> np.ndarray:
    """Noise-removal score rho per chunk: relevance to the query minus mean similarity to the others.

    Args:
        query_vec: query embedding, shape ``(d,)``.
        chunk_vecs: chunk embeddings, shape ``(n, d)``.

    Returns:
        ``rho``, shape ``(n,)``. Higher means more relevant and less redundant.

    Raises:
        InputError: wrong shapes, mismatched dimensions or non-finite values.

    Example:
        >>> scores([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]]).tolist()
        [1.0, 0.0]
    """
    q, c, inv = _prepare(query_vec, chunk_vecs)
    n = c.shape[0]
    rel = (c @ q) * inv
    if n < 2:
        return rel
    # sum_j cos(c_i, c_j) = u_i . sum_j u_j with u = unit rows; computed without materialising u.
    total = inv @ c
    self_sim = (inv > 0).astype(np.float64)  # cos(c_i, c_i): 1, or 0 for a zero vector
    others = (c @ total) * inv - self_sim
    return rel - others / (n - 1)


def weights(rho, alpha: float = 5.0) -> np.ndarray:
    """Softmax of ``alpha * rho``: the chunks' relative weights, summing to 1.

    Example:
        >>> weights([0.0, 0.0]).tolist()
        [0.5, 0.5]
    """
    alpha = _check_alpha(alpha)
    r = np.asarray(rho, dtype=np.float64)
    if r.ndim != 1:
        raise InputError(f"rho must be one-dimensional, got shape {r.shape}", argument="rho")
    if r.size == 0:
        return r.copy()
    if not np.all(np.isfinite(r)):
        raise InputError("rho must be finite", argument="rho")
    z = alpha * r
    e = np.exp(z - z.max())
    return e / e.sum()


def filter(query_vec, chunk_vecs, alpha: float = 5.0, keep: float | int = 0.7) -> np.ndarray:  # noqa: A001
    """Indices of the chunks to keep, best (highest weight) first.

    Args:
        query_vec: query embedding, shape ``(d,)``.
        chunk_vecs: chunk embeddings, shape ``(n, d)``.
        alpha: softmax temperature multiplier (the study's 5).
        keep: a float in (0, 1] keeps ``ceil(keep * n)`` chunks (at least 1). An int >= 1 keeps that
            many (capped at n). Note ``keep=1`` keeps one chunk, while ``keep=1.0`` keeps all.

    Returns:
        int64 indices into ``chunk_vecs``, ordered by weight, descending (ties by index).

    Raises:
        InputError: bad shapes/values, ``alpha`` not finite, or ``keep`` out of range.

    Example:
        >>> filter([1.0, 0.0], [[0.0, 1.0], [1.0, 0.1], [0.7, 0.7]], keep=0.5).tolist()
        [1, 2]
    """
    count = _keep_count(keep)
    w = weights(scores(query_vec, chunk_vecs), alpha)
    n = w.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    k = count(n)
    order = np.argsort(-w, kind="stable")
    return order[:k].astype(np.int64)


def redundancy_ratio(chunk_vecs) -> float:
    """Mean pairwise (off-diagonal) cosine similarity of a selection; 0.0 for fewer than 2 chunks.

    Example:
        >>> redundancy_ratio([[1.0, 0.0], [1.0, 0.0]])
        1.0
    """
    c, inv = _prepare_chunks(chunk_vecs)
    n = c.shape[0]
    if n < 2:
        return 0.0
    total = inv @ c  # sum of the unit vectors
    off = float(total @ total) - float(np.count_nonzero(inv))
    return off / (n * (n - 1))


def redundant_pair_share(chunk_vecs, threshold: float = 0.85) -> float:
    """Share of chunk pairs whose cosine similarity is at least ``threshold``; 0.0 for fewer than 2 chunks.

    Example:
        >>> redundant_pair_share([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0]])
        0.3333333333333333
    """
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or math.isnan(threshold):
        raise InputError(f"threshold must be a number, got {threshold!r}", argument="threshold")
    c, inv = _prepare_chunks(chunk_vecs)
    n = c.shape[0]
    if n < 2:
        return 0.0
    u = c * inv[:, None]
    sim = u @ u.T
    iu = np.triu_indices(n, k=1)
    return float(np.count_nonzero(sim[iu] >= threshold)) / (n * (n - 1) // 2)


# --------------------------------------------------------------------------- helpers


def _inverse_norms(x: np.ndarray, argument: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(x, 1 / row norms)`` with 0 for zero rows; raises on NaN/inf, rescales huge values."""
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    if not np.all(np.isfinite(norms)):
        if not np.all(np.isfinite(x)):
            raise InputError(f"{argument} must be finite (found NaN or inf)", argument=argument)
        x = x / np.abs(x).max()  # finite but so large that squares overflow
        norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    inv = np.zeros_like(norms)
    np.divide(1.0, norms, out=inv, where=norms > 0)
    return x, inv


def _prepare_chunks(chunk_vecs) -> tuple[np.ndarray, np.ndarray]:
    try:
        c = np.asarray(chunk_vecs, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"chunk_vecs must be numbers ({exc})", argument="chunk_vecs") from None
    if c.size == 0 and c.ndim <= 2:
        c = c.reshape(0, c.shape[-1] if c.ndim == 2 else 0)
        return c, np.zeros(0)
    if c.ndim != 2:
        raise InputError(f"chunk_vecs must have shape (n, d), got {c.shape}", argument="chunk_vecs")
    return _inverse_norms(c, "chunk_vecs")


def _prepare(query_vec, chunk_vecs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (unit query, raw chunk rows, inverse chunk norms)."""
    try:
        q = np.asarray(query_vec, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"query_vec must be numbers ({exc})", argument="query_vec") from None
    if q.ndim == 2 and q.shape[0] == 1:
        q = q[0]
    if q.ndim != 1:
        raise InputError(f"query_vec must have shape (d,), got {q.shape}", argument="query_vec")
    q2, q_inv = _inverse_norms(q[None, :], "query_vec")
    q = q2[0] * q_inv[0]
    c, inv = _prepare_chunks(chunk_vecs)
    if c.shape[0] == 0:
        return q, c.reshape(0, q.shape[0]), inv
    if c.shape[1] != q.shape[0]:
        raise InputError(
            f"query_vec has dimension {q.shape[0]} but chunk_vecs has {c.shape[1]}", argument="chunk_vecs"
        )
    return q, c, inv


def _check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha):
        raise InputError(f"alpha must be a finite number, got {alpha!r}", argument="alpha")
    return float(alpha)


def _keep_count(keep):
    """Validate ``keep`` and return ``n -> number of chunks kept``."""
    if isinstance(keep, bool) or not isinstance(keep, numbers.Real):
        raise InputError(f"keep must be a fraction in (0, 1] or a count >= 1, got {keep!r}", argument="keep")
    if isinstance(keep, numbers.Integral):
        if keep < 1:
            raise InputError(f"keep as a count must be >= 1, got {keep}", argument="keep")
        return lambda n: min(int(keep), n)
    if not (0.0 < keep <= 1.0):
        raise InputError(f"keep as a fraction must be in (0, 1], got {keep!r}", argument="keep")
    # The small epsilon stops float error (0.7 * 10 = 7.000000000000001) from keeping an extra chunk.
    return lambda n: min(n, max(1, math.ceil(keep * n - 1e-9)))
