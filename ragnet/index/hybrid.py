"""``Index``: an index folder opened for hybrid search, chunks + dense (FAISS) + sparse (BM25).

Build once (:mod:`ragnet.index.build`), load many times, search hybrid:

    score = bm25_weight * norm(bm25) + (1 - bm25_weight) * norm(cos)

The folder's layout and the checks run before it is read are :mod:`ragnet.index.manifest`'s;
updates are :mod:`ragnet.index.update`'s.

Example:
    >>> import ragnet, tempfile
    >>> docs = [ragnet.Document(id="paris", title="Paris", text="Paris is the capital of France."),
    ...         ragnet.Document(id="rome", title="Rome", text="Rome is the capital of Italy.")]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/idx", show_progress=False)
    >>> [c.id for c in index.search("capital of Italy", k=1)]
    ['rome#0']
    >>> Index.load(index.path).search("capital of Italy", k=1)[0].doc_id
    'rome'
"""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ragnet._atomic import recover_set_aside
from ragnet.corpus.types import Chunk, Document
from ragnet.errors import IndexFormatError, InputError
from ragnet.index import build as _build
from ragnet.index.build import EmbedderLike, as_embedder, output_path
from ragnet.index.chunk_store import ChunkStore
from ragnet.index.dense import DenseIndex
from ragnet.index.embedder import Embedder
from ragnet.index.file_array import file_backed
from ragnet.index.manifest import check_embedder, check_folder, read_manifest, through_link
from ragnet.index.onnx_backend import AUTO, resolve_backend
from ragnet.index.options import BuildEngine, DenseOptions
from ragnet.index.sentence_store import FOLDER as SENTENCES_DIR
from ragnet.index.sentence_store import FORMAT as SENTENCES_FORMAT
from ragnet.index.sentence_store import SPLITTER as SENTENCES_SPLITTER
from ragnet.index.sentence_store import SentenceStore, idf_of
from ragnet.index.sparse import SparseIndex
from ragnet.index.untrusted import REBUILD
from ragnet.index.writer import BM25_DIR, CATALOG_DIR, DENSE

__all__ = ["Index"]

