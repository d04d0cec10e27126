"""Write an index folder from shards of chunks and their vectors.

``Index.build`` (one process), ``Index.build_from_shards`` (precomputed vectors, e.g. the
scale benchmark) and the Ray build all end here, so every index is written the same way:

* chunks stream into the chunk store (``chunks.jsonl`` + offsets + sorted ids) and the
  metadata catalog, never all held as Python objects;
* vectors go into a memory-mapped ``.npy`` file (float32 ``embeddings.npy``, or float16
  ``vectors.f16.npy`` for the on-disk IVF-PQ kind, used only to re-score candidates);
* each shard is tokenised for BM25 on its own, and the shards' term counts are merged
  with global document frequencies, so scores equal those of one index over the corpus;
* the dense index is built last from the vector file: in RAM for ``flat``/``hnsw``/``ivf``,
  or trained on a sample and added shard by shard into on-disk inverted lists (``ivfpq``).

The writer writes into a folder the caller renames into place (``ragnet._atomic.atomic_dir``).
"""

from __future__ import annotations

import errno
import os

import shutil
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.index import ivfpq
from ragnet.index.catalog_store import CatalogWriter
from ragnet.index.chunk_store import ChunkStoreWriter
from ragnet.index.dense import DenseIndex
from ragnet.index.passages import passage_text
from ragnet.index.sparse import SparseIndex
from ragnet.index.sparse_shards import merge as merge_bm25
from ragnet.index.sparse_shards import ShardCounts, tokenize_shard

EMBEDDINGS = "embeddings.npy"  # float32, the in-RAM kinds
VECTORS_F16 = "vectors.f16.npy"  # float16, re-scoring vectors of the on-disk kind
DENSE = "dense.faiss"
BM25_DIR = "bm25"
CATALOG_DIR = "catalog"
_SHARD_ROWS = 100_000  # vectors per IVF-PQ shard file while adding


def resolve_kind(kind: str, count: int, hnsw_from: int, ivfpq_from: int) -> str:
    """The FAISS kind ``"auto"`` means for ``count`` vectors: exact ``flat`` below
    ``hnsw_from``, ``hnsw`` below ``ivfpq_from``, on-disk ``ivfpq`` from there
    (see :class:`ragnet.index.options.DenseOptions`).

    Example:
        >>> [resolve_kind("auto", n, 50_000, 200_000) for n in (10, 60_000, 2_000_000)]
        ['flat', 'hnsw', 'ivfpq']
    """
    if kind != "auto":
        return kind
    if count < hnsw_from:
        return "flat"
    return "hnsw" if count < ivfpq_from else "ivfpq"



def _reserve(path: Path) -> None:
    """Give the memory-mapped file its disk blocks now: writing through a map into a sparse file
    on a full disk kills the process with SIGBUS, whereas reserving fails here with ENOSPC, an
    ordinary OSError that the build reports in one line."""
    if hasattr(os, "posix_fallocate"):
        with open(path, "r+b") as fh:
            try:
                os.posix_fallocate(fh.fileno(), 0, os.fstat(fh.fileno()).st_size)
            except OSError as exc:
                if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system without fallocate
                    return
                raise

