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

On-disk layout (``format_version`` 1; nothing is pickled)::

    manifest.json     format_version, ragnet_version, embedder, dimension, normalize,
                      chunk_count, chunk_tokens, overlap, tokenizer, faiss_index, created,
                      files {relative name: sha256}
    chunks.jsonl      one Chunk.to_dict() per line (scores left out)
    embeddings.npy    float32 (chunk_count, dimension), L2-normalised rows
    dense.faiss       FAISS native index over the same vectors
    bm25/             bm25s native save (.npy + JSON) and tokenizer.json
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ragnet._atomic import DirSwap, atomic_dir, check_writable_parent, dir_lock
from ragnet._hashing import sha256_file
from ragnet.corpus.types import Chunk, Document
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.dense import KINDS, DenseIndex
from ragnet.index.embedder import Embedder
from ragnet.index.sentences import FOLDER as SENTENCES_DIR
from ragnet.index.sentences import FORMAT as SENTENCES_FORMAT
from ragnet.index.sentences import SPLITTER as SENTENCES_SPLITTER
from ragnet.index.sentences import SentenceStore, idf_of
from ragnet.index.sparse import SparseIndex, top_positive

FORMAT_VERSION = 1
TOKENIZER = "tiktoken:cl100k_base"
PASSAGE_FORMAT = "title\\ntext"  # what is embedded and BM25-indexed per chunk (see passage_text)
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "ragnet-index"  # what marks a folder as ragnet's to replace
CHUNKS = "chunks.jsonl"
EMBEDDINGS = "embeddings.npy"
DENSE = "dense.faiss"
BM25_DIR = "bm25"
_REQUIRED_KEYS = ("format_version", "embedder", "dimension", "chunk_count", "faiss_index", "files")
_SCORE_FIELDS = ("score", "dense_score", "bm25_score")
_REBUILD = "rebuild with `ragnet index`"

EmbedderLike = Embedder | str | os.PathLike | None


