"""``Index``: chunks + dense (FAISS) + sparse (BM25) retrieval, persisted as one folder.

Build once, load many times, search hybrid:

    score = lam * norm(bm25) + (1 - lam) * norm(cos)

Example:
    >>> import ragnet, tempfile
    >>> docs = [ragnet.Document(id="paris", title="Paris", text="Paris is the capital of France."),
    ...         ragnet.Document(id="rome", title="Rome", text="Rome is the capital of Italy.")]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/idx", show_progress=False)
    >>> [c.id for c in index.search("capital of Italy", k=1)]
    ['rome#0']
    >>> Index.load(index.path).search("capital of Italy", k=1)[0].doc_id
    'rome'

On-disk layout (``format_version`` 2, the one format this ragnet reads; nothing is pickled)::

    manifest.json       format_version, ragnet_version, embedder, dimension, normalize,
                        chunk_count, chunk_tokens, overlap, tokenizer, faiss_index, ivfpq,
                        vectors {file, dtype}, created, files {relative name: sha256}
    chunks.jsonl        one Chunk.to_dict() per line (scores left out), read on demand
    chunks.*.npy        byte offsets and sorted ids (``ragnet.index.chunk_store``)
    embeddings.npy      float32 (chunk_count, dimension), L2-normalised rows; or, for the
    vectors.f16.npy     on-disk ``ivfpq`` kind, float16 rows memory-mapped for re-scoring
    dense.faiss         FAISS native index (+ dense.ivfdata: IVF-PQ inverted lists on disk)
    bm25/               bm25s native save (.npy + JSON) and tokenizer.json
    catalog/            the rule filter's metadata catalog (``ragnet.index.catalog_store``)
    sentences/          optional sentence data (``ragnet.index.sentence_store``)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ragnet._atomic import DirSwap, atomic_dir, check_writable_parent, dir_lock, usual_permissions
from ragnet._hashing import sha256_file
from ragnet.corpus.outputs import INDEX_FORMAT, INDEX_MANIFEST, index_manifest
from ragnet.corpus.types import Chunk, Document
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.catalog_store import FILES as CATALOG_FILES
from ragnet.index.chunk_store import SIDECARS as CHUNK_SIDECARS
from ragnet.index.chunk_store import ChunkStore
from ragnet.index.passages import PASSAGE_FORMAT, passage_text
from ragnet.index.dense import DenseIndex
from ragnet.index.embedder import Embedder, build_embedder
from ragnet.index.file_array import file_backed
from ragnet.index.onnx_backend import AUTO, resolve_backend
from ragnet.index.options import BuildEngine, DenseOptions
from ragnet.index.sentence_store import FILES as SENTENCE_FILES
from ragnet.index.sentence_store import FOLDER as SENTENCES_DIR
from ragnet.index.sentence_store import FORMAT as SENTENCES_FORMAT
from ragnet.index.sentence_store import SPLITTER as SENTENCES_SPLITTER
from ragnet.index.sentence_store import SentenceStore, VectorSpill, embed_unique, idf_of
from ragnet.index.sparse import FILES as BM25_FILES
from ragnet.index.sparse import SparseIndex
from ragnet.index.sources import Sources
from ragnet.index.untrusted import member, npy_header

FORMAT_VERSION = 2
TOKENIZER = "tiktoken:cl100k_base"
MANIFEST = INDEX_MANIFEST
MANIFEST_FORMAT = INDEX_FORMAT  # what marks a folder as ragnet's to replace
CHUNKS = "chunks.jsonl"
EMBEDDINGS = "embeddings.npy"
DENSE = "dense.faiss"
DENSE_IVFDATA = "dense.ivfdata"
BM25_DIR = "bm25"
CATALOG_DIR = "catalog"
MMAP_BM25_FROM = 200_000  # chunks from which the BM25 matrix is memory-mapped instead of read
DENSE_KINDS = ("flat", "hnsw", "ivf", "ivfpq")  # what a manifest may record
_REQUIRED_KEYS = ("format_version", "embedder", "dimension", "chunk_count", "faiss_index", "vectors", "files")
_REBUILD = "rebuild with `ragnet index`"

EmbedderLike = Embedder | str | os.PathLike | None


def _as_embedder(embedder: EmbedderLike) -> Embedder:
    return embedder if isinstance(embedder, Embedder) else Embedder(embedder)


def _normalise_scores(x: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; all-equal input gives zeros."""
    lo, hi = float(x.min()), float(x.max())
    if hi <= lo:
        return np.zeros_like(x, dtype=np.float64)
    return (x.astype(np.float64) - lo) / (hi - lo)