class IndexWriter:
    """Streams shards of ``(chunks, vectors)`` into an index folder.

    Args:
        folder: an empty folder (the temporary one of an atomic swap).
        count: the total number of chunks that will be added (sizes the vector file).
        dimension: the embedding dimension.
        kind: the resolved FAISS kind (``flat``, ``hnsw``, ``ivf`` or ``ivfpq``).
        ivfpq_params: settings for ``ivfpq`` (defaults resolved from ``count``).
        stemmer: the BM25 stemmer: ``"auto"`` (English when PyStemmer is installed), a
            PyStemmer language, or None.
        trained: for ``ivfpq``, an empty IVF-PQ index already trained (an update keeps the
            quantizers of the index it replaces); None trains one on a sample.
    """

    def __init__(self, folder: Path, count: int, dimension: int, kind: str,
                 ivfpq_params: ivfpq.IVFPQParams | None = None, stemmer: str | None = "auto",
                 trained: Any = None) -> None:
        from numpy.lib.format import open_memmap

        if count < 1:
            raise InputError("an index needs at least one chunk", argument="docs")
        self.folder = Path(folder)
        self.count = int(count)
        self.dimension = int(dimension)
        self.kind = kind
        self.params = (ivfpq_params or ivfpq.IVFPQParams()).resolve(count, dimension) if kind == "ivfpq" else None
        self.stemmer = stemmer
        self.trained = trained
        self.vector_file = VECTORS_F16 if kind == "ivfpq" else EMBEDDINGS
        dtype = np.float16 if kind == "ivfpq" else np.float32
        self._vectors = open_memmap(self.folder / self.vector_file, mode="w+", dtype=dtype,
                                    shape=(self.count, self.dimension))
        _reserve(self.folder / self.vector_file)
        self._chunks = ChunkStoreWriter(self.folder)
        self._catalog = CatalogWriter(self.folder / CATALOG_DIR)
        self._bm25_shards: list[Any] = []
        self._docs: set[str] = set()
        self.rows = 0
        self.stats: dict[str, float] = {"tokenize_s": 0.0}  # seconds per phase

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray, passages: Sequence[str] | Any = None) -> None:
        """Append a shard: ``chunks`` in row order, their L2-normalised vectors, and the texts
        BM25 indexes (``passage_text`` of each chunk when None), or their BM25 term counts
        already made elsewhere (a ``ragnet.index.sparse_shards.ShardCounts``)."""
        vectors = np.asarray(vectors)
        if vectors.shape != (len(chunks), self.dimension):
            raise InputError(f"a shard of {len(chunks)} chunks came with vectors of shape {vectors.shape}, "
                             f"expected ({len(chunks)}, {self.dimension})", argument="vectors")
        end = self.rows + len(chunks)
        if end > self.count:
            raise InputError(f"more chunks than the {self.count} announced", argument="count")
        self._vectors[self.rows:end] = vectors
        for i, chunk in enumerate(chunks):
            self._chunks.add(chunk)
            self._catalog.add(self.rows + i, chunk.id, chunk.metadata, chunk.title)
            self._docs.add(chunk.doc_id)
        t0 = time.perf_counter()
        if isinstance(passages, ShardCounts):
            if len(passages) != len(chunks):
                raise InputError(f"a shard of {len(chunks)} chunks came with BM25 counts of {len(passages)}",
                                 argument="passages")
            self._bm25_shards.append(passages)
        else:
            texts = list(passages) if passages is not None else [passage_text(c) for c in chunks]
            self._bm25_shards.append(tokenize_shard(texts, self.stemmer))
        self.stats["tokenize_s"] += time.perf_counter() - t0
        self.rows = end

    def finish(self) -> tuple[DenseIndex, SparseIndex, dict[str, Any]]:
        """Write the dense index, BM25 and the stores; returns them and the manifest fields."""
        if self.rows != self.count:
            raise InputError(f"{self.rows} chunks were added, {self.count} were announced", argument="count")
        t0 = time.perf_counter()
        self._vectors.flush()
        self._chunks.close()
        self._catalog.close()
        self.stats["stores_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        sparse = merge_bm25(self._bm25_shards)
        self._bm25_shards = []
        sparse.save(self.folder / BM25_DIR)
        self.stats["bm25_merge_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        vectors = self._vectors
        if self.kind == "ivfpq":
            dense = self._write_ivfpq(vectors)
        else:
            dense = DenseIndex.build(np.asarray(vectors), kind=self.kind)
            dense.save(self.folder / DENSE)
        del self._vectors
        self.stats["dense_s"] = time.perf_counter() - t0
        fields = {
            "faiss_index": dense.kind,
            "vectors": {"file": self.vector_file, "dtype": str(vectors.dtype)},
            "ivfpq": self.params.to_dict() if self.params is not None else None,
            "doc_count": len(self._docs),
        }
        return dense, sparse, fields

    def _write_ivfpq(self, vectors: np.ndarray) -> DenseIndex:
        params = self.params
        t0 = time.perf_counter()
        trained = self.trained
        if trained is None:
            sample = np.asarray(vectors[ivfpq.sample_rows(self.count, params.train_size)], dtype=np.float32)
            trained = ivfpq.train(sample, params)
            del sample
        self.stats["ivfpq_train_s"] = time.perf_counter() - t0
        parts = self.folder / ".ivfpq-shards"
        parts.mkdir()
        try:
            files = [
                ivfpq.add_shard(trained, vectors[start:start + _SHARD_ROWS], start, parts / f"{start}.faiss")
                for start in range(0, self.count, _SHARD_ROWS)
            ]
            ivfpq.merge(trained, files, self.folder / DENSE)
        finally:
            shutil.rmtree(parts, ignore_errors=True)
        return DenseIndex(ivfpq.load(self.folder / DENSE, params.nprobe), "ivfpq")
