"""Evaluation indexes cached by content hash, so a corpus is embedded once per machine.

The key is a SHA-256 over every document's ``(id, title, text, metadata)`` in order, plus the
embedder name, the chunk settings and the gazetteer. The index lives in
``$RAGNET_HOME/indexes/<name>-<key[:12]>`` (``RAGNET_HOME`` defaults to ``~/.cache/ragnet``):
a changed corpus, embedder or chunking gets a new folder instead of a stale index, and the
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

__all__ = ["cached_index", "content_key", "index_dir", "index_root"]

#: Raised when the same documents and settings would give another index: 2 since a wrapped line
#: that begins with a number and a period ("70.") no longer starts a list in the sentence splitter.
KEY_VERSION = 2
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
    """
    digest = hashlib.sha256()
    settings = {
        "key_version": KEY_VERSION,
        "embedder": _embedder_name(embedder),
        "chunk_tokens": int(chunk_tokens),
        "overlap": int(overlap),
        "gazetteer": sorted(gazetteer.names) if gazetteer is not None else None,
    }
    digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    for d in docs:
        record = [d.id, d.title, d.text, d.metadata or {}]
        digest.update(json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        digest.update(b"\n")
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
