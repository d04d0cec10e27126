"""The grouped options of ``Index.build``: which dense index to build, and where to build it.

Each group is a frozen dataclass checked when it is made, so a bad value is reported
before any document is read or embedded, with the field it came from.

Example:
    >>> DenseOptions(kind="hnsw")
    DenseOptions(kind='hnsw', hnsw_from=50000, ivfpq_from=200000, ivfpq=None)
    >>> BuildEngine("ray", workers=4).workers
    4
    >>> DenseOptions(kind="lsh")
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: argument 'dense.kind': unknown dense index kind 'lsh'; choose one of auto, flat, hnsw, ivf, ivfpq
"""

from __future__ import annotations

from dataclasses import dataclass

from ragnet.errors import InputError
from ragnet.index.dense import KINDS
from ragnet.index.ivfpq import IVFPQParams

__all__ = ["BuildEngine", "DenseOptions", "ENGINES", "HNSW_FROM", "IVFPQ_FROM"]

# The chunk counts from which "auto" leaves the exact flat index: HNSW answers as well and faster
# from HNSW_FROM; from IVFPQ_FROM the float32 vectors are too large to keep in RAM comfortably.
HNSW_FROM = 50_000
IVFPQ_FROM = 200_000
ENGINES = ("local", "ray")


def _check_count(value: object, argument: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"must be a positive integer, got {value!r}", argument=argument)


@dataclass(frozen=True)
class DenseOptions:
    """Which FAISS index holds the chunk vectors.

    Attributes:
        kind: ``"auto"`` (exact ``flat`` below ``hnsw_from`` chunks, ``hnsw`` below
            ``ivfpq_from``, else the compressed on-disk ``ivfpq``), ``"flat"``, ``"hnsw"``,
            ``"ivf"`` or ``"ivfpq"``.
        hnsw_from: chunk count from which ``"auto"`` builds HNSW.
        ivfpq_from: chunk count from which ``"auto"`` builds the on-disk IVF-PQ index.
        ivfpq: :class:`~ragnet.index.ivfpq.IVFPQParams` for the ``ivfpq`` kind; None derives
            them from the corpus size.

    Raises:
        InputError: an unknown kind, a threshold that is not a positive integer, or
            ``ivfpq`` that is not ``IVFPQParams``.

    Example:
        >>> DenseOptions(ivfpq=IVFPQParams(nprobe=8)).ivfpq.nprobe
        8
    """

    kind: str = "auto"
    hnsw_from: int = HNSW_FROM
    ivfpq_from: int = IVFPQ_FROM
    ivfpq: IVFPQParams | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"unknown dense index kind {self.kind!r}; choose one of {', '.join(KINDS)}",
                             argument="dense.kind")
        _check_count(self.hnsw_from, "dense.hnsw_from")
        _check_count(self.ivfpq_from, "dense.ivfpq_from")
        if self.ivfpq is not None and not isinstance(self.ivfpq, IVFPQParams):
            raise InputError(f"expected IVFPQParams or None, got {type(self.ivfpq).__name__}",
                             argument="dense.ivfpq")


@dataclass(frozen=True)
class BuildEngine:
    """Where ``Index.build`` chunks, embeds and tokenises.

    Attributes:
        kind: ``"local"`` (this process) or ``"ray"``: a Ray cluster with Ray Data
            (``ragnet.index.ray_build``; needs ``ragnet[scale]``). A Ray build equals a local
            one (same chunk ids and BM25 scores, vectors up to float rounding).
        address: with Ray, the cluster (``"auto"``, ``"ray://head:10001"``); None or
            ``"local"`` starts one on this machine.
        workers: with Ray, the embedding actors (one model each); None: the cluster's CPUs.

    Raises:
        InputError: an unknown kind, or ``address``/``workers`` given to the local engine.

    Example:
        >>> BuildEngine().kind
        'local'
    """

    kind: str = "local"
    address: str | None = None
    workers: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ENGINES:
            raise InputError(f"unknown engine {self.kind!r}; use {' or '.join(map(repr, ENGINES))}",
                             argument="engine.kind")
        if self.workers is not None:
            _check_count(self.workers, "engine.workers")
        if self.kind == "local" and (self.address is not None or self.workers is not None):
            raise InputError("address and workers apply to the 'ray' engine only", argument="engine.kind")
