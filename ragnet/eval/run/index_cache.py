"""Evaluation indexes cached by content hash, so a corpus is embedded once per machine.

The key is a SHA-256 over every document's hash in order (everything chunking reads from it:
id, title, text, metadata, and where its parts sit, such as pages and section headings;
:func:`ragnet.index.sources.document_hash`), plus the embedder name, the chunk settings, the
gazetteer and the fingerprint of ragnet's reading and chunking code
(:func:`ragnet.index.sources.code_fingerprint`), as ``ragnet index`` updates compare them. The index lives in
``$RAGNET_HOME/indexes/<name>-<key[:12]>`` (``RAGNET_HOME`` defaults to ``~/.cache/ragnet``):
a changed corpus, reading of it, embedder or chunking gets a new folder instead of a stale index, and the
same corpus under any other name or path finds the one already built.

Example:
    >>> import tempfile
    >>> docs = [Document(id="a", title="A", text="Paris is the capital of France.")]
    >>> root = tempfile.mkdtemp()
    >>> index = cached_index(docs, "toy", root=root, show_progress=False)     # built once
    >>> cached_index(docs, "toy", root=root).path == index.path              # then loaded
    True
    >>> index.path.name == f"toy-{content_key(docs)[:12]}"
    True
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ragnet.corpus.outputs import INDEX_MANIFEST
from ragnet.corpus.types import Document
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.sources import code_fingerprint, document_hash

__all__ = ["cached_index", "content_key", "index_dir", "index_root"]

#: Raised when the same documents, settings and reading code would give another index (a change
#: outside the code :func:`ragnet.index.sources.code_fingerprint` covers); 3 since that code and
#: the documents' places are in the key: a .txt whose numbered headings became sections had kept
#: its index without them.
KEY_VERSION = 3
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def index_root() -> Path:
    """``$RAGNET_HOME/indexes``."""
    from ragnet.lm.models import ragnet_home

    return ragnet_home() / "indexes"


def _embedder_name(embedder: Any) -> str:
    from ragnet.index.embedder import Embedder

    if isinstance(embedder, Embedder):
        return embedder.name
    return Embedder(embedder).name  # resolves the name only; the model loads lazily


def content_key(
    docs: Iterable[Document],
    *,
    embedder: Any = None,
    chunk_tokens: int = 256,
    overlap: int = 32,
    gazetteer: Any = None,
) -> str:
    """Hex SHA-256 identifying the index ``Index.build`` would make from these arguments.

    Example:
        >>> d = [Document(id="a", title="A", text="x")]
        >>> content_key(d) == content_key(list(d)), content_key(d) == content_key(d, chunk_tokens=128)
        (True, False)
        >>> content_key(d) == content_key([Document(id="a", title="A", text="x", positions=((0, {"page": 1}),))])
        False
    """
    digest = hashlib.sha256()
    settings = {
        "key_version": KEY_VERSION,
        "embedder": _embedder_name(embedder),
        "chunk_tokens": int(chunk_tokens),
        "overlap": int(overlap),
        "gazetteer": sorted(gazetteer.names) if gazetteer is not None else None,
        "code": code_fingerprint(),
    }
    digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    for d in docs:
        digest.update(document_hash(d).encode("ascii") + b"\n")
    return digest.hexdigest()


def _safe(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned[:80] or "index"


def index_dir(name: str, key: str, root: str | Path | None = None) -> Path:
    """``<root>/<name>-<key[:12]>`` (root: ``$RAGNET_HOME/indexes``)."""
    base = Path(root) if root is not None else index_root()
    return base / f"{_safe(name)}-{key[:12]}"


def _lock(path: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(path), threading.Lock())


def cached_index(
    docs: list[Document],
    name: str,
    *,
    embedder: Any = None,
    chunk_tokens: int = 256,
    overlap: int = 32,
    gazetteer: Any = None,
    root: str | Path | None = None,
    show_progress: bool = True,
    log: Callable[[str], None] | None = None,
):
    """Load the cached index of ``docs`` or build it (once) under :func:`index_dir`.

    A cached folder whose manifest disagrees with the request (document count, chunking,
    embedder) is refused with a message rather than used. Safe to call from several threads:
    one builds, the others wait and load.

    Args:
        docs: the documents (order matters for the key: chunk rows follow it).
        name: readable prefix of the folder, e.g. ``"hotpotqa_dev_distractor-pooled"``.
        embedder: an ``Embedder`` (shared across calls to load the model once), a model name, or None.
        chunk_tokens, overlap, gazetteer: as for ``Index.build``.
        root: folder holding cached indexes (default ``$RAGNET_HOME/indexes``).
        show_progress: progress bars while building.
        log: called with a one-line notice before a build.
    """
    from ragnet.index import Index
    from ragnet.index.embedder import build_embedder

    if not docs:
        raise InputError("no documents to index", argument="data")
    emb = build_embedder(embedder)
    key = content_key(docs, embedder=emb, chunk_tokens=chunk_tokens, overlap=overlap, gazetteer=gazetteer)
    path = index_dir(name, key, root)
    with _lock(path):
        if (path / INDEX_MANIFEST).is_file():
            index = Index.load(path, embedder=emb)
            m = index.manifest
            expected = {"doc_count": len(docs), "chunk_tokens": chunk_tokens, "overlap": overlap}
            wrong = {k: (m.get(k), v) for k, v in expected.items() if m.get(k) is not None and m.get(k) != v}
            if wrong:
                raise IndexFormatError(
                    f"cached index {path} does not match its key ({wrong}: manifest vs expected); "
                    "delete the folder to rebuild it"
                )
            if not index.sentences_current():  # cached before indexes stored (these) sentences: add them once
                if log is not None:
                    log(f"adding sentence data to the cached index {path.name} (once; about as long as embedding it)")
                index.add_sentences(show_progress=show_progress)
            return index
        if log is not None:
            # a rough build rate (documents a minute, sentence data included) on 2 CPU cores
            minutes = max(1, round(len(docs) / 700))
            log(f"building index {path.name} ({len(docs)} documents: a one-off of roughly {minutes} min on 2 CPU "
                f"cores, cached for later runs) at {path}")
        return Index.build(docs, path, chunk_tokens=chunk_tokens, overlap=overlap, embedder=emb,
                           gazetteer=gazetteer, show_progress=show_progress)