def passage_text(chunk: Chunk) -> str:
    """The text that is embedded and BM25-indexed for ``chunk``: title line + chunk text.

    Titles often carry the entity a passage is about ("He was born in ..."), so both
    retrievers see them. The title is not repeated when the text already starts with it.

    Example:
        >>> passage_text(Chunk(id="a#0", doc_id="a", title="Paris", text="It is big.", tokens=3))
        'Paris\\nIt is big.'
    """
    title = chunk.title.strip()
    if not title:
        return chunk.text
    head, key = chunk.text.lstrip("# \t\n").casefold(), title.casefold()
    if head.startswith(key) and (len(head) == len(key) or not head[len(key)].isalnum()):
        return chunk.text  # the text already opens with its title (e.g. a Markdown heading)
    return f"{title}\n{chunk.text}"


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
        chunks: list[Chunk],
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
        self._rows = {c.id: i for i, c in enumerate(chunks)}
        self._emb = embeddings
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
        faiss_index: str = "auto",
        show_progress: bool = True,
        gazetteer: Any = None,
        faiss_threshold: int = 50_000,
        sentences: bool = True,
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
                bundled all-MiniLM-L6-v2.
            faiss_index: ``"auto"`` (flat below ``faiss_threshold`` chunks, else HNSW),
                ``"flat"``, ``"hnsw"`` or ``"ivf"``.
            show_progress: progress bars for chunking, embedding and BM25.
            gazetteer: optional ``ragnet.corpus.metadata.Gazetteer`` for place metadata.
            faiss_threshold: chunk count from which ``"auto"`` switches to HNSW.
            sentences: also split every chunk into sentences and embed them (``sentences/``),
                for sentence-level context selection; about as much embedding work again as
                the chunks. Without it, sentence selection embeds candidate sentences per
                question (or add them later with :meth:`add_sentences`).

        Raises:
            InputError: no documents, bad arguments, or ``path`` is a non-index folder.

        Example:
            >>> docs = [Document(id="d", title="T", text="Some text.")]
            >>> len(Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False))
            1
        """
        if faiss_index not in KINDS:
            raise InputError(
                f"unknown FAISS index kind {faiss_index!r}; choose one of {', '.join(KINDS)}", argument="faiss_index"
            )
        path = Path(path)
        check_output_folder(path)
        docs = list(docs)
        if not docs:
            raise InputError("no documents to index", argument="docs")
        _check_unique_ids(docs)
        emb = _as_embedder(embedder)
        # One writer per folder from here to the swap; a second build is refused at once.
        with dir_lock(path):
            check_output_folder(path)  # re-checked under the lock: another process may have written it
            return cls._build_locked(docs, path, chunk_tokens, overlap, emb, faiss_index, show_progress,
                                     gazetteer, faiss_threshold, sentences)

    @classmethod
    def _build_locked(cls, docs: list[Document], path: Path, chunk_tokens: int, overlap: int, emb: Embedder,
                      faiss_index: str, show_progress: bool, gazetteer: Any, faiss_threshold: int,
                      sentences: bool) -> "Index":
        from tqdm.auto import tqdm

        from ragnet import __version__
        from ragnet.corpus.chunking import chunk_documents

        stats: dict[str, float] = {}
        t_all = time.perf_counter()

        # 1. chunk (the bar counts characters, so it moves inside a long document too)
        t0 = time.perf_counter()
        total_chars = sum(len(d.text) for d in docs if isinstance(getattr(d, "text", None), str))
        with tqdm(total=total_chars, desc="Chunking", unit="char", unit_scale=True, disable=not show_progress,
                  mininterval=0.5) as bar:
            chunks = chunk_documents(docs, chunk_tokens, overlap, gazetteer=gazetteer, progress=bar.update)
        if not chunks:
            raise InputError("the documents produced no chunks (all empty?)", argument="docs")
        stats["chunk_s"] = time.perf_counter() - t0

        # 2. embed unique passages only (model load timed apart: it is cached per process)
        t0 = time.perf_counter()
        emb.model  # noqa: B018
        stats["model_load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        passages = [passage_text(c) for c in chunks]
        first: dict[str, int] = {}
        inverse = np.fromiter((first.setdefault(p, len(first)) for p in passages), dtype=np.int64, count=len(passages))
        unique = list(first)
        vectors = emb.encode(unique, show_progress=show_progress)
        embeddings = vectors if len(unique) == len(passages) else np.ascontiguousarray(vectors[inverse])
        stats["embed_s"] = time.perf_counter() - t0

        # 3. dense
        t0 = time.perf_counter()
        dense = DenseIndex.build(embeddings, kind=faiss_index, threshold=faiss_threshold)
        stats["faiss_s"] = time.perf_counter() - t0

        # 4. sparse
        t0 = time.perf_counter()
        sparse = SparseIndex.build(passages, show_progress=False)  # bm25s's own bars would interleave with ours
        stats["bm25_s"] = time.perf_counter() - t0

        # 4b. sentences (boundaries, tokens, BM25 terms, vectors) for sentence-level selection
        store = None
        if sentences:
            t0 = time.perf_counter()
            store = SentenceStore.build(chunks, emb, sparse, show_progress=show_progress)
            stats["sentences_s"] = time.perf_counter() - t0

        # 5. metadata catalog (for the rule filter's "add" step)
        t0 = time.perf_counter()
        catalog = _build_catalog(chunks)
        stats["catalog_s"] = time.perf_counter() - t0

        # 6. persist atomically
        t0 = time.perf_counter()
        manifest = {
            "format": MANIFEST_FORMAT,
            "format_version": FORMAT_VERSION,
            "ragnet_version": __version__,
            "embedder": emb.name,
            "dimension": int(embeddings.shape[1]),
            "normalize": True,
            "chunk_count": len(chunks),
            "doc_count": len(docs),
            "chunk_tokens": chunk_tokens,
            "overlap": overlap,
            "tokenizer": TOKENIZER,
            "passage_format": PASSAGE_FORMAT,
            "faiss_index": dense.kind,
            # Place names used for chunk metadata; questions must be read with the same list.
            "gazetteer": sorted(gazetteer.names) if gazetteer is not None else None,
            "bm25": {"method": "lucene", "stopwords": "en", "stemmer": sparse.stemmer_name},
            "sentences": store.info if store is not None else None,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "files": {},
        }
        swap = DirSwap()
        with atomic_dir(path, owned=index_files, swap=swap) as tmp:
            with open(tmp / CHUNKS, "w", encoding="utf-8") as fh:
                for c in chunks:
                    record = c.to_dict()
                    for key in _SCORE_FIELDS:
                        record.pop(key, None)
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            np.save(tmp / EMBEDDINGS, embeddings, allow_pickle=False)
            dense.save(tmp / DENSE)
            sparse.save(tmp / BM25_DIR)
            if store is not None:
                store.save(tmp / SENTENCES_DIR)
            manifest["files"] = {
                f.relative_to(tmp).as_posix(): sha256_file(f) for f in sorted(tmp.rglob("*")) if f.is_file()
            }
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            _usual_permissions(tmp)
        stats["save_s"] = time.perf_counter() - t0
        stats["total_s"] = time.perf_counter() - t_all
        index = cls(path, manifest, chunks, embeddings, dense, sparse, emb, catalog=catalog, build_stats=stats)
        index.kept_files = swap.kept
        index._sentences = store
        return index

    # -- loading -----------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike, embedder: EmbedderLike = None, verify: bool = True) -> "Index":
        """Open an index folder written by ``Index.build``.

        Args:
            path: the index folder.
            embedder: the query embedder; None uses the one recorded in the manifest. A
                different model than the one the index was built with is refused.
            verify: check every file's SHA-256 against the manifest (catches corruption).

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
        for required in (CHUNKS, EMBEDDINGS, DENSE):
            if required not in files:
                raise IndexFormatError(f"index at {path} is corrupt: manifest lists no {required}; {_REBUILD}")
        for rel, digest in files.items():
            f = path / rel
            if not f.is_file():
                raise IndexFormatError(f"index at {path} is incomplete: {rel} is missing; {_REBUILD}")
            if verify and sha256_file(f) != digest:
                raise IndexFormatError(f"index at {path} is corrupt: {rel} checksum mismatch; {_REBUILD}")

        count, dim = int(manifest["chunk_count"]), int(manifest["dimension"])
        chunks = _read_chunks(path / CHUNKS)
        if len(chunks) != count:
            raise IndexFormatError(
                f"index at {path} is corrupt: {CHUNKS} has {len(chunks)} chunks, manifest says {count}; {_REBUILD}"
            )
        try:
            embeddings = np.load(path / EMBEDDINGS, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"index at {path} is corrupt: {EMBEDDINGS} unreadable ({exc}); {_REBUILD}") from exc
        if embeddings.shape != (count, dim) or embeddings.dtype != np.float32:
            raise IndexFormatError(
                f"index at {path} is corrupt: {EMBEDDINGS} has shape {embeddings.shape} {embeddings.dtype}, "
                f"expected ({count}, {dim}) float32; {_REBUILD}"
            )
        dense = DenseIndex.load(path / DENSE, manifest["faiss_index"])
        if dense.ntotal != count or dense.dimension != dim:
            raise IndexFormatError(
                f"index at {path} is corrupt: {DENSE} holds {dense.ntotal} vectors of dimension {dense.dimension}, "
                f"expected {count} of {dim}; {_REBUILD}"
            )
        sparse = SparseIndex.load(path / BM25_DIR)
        if len(sparse) != count:
            raise IndexFormatError(
                f"index at {path} is corrupt: BM25 index covers {len(sparse)} chunks, expected {count}; {_REBUILD}"
            )
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
        return chunk_id in self._rows

    @property
    def sparse(self) -> SparseIndex:
        """The BM25 side of the index (its tokenizer and vocabulary)."""
        return self._sparse

    @property
    def chunks(self) -> list[Chunk]:
        """All chunks, in index order (row ``i`` of ``vectors``). Shared, not copied: do not modify."""
        return self._chunks

    @property
    def embedder(self) -> Embedder:
        """The query embedder (created from the manifest's name on first use).

        Raises:
            IndexFormatError: the model the manifest names cannot be loaded here (a renamed or
                edited manifest, or a model this machine does not have).
        """
        if self._embedder is None:
            name = self.manifest["embedder"]
            try:
                emb = Embedder(name)
                emb.model  # noqa: B018 - load now, so a bad name is reported as the index's problem
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
        """The index's :class:`~ragnet.index.sentences.SentenceStore`, or None when it was built
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
        from ragnet._atomic import clean_stale, write_json

        with dir_lock(self.path):
            clean_stale(self.path)
            store = SentenceStore.build(self._chunks, self.embedder, self._sparse, show_progress=show_progress)
            target = self.path / SENTENCES_DIR
            staging = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.{os.getpid()}.", suffix=".tmp",
                                            dir=self.path.parent))
            try:
                store.save(staging / SENTENCES_DIR)
                if target.exists():  # stale data of an older splitter, a crashed run's, or someone else's
                    info = target / "info.json"
                    if not info.is_file() or SENTENCES_FORMAT not in info.read_text(encoding="utf-8", errors="replace"):
                        raise InputError(f"{target} exists and is not ragnet's sentence data; move it elsewhere",
                                         path=target)
                    shutil.rmtree(target)
                os.replace(staging / SENTENCES_DIR, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            manifest = dict(self.manifest)
            files = {k: v for k, v in manifest["files"].items() if not k.startswith(f"{SENTENCES_DIR}/")}
            for f in sorted(target.rglob("*")):
                if f.is_file():
                    files[f.relative_to(self.path).as_posix()] = sha256_file(f)
            manifest["files"] = files
            manifest["sentences"] = store.info
            write_json(self.path / MANIFEST, manifest)
            self.manifest = manifest
        self._sentences = SentenceStore.load(target, len(self), self.dimension)
        return self._sentences

    @property
    def catalog(self) -> Any:
        """``ragnet.core.rules.MetadataCatalog`` over all chunks (built on first use after load)."""
        if self._catalog is None:
            self._catalog = _build_catalog(self._chunks)
        return self._catalog

    def chunk(self, chunk_id: str) -> Chunk:
        """The chunk with id ``chunk_id``.

        Raises:
            KeyError: no such chunk (the message names the id and the index).

        Example:
            >>> index.chunk("paris#0").title
            'Paris'
        """
        row = self._rows.get(chunk_id)
        if row is None:
            raise KeyError(
                f"no chunk with id {chunk_id!r} in index at {self.path} "
                f"({len(self)} chunks; ids look like {self._chunks[0].id!r})"
            )
        return self._chunks[row]

    def get(self, ids: Iterable[str]) -> list[Chunk]:
        """Chunks for ``ids``, in the given order (``KeyError`` for an unknown id)."""
        return [self.chunk(i) for i in ids]

    def rows(self, ids: Iterable[str]) -> np.ndarray:
        """Row numbers (into ``chunks`` / ``vectors``) of ``ids`` (``KeyError`` for an unknown id)."""
        return np.fromiter((self._rows[i] if i in self._rows else self._missing(i) for i in ids), dtype=np.int64)

    def _missing(self, chunk_id: str) -> int:
        self.chunk(chunk_id)  # raises the descriptive KeyError
        return -1  # pragma: no cover

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
        embeddings) and the raw BM25 score ``bm25`` (from the full BM25 score vector) are
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
        bm25 = self._sparse.scores(query)
        n_pool = self._pool_size(k, pool, excluded)
        ids, cos_all = self._dense_top(qvec[None, :], n_pool)
        return self._rank(qvec, bm25, ids[0], k, excluded, lam, n_pool, None if cos_all is None else cos_all[0])

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
                qvecs[i], self._sparse.scores(q), ids[i, : sizes[i]], k, excluded[i], lam, sizes[i],
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
        return [self._chunks[r].with_scores(score=float(c), dense_score=float(c)) for r, c in zip(rows, cos)]

    def bm25_search(self, query: str, k: int = 5) -> list[Chunk]:
        """BM25-only retrieval (chunks with a positive score); ``score`` = ``bm25_score``."""
        _check_search_args(k, 0.0, 1)
        _check_query(query)
        rows, scores = top_positive(self._sparse.scores(query), k)
        return [self._chunks[r].with_scores(score=float(s), bm25_score=float(s)) for r, s in zip(rows, scores)]

    # -- internals ---------------------------------------------------------------------
    def _excluded_rows(self, exclude: Iterable[str]) -> np.ndarray:
        if isinstance(exclude, str):
            exclude = (exclude,)
        rows = {self._rows[i] for i in exclude if i in self._rows}
        return np.fromiter(sorted(rows), dtype=np.int64, count=len(rows))

    def _pool_size(self, k: int, pool: int, excluded: np.ndarray) -> int:
        return min(len(self._chunks), max(pool, k) + excluded.size)

    def _dense_top(self, qvecs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Row ids of the top-``n`` cosines per query (best first), and, for the exact (flat)
        kind, every cosine.

        A flat index is searched with one matrix product over the stored embeddings (the
        same exact neighbours as FAISS's ``IndexFlatIP``, faster for a few queries), and
        the full cosine vector then serves the ranking. The product runs in torch, whose
        thread pool the query embedding already uses: NumPy's OpenBLAS threads would keep
        spinning next to torch's on a small machine and slow both several-fold.
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
        import torch

        if self._emb_torch is None:
            self._emb_torch = torch.from_numpy(self._emb)
        with torch.inference_mode():
            return (torch.from_numpy(np.ascontiguousarray(qvecs, dtype=np.float32)) @ self._emb_torch.T).numpy()

    def _cosines(self, rows: np.ndarray, qvec: np.ndarray) -> np.ndarray:
        """Cosines of a few rows without BLAS (see ``_dense_top`` on thread pools)."""
        return np.einsum("ij,j->i", self._emb[rows], qvec)

    def _rank(
        self,
        qvec: np.ndarray,
        bm25: np.ndarray,
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
        sparse_rows, _ = top_positive(bm25, n_pool)
        cands = np.union1d(dense_ids[dense_ids >= 0].astype(np.int64), sparse_rows)
        if excluded.size:
            cands = cands[~np.isin(cands, excluded, assume_unique=True)]
        if cands.size < want:  # pool exhausted (tiny index, HNSW shortfall, huge exclude): score everything
            cands = np.setdiff1d(np.arange(n, dtype=np.int64), excluded, assume_unique=True)
        cos = cos_all[cands] if cos_all is not None else self._cosines(cands, qvec)
        raw_bm25 = bm25[cands]
        score = lam * _normalise_scores(raw_bm25) + (1.0 - lam) * _normalise_scores(cos)
        order = np.lexsort((cands, -score))[:want]
        return [
            self._chunks[cands[j]].with_scores(
                score=float(score[j]), dense_score=float(cos[j]), bm25_score=float(raw_bm25[j])
            )
            for j in order
        ]


# -- helpers ---------------------------------------------------------------------------
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

    A folder is a ragnet index when its ``manifest.json`` says so: a JSON object with a
    format version, an embedder and the per-file checksums ``Index.build`` writes (older
    manifests lack the ``"format": "ragnet-index"`` marker and are recognised by those keys).
    Only the files the manifest lists, and the manifest itself, are ragnet's.

    Example:
        >>> import tempfile, pathlib, json
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "manifest.json").write_text('{"name": "my web app"}')
        >>> index_files(d) is None
        True
    """
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        return None
    if manifest.get("format", MANIFEST_FORMAT) != MANIFEST_FORMAT:
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


