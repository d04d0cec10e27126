"""Pin the thread pools of BLAS, torch and FAISS for benchmarks and evaluation runs.

FAISS, OpenBLAS and torch each start a pool as wide as the machine; on a small machine they
then compete for the same cores and timings swing tenfold. The environment variables only
reach libraries loaded later (numpy's BLAS is usually loaded by now), so pools already
running are limited through threadpoolctl as well.
"""

from __future__ import annotations

import os

__all__ = ["pin_threads"]


def pin_threads(threads: int) -> None:
    """Limit BLAS, OpenMP, torch and FAISS to ``threads`` threads each."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
    except ImportError:  # pragma: no cover - a scikit-learn dependency, present with sentence-transformers
        pass
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:  # pragma: no cover
        pass
    try:
        import faiss

        faiss.omp_set_num_threads(threads)
    except ImportError:  # pragma: no cover
        pass