class Index:
    """Chunks of a document collection, searchable by hybrid dense + BM25 retrieval.

    Create with ``Index.build`` (chunk, embed, index, persist) or ``Index.load``.

    Attributes:
        path: the index folder.
        manifest: the parsed ``manifest.json``.
        chunks: all chunks in index order (row ``i`` of the embeddings).
        build_stats: seconds per build phase (``None`` for a loaded index).
        kept_files: after a rebuild, the files in the folder that were not part of the old
            index and were carried into the new one (never deleted).

    Example:
        >>> index = Index.load(index.path)           # a folder written by Index.build / `ragnet index`
        >>> hits = index.search("capital of France", k=2)
        >>> hits[0].id, round(hits[0].score, 2)
        ('paris#0', 1.0)
    """

    def __init__(
        self,
        path: Path,
        manifest: dict[str, Any],
        chunks: ChunkStore,
        embeddings: np.ndarray,
        dense: DenseIndex,
        sparse: SparseIndex,
        embedder: Embedder | None,
        catalog: Any = None,
        build_stats: dict[str, float] | None = None,
    ) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self._chunks = chunks
        self._emb = embeddings  # float32 in RAM, or float16 rows read from disk (FileArray) for the on-disk kind
        self._emb_torch: Any = None  # zero-copy torch view, made on first flat search
        self._dense = dense
        self._sparse = sparse
        self._embedder = embedder
        self._dimension_checked = False
        self._catalog = catalog
        self.build_stats = build_stats
        self.kept_files: list[str] = []  # entries of the old folder that a rebuild carried over
        self._sentences: SentenceStore | None = None
        self._idf: np.ndarray | None = None

    # -- building ----------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        docs: Iterable[Document],
        path: str | os.PathLike,
        chunk_tokens: int = 256,
        overlap: int = 32,
        embedder: EmbedderLike = None,
        *,
        dense: DenseOptions = DenseOptions(),
        engine: BuildEngine = BuildEngine(),
        sentences: bool = True,
        gazetteer: Any = None,
        show_progress: bool = True,
    ) -> "Index":
        """Chunk ``docs``, embed and index the chunks, and save everything to ``path``.

        The folder is written atomically: it appears complete or not at all, and an
        existing index at ``path`` stays intact if the build fails.

        Args:
            docs: the documents (e.g. from ``ragnet.load_documents``).
            path: folder to write; replaced if it already holds a ragnet index (files kept in
                it beside the index survive; see ``kept_files``), refused if it holds anything
                else. Two builds to one folder at once: the second is refused.
            chunk_tokens: chunk size in LM tokens.
            overlap: tokens shared by consecutive chunks of a document.
            embedder: an ``Embedder``, a sentence-transformers name/folder, or None for the
                bundled all-MiniLM-L6-v2. A name or None embeds through the model's fp32 ONNX
                export (torch's vectors, faster; made once per model and machine) unless
                ``$RAGNET_EMBED_BACKEND`` names a backend (``embedder.build_embedder``).
            dense: which FAISS index to build (:class:`~ragnet.index.options.DenseOptions`).
            engine: where to chunk and embed (:class:`~ragnet.index.options.BuildEngine`):
                this process, or a Ray cluster whose workers embed the sentences too.
            sentences: also split every chunk into sentences and embed them (``sentences/``),
                for sentence-level context selection; about as much embedding work again as
                the chunks. Without it, sentence selection embeds candidate sentences per
                question (or add them later with :meth:`add_sentences`).
            gazetteer: optional ``ragnet.corpus.metadata.Gazetteer`` for place metadata.
            show_progress: progress bars for chunking, embedding and BM25.

        Raises:
            InputError: no documents, bad arguments, or ``path`` is a non-index folder.

        Example:
            >>> import tempfile
            >>> docs = [Document(id="d", title="T", text="Some text.")]
            >>> len(Index.build(docs, tempfile.mkdtemp() + "/i", dense=DenseOptions(kind="flat"),
            ...                 show_progress=False))
            1
        """
        _check_option(dense, DenseOptions, "dense")
        _check_option(engine, BuildEngine, "engine")
        given = Path(path)
        path = _through_link(given)
        check_output_folder(path)
        docs = list(docs)
        if not docs:
            raise InputError("no documents to index", argument="docs")
        _check_unique_ids(docs)
        emb = build_embedder(embedder)
        settings = {"chunk_tokens": chunk_tokens, "overlap": overlap, "doc_count": len(docs),
                    "gazetteer": sorted(gazetteer.names) if gazetteer is not None else None}
        # One writer per folder from here to the swap; a second build is refused at once.
        with dir_lock(path):
            check_output_folder(path)  # re-checked under the lock: another process may have written it
            if engine.kind == "ray":
                index = cls._build_ray(docs, path, emb, settings, dense, engine, gazetteer, sentences, show_progress)
            else:
                index = cls._build_locked(docs, path, emb, settings, dense, gazetteer, sentences, show_progress)
        index.path = given
        return index

    @classmethod
    def _build_locked(cls, docs: list[Document], path: Path, emb: Embedder, settings: dict[str, Any],
                      dense: DenseOptions, gazetteer: Any, sentences: bool, show_progress: bool,
                      files: dict[str, Any] | None = None) -> "Index":
        from tqdm.auto import tqdm

        from ragnet.corpus.chunking import chunk_documents

        stats: dict[str, float] = {}
        t_all = time.perf_counter()

        # 1. chunk (the bar counts characters, so it moves inside a long document too)
        t0 = time.perf_counter()
        total_chars = sum(len(d.text) for d in docs if isinstance(getattr(d, "text", None), str))
        with tqdm(total=total_chars, desc="Chunking", unit="char", unit_scale=True, disable=not show_progress,
                  mininterval=0.5) as bar:
            chunks = chunk_documents(docs, settings["chunk_tokens"], settings["overlap"], gazetteer=gazetteer,
                                     progress=bar.update)
        if not chunks:
            raise InputError("the documents produced no chunks (all empty?)", argument="docs")
        stats["chunk_s"] = time.perf_counter() - t0

        # 2. embed unique passages only (model load timed apart: it is cached per process)
        t0 = time.perf_counter()
        emb.load()
        stats["model_load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        passages = [passage_text(c) for c in chunks]
        embeddings = embed_unique(passages, emb, show_progress=show_progress, dtype=np.float32, desc="Embedding")
        stats["embed_s"] = time.perf_counter() - t0

        # 3. sentences (boundaries, tokens, BM25 terms, vectors) for sentence-level selection; built
        # once the writer has the corpus BM25, whose vocabulary the sentence terms index into
        def sentences_from(sparse: SparseIndex, staging: Path) -> dict[str, Any]:
            t0 = time.perf_counter()
            store = SentenceStore.build(chunks, emb, sparse, show_progress=show_progress)
            store.save(staging / SENTENCES_DIR)
            stats["sentences_s"] = time.perf_counter() - t0
            return store.info

        # sources.json: each document's hash and rows (and each file's, from `ragnet index`), for updates
        sources = Sources.of(docs, chunks, files)
        return cls._write(path, [(chunks, embeddings, passages)], len(chunks), emb, dense, settings,
                          sentences_from=sentences_from if sentences else None, stats=stats, t_all=t_all,
                          extra=sources.save)

    @classmethod
    def _build_ray(cls, docs: list[Document], path: Path, emb: Embedder, settings: dict[str, Any],
                   dense: DenseOptions, engine: BuildEngine, gazetteer: Any, sentences: bool,
                   show_progress: bool) -> "Index":
        from ragnet.index import ray_build

        t_all = time.perf_counter()
        ray = ray_build.connect(engine.address, engine.workers)
        workers = engine.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        t0 = time.perf_counter()
        # the workers' sentence vectors wait on disk (same file system as the index), not in memory
        with VectorSpill(path.parent) if sentences else contextlib.nullcontext() as spill:
            count, parts = ray_build.shards(docs, embedder=emb.name, backend=getattr(emb, "backend", None),
                                            chunk_tokens=settings["chunk_tokens"], overlap=settings["overlap"],
                                            gazetteer_names=settings["gazetteer"], workers=workers,
                                            sentence_sink=spill)
            stats = {"chunk_s": time.perf_counter() - t0, "workers": float(workers)}

            def sentences_from(sparse: SparseIndex, staging: Path) -> dict[str, Any]:
                # spans, tokens and BM25 terms here (they need the corpus vocabulary), block by block from
                # the chunks just written; vectors from the workers, read back from the spill in row order
                t0 = time.perf_counter()
                with ChunkStore.open(staging, count) as chunks:
                    info = SentenceStore.write(chunks, emb, sparse, staging / SENTENCES_DIR, count=count,
                                               vectors=spill)
                stats["sentences_s"] = time.perf_counter() - t0
                return info

            return cls._write(path, parts, count, emb, dense, settings,
                              sentences_from=sentences_from if sentences else None, stats=stats, t_all=t_all,
                              show_progress=show_progress)

    @classmethod
    def build_from_shards(
        cls,
        shards: Iterable[tuple[Sequence[Chunk], np.ndarray]],
        path: str | os.PathLike,
        count: int,
        embedder: EmbedderLike = None,
        *,
        dense: DenseOptions = DenseOptions(),
        chunk_tokens: int | None = None,
        overlap: int | None = None,
        show_progress: bool = True,
    ) -> "Index":
        """Write an index from chunks that are already embedded, one shard at a time.

        For corpora too large to hold at once, for vectors computed elsewhere (a Ray job, an
        embedding service) and for the scale benchmark. Only one shard is in memory at a
        time; BM25 statistics are global across shards. No sentence data is written (add it
        with :meth:`add_sentences`).

        Args:
            shards: ``(chunks, vectors)`` pairs in row order; vectors L2-normalised, made by
                ``embedder``'s model (its name is recorded and checked at query time).
            path: the index folder (same rules as :meth:`build`).
            count: the total number of chunks in all shards.
            embedder: the query embedder (or its name); it is not loaded here.
            dense: which FAISS index to build, as for :meth:`build`.
            chunk_tokens, overlap: recorded in the manifest when known.
            show_progress: a progress bar over the chunks written.

        Example:
            >>> import tempfile
            >>> from ragnet.index.embedder import Embedder
            >>> chunk = Chunk(id="d#0", doc_id="d", title="T", text="Some text.", tokens=3)
            >>> vec = Embedder().encode([passage_text(chunk)])
            >>> idx = Index.build_from_shards([([chunk], vec)], tempfile.mkdtemp() + "/i", count=1,
            ...                               show_progress=False)
            >>> idx.search("text", k=1)[0].id
            'd#0'
        """
        _check_option(dense, DenseOptions, "dense")
        given = Path(path)
        path = _through_link(given)
        check_output_folder(path)
        emb = _as_embedder(embedder)
        settings = {"chunk_tokens": chunk_tokens, "overlap": overlap, "doc_count": None, "gazetteer": None}
        with dir_lock(path):
            check_output_folder(path)
            shards = ((chunks, vectors, None) for chunks, vectors in shards)
            index = cls._write(path, shards, count, emb, dense, settings, show_progress=show_progress)
        index.path = given
        return index

    @classmethod
    def _write(cls, path: Path, shards: Iterable[tuple[Sequence[Chunk], np.ndarray, Sequence[str] | None]],
               count: int, emb: Embedder, dense: DenseOptions, settings: dict[str, Any], *,
               sentences_from: Callable[[SparseIndex, Path], dict[str, Any]] | None = None,
               stats: dict[str, float] | None = None, t_all: float | None = None,
               show_progress: bool = False, extra: Callable[[Path], Any] | None = None,
               trained: Any = None) -> "Index":
        """Stream ``shards`` through an :class:`~ragnet.index.writer.IndexWriter` into a
        temporary folder, write the manifest, and swap the folder into place. ``extra(folder)``
        writes more files into it before the checksums (``sources.json``); ``trained`` is an empty
        IVF-PQ index already trained (an update keeps the index's quantizers)."""
        from tqdm.auto import tqdm

        from ragnet import __version__
        from ragnet.index.writer import IndexWriter, resolve_kind

        stats = stats if stats is not None else {}
        t_all = t_all if t_all is not None else time.perf_counter()
        kind = resolve_kind(dense.kind, count, dense.hnsw_from, dense.ivfpq_from)
        swap = DirSwap()
        t0 = time.perf_counter()
        with atomic_dir(path, owned=index_files, swap=swap) as tmp:
            writer: IndexWriter | None = None
            with tqdm(total=count, desc="Writing", unit="chunk", disable=not show_progress, mininterval=0.5) as bar:
                for chunks, vectors, passages in shards:
                    if writer is None:
                        writer = IndexWriter(tmp, count, np.shape(vectors)[1], kind, dense.ivfpq, trained=trained)
                    writer.add(chunks, vectors, passages)
                    bar.update(len(chunks))
            if writer is None:
                raise InputError("no shards to index", argument="shards")
            stats["write_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            dense_index, sparse, fields = writer.finish()
            stats.update(writer.stats)
            stats["finish_s"] = time.perf_counter() - t0
            # the sentence store needs the corpus BM25 vocabulary: written once BM25 is merged
            sentence_info = sentences_from(sparse, tmp) if sentences_from is not None else None
            if extra is not None:
                extra(tmp)
            manifest = {
                "format": MANIFEST_FORMAT,
                "format_version": FORMAT_VERSION,
                "ragnet_version": __version__,
                "embedder": emb.name,
                "embedder_backend": getattr(emb, "backend", "torch"),
                "dimension": writer.dimension,
                "normalize": True,
                "chunk_count": count,
                "doc_count": settings["doc_count"] if settings["doc_count"] is not None else fields["doc_count"],
                "chunk_tokens": settings["chunk_tokens"],
                "overlap": settings["overlap"],
                "tokenizer": TOKENIZER,
                "passage_format": PASSAGE_FORMAT,
                "faiss_index": fields["faiss_index"],
                "ivfpq": fields["ivfpq"],
                "vectors": fields["vectors"],
                # Place names used for chunk metadata; questions must be read with the same list.
                "gazetteer": settings["gazetteer"],
                "bm25": {"method": "lucene", "stopwords": "en", "stemmer": sparse.stemmer_name},
                "sentences": sentence_info,
                "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "files": {},
            }
            del dense_index, sparse  # the index reopens everything from the folder once it is in place
            t1 = time.perf_counter()
            manifest["files"] = {
                f.relative_to(tmp).as_posix(): sha256_file(f) for f in sorted(tmp.rglob("*")) if f.is_file()
            }
            stats["checksum_s"] = time.perf_counter() - t1
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            usual_permissions(tmp, recursive=True)
        stats["save_s"] = time.perf_counter() - t0
        index = cls.load(path, embedder=emb, verify=False)
        stats["total_s"] = time.perf_counter() - t_all
        index.build_stats = stats
        index.kept_files = swap.kept
        return index

    # -- loading -----------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike, embedder: EmbedderLike = None, verify: bool = True) -> "Index":
        """Open an index folder written by ``Index.build``.

        The folder is treated as untrusted input (``ragnet.index.untrusted``): whatever its
        manifest says, nothing outside the folder or behind a symbolic link is opened, every
        array's size is checked against the manifest's counts and its file before it is mapped or
        allocated, and every id a file holds (IVF lists, BM25 postings and vocabulary, chunk id
        rows) is range-checked here, once. A damaged or crafted folder fails with one line naming
        the file.

        Args:
            path: the index folder.
            embedder: the query embedder; None uses the one recorded in the manifest. A
                different model than the one the index was built with is refused.
            verify: check every file's SHA-256 against the manifest and that every chunk id
                maps to its own line of ``chunks.jsonl`` (catches corruption, and tampering that
                keeps the arrays consistent); each reads the whole folder once.

        Raises:
            IndexFormatError: not an index, unknown format version, missing/corrupt files,
                inconsistent counts, or an embedder that does not match the index.

        Example:
            >>> Index.load(index.path).manifest["chunk_count"]
            3
        """
        path = Path(path)
        manifest = _read_manifest(path)
        name = manifest["embedder"]
        emb: Embedder | None = None
        if embedder is not None:
            emb = _as_embedder(embedder)
            if emb.name != name:
                raise IndexFormatError(
                    f"index at {path} was built with embedder {name!r}, but embedder {emb.name!r} was given; "
                    f"use {name!r} to query it, or rebuild the index with the new embedder"
                )
        files = manifest["files"]
        count, dim, kind = manifest["chunk_count"], manifest["dimension"], manifest["faiss_index"]
        vec_file, vec_dtype = _vector_file(manifest)
        for rel in _read_files(manifest, vec_file):
            if rel not in files:
                raise IndexFormatError(f"index at {path} is corrupt: manifest lists no {rel}; {_REBUILD}")
        # The folder is untrusted input (ragnet.index.untrusted): before any file is opened, hashed or
        # mapped, every path the manifest names must be a regular file inside the folder, reached
        # without a symbolic link, and every .npy header must describe exactly the bytes of its file.
        for rel in files:
            member(path, rel)
        headers = {rel: npy_header(path, rel) for rel in files if rel.endswith(".npy")}
        vec = headers[vec_file]
        if vec.shape != (count, dim) or vec.dtype != np.dtype(vec_dtype):
            raise IndexFormatError(
                f"index at {path} is corrupt: {vec_file} has shape {vec.shape} {vec.dtype}, "
                f"expected ({count}, {dim}) {vec_dtype}; {_REBUILD}"
            )
        if verify:
            for rel, digest in files.items():
                if sha256_file(path / rel) != digest:
                    raise IndexFormatError(f"index at {path} is corrupt: {rel} checksum mismatch; {_REBUILD}")

        chunks = ChunkStore.open(path, count=count)
        try:
            if verify:
                chunks.check_ids()
            # The float16 re-scoring vectors of the on-disk kind stay on disk (memory-mapped).
            try:
                embeddings = np.load(path / vec_file, allow_pickle=False,
                                     mmap_mode="r" if vec_dtype == "float16" else None)
            except (OSError, ValueError) as exc:
                raise IndexFormatError(f"index at {path} is corrupt: {vec_file} unreadable ({exc}); {_REBUILD}") from exc
            # Re-scoring reads a few hundred rows per query: pread them (ragnet.index.file_array) so
            # the rows of past queries do not accumulate in resident memory as mapped pages would.
            embeddings = file_backed(embeddings)
            nprobe = (manifest["ivfpq"] or {}).get("nprobe")
            dense = DenseIndex.load(path / DENSE, kind, nprobe=nprobe, count=count, dimension=dim)
            if dense.ntotal != count or dense.dimension != dim:
                raise IndexFormatError(
                    f"index at {path} is corrupt: {DENSE} holds {dense.ntotal} vectors of dimension "
                    f"{dense.dimension}, expected {count} of {dim}; {_REBUILD}"
                )
            sparse = SparseIndex.load(path / BM25_DIR, mmap=count >= MMAP_BM25_FROM, count=count)
            if len(sparse) != count:
                raise IndexFormatError(
                    f"index at {path} is corrupt: BM25 index covers {len(sparse)} chunks, expected {count}; {_REBUILD}"
                )
        except BaseException:
            chunks.close()
            raise
        index = cls(path, manifest, chunks, embeddings, dense, sparse, emb)
        if emb is not None and emb._model is not None:
            index._check_dimension()
        return index

    # -- accessors ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._chunks)

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r}, chunks={len(self)}, embedder={self.manifest['embedder']!r})"

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._chunks

    @property
    def sparse(self) -> SparseIndex:
        """The BM25 side of the index (its tokenizer and vocabulary)."""
        return self._sparse

    @property
    def chunks(self) -> ChunkStore:
        """All chunks, in index order (row ``i`` of ``vectors``): a read-only sequence that
        reads each chunk from disk when asked (``len``, ``[i]``, slices, iteration)."""
        return self._chunks

    @property
    def embedder(self) -> Embedder:
        """The query embedder (created from the manifest's name on first use).

        Unless ``$RAGNET_EMBED_BACKEND`` names a backend, it is ``Embedder(name, backend="auto")``:
        the model's fp32 ONNX export when ONNX Runtime is installed and the export is cached
        (``ragnet index`` prepares it), else torch. Both give the same vectors.

        Raises:
            IndexFormatError: the model the manifest names cannot be loaded here (a renamed or
                edited manifest, or a model this machine does not have).
        """
        if self._embedder is None:
            name = self.manifest["embedder"]
            try:
                # "auto": the fp32 ONNX export when one is cached (same vectors, no torch import), else torch
                emb = Embedder(name, backend=resolve_backend(None, default=AUTO))
                emb.load()  # now, so a bad name is reported as the index's problem
            except InputError as exc:
                raise IndexFormatError(
                    f"index at {self.path} was built with embedder {name!r} (manifest.json), which cannot be "
                    f"loaded on this machine ({exc.message.split('. ')[0]}); load the index with the embedder "
                    "it was built with (Index.load(path, embedder=...)) or rebuild it with `ragnet index`"
                ) from None
            self._embedder = emb
        return self._embedder

    @property
    def dimension(self) -> int:
        """Embedding dimension recorded in the manifest."""
        return int(self.manifest["dimension"])

    @property
    def gazetteer(self) -> Any:
        """The ``Gazetteer`` the index was built with (None when none was given)."""
        names = self.manifest.get("gazetteer")
        if not names:
            return None
        if getattr(self, "_gazetteer", None) is None:
            from ragnet.corpus.metadata import Gazetteer

            self._gazetteer = Gazetteer(names)
        return self._gazetteer

    def __deepcopy__(self, memo: dict) -> "Index":
        # An index is read-only after build/load; DSPy deep-copies programs (optimizers, Evaluate),
        # and copying FAISS/BM25/embeddings each time would be slow and pointless.
        return self

    @property
    def sentences(self) -> SentenceStore | None:
        """The index's :class:`~ragnet.index.sentence_store.SentenceStore`, or None when it was built
        without sentences (see :meth:`add_sentences`). Loaded on first use; vectors are memory-mapped."""
        if self._sentences is None and self.manifest.get("sentences"):
            if not self.sentences_current():
                info = self.manifest["sentences"]
                raise IndexFormatError(
                    f"index at {self.path} holds sentence data of format {info.get('format')!r}/"
                    f"{info.get('splitter')!r}, this ragnet reads {SENTENCES_FORMAT!r}/{SENTENCES_SPLITTER!r}; "
                    f"run `ragnet add-sentences {self.path}` (or rebuild the index)")
            self._sentences = SentenceStore.load(self.path / SENTENCES_DIR, len(self), self.dimension)
        return self._sentences

    def sentences_current(self) -> bool:
        """Whether the index has sentence data this ragnet reads (not absent, not from an older
        sentence splitter)."""
        info = self.manifest.get("sentences") or {}
        return info.get("format") == SENTENCES_FORMAT and info.get("splitter") == SENTENCES_SPLITTER

    @property
    def idf(self) -> np.ndarray:
        """BM25 (Lucene) IDF of every term of the index vocabulary, a chunk being a document."""
        if self._idf is None:
            self._idf = idf_of(self._sparse)
        return self._idf

    def query_terms(self, text: str) -> list[int]:
        """BM25 term ids of ``text`` in the index vocabulary (stopwords removed, stemmed)."""
        return self._sparse.token_ids(text)

    def add_sentences(self, show_progress: bool = True) -> SentenceStore:
        """Compute the sentence data of an index built without it (or with an older sentence
        splitter) and save it into the index.

        The sentence files are written beside the index and moved in, then the manifest is
        rewritten atomically with their checksums; an interrupted run leaves the index
        readable (at worst without sentence data). A no-op when the data is current.

        Raises:
            InputError: another process is writing the index folder.
        """
        if self.sentences_current():
            return self.sentences
        from ragnet._atomic import scratch_dir, write_json

        with dir_lock(self.path):
            target = self.path / SENTENCES_DIR
            with scratch_dir(self.path) as staging:  # cleans up what a killed run left
                # block by block, vectors straight to disk: an index of any size fits in memory
                written = SentenceStore.write(self._chunks, self.embedder, self._sparse, staging / SENTENCES_DIR,
                                              count=len(self), show_progress=show_progress)
                if target.exists():  # stale data of an older splitter, a crashed run's, or someone else's
                    info = target / "info.json"
                    if not info.is_file() or SENTENCES_FORMAT not in info.read_text(encoding="utf-8", errors="replace"):
                        raise InputError(f"{target} exists and is not ragnet's sentence data; move it elsewhere",
                                         path=target)
                    shutil.rmtree(target)
                os.replace(staging / SENTENCES_DIR, target)
            manifest = dict(self.manifest)
            files = {k: v for k, v in manifest["files"].items() if not k.startswith(f"{SENTENCES_DIR}/")}
            for f in sorted(target.rglob("*")):
                if f.is_file():
                    files[f.relative_to(self.path).as_posix()] = sha256_file(f)
            manifest["files"] = files
            manifest["sentences"] = written
            write_json(self.path / MANIFEST, manifest)
            self.manifest = manifest
        self._sentences = SentenceStore.load(target, len(self), self.dimension)
        return self._sentences

    # -- updating ----------------------------------------------------------------------
    @classmethod
    def sync(cls, paths: Any, path: str | os.PathLike, **options: Any) -> tuple["Index", Any]:
        """Build the index at ``path`` from files, or bring it up to date with them: what
        ``ragnet index PATHS --out PATH`` runs.

        With no index at ``path`` (or ``rebuild=True``) this is a full build. Otherwise only
        the files added or changed since (by the SHA-256 of their bytes) are read, only
        documents whose content changed are chunked, and only passages the index did not hold
        are embedded; removed files' chunks leave every store. The result equals a full build
        of the same files (:mod:`ragnet.index.update`), and is written atomically under the
        folder's lock.

        Args:
            paths: files, folders or glob patterns, as for ``ragnet.load_documents``.
            path: the index folder.
            **options: ``chunk_tokens``, ``overlap``, ``embedder`` (name), ``embed_backend``,
                ``dense`` (``DenseOptions``), ``nprobe``, ``sentences``, ``gazetteer``: None
                (the default) keeps the index's setting (or ragnet's default for a new index);
                one that differs from the index's is refused with an ``InputError`` naming the
                ``ragnet index`` option, unless ``rebuild``. Also ``engine``
                (``BuildEngine``, for full builds), ``rebuild``, ``max_file_mb``, ``on_error``,
                ``show_progress``, and ``on_read`` (called with the ``LoadReport`` once the
                files are read, before any embedding).

        Returns:
            ``(index, report)``: the index and an
            :class:`~ragnet.index.update.UpdateReport` (``report.line()``:
            ``+3 files, ~1 changed, -2 removed (40 unchanged); 41 chunks embedded, 1,865 reused``).

        Raises:
            InputError: bad files or options, a changed setting, or another process updating
                the index.

        Example:
            >>> import tempfile, pathlib
            >>> folder = pathlib.Path(tempfile.mkdtemp())
            >>> _ = (folder / "a.md").write_text("# Paris\\n\\nParis is the capital of France.\\n")
            >>> out = pathlib.Path(tempfile.mkdtemp()) / "idx"
            >>> index, report = Index.sync(folder, out, show_progress=False)
            >>> _ = (folder / "b.md").write_text("# Rome\\n\\nRome is the capital of Italy.\\n")
            >>> print(Index.sync(folder, out, show_progress=False)[1].line())
            +1 file, ~0 changed, -0 removed (1 unchanged); 1 chunks embedded, 1 reused
        """
        from ragnet.index.update import sync_folder

        given = Path(path)
        path = _through_link(given)
        check_output_folder(path)
        index, report, load = sync_folder(cls, paths, path, **options)
        index.path = given
        report.load = load
        return index, report

    def update(self, docs: Iterable[Document], *, remove_missing: bool = True, embedder: Embedder | None = None,
               show_progress: bool = True) -> Any:
        """Make this index equal to a full build of ``docs``, reusing what did not change.

        A document whose id and content (by hash) the index already holds keeps its chunks and
        vectors; a changed or new one is chunked, and only its passages the index did not hold
        are embedded. The folder is rewritten atomically under its lock
        (:mod:`ragnet.index.update`), and this object then reads the new index.

        Args:
            docs: the documents.
            remove_missing: True (like re-running ``ragnet index``): documents not in ``docs``
                leave the index. False: ``docs`` are added, or replace the documents of the
                same id, and the others stay.
            embedder: the embedder for new passages (the index's model); None: the index's.
            show_progress: progress bars.

        Returns:
            An :class:`~ragnet.index.update.UpdateReport` (``report.line()``).

        Raises:
            InputError: not Documents, duplicate ids, nothing left, or another update running.

        Example:
            >>> report = Index.load(index.path).update([Document(id="rome", title="Rome",
            ...                                                  text="Rome is the capital of Italy.")],
            ...                                        remove_missing=False, show_progress=False)
            >>> report.unchanged, report.written
            (3, False)
        """
        from ragnet.index.update import update_index

        new, report = update_index(type(self), _through_link(self.path), docs, remove_missing=remove_missing,
                                   embedder=embedder, show_progress=show_progress)
        if new is not None:
            self._adopt(new)
        return report

    def remove(self, names: str | Iterable[str], *, show_progress: bool = True) -> Any:
        """Remove documents: every document of the named files (as ``ragnet index`` recorded
        them, e.g. ``"manuals/a.pdf"``, the file a citation names) or the named document ids.

        The folder is rewritten atomically under its lock, without the documents' chunks in any
        store (chunks, catalog, sentences, BM25, vectors, the dense index); nothing is embedded.

        Returns:
            An :class:`~ragnet.index.update.UpdateReport`.

        Raises:
            InputError: a name that is neither a file nor a document of the index (nothing is
                removed), or removing every document.
        """
        from ragnet.index.update import remove_from_index

        new, report = remove_from_index(type(self), _through_link(self.path), names, show_progress=show_progress)
        self._adopt(new)
        return report

    def _adopt(self, new: "Index") -> None:
        """Read ``new`` (the same folder, rewritten) from now on. Not safe while other threads
        search this object: a server loads a new ``Index`` and swaps it in instead."""
        old_store = self._chunks
        path = self.path
        self.__dict__.update(new.__dict__)
        self.path = path
        if old_store is not self._chunks:
            with contextlib.suppress(Exception):
                old_store.close()

    @property
    def catalog(self) -> Any:
        """The rule filter's metadata catalog over all chunks, memory-mapped from ``catalog/``
        (``ragnet.index.catalog_store.CatalogStore``) on first use."""
        if self._catalog is None:
            from ragnet.index.catalog_store import CatalogStore

            store = self._chunks
            self._catalog = CatalogStore.open(self.path / CATALOG_DIR, len(store), store.id_at, store.row,
                                              lambda row: store[row].metadata)
        return self._catalog

    def chunk(self, chunk_id: str) -> Chunk:
        """The chunk with id ``chunk_id``.

        Raises:
            KeyError: no such chunk (the message names the id and the index).

        Example:
            >>> index.chunk("paris#0").title
            'Paris'
        """
        row = self._chunks.row(chunk_id)
        if row is None:
            raise KeyError(
                f"no chunk with id {chunk_id!r} in index at {self.path} "
                f"({len(self)} chunks; ids look like {self._chunks.id_at(0)!r})"
            )
        return self._chunks[row]

    def get(self, ids: Iterable[str]) -> list[Chunk]:
        """Chunks for ``ids``, in the given order (``KeyError`` for an unknown id)."""
        return [self.chunk(i) for i in ids]

    def rows(self, ids: Iterable[str]) -> np.ndarray:
        """Row numbers (into ``chunks`` / ``vectors``) of ``ids`` (``KeyError`` for an unknown id)."""
        ids = list(ids)
        try:
            return self._chunks.rows(ids)
        except KeyError:
            for i in ids:
                self.chunk(i)  # raises the descriptive KeyError
            raise

    def vectors(self, ids: Iterable[str]) -> np.ndarray:
        """Stored (L2-normalised) embeddings of ``ids`` as a float32 ``(n, d)`` array.

        Example:
            >>> index.vectors(["paris#0"]).shape
            (1, 384)
        """
        rows = self.rows(ids)
        if rows.size == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.ascontiguousarray(self._emb[rows], dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """The L2-normalised ``(d,)`` float32 embedding of a query (fast single-query path)."""
        _check_query(text)
        vec = self.embedder.encode_query(text)
        self._check_dimension()
        return vec

    def _check_dimension(self) -> None:
        if self._dimension_checked:
            return
        got = self.embedder.dimension
        if got != self.dimension:
            raise IndexFormatError(
                f"index at {self.path} holds {self.dimension}-dimensional vectors from {self.manifest['embedder']!r}, "
                f"but the query embedder {self.embedder.name!r} produces {got}-dimensional ones; {_REBUILD}"
            )
        self._dimension_checked = True

    def replace_dense(self, make: Callable[[np.ndarray], Any]) -> Any:
        """Serve dense search from ``make(vectors)`` instead of the stored FAISS index.

        ``vectors`` are the stored chunk vectors (row ``i`` is chunk ``i``); the object made must,
        like :class:`~ragnet.index.dense.DenseIndex`, have ``kind``, ``ntotal``, ``dimension`` and
        ``search(queries, n) -> (scores, row ids)``. Benchmarks use it to compare an approximate
        kind with an exact scan of the same corpus; nothing is written to the folder.

        Returns:
            The new dense index.

        Raises:
            InputError: it does not cover every chunk at the index's dimension.

        Example:
            >>> from ragnet.index.dense import DenseIndex
            >>> Index.load(index.path).replace_dense(lambda v: DenseIndex.build(v, kind="hnsw")).kind
            'hnsw'
        """
        dense = make(self._emb)
        if (dense.ntotal, dense.dimension) != (len(self._chunks), self.dimension):
            raise InputError(f"the dense index made holds {dense.ntotal} vectors of dimension {dense.dimension}, "
                             f"expected {len(self._chunks)} of {self.dimension}", argument="make")
        self._dense = dense
        return dense

    # -- search ------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 5,
        exclude: Iterable[str] = (),
        lam: float = 0.4,
        pool: int = 100,
    ) -> list[Chunk]:
        """Hybrid search: the ``k`` best chunks for ``query``, best first.

        Scoring. A candidate pool is the union of the dense top-``pool`` (exact scan for a
        flat index, FAISS HNSW/IVF otherwise) and the BM25 top-``pool`` (BM25 score > 0)
        chunks; ``pool`` grows by ``len(exclude)`` and is at least ``k``. For every candidate, the raw cosine ``cos`` (exact, from the stored
        embeddings) and the raw BM25 score ``bm25`` (exact; ``SparseIndex.top_and_scores_at``) are
        min-max normalised over the pool of this query::

            norm(x) = (x - min_pool(x)) / (max_pool(x) - min_pool(x))   # 0 if all equal
            score   = lam * norm(bm25) + (1 - lam) * norm(cos)

        so ``lam=0`` ranks purely by cosine and ``lam=1`` purely by BM25. Ties are broken by
        index order (deterministic). Returned chunks carry ``score`` (hybrid, in [0, 1]),
        ``dense_score`` (raw cosine) and ``bm25_score`` (raw BM25).

        Args:
            query: the query text (non-empty).
            k: number of chunks to return.
            exclude: chunk ids never to return (unknown ids are ignored). ``k`` chunks are
                still returned whenever the index has ``k`` chunks not excluded: if the
                pool runs dry, every chunk is scored.
            lam: BM25 weight in [0, 1] (0.4 as in ReflectiveRAG).
            pool: candidates taken from each retriever.

        Raises:
            InputError: empty query, ``k < 0``, ``pool < 1`` or ``lam`` outside [0, 1].

        Example:
            >>> [c.id for c in index.search("capital of Italy", k=1, exclude={"rome#0"})]
            ['paris#0']
        """
        _check_search_args(k, lam, pool)
        excluded = self._excluded_rows(exclude)
        qvec = self.embed_query(query)
        n_pool = self._pool_size(k, pool, excluded)
        ids, cos_all = self._dense_top(qvec[None, :], n_pool)
        return self._rank(qvec, query, ids[0], k, excluded, lam, n_pool, None if cos_all is None else cos_all[0])

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 5,
        exclude: Sequence[Iterable[str] | None] | None = None,
        lam: float = 0.4,
        pool: int = 100,
    ) -> list[list[Chunk]]:
        """``search`` for many queries, embedding them in one batch.

        Args:
            queries: the queries.
            k, lam, pool: as in ``search``.
            exclude: None, or one iterable of ids (or None) per query.

        Example:
            >>> [[c.id for c in hits] for hits in index.search_batch(["capital of France", "capital of Italy"], k=1)]
            [['paris#0'], ['rome#0']]
        """
        queries = list(queries)
        _check_search_args(k, lam, pool)
        if exclude is None:
            exclude = [None] * len(queries)
        exclude = list(exclude)
        if len(exclude) != len(queries):
            raise InputError(
                f"exclude has {len(exclude)} entries for {len(queries)} queries; give one per query or None",
                argument="exclude",
            )
        if not queries:
            return []
        for q in queries:
            _check_query(q)
        qvecs = self.embedder.encode_queries(queries)
        self._check_dimension()
        excluded = [self._excluded_rows(e or ()) for e in exclude]
        sizes = [self._pool_size(k, pool, e) for e in excluded]
        ids, cos_all = self._dense_top(qvecs, max(sizes))
        return [
            self._rank(
                qvecs[i], q, ids[i, : sizes[i]], k, excluded[i], lam, sizes[i],
                None if cos_all is None else cos_all[i],
            )
            for i, q in enumerate(queries)
        ]

    def dense_search(self, query: str, k: int = 5) -> list[Chunk]:
        """Dense-only retrieval; ``score`` = ``dense_score`` = cosine (ties: index order)."""
        _check_search_args(k, 0.0, 1)
        qvec = self.embed_query(query)
        ids, _ = self._dense_top(qvec[None, :], k)
        rows = ids[0][ids[0] >= 0]
        cos = self._cosines(rows, qvec)
        return [c.with_scores(score=float(s), dense_score=float(s)) for c, s in zip(self._chunks.take(rows), cos)]

    def bm25_search(self, query: str, k: int = 5) -> list[Chunk]:
        """BM25-only retrieval (chunks with a positive score); ``score`` = ``bm25_score``."""
        _check_search_args(k, 0.0, 1)
        _check_query(query)
        rows, scores = self._sparse.top(query, k)
        return [c.with_scores(score=float(s), bm25_score=float(s)) for c, s in zip(self._chunks.take(rows), scores)]

    # -- internals ---------------------------------------------------------------------
    def _excluded_rows(self, exclude: Iterable[str]) -> np.ndarray:
        if isinstance(exclude, str):
            exclude = (exclude,)
        store = self._chunks
        rows = {r for r in (store.row(i) for i in exclude) if r is not None}
        return np.fromiter(sorted(rows), dtype=np.int64, count=len(rows))

    def _pool_size(self, k: int, pool: int, excluded: np.ndarray) -> int:
        return min(len(self._chunks), max(pool, k) + excluded.size)

    def _dense_top(self, qvecs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Row ids of the top-``n`` cosines per query (best first), and, for the exact (flat)
        kind, every cosine.

        A flat index is searched with one matrix product over the stored embeddings (the
        same exact neighbours as FAISS's ``IndexFlatIP``, faster for a few queries), and
        the full cosine vector then serves the ranking. With the torch query embedder the
        product runs in torch, whose thread pool the embedding already uses: NumPy's
        OpenBLAS threads would keep spinning next to torch's on a small machine and slow
        both several-fold. With an ONNX embedder torch is never imported (that alone would
        dominate a cold query), and NumPy does the product.
        """
        n = min(n, len(self._chunks))
        if self._dense.kind != "flat":
            _, ids = self._dense.search(qvecs, n)
            return ids, None
        cos_all = self._all_cosines(qvecs)  # (m, N)
        if n >= cos_all.shape[1]:
            ids = np.argsort(-cos_all, axis=1, kind="stable")
        else:
            part = np.argpartition(-cos_all, n - 1, axis=1)[:, :n]
            order = np.argsort(-np.take_along_axis(cos_all, part, axis=1), axis=1, kind="stable")
            ids = np.take_along_axis(part, order, axis=1)
        return ids, cos_all

    def _all_cosines(self, qvecs: np.ndarray) -> np.ndarray:
        qvecs = np.ascontiguousarray(qvecs, dtype=np.float32)
        backend = getattr(self._embedder, "backend", None) or resolve_backend(None)
        if backend != "torch":
            return qvecs @ self._emb.T
        import torch

        if self._emb_torch is None:
            self._emb_torch = torch.from_numpy(self._emb)
        with torch.inference_mode():
            return (torch.from_numpy(qvecs) @ self._emb_torch.T).numpy()

    def _cosines(self, rows: np.ndarray, qvec: np.ndarray) -> np.ndarray:
        """Cosines of a few rows without BLAS (see ``_dense_top`` on thread pools)."""
        return np.einsum("ij,j->i", np.asarray(self._emb[rows], dtype=np.float32), qvec)

    def _rank(
        self,
        qvec: np.ndarray,
        query: str,
        dense_ids: np.ndarray,
        k: int,
        excluded: np.ndarray,
        lam: float,
        n_pool: int,
        cos_all: np.ndarray | None = None,
    ) -> list[Chunk]:
        n = len(self._chunks)
        want = min(k, n - excluded.size)
        if want <= 0:
            return []
        dense_rows = dense_ids[dense_ids >= 0].astype(np.int64)
        # BM25's top pool and its exact scores at the dense candidates, without scoring every chunk
        sparse_rows, sparse_scores, dense_bm25 = self._sparse.top_and_scores_at(query, n_pool, dense_rows)
        cands, first = np.unique(np.concatenate([dense_rows, sparse_rows]), return_index=True)
        raw_bm25 = np.concatenate([dense_bm25, sparse_scores])[first]
        if excluded.size:
            keep = ~np.isin(cands, excluded, assume_unique=True)
            cands, raw_bm25 = cands[keep], raw_bm25[keep]
        if cands.size < want:  # pool exhausted (tiny index, HNSW shortfall, huge exclude): score everything
            cands = np.setdiff1d(np.arange(n, dtype=np.int64), excluded, assume_unique=True)
            raw_bm25 = self._sparse.scores(query)[cands]
        cos = cos_all[cands] if cos_all is not None else self._cosines(cands, qvec)
        score = lam * _normalise_scores(raw_bm25) + (1.0 - lam) * _normalise_scores(cos)
        order = np.lexsort((cands, -score))[:want]
        return [
            chunk.with_scores(score=float(score[j]), dense_score=float(cos[j]), bm25_score=float(raw_bm25[j]))
            for chunk, j in zip(self._chunks.take(cands[order]), order)
        ]


# -- helpers ---------------------------------------------------------------------------
def _check_option(value: Any, expected: type, argument: str) -> None:
    if not isinstance(value, expected):
        raise InputError(f"expected a {expected.__name__}, got {type(value).__name__}", argument=argument)


def _check_query(query: Any) -> None:
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}", argument="query")
    if not query.strip():
        raise InputError("query is empty", argument="query")


def _check_search_args(k: Any, lam: Any, pool: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InputError(f"k must be a non-negative integer, got {k!r}", argument="k")
    if isinstance(pool, bool) or not isinstance(pool, (int, np.integer)) or pool < 1:
        raise InputError(f"pool must be a positive integer, got {pool!r}", argument="pool")
    try:
        lam_f = float(lam)
    except (TypeError, ValueError):
        lam_f = float("nan")
    if not 0.0 <= lam_f <= 1.0:
        raise InputError(f"lam must be between 0 and 1, got {lam!r}", argument="lam")


def index_files(folder: Path) -> set[str] | None:
    """The files that belong to the ragnet index in ``folder`` (relative paths), or None.

    A folder is a ragnet index when its ``manifest.json`` says so
    (:func:`ragnet.corpus.outputs.index_manifest`) and holds a format version, an embedder and
    the per-file checksums ``Index.build`` writes (older manifests lack the
    ``"format": "ragnet-index"`` marker and are recognised by those keys alone, so that a new
    build can replace them). Only the files the manifest lists, and the manifest itself, are ragnet's.

    Example:
        >>> import tempfile, pathlib, json
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "manifest.json").write_text('{"name": "my web app"}')
        >>> index_files(d) is None
        True
    """
    manifest = index_manifest(folder, unmarked=True, max_bytes=None)
    if manifest is None or not isinstance(manifest.get("files"), dict):
        return None
    if not all(key in manifest for key in ("format_version", "embedder", "dimension", "chunk_count")):
        return None
    files = {str(name) for name in manifest["files"]}
    if any(name.startswith("/") or ".." in Path(name).parts for name in files):
        return None  # a ragnet manifest only ever names files inside its folder
    return files | {MANIFEST}


def check_output_folder(path: str | os.PathLike) -> None:
    """Refuse an index output path that ragnet must not replace, before any work starts.

    ``path`` may be new, an empty folder, or a ragnet index (see :func:`index_files`);
    files kept beside an index inside its folder survive a rebuild. Anything else (a
    file, a folder of other things, a folder whose ``manifest.json`` is someone else's)
    is refused, and so is a path whose parent cannot be written.

    Raises:
        InputError: the path, and why it cannot be used.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "index.html").write_text("<html>")
        >>> check_output_folder(d)
        Traceback (most recent call last):
        ...
        ragnet.errors.InputError: ...: folder exists and is not a ragnet index (no manifest.json); ...
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("index path exists and is a file; give a folder path", path=path)
    if path.is_dir() and any(path.iterdir()) and index_files(path) is None:
        why = ("its manifest.json is not a ragnet index manifest" if (path / MANIFEST).exists()
               else "no manifest.json")
        raise InputError(
            f"folder exists and is not a ragnet index ({why}); refusing to replace it. "
            "Choose an empty or new folder",
            path=path,
        )
    check_writable_parent(path)


def _through_link(path: Path) -> Path:
    """Where an index given as ``path`` is written: a symbolic link is written through, so the index
    replaces the folder it points to and the link stays a link (swapping the link itself would
    replace it with a real folder and leave the target behind, set aside and stale)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _check_unique_ids(docs: list[Any]) -> None:
    seen: dict[str, int] = {}
    for i, d in enumerate(docs):
        doc_id = getattr(d, "id", None)
        if doc_id is None:
            continue  # chunk_documents reports non-Document items
        if doc_id in seen:
            raise InputError(
                f"duplicate document id {doc_id!r} (documents {seen[doc_id] + 1} and {i + 1}); ids must be unique",
                argument="docs",
            )
        seen[doc_id] = i


def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise IndexFormatError(f"no index at {path}: the folder does not exist; build one with `ragnet index`")
    if not path.is_dir():
        raise IndexFormatError(f"{path} is a file, not an index folder; build one with `ragnet index`")
    mpath = path / MANIFEST
    if not mpath.is_file():
        raise IndexFormatError(f"{path} is not a ragnet index (no {MANIFEST}); build one with `ragnet index`")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} is not valid JSON ({exc}); {_REBUILD}") from exc
    if not isinstance(manifest, dict):
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} is not a JSON object; {_REBUILD}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"index at {path} has format_version {version!r}, but this ragnet reads format {FORMAT_VERSION} only; "
            f"rebuild it with `ragnet index`"
        )
    missing = [key for key in _REQUIRED_KEYS if key not in manifest]
    if missing:
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} lacks {', '.join(missing)}; {_REBUILD}")
    if not isinstance(manifest["files"], dict):
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} 'files' is not an object; {_REBUILD}")
    count, dim = manifest["chunk_count"], manifest["dimension"]
    checks = [
        ("chunk_count", type(count) is int and count >= 0),
        ("dimension", type(dim) is int and 1 <= dim <= 1 << 20),
        ("faiss_index", manifest["faiss_index"] in DENSE_KINDS),
        ("embedder", isinstance(manifest["embedder"], str)),
        ("ivfpq", manifest.get("ivfpq") is None or isinstance(manifest.get("ivfpq"), dict)),
        ("sentences", manifest.get("sentences") is None or isinstance(manifest.get("sentences"), dict)),
    ]
    if manifest["faiss_index"] == "ivfpq":
        nprobe = (manifest.get("ivfpq") or {}).get("nprobe")
        checks.append(("ivfpq", nprobe is None or (type(nprobe) is int and nprobe >= 1)))
    for key, ok in checks:
        if not ok:
            raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} has {key} "
                                   f"{_short(repr(manifest.get(key)))}, which ragnet cannot read; {_REBUILD}")
    manifest.setdefault("ivfpq", None)
    return manifest


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _read_files(manifest: dict[str, Any], vec_file: str) -> list[str]:
    """The files ``Index.load`` and the lazily loaded parts (catalog, sentences) read: each must be
    listed in the manifest, so that its path is checked and its checksum verified."""
    files = [CHUNKS, *CHUNK_SIDECARS, vec_file, DENSE, *(f"{CATALOG_DIR}/{name}" for name in CATALOG_FILES),
             *(f"{BM25_DIR}/{name}" for name in BM25_FILES)]
    if manifest["faiss_index"] == "ivfpq":
        files.append(DENSE_IVFDATA)
    if manifest.get("sentences"):
        files.extend(f"{SENTENCES_DIR}/{name}" for name in SENTENCE_FILES)
    return files


def _vector_file(manifest: dict[str, Any]) -> tuple[str, str]:
    """The stored vectors' file and dtype: float32 ``embeddings.npy``, or float16 rows for ivfpq."""
    info = manifest["vectors"]
    if not isinstance(info, dict) or info.get("file") not in (EMBEDDINGS, "vectors.f16.npy") \
            or info.get("dtype") not in ("float32", "float16"):
        raise IndexFormatError(f"index manifest has an unknown 'vectors' entry {info!r}; {_REBUILD}")
    return info["file"], info["dtype"]
