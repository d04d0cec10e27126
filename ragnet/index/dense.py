"""FAISS inner-product index over L2-normalised vectors (so scores are cosines).

Kinds:
    ``flat``: exact search (``IndexFlatIP``); the default below ``threshold`` vectors.
    ``hnsw``: graph search (``IndexHNSWFlat``, M=32, efSearch=128, inner product).
    ``ivf``: inverted lists (``IndexIVFFlat``, nlist ~ 4*sqrt(n), nprobe 16).
    ``ivfpq``: compressed, on disk (``ragnet.index.ivfpq``: IVF-PQ with memory-mapped
        inverted lists); written by ``ragnet.index.writer``, loaded here.
    ``auto``: ``flat`` below ``threshold`` vectors (default 50_000), else ``hnsw`` (the
        index writer also switches to ``ivfpq`` for very large corpora).

Files are FAISS's native format, written atomically (temp file, then rename).

Example:
    >>> import numpy as np
    >>> vecs = np.eye(4, dtype=np.float32)
    >>> dense = DenseIndex.build(vecs)
    >>> scores, ids = dense.search(vecs[:1], 2)
    >>> int(ids[0, 0]), dense.kind
    (0, 'flat')
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ragnet._atomic import atomic_path
from ragnet.errors import IndexFormatError, InputError, require
from ragnet.index.untrusted import bounded_faiss_read, check_counts, check_ids, faiss_header, flat_faiss_size, unreadable

KINDS = ("auto", "flat", "hnsw", "ivf", "ivfpq")
HNSW_M = 32
HNSW_EF_SEARCH = 128
HNSW_EF_CONSTRUCTION = 200
IVF_NPROBE = 16
_FOURCC = {"flat": b"IxFI", "hnsw": b"IHNf", "ivf": b"IwFl"}  # the FAISS file types DenseIndex.build's kinds write


def _faiss():
    return require("faiss", purpose="dense vector search")


class DenseIndex:
    """A FAISS index plus the kind it was built as.

    Args:
        index: a ``faiss.Index`` with inner-product metric.
        kind: ``"flat"``, ``"hnsw"`` or ``"ivf"``.
    """

    def __init__(self, index, kind: str) -> None:
        self.index = index
        self.kind = kind
        self._tune()

    def _tune(self) -> None:
        if self.kind == "hnsw":
            self.index.hnsw.efSearch = HNSW_EF_SEARCH
        elif self.kind == "ivf":
            self.index.nprobe = min(IVF_NPROBE, self.index.nlist)

    @property
    def ntotal(self) -> int:
        """Number of stored vectors."""
        return int(self.index.ntotal)

    @property
    def dimension(self) -> int:
        """Vector dimension."""
        return int(self.index.d)

    @classmethod
    def build(cls, vectors: np.ndarray, kind: str = "auto", threshold: int = 50_000) -> "DenseIndex":
        """Build an index over ``vectors`` (rows L2-normalised, float32).

        Args:
            vectors: ``(n, d)`` array.
            kind: one of ``"auto"``, ``"flat"``, ``"hnsw"``, ``"ivf"``.
            threshold: for ``"auto"``: ``flat`` below this many vectors, else ``hnsw``.

        Example:
            >>> DenseIndex.build(np.eye(3, dtype=np.float32), kind="hnsw").kind
            'hnsw'
        """
        if kind not in KINDS:
            raise InputError(f"unknown FAISS index kind {kind!r}; choose one of {', '.join(KINDS)}", argument="faiss_index")
        if kind == "ivfpq":
            raise InputError("the on-disk ivfpq kind is built by Index.build / ragnet.index.writer, not in RAM",
                             argument="faiss_index")
        faiss = _faiss()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise InputError(f"vectors must be 2-D, got shape {vectors.shape}", argument="vectors")
        n, d = vectors.shape
        if kind == "auto":
            kind = "flat" if n < threshold else "hnsw"
        if kind == "flat":
            index = faiss.IndexFlatIP(d)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(d, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        else:
            nlist = max(1, min(int(4 * math.sqrt(max(n, 1))), max(1, n // 39)))
            quantizer = faiss.IndexFlatIP(d)
            index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
            if n:
                index.train(vectors)
        if n:
            index.add(vectors)
        return cls(index, kind)

    def search(self, queries: np.ndarray, n: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``n`` inner products for each query row.

        Args:
            queries: ``(m, d)`` (or ``(d,)``) float32 query vectors.
            n: how many neighbours.
            allowed: when given, only these rows can be returned (a scope): FAISS filters them
                during the search (an ``IDSelectorBitmap`` in the search parameters), so the
                ``n`` found are the best of the scope, not the survivors of a larger unfiltered
                top (``hnsw`` and ``ivf`` stay approximate inside it).

        Returns:
            ``(scores, ids)``, each ``(len(queries), n')`` with ``n' = min(n, ntotal)``, or the
            scope's size; ids are ``-1`` where the index found fewer (possible for ``hnsw``/``ivf``).

        Example:
            >>> dense = DenseIndex.build(np.eye(4, dtype=np.float32))
            >>> query = np.array([[0.8, 0.0, 0.0, 0.6]], dtype=np.float32)  # nearest row 0, then row 3
            >>> dense.search(query, 1)[1].tolist(), dense.search(query, 1, allowed=np.array([1, 3]))[1].tolist()
            ([[0]], [[3]])
        """
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        n = min(int(n), self.ntotal if allowed is None else len(allowed))
        if n <= 0:
            empty = np.zeros((len(queries), 0), dtype=np.float32)
            return empty, empty.astype(np.int64)
        if allowed is None:
            return self.index.search(queries, n)
        faiss = _faiss()
        mask = np.zeros(self.ntotal, dtype=bool)
        mask[np.asarray(allowed, dtype=np.int64)] = True
        bits = np.packbits(mask, bitorder="little")  # FAISS reads bit (row & 7) of byte (row >> 3)
        selector = faiss.IDSelectorBitmap(self.ntotal, faiss.swig_ptr(bits))
        if self.kind == "hnsw":
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=int(self.index.hnsw.efSearch))
        elif self.kind in ("ivf", "ivfpq"):
            params = faiss.SearchParametersIVF(sel=selector, nprobe=int(faiss.extract_index_ivf(self.index).nprobe))
        else:
            params = faiss.SearchParameters(sel=selector)
        scores, ids = self.index.search(queries, n, params=params)
        del bits  # the selector reads the bitmap until here
        return scores, ids

    def save(self, path: str | os.PathLike) -> None:
        """Write the index atomically in FAISS's native format."""
        faiss = _faiss()
        with atomic_path(path) as tmp:
            faiss.write_index(self.index, str(tmp))

    @classmethod
    def load(cls, path: str | os.PathLike, kind: str, nprobe: int | None = None, *,
             count: int | None = None, dimension: int | None = None) -> "DenseIndex":
        """Read an index written by ``save`` (or, for ``ivfpq``, by the index writer).

        The file is untrusted (``ragnet.index.untrusted``): its header must name the recorded kind
        and, when given, ``count`` vectors of ``dimension``; a flat file must be exactly the size its
        header describes; FAISS reads it with every allocation bounded by the file's size; and every
        id an IVF index stores must be a distinct row below ``count``, all checked here once.

        Args:
            path: the FAISS file.
            kind: the kind recorded in the manifest.
            nprobe: lists scanned per query for ``ivfpq`` (its recorded default when None).
            count: the number of vectors the file must hold (the manifest's ``chunk_count``).
            dimension: their dimension (the manifest's ``dimension``).

        Raises:
            IndexFormatError: the file is missing, not a readable FAISS index of that kind, or
                disagrees with ``count`` / ``dimension`` (one line naming the file).
        """
        if kind not in _FOURCC and kind != "ivfpq":
            raise IndexFormatError(f"unknown FAISS index kind {kind!r} recorded for {path}; rebuild with `ragnet index`")
        if kind == "ivfpq":
            from ragnet.index import ivfpq

            return cls(ivfpq.load(path, nprobe or ivfpq.NPROBE, count=count, dimension=dimension), kind)
        faiss = _faiss()
        path = Path(path)
        if not path.is_file():
            raise IndexFormatError(f"FAISS file {path} is missing; rebuild with `ragnet index`")
        fourcc, d, ntotal = faiss_header(path)
        if fourcc != _FOURCC[kind]:
            raise unreadable(path, f"it holds a FAISS index of type {fourcc!r}, not the {kind} kind the manifest records")
        check_counts(path, d, ntotal, count, dimension)
        size = path.stat().st_size
        if kind == "flat" and flat_faiss_size(path) != size:
            raise unreadable(path, f"its header describes {flat_faiss_size(path)} bytes, but it has {size}")
        try:
            with bounded_faiss_read(faiss, size):
                index = faiss.read_index(str(path))
        except Exception as exc:  # noqa: BLE001 - FAISS raises RuntimeError with C++ text
            raise unreadable(path, exc) from exc
        if kind == "ivf":
            ivf = faiss.extract_index_ivf(index)
            lists = ivf.invlists
            if (int(ivf.quantizer.ntotal), int(ivf.quantizer.d), int(lists.nlist)) != (int(ivf.nlist), d, int(ivf.nlist)):
                raise unreadable(path, f"its coarse quantizer ({int(ivf.quantizer.ntotal)} centroids) or inverted "
                                       f"lists ({int(lists.nlist)}) do not match its {int(ivf.nlist)} lists")
            check_ids(path, (faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i))
                             for i in range(lists.nlist) if lists.list_size(i)), int(index.ntotal))
        return cls(index, kind)
