"""Building an index folder: from documents (here or on a Ray cluster), from chunks embedded
elsewhere, and the sentence data of an index built without it.

Every path ends in :func:`write_index`, which streams the chunks and vectors through an
:class:`~ragnet.index.writer.IndexWriter` into a temporary folder, writes the manifest
(:mod:`ragnet.index.manifest`) and swaps the folder into place; an update
(:mod:`ragnet.index.update`) writes through it too, so an updated index is written exactly as a
full build would write it. The functions take the ``Index`` class (``cls``) to open what they
wrote, as ``Index.build`` calls them.

Example:
    >>> import tempfile
    >>> from ragnet.index import Index
    >>> docs = [Document(id="paris", title="Paris", text="Paris is the capital of France.")]
    >>> built = build(Index, docs, tempfile.mkdtemp() + "/idx", show_progress=False)
    >>> len(built), built.path.name, "embed_s" in built.build_stats
    (1, 'idx', True)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ragnet._atomic import DirSwap, atomic_dir, dir_lock, usual_permissions
from ragnet.corpus.types import Chunk, Document, check_documents
from ragnet.errors import InputError
from ragnet.index.chunk_store import ChunkStore
from ragnet.index.embedder import Embedder, build_embedder
from ragnet.index.manifest import MANIFEST, check_output_folder, checksums, index_files, new_manifest, through_link
from ragnet.index.options import BuildEngine, DenseOptions
from ragnet.index.passages import passage_text
from ragnet.index.sentence_store import FOLDER as SENTENCES_DIR
from ragnet.index.sentence_store import FORMAT as SENTENCES_FORMAT
from ragnet.index.sentence_store import SentenceStore, VectorSpill, embed_unique
from ragnet.index.sparse import SparseIndex
from ragnet.index.sources import Sources

__all__ = ["EmbedderLike", "add_sentences", "as_embedder", "build", "build_from_shards", "build_local", "build_ray",
           "gazetteer_names", "output_path", "spilled_sentences", "write_index"]

EmbedderLike = Embedder | str | os.PathLike | None
#: Writes the sentence data into the staging folder once BM25 is merged; returns its manifest entry.
SentencesFrom = Callable[[SparseIndex, Path], dict[str, Any]]


def as_embedder(embedder: EmbedderLike) -> Embedder:
    """``embedder`` as an :class:`~ragnet.index.embedder.Embedder` (a name or folder is wrapped, not loaded)."""
    return embedder if isinstance(embedder, Embedder) else Embedder(embedder)


def gazetteer_names(gazetteer: Any) -> list[str] | None:
    """The place names a manifest records for ``gazetteer`` (None for none)."""
    return sorted(gazetteer.names) if gazetteer is not None else None


def output_path(path: str | os.PathLike) -> Path:
    """The folder an index given as ``path`` is written to (through a symbolic link,
    :func:`~ragnet.index.manifest.through_link`), checked as one ragnet may write
    (:func:`~ragnet.index.manifest.check_output_folder`)."""
    target = through_link(Path(path))
    check_output_folder(target)
    return target


@contextlib.contextmanager
def _writer_lock(path: Path) -> Iterator[None]:
    """One writer per folder from here to the swap; a second build is refused at once."""
    with dir_lock(path):
        check_output_folder(path)  # re-checked under the lock: another process may have written it
        yield


def _check_option(value: Any, expected: type, argument: str) -> None:
    if not isinstance(value, expected):
        raise InputError(f"expected a {expected.__name__}, got {type(value).__name__}", argument=argument)


# -- from documents ----------------------------------------------------------------------
def build(cls: type, docs: Iterable[Document], path: str | os.PathLike, chunk_tokens: int = 256, overlap: int = 32,
          embedder: EmbedderLike = None, *, dense: DenseOptions = DenseOptions(),
          engine: BuildEngine = BuildEngine(), sentences: bool = True, gazetteer: Any = None,
          show_progress: bool = True) -> Any:
    """What :meth:`ragnet.index.Index.build` does (arguments and errors as documented there)."""
    _check_option(dense, DenseOptions, "dense")
    _check_option(engine, BuildEngine, "engine")
    target = output_path(path)
    docs = list(docs)
    if not docs:
        raise InputError("no documents to index", argument="docs")
    check_documents(docs)
    emb = build_embedder(embedder)
    settings = {"chunk_tokens": chunk_tokens, "overlap": overlap, "doc_count": len(docs),
                "gazetteer": gazetteer_names(gazetteer)}
    with _writer_lock(target):
        if engine.kind == "ray":
            index = build_ray(cls, docs, target, emb, settings, dense, engine, gazetteer, sentences, show_progress)
        else:
            index = build_local(cls, docs, target, emb, settings, dense, gazetteer, sentences, show_progress)
    index.path = Path(path)
    return index


def build_local(cls: type, docs: list[Document], path: Path, emb: Embedder, settings: dict[str, Any],
                dense: DenseOptions, gazetteer: Any, sentences: bool, show_progress: bool,
                files: dict[str, Any] | None = None) -> Any:
    """Chunk, embed and write ``docs`` in this process, under the caller's writer lock.
    ``files`` are the file records ``ragnet index`` keeps in ``sources.json``."""
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
    return write_index(cls, path, [(chunks, embeddings, passages)], len(chunks), emb, dense, settings,
                       sentences_from=sentences_from if sentences else None, stats=stats, t_all=t_all,
                       extra=sources.save)


def build_ray(cls: type, docs: list[Document], path: Path, emb: Embedder, settings: dict[str, Any],
              dense: DenseOptions, engine: BuildEngine, gazetteer: Any, sentences: bool, show_progress: bool) -> Any:
    """Chunk and embed ``docs`` on a Ray cluster's workers and write them here, under the
    caller's writer lock."""
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
        sentences_from = spilled_sentences(emb, count, spill, stats, show_progress=False) if sentences else None
        return write_index(cls, path, parts, count, emb, dense, settings, sentences_from=sentences_from,
                           stats=stats, t_all=t_all, show_progress=show_progress)


