"""The index folder and its ``manifest.json``: what a ragnet index folder holds, and the checks
that decide whether this ragnet may read it, replace it or write to a path.

Whether a folder is a ragnet index at all is decided in one place,
:func:`ragnet.corpus.outputs.index_manifest` (the loader skips such folders too); this module
adds what reading and replacing one needs: the format version, the keys and types a manifest
must have, the files it lists (:func:`index_files`), every file checked
against it before it is opened (:func:`check_folder`), the embedder it was built with
(:func:`check_embedder`), and the rules for an output path (:func:`check_output_folder`).

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
    sources.json        each document's and file's hash and rows, for updates (``ragnet.index.sources``)

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "idx"
    >>> check_output_folder(folder)      # a new folder: fine
    >>> read_manifest(folder)
    Traceback (most recent call last):
    ...
    ragnet.errors.IndexFormatError: no index at ...: the folder does not exist; build one with `ragnet index`
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ragnet._atomic import check_writable_parent
from ragnet._hashing import sha256_file
from ragnet.corpus.outputs import INDEX_FORMAT, INDEX_MANIFEST, index_manifest
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.catalog_store import FILES as CATALOG_FILES
from ragnet.index.chunk_store import CHUNKS
from ragnet.index.chunk_store import SIDECARS as CHUNK_SIDECARS
from ragnet.index.ivfpq import IVFDATA_SUFFIX
from ragnet.index.passages import PASSAGE_FORMAT
from ragnet.index.sentence_store import FILES as SENTENCE_FILES
from ragnet.index.sentence_store import FOLDER as SENTENCES_DIR
from ragnet.index.sparse import FILES as BM25_FILES
from ragnet.index.untrusted import REBUILD, member, npy_header
from ragnet.index.writer import BM25_DIR, CATALOG_DIR, DENSE, EMBEDDINGS, VECTORS_F16

__all__ = ["FORMAT_VERSION", "MANIFEST", "MANIFEST_FORMAT", "check_embedder", "check_folder", "check_output_folder",
           "checksums", "index_files", "new_manifest", "read_manifest", "through_link"]

FORMAT_VERSION = 2
TOKENIZER = "tiktoken:cl100k_base"
MANIFEST = INDEX_MANIFEST
MANIFEST_FORMAT = INDEX_FORMAT  # what marks a folder as ragnet's to replace
DENSE_IVFDATA = Path(DENSE).stem + IVFDATA_SUFFIX
DENSE_KINDS = ("flat", "hnsw", "ivf", "ivfpq")  # what a manifest may record
_REQUIRED_KEYS = ("format_version", "embedder", "dimension", "chunk_count", "faiss_index", "vectors", "files")


# -- output paths ------------------------------------------------------------------------
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


def through_link(path: Path) -> Path:
    """Where an index given as ``path`` is written: a symbolic link is written through, so the index
    replaces the folder it points to and the link stays a link (swapping the link itself would
    replace it with a real folder and leave the target behind, set aside and stale)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


