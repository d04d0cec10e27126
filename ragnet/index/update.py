"""Keep an index in step with its documents: add, change and remove without starting over.

``ragnet index FOLDER --out IDX`` on an index built from that folder, ``Index.sync``,
``Index.update(docs)`` and ``Index.remove(...)`` end here. What changed is found by content
hashes (``sources.json``, :mod:`ragnet.index.sources`): a file whose bytes hash as before is not
read, a document that hashes as before is not chunked, and a chunk whose title and text were in
the index keeps its vectors. Only new passages and their sentences are embedded.

**Equal to a full build.** The update writes the whole index anew, through the same writer as
``Index.build`` (:func:`ragnet.index.build.write_index`), from the reused chunks and vectors and
the new ones, in the order a full build of the same documents would give them. So chunk rows, BM25 statistics
(document frequencies and lengths over the new corpus, the part that changes with every
document), the sentence store, the metadata catalog and the dense index are those of a full
build; search results and every program's context are the same (vectors embedded in other
batches differ in the last float digits). What a full build pays for and an update does not is
reading, chunking and embedding the documents that did not change; what an update still pays is
rewriting the stores, which costs seconds per hundred thousand chunks. The on-disk IVF-PQ kind
keeps its trained quantizers (a full build would train new ones on a sample of the new corpus),
so there an update equals a full build given those quantizers; ``--rebuild`` trains anew.

**Atomic and locked.** The new index is written into a temporary folder beside the old one and
swapped in (``ragnet._atomic.atomic_dir``), so a crash or ``kill -9`` at any point leaves the
previous index (or, after the swap, the new one) whole; one writer per folder at a time
(``dir_lock``): a second update is refused at once with one line.

Example:
    >>> import ragnet, tempfile
    >>> docs = [ragnet.Document(id="paris", title="Paris", text="Paris is the capital of France."),
    ...         ragnet.Document(id="rome", title="Rome", text="Rome is the capital of Italy.")]
    >>> index = ragnet.Index.build(docs, tempfile.mkdtemp() + "/idx", show_progress=False)
    >>> docs[1] = ragnet.Document(id="rome", title="Rome", text="Rome is on the Tiber.")
    >>> print(index.update(docs + [ragnet.Document(id="oslo", title="Oslo", text="Oslo is in Norway.")],
    ...                    show_progress=False).line())
    +1 document, ~1 changed, -0 removed (1 unchanged); 2 chunks embedded, 1 reused
    >>> print(index.remove("paris", show_progress=False).line())
    +0 documents, ~0 changed, -1 removed (2 unchanged); 0 chunks embedded, 2 reused
    >>> [c.id for c in index.search("river", k=1)]
    ['rome#0']
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ragnet._atomic import clean_stale, dir_lock
from ragnet._hashing import sha256_file
from ragnet.corpus.types import Chunk, Document, check_documents
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.build import build_local, build_ray, gazetteer_names, spilled_sentences, write_index
from ragnet.index.embedder import Embedder, build_embedder
from ragnet.index.manifest import index_files
from ragnet.index.options import BuildEngine, DenseOptions
from ragnet.index.passages import passage_text
from ragnet.index.sentence_store import VectorSpill, chunk_sentences, embed_unique
from ragnet.index.sources import DocRecord, FileRecord, Sources, code_fingerprint, document_hash
from ragnet.index.writer import DENSE

__all__ = ["UpdateReport", "remove_from_index", "sync_folder", "update_index"]

#: The ``ragnet index`` options an update must not change, with what they mean, for the refusal.
_OPTION_WORDS = {"chunk-tokens": "chunk size", "overlap": "chunk overlap", "embedder": "embedder",
                 "embed-backend": "embedding backend", "faiss-index": "dense index kind", "nprobe": "nprobe",
                 "sentences": "", "gazetteer": "gazetteer"}  # the sentence values name themselves
_ACTIVE: set[str] = set()  # index folders this process is updating (dir_lock is re-entrant per process)
_ACTIVE_GUARD = threading.Lock()


@dataclass
class UpdateReport:
    """What an update did.

    Attributes:
        unit: ``"file"`` (``ragnet index`` / ``Index.sync``) or ``"document"`` (``Index.update``).
        added, changed, removed, unchanged: counts of that unit.
        chunks_embedded, chunks_reused: chunks of the new index whose vectors were computed now /
            taken from the old index.
        sentences_embedded, sentences_reused: the same for sentence vectors.
        full_build: the index was built from scratch (no index there, ``rebuild``, or an index
            that cannot be updated; ``note`` says which).
        written: False when nothing changed and the index was left as it was.
        seconds: wall time of the whole update.
        stats: seconds per phase (``read_s``, ``chunk_s``, ``embed_s``, ``sentences_embed_s``,
            the writer's phases ...).
        note: why a full build ran instead of an update, or other advice ("" when none).
        load: for ``Index.sync``, the :class:`~ragnet.corpus.loader.LoadReport` of the files (the
            documents read now, the files skipped with ``on_error="skip"``).

    Example:
        >>> UpdateReport("file", added=3, changed=1, removed=2, unchanged=40, chunks_embedded=41,
        ...              chunks_reused=1865).line()
        '+3 files, ~1 changed, -2 removed (40 unchanged); 41 chunks embedded, 1,865 reused'
    """

    unit: str = "file"
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    sentences_embedded: int = 0
    sentences_reused: int = 0
    full_build: bool = False
    written: bool = True
    seconds: float = 0.0
    stats: dict[str, float] = field(default_factory=dict)
    note: str = ""
    load: Any = None

    def line(self) -> str:
        """One line: ``+3 files, ~1 changed, -2 removed (40 unchanged); 41 chunks embedded, 1,865 reused``."""
        unit = self.unit + ("" if self.added == 1 else "s")
        return (f"+{self.added:,} {unit}, ~{self.changed:,} changed, -{self.removed:,} removed "
                f"({self.unchanged:,} unchanged); {self.chunks_embedded:,} chunks embedded, "
                f"{self.chunks_reused:,} reused")

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-compatible data."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "load"}


# -- the plan: which documents the new index holds, in row order ---------------------------
@dataclass(frozen=True)
class _Keep:
    """A document whose chunks and vectors are taken from the old index as they are."""

    doc_id: str
    record: DocRecord


@dataclass(frozen=True)
class _Fresh:
    """A document to chunk (its passages' vectors are reused where the old index had them)."""

    doc: Document
    sha256: str


_Item = _Keep | _Fresh


@contextlib.contextmanager
def _updating(path: Path) -> Iterator[None]:
    """One writer per index folder: across processes (``dir_lock``, refused at once) and across
    the threads of this process (``dir_lock`` lets its own process in again)."""
    key = str(Path(path).absolute())
    with _ACTIVE_GUARD:
        if key in _ACTIVE:
            raise InputError("another update of this index is running in this process; wait for it to finish",
                             path=path)
        _ACTIVE.add(key)
    try:
        with dir_lock(path):
            clean_stale(path)  # an update killed between its two renames left the old index aside: put it back
            yield
    finally:
        with _ACTIVE_GUARD:
            _ACTIVE.discard(key)


@contextlib.contextmanager
def _open_for_update(cls: type, path: Path) -> Iterator[tuple[Any, Sources]]:
    """The index at ``path`` under the writer lock, checked as updatable, with its sources; what
    it holds open is released on the way out."""
    with _updating(path):
        old = cls.load(path, verify=False)
        try:
            _check_updatable(old)
            yield old, _sources_of(old)
        finally:
            _release(old)


def _sources_of(old: Any) -> Sources:
    """The old index's sources, checked against its chunk ids; derived from the chunk ids (no
    hashes, so nothing counts as unchanged) when ``sources.json`` is missing or does not match,
    and without its hashes when another version of ragnet's reading or chunking wrote it."""
    sources = Sources.load(old.path)
    store = old.chunks
    n = len(store)
    if sources is not None and sources.code != code_fingerprint():
        sources = Sources({i: DocRecord("", r.row, r.chunks) for i, r in sources.docs.items()}, {})
    if sources is not None:
        row, ok = 0, True
        for doc_id, rec in sources.docs.items():
            if rec.row != row or not rec.held_by(store, doc_id):
                ok = False
                break
            row += rec.chunks
        if ok and row == n:
            return sources
    docs: dict[str, DocRecord] = {}
    first, count = 0, 0
    current = None
    for row in range(n):
        doc_id = store.id_at(row).rsplit("#", 1)[0]
        if doc_id != current:
            if current is not None:
                docs[current] = DocRecord("", first, count)
            current, first, count = doc_id, row, 0
        count += 1
    if current is not None:
        docs[current] = DocRecord("", first, count)
    return Sources(docs, {})


# -- Python API: update(docs), remove(names) -----------------------------------------------
def update_index(cls: type, path: Path, docs: Iterable[Document], *, remove_missing: bool = True,
                 embedder: Embedder | None = None, show_progress: bool = True) -> tuple[Any, UpdateReport]:
    """What ``Index.update`` does (``cls`` is ``Index``): the index at ``path`` made equal to a
    full build of ``docs`` (``remove_missing``), or of its documents with ``docs`` added or
    replacing those of the same id (``remove_missing=False``)."""
    docs = list(docs)
    check_documents(docs)
    t0 = time.perf_counter()
    with _open_for_update(cls, path) as (old, sources):
        hashes = {doc.id: document_hash(doc) for doc in docs}
        given = {doc.id: doc for doc in docs}
        plan: list[_Item] = []
        report = UpdateReport("document")

        def item(doc: Document) -> _Item:
            rec = sources.docs.get(doc.id)
            if rec is not None and rec.sha256 and rec.sha256 == hashes[doc.id]:
                report.unchanged += 1
                return _Keep(doc.id, rec)
            if rec is None:
                report.added += 1
            else:
                report.changed += 1
            return _Fresh(doc, hashes[doc.id])

        if remove_missing:
            plan = [item(doc) for doc in docs]
            report.removed = sum(1 for doc_id in sources.docs if doc_id not in given)
        else:  # the old documents in place, changed ones replaced there, new ones at the end
            for doc_id, rec in sources.docs.items():
                plan.append(item(given[doc_id]) if doc_id in given else _Keep(doc_id, rec))
                report.unchanged += doc_id not in given
            plan.extend(item(doc) for doc in docs if doc.id not in sources.docs)
        if not plan:
            raise InputError("no documents left: an index needs at least one; give documents to keep",
                             argument="docs")
        kept_ids = {it.doc_id for it in plan if isinstance(it, _Keep)}
        files = {k: r for k, r in sources.files.items() if all(d in kept_ids for d in r.docs)}
        if not (report.added or report.changed or report.removed) and _same_order(plan, sources):
            report.written, report.chunks_reused = False, len(old)
            report.seconds = time.perf_counter() - t0
            return None, report
        new = _rewrite(cls, path, old, plan, sources, files, report, embedder=embedder,
                       show_progress=show_progress)
    report.seconds = time.perf_counter() - t0
    return new, report


def remove_from_index(cls: type, path: Path, names: str | Iterable[str], *,
                      show_progress: bool = True) -> tuple[Any, UpdateReport]:
    """What ``Index.remove`` does: the index without the documents of the named files (keys as
    ``sources.json`` and citations give them, e.g. ``manual.pdf``) or with the named document ids."""
    names = [names] if isinstance(names, str) else list(names)
    if not names or not all(isinstance(n, str) for n in names):
        raise InputError("give file names or document ids (strings) to remove", argument="names")
    t0 = time.perf_counter()
    with _open_for_update(cls, path) as (old, sources):
        gone: set[str] = set()
        unknown = []
        for name in dict.fromkeys(names):
            if name in sources.files:
                gone.update(sources.files[name].docs)
            elif name in sources.docs:
                gone.add(name)
            else:
                unknown.append(name)
        if unknown:
            shown = ", ".join(repr(u) for u in unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            example = next(iter(sources.files), None) or next(iter(sources.docs), "")
            raise InputError(f"not a file or document of the index at {path}: {shown} (names look like "
                             f"{example!r}); nothing was removed", argument="names")
        plan: list[_Item] = [_Keep(i, r) for i, r in sources.docs.items() if i not in gone]
        if not plan:
            raise InputError("that removes every document; an index needs at least one (delete the folder "
                             "instead)", argument="names")
        report = UpdateReport("document", removed=len(gone), unchanged=len(plan))
        files = {k: r for k, r in sources.files.items() if not gone.intersection(r.docs)}
        new = _rewrite(cls, path, old, plan, sources, files, report, show_progress=show_progress)
    report.seconds = time.perf_counter() - t0
    return new, report


def _same_order(plan: Sequence[_Item], sources: Sources) -> bool:
    """Whether ``plan`` keeps every old document, unchanged, in its old order (nothing to write)."""
    return all(isinstance(it, _Keep) for it in plan) and [it.doc_id for it in plan] == list(sources.docs)


def _release(index: Any) -> None:
    """Close what an index object holds open (its chunk file); the object is not used again."""
    with contextlib.suppress(Exception):
        index.chunks.close()


def _check_updatable(old: Any) -> None:
    m = old.manifest
    if m.get("chunk_tokens") is None or m.get("overlap") is None:
        raise InputError(f"the index at {old.path} was written from vectors computed elsewhere "
                         "(Index.build_from_shards) and records no chunking settings, so it cannot be updated; "
                         "build it with Index.build or `ragnet index`", path=old.path)


# -- ragnet index: a folder of files -----------------------------------------------------
def sync_folder(cls: type, paths: Any, path: Path, *, chunk_tokens: int | None = None, overlap: int | None = None,
                embedder: str | None = None, embed_backend: str | None = None, dense: DenseOptions | None = None,
                nprobe: int | None = None, sentences: bool | None = None, gazetteer: Any = None,
                engine: BuildEngine = BuildEngine(), rebuild: bool = False, max_file_mb: float | None = 20.0,
                on_error: str = "fail", show_progress: bool = True, follow_links: bool = False,
                on_read: Callable[[Any], None] | None = None) -> tuple[Any, UpdateReport, Any]:
    """What ``Index.sync`` and ``ragnet index`` do; see :meth:`ragnet.index.Index.sync`.

    Returns:
        ``(index, report, load_report)``: the index, what changed, and the
        :class:`~ragnet.corpus.loader.LoadReport` of the files read (its ``files_read`` counts
        every file of the index, read now or unchanged).
    """
    from ragnet.corpus.loader import LoadReport

    t0 = time.perf_counter()
    with _updating(path):
        old, note = _open_old(cls, path, rebuild)
        try:
            settings = _settings(old, chunk_tokens=chunk_tokens, overlap=overlap, embedder=embedder,
                                 embed_backend=embed_backend, dense=dense, nprobe=nprobe, sentences=sentences,
                                 gazetteer=gazetteer)
            sources = _sources_of(old) if old is not None else Sources()
            if old is not None and not sources.files:
                note = ("the index records no file hashes (built from Python, by an older ragnet, or by one that "
                        "read or chunked files differently): every file was read again; vectors of unchanged "
                        "passages were reused")
            t_read = time.perf_counter()
            plan, files, report, skipped, files_read = _scan(paths, sources, max_file_mb=max_file_mb,
                                                             on_error=on_error, show_progress=show_progress,
                                                             follow_links=follow_links)
            load_report = LoadReport([it.doc for it in plan if isinstance(it, _Fresh)], files_read, skipped)
            if on_read is not None:
                on_read(load_report)
            read_s = time.perf_counter() - t_read
            emb = settings["embedder"]()  # once the files are read: a bad file is reported in a second
            if old is None:
                report.full_build, report.note = True, note
                docs = [it.doc for it in plan]
                build_settings = {"chunk_tokens": settings["chunk_tokens"], "overlap": settings["overlap"],
                                  "doc_count": len(docs), "gazetteer": gazetteer_names(settings["gazetteer"])}
                if engine.kind == "ray":
                    index = build_ray(cls, docs, path, emb, build_settings, settings["dense"], engine,
                                      settings["gazetteer"], settings["sentences"], show_progress)
                else:
                    index = build_local(cls, docs, path, emb, build_settings, settings["dense"],
                                        settings["gazetteer"], settings["sentences"], show_progress, files=files)
                report.chunks_embedded = len(index)
                report.stats = {"read_s": read_s, **(index.build_stats or {})}
            else:
                if engine.kind == "ray":
                    note = "updated in this process (--ray builds only from scratch: give --rebuild to use it)"
                report.note = note
                if not (report.added or report.changed or report.removed or report.stats.get("docs_removed")) \
                        and _same_order(plan, sources):
                    report.written, report.chunks_reused = False, len(old)
                    report.seconds = time.perf_counter() - t0
                    index, old = old, None  # handed to the caller as it is
                    return index, report, load_report
                index = _rewrite(cls, path, old, plan, sources, files, report, embedder=emb,
                                 show_progress=show_progress, read_s=read_s)
        finally:
            if old is not None:
                _release(old)
    report.seconds = time.perf_counter() - t0
    return index, report, load_report


def _open_old(cls: type, path: Path, rebuild: bool) -> tuple[Any, str]:
    """The index at ``path`` to update, or None (and why) when a full build must run."""
    if rebuild or index_files(path) is None:
        return None, ""
    try:
        return cls.load(path, verify=False), ""
    except IndexFormatError as exc:
        return None, f"the index there could not be updated ({exc}); it was built anew"


def _refuse(path: Path, option: str, was: Any, given: Any) -> InputError:
    word = _OPTION_WORDS[option]
    built = f"{word} {was}" if word else was
    return InputError(f"the index at {path} was built with {built}, not {given}; add --rebuild to build it "
                      f"anew with {given} (every file is read and embedded again), or leave --{option} out to "
                      "update it as it is", argument=option)


def _settings(old: Any, *, chunk_tokens: int | None, overlap: int | None, embedder: Any, embed_backend: str | None,
              dense: DenseOptions | None, nprobe: int | None, sentences: bool | None, gazetteer: Any) -> dict[str, Any]:
    """The build settings: those given, else the old index's (an update refuses a given one that
    differs from the index's: it would mix chunks or vectors of two settings), else the defaults.
    ``"embedder"`` is a function that makes it: the model loads once the files are read."""
    from ragnet.corpus.metadata import Gazetteer
    from ragnet.index.embedder import resolve_model
    from ragnet.index.ivfpq import IVFPQParams

    if old is None:
        def emb() -> Embedder:
            return build_embedder(embedder) if embed_backend is None else Embedder(embedder, backend=embed_backend)

        if nprobe is not None:
            dense = DenseOptions(kind=(dense or DenseOptions()).kind, ivfpq=IVFPQParams(nprobe=nprobe))
        return {"chunk_tokens": 256 if chunk_tokens is None else chunk_tokens,
                "overlap": 32 if overlap is None else overlap, "embedder": emb, "dense": dense or DenseOptions(),
                "sentences": True if sentences is None else sentences, "gazetteer": gazetteer}
    m, path = old.manifest, old.path
    if chunk_tokens is not None and chunk_tokens != m["chunk_tokens"]:
        raise _refuse(path, "chunk-tokens", f"{m['chunk_tokens']} tokens", f"{chunk_tokens} tokens")
    if overlap is not None and overlap != m["overlap"]:
        raise _refuse(path, "overlap", f"{m['overlap']} tokens", f"{overlap} tokens")
    name = m["embedder"]
    given = embedder if isinstance(embedder, Embedder) else None
    if given is not None:
        embed_backend = embed_backend or given.backend
        embedder = given.name
    if embedder is not None and resolve_model(embedder)[0] != name:
        raise _refuse(path, "embedder", repr(name), repr(resolve_model(embedder)[0]))
    was_int8 = m.get("embedder_backend") == "onnx-int8"
    if embed_backend is not None and (embed_backend == "onnx-int8") != was_int8:
        raise _refuse(path, "embed-backend", repr(m.get("embedder_backend")), repr(embed_backend))
    kind = m["faiss_index"]
    if dense is not None and dense.kind not in ("auto", kind):
        raise _refuse(path, "faiss-index", repr(kind), repr(dense.kind))
    ivfpq = m.get("ivfpq")
    if nprobe is not None and kind == "ivfpq" and nprobe != (ivfpq or {}).get("nprobe"):
        raise _refuse(path, "nprobe", (ivfpq or {}).get("nprobe"), nprobe)
    has_sentences = bool(m.get("sentences"))
    if sentences is not None and sentences != has_sentences:
        raise _refuse(path, "sentences", "sentence data" if has_sentences else "no sentence data (--no-sentences)",
                      "--sentences" if sentences else "--no-sentences")
    names = m.get("gazetteer") or None
    if gazetteer is not None and gazetteer_names(gazetteer) != names:
        raise _refuse(path, "gazetteer", f"{len(names or [])} place names", f"{len(gazetteer.names)} other ones")
    return {"chunk_tokens": m["chunk_tokens"], "overlap": m["overlap"],
            "embedder": (lambda: given) if given is not None else (lambda: _embedder_for(m, embed_backend)),
            "sentences": has_sentences,
            "dense": DenseOptions(kind=kind, ivfpq=IVFPQParams.from_dict(ivfpq) if ivfpq else None),
            "gazetteer": Gazetteer(names) if names else None}


def _embedder_for(manifest: dict[str, Any], backend: str | None = None) -> Embedder:
    """The embedder new passages of an index are embedded with: its model, and int8 weights only
    if the index was embedded with them (fp32 ONNX and torch give the same vectors)."""
    if backend is None and manifest.get("embedder_backend") == "onnx-int8":
        backend = "onnx-int8"
    name = manifest["embedder"]
    return build_embedder(name) if backend is None else Embedder(name, backend=backend)


def _scan(paths: Any, sources: Sources, *, max_file_mb: float | None, on_error: str, show_progress: bool,
          follow_links: bool = False) -> tuple[list[_Item], dict[str, FileRecord], UpdateReport, list[InputError], int]:
    """Hash every input file; read those whose hash is not the recorded one. The files, the
    order and the problems are those of ``ragnet.corpus.loader.read_documents`` (whose helpers
    this uses), so the documents are those a full build reads. A folder that cannot be listed
    fails the update, or with ``on_error="skip"`` keeps what the index holds from it."""
    from tqdm.auto import tqdm

    from ragnet.corpus import loader
    from ragnet.corpus.limits import FileBounds

    skip = loader.check_read_options(on_error, max_file_mb)
    bounds = FileBounds(max_file_mb)  # what reading one file may cost (ragnet.corpus.limits)
    codec = loader._check_encoding("utf-8")
    given = loader._as_list(paths)
    if not given:
        raise InputError("no paths given", argument="paths")
    found_sources = list(loader._expand(given, None))
    plan: list[_Item] = []
    files: dict[str, FileRecord] = {}
    problems: list[InputError] = []
    seen_files: set[Path] = set()
    seen_ids: dict[str, str] = {}
    report = UpdateReport("file")
    # shown after a second only: a bad file or an unchanged folder is reported in one line
    with tqdm(total=len(found_sources), desc="Reading", unit="file", disable=not show_progress, delay=1) as bar:
        for source in found_sources:
            bar.update(1)
            try:
                resolved, size = loader._regular_file(source, follow_links)
            except InputError as err:
                problems.append(err)
                closed = loader.unreadable_folder(source)
                if skip and closed is not None:  # skipped, and what the index holds from it stays
                    _keep_folder(closed, source.display, sources, plan, files, report,
                                 lambda ids: loader.claim_ids(ids, seen_ids, source.display, problems, skip=skip))
                continue
            if resolved in seen_files:
                continue
            seen_files.add(resolved)
            key = source.rel_id if source.rel_id not in files else source.display
            try:
                digest = _file_digest(source, size, max_file_mb)
                items, ids, status = _file_items(source, digest, sources.files.get(key), sources.docs,
                                                 lambda: loader._read(source, codec, "utf-8", bounds))
            except InputError as err:
                problems.append(err)
                continue
            if not loader.claim_ids(ids, seen_ids, source.display, problems, skip=skip):
                continue
            plan.extend(items)
            files[key] = FileRecord(digest, tuple(d for d, _, _ in ids))
            setattr(report, status, getattr(report, status) + 1)
    loader.check_load(problems, skip, given, found_any=bool(plan))
    report.removed = sum(1 for key in sources.files if key not in files)
    in_plan = {it.doc_id if isinstance(it, _Keep) else it.doc.id for it in plan}
    gone = sum(1 for doc_id in sources.docs if doc_id not in in_plan)
    if gone:  # documents of the old index that no file gave back (with or without a file record)
        report.stats["docs_removed"] = float(gone)
    return plan, files, report, problems, len(files)


def _keep_folder(folder: str, display: str, sources: Sources, plan: list[_Item], files: dict[str, FileRecord],
                 report: UpdateReport, claim: Callable[[list[tuple[str, int | None, str]]], bool]) -> None:
    """Keep, as they are, the documents the index holds from the files under ``folder`` (a path as
    the files' keys are written), a folder that could not be listed: skipped is not removed."""
    for key, record in sources.files.items():
        if not key.startswith(folder.rstrip("/") + "/") or key in files:
            continue
        if not record.docs or not all(d in sources.docs for d in record.docs):
            continue
        if not claim([(d, None, f"{display}/{key[len(folder.rstrip('/')) + 1:]}") for d in record.docs]):
            continue
        plan.extend(_Keep(d, sources.docs[d]) for d in record.docs)
        files[key] = record
        report.unchanged += 1


def _file_digest(source: Any, size: int, max_file_mb: float | None) -> str:
    """The SHA-256 of a file's bytes, once its size is within bounds. Hashed before it is read: a
    file written in between is read again by the next update, never recorded with the hash of
    content the index does not hold."""
    from ragnet.corpus import loader

    loader._check_size(source, size, max_file_mb)
    try:
        return sha256_file(source.path)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=source.display) from None


def _file_items(source: Any, digest: str, record: FileRecord | None, old_docs: dict[str, DocRecord],
                read: Callable[[], list[tuple[Document, int | None]]]
                ) -> tuple[list[_Item], list[tuple[str, int | None, str]], str]:
    """One file's documents as plan items, their ids as ``(id, line, where it is defined)``, and
    whether the file is ``"unchanged"``, ``"changed"`` or ``"added"``. It is read (``read()``)
    only when its hash is not the one recorded; a document read that hashes as before is kept."""
    if record is not None and record.sha256 == digest and record.docs and all(d in old_docs for d in record.docs):
        return [_Keep(d, old_docs[d]) for d in record.docs], [(d, None, source.display) for d in record.docs], \
            "unchanged"
    docs = read()
    items: list[_Item] = []
    for doc, _ in docs:
        digest_doc = document_hash(doc)
        rec = old_docs.get(doc.id)
        items.append(_Keep(doc.id, rec) if rec is not None and rec.sha256 == digest_doc else _Fresh(doc, digest_doc))
    ids = [(doc.id, line, doc.source or source.display) for doc, line in docs]
    status = "changed" if record is not None or any(d in old_docs for d, _, _ in ids) else "added"
    return items, ids, status


# -- writing -----------------------------------------------------------------------------
def _rewrite(cls: type, path: Path, old: Any, plan: Sequence[_Item], sources: Sources, files: dict[str, FileRecord],
             report: UpdateReport, *, embedder: Embedder | None = None, show_progress: bool = True,
             read_s: float = 0.0) -> Any:
    """Write the index of ``plan`` (documents in row order) over ``old``: reused chunks and vectors,
    new ones chunked and embedded, everything written anew by
    :func:`~ragnet.index.build.write_index` and swapped in."""
    from ragnet.index.ivfpq import IVFPQParams

    t_all = time.perf_counter()
    m = old.manifest
    stats: dict[str, float] = {"read_s": read_s}
    emb = embedder if embedder is not None else _embedder_for(m)
    if emb.name != m["embedder"]:
        raise InputError(f"the index at {path} was built with embedder {m['embedder']!r}, not {emb.name!r}; "
                         "rebuild it to change the embedder", argument="embedder")
    t0 = time.perf_counter()
    by_doc = _chunk_fresh(plan, m, show_progress)
    stats["chunk_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    chunks, rows = _rows(plan, old, sources, by_doc)
    stats["assemble_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vectors, passages = _vectors(old, chunks, rows, emb, report, show_progress)
    stats["embed_s"] = time.perf_counter() - t0
    new_sources = Sources(_doc_records(plan, by_doc), files)  # with this ragnet's code fingerprint

    n = len(chunks)
    settings = {"chunk_tokens": m["chunk_tokens"], "overlap": m["overlap"], "doc_count": len(plan),
                "gazetteer": m.get("gazetteer") or None}
    ivfpq = m.get("ivfpq")
    dense = DenseOptions(kind=m["faiss_index"], ivfpq=IVFPQParams.from_dict(ivfpq) if ivfpq else None)
    trained = _trained_ivfpq(old) if m["faiss_index"] == "ivfpq" else None
    with contextlib.ExitStack() as stack:
        sentences_from = None
        if m.get("sentences"):
            spill = stack.enter_context(VectorSpill(path.parent))
            _sentence_vectors(old, chunks, rows, emb, spill, report, stats, show_progress)
            sentences_from = spilled_sentences(emb, n, spill, stats, show_progress)
        # write everything anew, as a full build does, and swap it in
        index = write_index(cls, path, [(chunks, vectors, passages)], n, emb, dense, settings,
                            sentences_from=sentences_from, stats=stats, t_all=t_all, show_progress=show_progress,
                            extra=new_sources.save, trained=trained)
    report.stats.update(index.build_stats or {})
    return index


def _chunk_fresh(plan: Sequence[_Item], manifest: dict[str, Any], show_progress: bool) -> dict[str, list[Chunk]]:
    """The chunks of the plan's new and changed documents, by document id, chunked with the
    index's settings."""
    from tqdm.auto import tqdm

    from ragnet.corpus.chunking import chunk_documents
    from ragnet.corpus.metadata import Gazetteer

    fresh = [it.doc for it in plan if isinstance(it, _Fresh)]
    names = manifest.get("gazetteer") or None
    with tqdm(total=sum(len(d.text) for d in fresh), desc="Chunking", unit="char", unit_scale=True,
              disable=not show_progress or not fresh, mininterval=0.5) as bar:
        new_chunks = chunk_documents(fresh, manifest["chunk_tokens"], manifest["overlap"],
                                     gazetteer=Gazetteer(names) if names else None,
                                     progress=bar.update) if fresh else []
    by_doc: dict[str, list[Chunk]] = {}
    for chunk in new_chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    return by_doc


def _rows(plan: Sequence[_Item], old: Any, sources: Sources,
          by_doc: dict[str, list[Chunk]]) -> tuple[list[Chunk], np.ndarray]:
    """The new index's chunks in row order, and for each the old row whose vectors it takes (-1:
    embed it): kept documents' chunks as stored; a new chunk whose title and text a dropped chunk
    had (a changed file's unchanged pages, a renamed file) takes that chunk's vectors."""
    old_chunks = list(old.chunks)
    chunks: list[Chunk] = []
    src: list[int] = []
    for it in plan:
        if isinstance(it, _Keep):
            rec = it.record
            chunks.extend(old_chunks[rec.row:rec.row + rec.chunks])
            src.extend(range(rec.row, rec.row + rec.chunks))
        else:
            got = by_doc.get(it.doc.id, [])
            chunks.extend(got)
            src.extend([-1] * len(got))
    if -1 in src:
        kept = {it.doc_id for it in plan if isinstance(it, _Keep)}
        known: dict[tuple[str, str], int] = {}
        for doc_id, rec in sources.docs.items():
            if doc_id not in kept:
                for row in range(rec.row, rec.row + rec.chunks):
                    known.setdefault((old_chunks[row].title, old_chunks[row].text), row)
        src = [s if s >= 0 else known.get((c.title, c.text), -1) for s, c in zip(src, chunks)]
    return chunks, np.asarray(src, dtype=np.int64)


def _vectors(old: Any, chunks: Sequence[Chunk], rows: np.ndarray, emb: Embedder, report: UpdateReport,
             show_progress: bool) -> tuple[np.ndarray, list[str]]:
    """The chunks' vectors (stored ones for reused rows, the embedder's for the others) and
    passages; counts both kinds in ``report``."""
    reuse = rows >= 0
    vectors = np.empty((len(chunks), old.dimension), dtype=np.float32)
    if reuse.any():
        wanted, back = np.unique(rows[reuse], return_inverse=True)
        vectors[reuse] = np.asarray(old._emb[wanted], dtype=np.float32)[back]
    passages = [passage_text(c) for c in chunks]
    todo = np.flatnonzero(~reuse)
    if todo.size:
        vectors[todo] = embed_unique([passages[i] for i in todo], emb, show_progress=show_progress,
                                     dtype=np.float32, desc="Embedding")
    report.chunks_embedded, report.chunks_reused = int(todo.size), int(reuse.sum())
    return vectors, passages


def _doc_records(plan: Sequence[_Item], by_doc: dict[str, list[Chunk]]) -> dict[str, DocRecord]:
    """Each document's hash and rows in the new index (a document that gave no chunks has none)."""
    docs: dict[str, DocRecord] = {}
    row = 0
    for it in plan:
        doc_id, sha = (it.doc_id, it.record.sha256) if isinstance(it, _Keep) else (it.doc.id, it.sha256)
        count = it.record.chunks if isinstance(it, _Keep) else len(by_doc.get(doc_id, []))
        if count:
            docs[doc_id] = DocRecord(sha, row, count)
        row += count
    return docs


def _sentence_vectors(old: Any, chunks: Sequence[Chunk], rows: np.ndarray, emb: Embedder, spill: VectorSpill,
                      report: UpdateReport, stats: dict[str, float], show_progress: bool) -> None:
    """Append every chunk's sentence vectors to ``spill`` in row order: the old store's for a
    reused chunk (same title and text, so the same sentences), new ones for the others."""
    t0 = time.perf_counter()
    store = old.sentences if old.sentences_current() else None
    reuse = rows >= 0 if store is not None else np.zeros(len(rows), dtype=bool)
    texts: list[str] = []
    counts = np.zeros(len(rows), dtype=np.int64)
    for i in np.flatnonzero(~reuse):
        embedded = chunk_sentences(chunks[i])[1]
        texts.extend(embedded)
        counts[i] = len(embedded)
    fresh = embed_unique(texts, emb, show_progress=show_progress, dtype=np.float16) if texts else None
    offsets = store.offsets if store is not None else None
    i, at, n = 0, 0, len(rows)
    while i < n:
        if reuse[i]:  # a run of consecutive old rows: one slice of the old vectors
            j = i
            while j + 1 < n and reuse[j + 1] and rows[j + 1] == rows[j] + 1:
                j += 1
            spill.append(np.asarray(store.vectors[int(offsets[rows[i]]):int(offsets[rows[j] + 1])]))
            report.sentences_reused += int(offsets[rows[j] + 1] - offsets[rows[i]])
            i = j + 1
        else:
            spill.append(fresh[at:at + counts[i]])
            at += int(counts[i])
            i += 1
    report.sentences_embedded = len(texts)
    stats["sentences_embed_s"] = time.perf_counter() - t0


def _trained_ivfpq(old: Any) -> Any:
    """An empty copy of the old IVF-PQ index's trained quantizers (the coarse centroids, the PQ
    codebooks and any OPQ rotation), to encode the update's vectors with."""
    import faiss

    from ragnet.index.ivfpq import _c_stdout_silenced
    from ragnet.index.untrusted import bounded_faiss_read

    header = old.path / DENSE
    with bounded_faiss_read(faiss, header.stat().st_size), _c_stdout_silenced():
        index = faiss.read_index(str(header), faiss.IO_FLAG_SKIP_IVF_DATA)
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    lists = faiss.ArrayInvertedLists(ivf.nlist, ivf.code_size)
    lists.this.disown()  # FAISS owns (and frees) the empty lists, not Python
    ivf.replace_invlists(lists, True)
    ivf.ntotal = 0
    index.ntotal = 0
    return index