def spilled_sentences(emb: Embedder, count: int, spill: VectorSpill, stats: dict[str, float],
                      show_progress: bool) -> SentencesFrom:
    """The sentence data of ``count`` chunks whose sentence vectors wait in ``spill`` in row order
    (from Ray workers, or an update's reused and new vectors): spans, tokens and BM25 terms are
    computed here (they need the corpus vocabulary), block by block from the chunks just written."""

    def sentences_from(sparse: SparseIndex, staging: Path) -> dict[str, Any]:
        t0 = time.perf_counter()
        with ChunkStore.open(staging, count) as chunks:
            info = SentenceStore.write(chunks, emb, sparse, staging / SENTENCES_DIR, count=count, vectors=spill,
                                       show_progress=show_progress)
        stats["sentences_s"] = time.perf_counter() - t0
        return info

    return sentences_from


# -- from embedded chunks ----------------------------------------------------------------
def build_from_shards(cls: type, shards: Iterable[tuple[Sequence[Chunk], np.ndarray]], path: str | os.PathLike,
                      count: int, embedder: EmbedderLike = None, *, dense: DenseOptions = DenseOptions(),
                      chunk_tokens: int | None = None, overlap: int | None = None,
                      show_progress: bool = True) -> Any:
    """What :meth:`ragnet.index.Index.build_from_shards` does."""
    _check_option(dense, DenseOptions, "dense")
    target = output_path(path)
    emb = as_embedder(embedder)
    settings = {"chunk_tokens": chunk_tokens, "overlap": overlap, "doc_count": None, "gazetteer": None}
    with _writer_lock(target):
        triples = ((chunks, vectors, None) for chunks, vectors in shards)
        index = write_index(cls, target, triples, count, emb, dense, settings, show_progress=show_progress)
    index.path = Path(path)
    return index


def write_index(cls: type, path: Path, shards: Iterable[tuple[Sequence[Chunk], np.ndarray, Sequence[str] | None]],
                count: int, emb: Embedder, dense: DenseOptions, settings: dict[str, Any], *,
                sentences_from: SentencesFrom | None = None, stats: dict[str, float] | None = None,
                t_all: float | None = None, show_progress: bool = False, extra: Callable[[Path], Any] | None = None,
                trained: Any = None) -> Any:
    """Stream ``shards`` (chunks, vectors, passages or None) through an
    :class:`~ragnet.index.writer.IndexWriter` into a temporary folder, write the manifest, swap
    the folder into place and open it. ``extra(folder)`` writes more files into it before the
    checksums (``sources.json``); ``trained`` is an empty IVF-PQ index already trained (an update
    keeps the index's quantizers)."""
    from tqdm.auto import tqdm

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
        manifest = new_manifest(embedder=emb, dimension=writer.dimension, count=count, settings=settings,
                                fields=fields, stemmer=sparse.stemmer_name, sentences=sentence_info)
        del dense_index, sparse  # the index reopens everything from the folder once it is in place
        t1 = time.perf_counter()
        manifest["files"] = checksums(tmp)
        stats["checksum_s"] = time.perf_counter() - t1
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        usual_permissions(tmp, recursive=True)
    stats["save_s"] = time.perf_counter() - t0
    index = cls.load(path, embedder=emb, verify=False)
    stats["total_s"] = time.perf_counter() - t_all
    index.build_stats = stats
    index.kept_files = swap.kept
    return index


# -- the sentence data of an existing index ------------------------------------------------
def add_sentences(index: Any, show_progress: bool = True) -> dict[str, Any]:
    """Write the sentence data of ``index`` (an ``Index``) into its folder and rewrite its
    manifest with their checksums; return the new manifest (:meth:`ragnet.index.Index.add_sentences`).

    The sentence files are written beside the index and moved in, then the manifest is rewritten
    atomically; an interrupted run leaves the index readable (at worst without sentence data).

    Raises:
        InputError: another process is writing the index folder, or ``sentences/`` holds
            something that is not ragnet's sentence data.
    """
    from ragnet._atomic import scratch_dir, write_json

    with dir_lock(index.path):
        target = index.path / SENTENCES_DIR
        with scratch_dir(index.path) as staging:  # cleans up what a killed run left
            # block by block, vectors straight to disk: an index of any size fits in memory
            written = SentenceStore.write(index.chunks, index.embedder, index.sparse, staging / SENTENCES_DIR,
                                          count=len(index), show_progress=show_progress)
            if target.exists():  # stale data of an older splitter, a crashed run's, or someone else's
                info = target / "info.json"
                if not info.is_file() or SENTENCES_FORMAT not in info.read_text(encoding="utf-8", errors="replace"):
                    raise InputError(f"{target} exists and is not ragnet's sentence data; move it elsewhere",
                                     path=target)
                shutil.rmtree(target)
            os.replace(staging / SENTENCES_DIR, target)
        manifest = dict(index.manifest)
        files = {k: v for k, v in manifest["files"].items() if not k.startswith(f"{SENTENCES_DIR}/")}
        files.update(checksums(target, root=index.path))
        manifest["files"] = files
        manifest["sentences"] = written
        write_json(index.path / MANIFEST, manifest)
    return manifest