# -- writing -----------------------------------------------------------------------------
def new_manifest(*, embedder: Any, dimension: int, count: int, settings: dict[str, Any], fields: dict[str, Any],
                 stemmer: str, sentences: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest of an index being written, before its checksums (``"files"``, see
    :func:`checksums`). ``fields`` are the writer's (``faiss_index``, ``ivfpq``, ``vectors``,
    ``doc_count``); ``settings`` the build's (``chunk_tokens``, ``overlap``, ``doc_count``,
    ``gazetteer``)."""
    from ragnet import __version__

    return {
        "format": MANIFEST_FORMAT,
        "format_version": FORMAT_VERSION,
        "ragnet_version": __version__,
        "embedder": embedder.name,
        "embedder_backend": getattr(embedder, "backend", "torch"),
        "dimension": dimension,
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
        "bm25": {"method": "lucene", "stopwords": "en", "stemmer": stemmer},
        "sentences": sentences,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "files": {},
    }


def checksums(folder: Path, root: Path | None = None) -> dict[str, str]:
    """The SHA-256 of every file under ``folder``, by its path relative to ``root`` (default:
    ``folder``), as a manifest's ``"files"`` lists them.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.txt").write_text("a")
        >>> checksums(d)
        {'a.txt': 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb'}
    """
    root = folder if root is None else root
    return {f.relative_to(root).as_posix(): sha256_file(f) for f in sorted(folder.rglob("*")) if f.is_file()}


# -- reading -----------------------------------------------------------------------------
def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the index folder ``path``, checked as one this ragnet reads: format
    version 2, every key ``Index.load`` needs, of the type it needs.

    Raises:
        IndexFormatError: no folder, no manifest, a manifest that is not JSON, another format
            version, or a missing or unreadable key (the message names it).
    """
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
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} is not valid JSON ({exc}); {REBUILD}") from exc
    if not isinstance(manifest, dict):
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} is not a JSON object; {REBUILD}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"index at {path} has format_version {version!r}, but this ragnet reads format {FORMAT_VERSION} only; "
            f"rebuild it with `ragnet index`"
        )
    missing = [key for key in _REQUIRED_KEYS if key not in manifest]
    if missing:
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} lacks {', '.join(missing)}; {REBUILD}")
    if not isinstance(manifest["files"], dict):
        raise IndexFormatError(f"index at {path} is corrupt: {MANIFEST} 'files' is not an object; {REBUILD}")
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
                                   f"{_short(repr(manifest.get(key)))}, which ragnet cannot read; {REBUILD}")
    manifest.setdefault("ivfpq", None)
    return manifest


def check_embedder(path: Path, manifest: dict[str, Any], name: str) -> None:
    """Refuse to query the index at ``path`` with embedder ``name`` when it was built with another.

    Example:
        >>> check_embedder(Path("idx"), {"embedder": "all-MiniLM-L6-v2"}, "bge-small")
        Traceback (most recent call last):
        ...
        ragnet.errors.IndexFormatError: index at idx was built with embedder 'all-MiniLM-L6-v2', but ...
    """
    built = manifest["embedder"]
    if name != built:
        raise IndexFormatError(
            f"index at {path} was built with embedder {built!r}, but embedder {name!r} was given; "
            f"use {built!r} to query it, or rebuild the index with the new embedder"
        )


def check_folder(path: Path, manifest: dict[str, Any], *, verify: bool) -> tuple[str, str]:
    """Check the folder's files against its manifest before any is opened; return the stored
    vectors' file and dtype.

    The folder is untrusted input (:mod:`ragnet.index.untrusted`): every file ``Index.load`` and
    the lazily loaded parts read must be listed, every path the manifest names must be a regular
    file inside the folder, reached without a symbolic link, and every ``.npy`` header must
    describe exactly the bytes of its file. With ``verify``, every file's SHA-256 must match.

    Raises:
        IndexFormatError: the first file that fails, named.
    """
    files = manifest["files"]
    count, dim = manifest["chunk_count"], manifest["dimension"]
    vec_file, vec_dtype = _vector_file(manifest)
    for rel in _read_files(manifest, vec_file):
        if rel not in files:
            raise IndexFormatError(f"index at {path} is corrupt: manifest lists no {rel}; {REBUILD}")
    for rel in files:
        member(path, rel)
    headers = {rel: npy_header(path, rel) for rel in files if rel.endswith(".npy")}
    vec = headers[vec_file]
    if vec.shape != (count, dim) or vec.dtype != np.dtype(vec_dtype):
        raise IndexFormatError(
            f"index at {path} is corrupt: {vec_file} has shape {vec.shape} {vec.dtype}, "
            f"expected ({count}, {dim}) {vec_dtype}; {REBUILD}"
        )
    if verify:
        for rel, digest in files.items():
            if sha256_file(path / rel) != digest:
                raise IndexFormatError(f"index at {path} is corrupt: {rel} checksum mismatch; {REBUILD}")
    return vec_file, vec_dtype


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
    if not isinstance(info, dict) or info.get("file") not in (EMBEDDINGS, VECTORS_F16) \
            or info.get("dtype") not in ("float32", "float16"):
        raise IndexFormatError(f"index manifest has an unknown 'vectors' entry {info!r}; {REBUILD}")
    return info["file"], info["dtype"]


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