MMAP_BM25_FROM = 200_000  # chunks from which the BM25 matrix is memory-mapped instead of read
#: Rows of a scope (``search(within=...)``) scored one by one; a larger scope is searched like the
#: whole index with the other rows filtered out (its embeddings would be read whole: 20,000 rows
#: are 31 MB at 384 dimensions).
EXACT_WITHIN = 20_000


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
        return _build.build(cls, docs, path, chunk_tokens, overlap, embedder, dense=dense, engine=engine,
                            sentences=sentences, gazetteer=gazetteer, show_progress=show_progress)

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
            >>> from ragnet.index.passages import passage_text
            >>> chunk = Chunk(id="d#0", doc_id="d", title="T", text="Some text.", tokens=3)
            >>> vec = Embedder().encode([passage_text(chunk)])
            >>> idx = Index.build_from_shards([([chunk], vec)], tempfile.mkdtemp() + "/i", count=1,
            ...                               show_progress=False)
            >>> idx.search("text", k=1)[0].id
            'd#0'
        """
        return _build.build_from_shards(cls, shards, path, count, embedder, dense=dense, chunk_tokens=chunk_tokens,
                                        overlap=overlap, show_progress=show_progress)

    # -- loading -----------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike, embedder: EmbedderLike = None, verify: bool = True) -> "Index":
        """Open an index folder written by ``Index.build``.

        The folder is treated as untrusted input (``ragnet.index.untrusted``): whatever its
        manifest says, nothing outside the folder or behind a symbolic link is opened, every
        array's size is checked against the manifest's counts and its file before it is mapped or
        allocated, and every id a file holds (IVF lists, BM25 postings and vocabulary, chunk id
        rows) is range-checked here, once. A damaged or crafted folder fails with one line naming
        the file. An index that an update killed between its two renames left aside is put back
        first (``ragnet._atomic.recover_set_aside``).

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
        path = recover_set_aside(path)  # an update killed mid-swap left the index aside: put it back
        manifest = read_manifest(path)
        emb: Embedder | None = None
        if embedder is not None:
            emb = as_embedder(embedder)
            check_embedder(path, manifest, emb.name)
        count, dim, kind = manifest["chunk_count"], manifest["dimension"], manifest["faiss_index"]
        vec_file, vec_dtype = check_folder(path, manifest, verify=verify)

        chunks = ChunkStore.open(path, count=count)
        try:
            if verify:
                chunks.check_ids()
            # The float16 re-scoring vectors of the on-disk kind stay on disk (memory-mapped).
            try:
                embeddings = np.load(path / vec_file, allow_pickle=False,
                                     mmap_mode="r" if vec_dtype == "float16" else None)
            except (OSError, ValueError) as exc:
                raise IndexFormatError(f"index at {path} is corrupt: {vec_file} unreadable ({exc}); {REBUILD}") from exc
            # Re-scoring reads a few hundred rows per query: pread them (ragnet.index.file_array) so
            # the rows of past queries do not accumulate in resident memory as mapped pages would.
            embeddings = file_backed(embeddings)
            nprobe = (manifest["ivfpq"] or {}).get("nprobe")
            dense = DenseIndex.load(path / DENSE, kind, nprobe=nprobe, count=count, dimension=dim)
            if dense.ntotal != count or dense.dimension != dim:
                raise IndexFormatError(
                    f"index at {path} is corrupt: {DENSE} holds {dense.ntotal} vectors of dimension "
                    f"{dense.dimension}, expected {count} of {dim}; {REBUILD}"
                )
            sparse = SparseIndex.load(path / BM25_DIR, mmap=count >= MMAP_BM25_FROM, count=count)
            if len(sparse) != count:
                raise IndexFormatError(
                    f"index at {path} is corrupt: BM25 index covers {len(sparse)} chunks, expected {count}; {REBUILD}"
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
        self.manifest = _build.add_sentences(self, show_progress=show_progress)
        self._sentences = SentenceStore.load(self.path / SENTENCES_DIR, len(self), self.dimension)
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
                ``follow_links`` (as for ``ragnet.load_documents``), ``show_progress``, and
                ``on_read`` (called with the ``LoadReport`` once the
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

        index, report, load = sync_folder(cls, paths, output_path(path), **options)
        index.path = Path(path)
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

        new, report = update_index(type(self), through_link(self.path), docs, remove_missing=remove_missing,
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

        new, report = remove_from_index(type(self), through_link(self.path), names, show_progress=show_progress)
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

    def scoped(self, *patterns: str) -> Any:
        """This index searched over some of its files only (:class:`ragnet.index.scope.ScopedIndex`):
        each pattern is a file's path relative to the indexed folder, its name, a folder, or a
        glob of these; every program built on the result answers from those files alone.

        Raises:
            InputError: no indexed file matches (the message lists some of the files).

        Example:
            >>> [c.id for c in index.scoped("tea").search("capital of France", k=1)]
            ['tea#0']
        """
        from ragnet.index.scope import ScopedIndex

        return ScopedIndex(self, patterns)

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
                f"but the query embedder {self.embedder.name!r} produces {got}-dimensional ones; {REBUILD}"
            )
        self._dimension_checked = True

    def replace_dense(self, make: Callable[[np.ndarray], Any]) -> Any:
        """Serve dense search from ``make(vectors)`` instead of the stored FAISS index.

        ``vectors`` are the stored chunk vectors (row ``i`` is chunk ``i``); the object made must,
        like :class:`~ragnet.index.dense.DenseIndex`, have ``kind``, ``ntotal``, ``dimension`` and
        ``search(queries, n) -> (scores, row ids)`` (and ``allowed=rows`` for a scope larger than
        :data:`EXACT_WITHIN`). Benchmarks use it to compare an approximate
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
        bm25_weight: float = 0.4,
        pool: int = 100,
        within: np.ndarray | None = None,
        *,
        lam: float | None = None,
    ) -> list[Chunk]:
        """Hybrid search: the ``k`` best chunks for ``query``, best first.

        Scoring. A candidate pool is the union of the dense top-``pool`` (exact scan for a
        flat index, FAISS HNSW/IVF otherwise) and the BM25 top-``pool`` (BM25 score > 0)
        chunks; ``pool`` grows by ``len(exclude)`` and is at least ``k``. For every candidate, the raw cosine ``cos`` (exact, from the stored
        embeddings) and the raw BM25 score ``bm25`` (exact; ``SparseIndex.top_and_scores_at``) are
        min-max normalised over the pool of this query::

            norm(x) = (x - min_pool(x)) / (max_pool(x) - min_pool(x))   # 0 if all equal
            score   = bm25_weight * norm(bm25) + (1 - bm25_weight) * norm(cos)

        so ``bm25_weight=0`` ranks purely by cosine and ``bm25_weight=1`` purely by BM25. Ties are broken by
        index order (deterministic). Returned chunks carry ``score`` (hybrid, in [0, 1]),
        ``dense_score`` (raw cosine) and ``bm25_score`` (raw BM25).

        Args:
            query: the query text (non-empty).
            k: number of chunks to return.
            exclude: chunk ids never to return (unknown ids are ignored). ``k`` chunks are
                still returned whenever the index has ``k`` chunks not excluded: if the
                pool runs dry, every chunk is scored.
            bm25_weight: BM25 weight in [0, 1] (0.4 as in ReflectiveRAG), the programs'
                ``Search.bm25_weight``.
            lam: the old name of ``bm25_weight``, accepted with a DeprecationWarning for one release.
            pool: candidates taken from each retriever.
            within: rows (of ``chunks``) the result is drawn from, sorted (a scope:
                :meth:`scoped`). Up to :data:`EXACT_WITHIN` rows, every one of them is scored
                and the hybrid score is normalised over them; a larger scope gets the pool
                above from its own rows (FAISS and BM25 filter the others out while searching).

        Raises:
            InputError: empty query, ``k < 0``, ``pool < 1`` or ``bm25_weight`` outside [0, 1].

        Example:
            >>> [c.id for c in index.search("capital of Italy", k=1, exclude={"rome#0"})]
            ['paris#0']
        """
        bm25_weight = _renamed_lam(lam, bm25_weight)
        _check_search_args(k, bm25_weight, pool)
        excluded = self._excluded_rows(exclude)
        within = None if within is None else np.asarray(within, dtype=np.int64)
        if within is not None and len(within) <= EXACT_WITHIN:
            return self._rank_within(self.embed_query(query), query, within, k, excluded, bm25_weight)
        qvec = self.embed_query(query)
        n_pool = self._pool_size(k, pool, excluded, within)
        ids, cos_all = self._dense_top(qvec[None, :], n_pool, within)
        return self._rank(qvec, query, ids[0], k, excluded, bm25_weight, n_pool,
                          None if cos_all is None else cos_all[0], within)

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 5,
        exclude: Sequence[Iterable[str] | None] | None = None,
        bm25_weight: float = 0.4,
        pool: int = 100,
        within: np.ndarray | None = None,
        *,
        lam: float | None = None,
    ) -> list[list[Chunk]]:
        """``search`` for many queries, embedding them in one batch.

        Args:
            queries: the queries.
            k, bm25_weight, pool, within: as in ``search``.
            exclude: None, or one iterable of ids (or None) per query.

        Example:
            >>> [[c.id for c in hits] for hits in index.search_batch(["capital of France", "capital of Italy"], k=1)]
            [['paris#0'], ['rome#0']]
        """
        queries = list(queries)
        bm25_weight = _renamed_lam(lam, bm25_weight)
        _check_search_args(k, bm25_weight, pool)
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
        within = None if within is None else np.asarray(within, dtype=np.int64)
        if within is not None and len(within) <= EXACT_WITHIN:
            return [self._rank_within(qvecs[i], q, within, k, excluded[i], bm25_weight) for i, q in enumerate(queries)]
        sizes = [self._pool_size(k, pool, e, within) for e in excluded]
        ids, cos_all = self._dense_top(qvecs, max(sizes), within)
        return [
            self._rank(
                qvecs[i], q, ids[i, : sizes[i]], k, excluded[i], bm25_weight, sizes[i],
                None if cos_all is None else cos_all[i], within,
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

    def _pool_size(self, k: int, pool: int, excluded: np.ndarray, within: np.ndarray | None = None) -> int:
        return min(len(self._chunks) if within is None else len(within), max(pool, k) + excluded.size)

    def _dense_top(self, qvecs: np.ndarray, n: int,
                   within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Row ids of the top-``n`` cosines per query (best first), among the rows ``within``
        when given, and, for the exact (flat) kind, every cosine.

        A flat index is searched with one matrix product over the stored embeddings (the
        same exact neighbours as FAISS's ``IndexFlatIP``, faster for a few queries), and
        the full cosine vector then serves the ranking. With the torch query embedder the
        product runs in torch, whose thread pool the embedding already uses: NumPy's
        OpenBLAS threads would keep spinning next to torch's on a small machine and slow
        both several-fold. With an ONNX embedder torch is never imported (that alone would
        dominate a cold query), and NumPy does the product.
        """
        n = min(n, len(self._chunks) if within is None else len(within))
        if self._dense.kind != "flat":
            _, ids = self._dense.search(qvecs, n) if within is None else self._dense.search(qvecs, n, allowed=within)
            return ids, None
        cos_all = self._all_cosines(qvecs)  # (m, N)
        pick = cos_all if within is None else cos_all[:, within]
        if n >= pick.shape[1]:
            ids = np.argsort(-pick, axis=1, kind="stable")
        else:
            part = np.argpartition(-pick, n - 1, axis=1)[:, :n]
            order = np.argsort(-np.take_along_axis(pick, part, axis=1), axis=1, kind="stable")
            ids = np.take_along_axis(part, order, axis=1)
        return (ids if within is None else within[ids]), cos_all

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

    def _rank_within(self, qvec: np.ndarray, query: str, rows: np.ndarray, k: int, excluded: np.ndarray,
                     bm25_weight: float) -> list[Chunk]:
        """The ``k`` best of ``rows`` (less ``excluded``), every one scored: exact cosine and BM25,
        each min-max normalised over them, combined as in :meth:`search`."""
        cands = np.setdiff1d(rows, excluded, assume_unique=True) if excluded.size else rows
        if cands.size == 0 or k <= 0:
            return []
        raw_bm25 = self._sparse.top_and_scores_at(query, 1, cands)[2]
        return self._best(cands, raw_bm25, self._cosines(cands, qvec), bm25_weight, k)

    def _best(self, cands: np.ndarray, raw_bm25: np.ndarray, cos: np.ndarray, bm25_weight: float,
              k: int) -> list[Chunk]:
        """The ``k`` best of the rows ``cands`` by the hybrid score (each signal min-max normalised
        over ``cands``), ties by row, with their scores."""
        score = bm25_weight * _normalise_scores(raw_bm25) + (1.0 - bm25_weight) * _normalise_scores(cos)
        order = np.lexsort((cands, -score))[:k]
        return [
            chunk.with_scores(score=float(score[j]), dense_score=float(cos[j]), bm25_score=float(raw_bm25[j]))
            for chunk, j in zip(self._chunks.take(cands[order]), order)
        ]

    def _rank(
        self,
        qvec: np.ndarray,
        query: str,
        dense_ids: np.ndarray,
        k: int,
        excluded: np.ndarray,
        bm25_weight: float,
        n_pool: int,
        cos_all: np.ndarray | None = None,
        within: np.ndarray | None = None,
    ) -> list[Chunk]:
        if within is None:
            left = len(self._chunks) - excluded.size
        else:
            left = within.size - int(np.isin(excluded, within, assume_unique=True).sum())
        want = min(k, left)
        if want <= 0:
            return []
        dense_rows = dense_ids[dense_ids >= 0].astype(np.int64)
        # BM25's top pool and its exact scores at the dense candidates, without scoring every chunk
        sparse_rows, sparse_scores, dense_bm25 = self._sparse.top_and_scores_at(query, n_pool, dense_rows, within)
        cands, first = np.unique(np.concatenate([dense_rows, sparse_rows]), return_index=True)
        raw_bm25 = np.concatenate([dense_bm25, sparse_scores])[first]
        if excluded.size:
            keep = ~np.isin(cands, excluded, assume_unique=True)
            cands, raw_bm25 = cands[keep], raw_bm25[keep]
        if cands.size < want:  # pool exhausted (tiny index, HNSW shortfall, huge exclude): score everything
            every = np.arange(len(self._chunks), dtype=np.int64) if within is None else within
            cands = np.setdiff1d(every, excluded, assume_unique=True)
            raw_bm25 = self._sparse.scores(query)[cands]
        cos = cos_all[cands] if cos_all is not None else self._cosines(cands, qvec)
        return self._best(cands, raw_bm25, cos, bm25_weight, want)


# -- helpers ---------------------------------------------------------------------------
def _check_query(query: Any) -> None:
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}", argument="query")
    if not query.strip():
        raise InputError("query is empty", argument="query")


def _renamed_lam(lam: float | None, bm25_weight: float) -> float:
    """``bm25_weight``, or the value given under its old name ``lam`` (with a DeprecationWarning)."""
    if lam is None:
        return bm25_weight
    warnings.warn("Index.search's 'lam' is now 'bm25_weight' (the programs' Search.bm25_weight); "
                  "'lam' goes in the next release", DeprecationWarning, stacklevel=3)
    return lam


def _check_search_args(k: Any, bm25_weight: Any, pool: Any) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InputError(f"k must be a non-negative integer, got {k!r}", argument="k")
    if isinstance(pool, bool) or not isinstance(pool, (int, np.integer)) or pool < 1:
        raise InputError(f"pool must be a positive integer, got {pool!r}", argument="pool")
    try:
        weight = float(bm25_weight)
    except (TypeError, ValueError):
        weight = float("nan")
    if not 0.0 <= weight <= 1.0:
        raise InputError(f"bm25_weight must be between 0 and 1, got {bm25_weight!r}", argument="bm25_weight")