def _usual_permissions(folder: Path) -> None:
    """Give the index the modes a plain ``mkdir``/``open`` would (temp files start owner-only)."""
    mask = os.umask(0o022)
    os.umask(mask)
    folder.chmod(0o777 & ~mask)
    for p in folder.rglob("*"):
        p.chmod((0o777 if p.is_dir() else 0o666) & ~mask)


def _build_catalog(chunks: Sequence[Chunk]) -> Any:
    from ragnet.core.rules import MetadataCatalog

    return MetadataCatalog.build((c.id, c.metadata, c.title) for c in chunks)


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
            f"index at {path} has format_version {version!r}, but this ragnet reads format {FORMAT_VERSION}; "
            f"{_REBUILD}"
        )
    missing = [key for key in _REQUIRED_KEYS if key not in manifest]
    if missing:
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} lacks {', '.join(missing)}; {_REBUILD}")
    if not isinstance(manifest["files"], dict):
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} 'files' is not an object; {_REBUILD}")
    return manifest


def _read_chunks(file: Path) -> list[Chunk]:
    chunks: list[Chunk] = []
    with open(file, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                chunks.append(Chunk.from_dict(json.loads(line)))
            except (json.JSONDecodeError, TypeError) as exc:
                raise IndexFormatError(f"index is corrupt: {file}:{line_no} is not a chunk record ({exc}); {_REBUILD}") from exc
    return chunks
