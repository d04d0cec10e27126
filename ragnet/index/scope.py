"""Ask some of an index's documents: a view whose searches only return chunks of chosen files.

A team's index holds many manuals, and a question is often about one of them ("in the nginx
guide, ..."). :meth:`ragnet.index.Index.scoped` (``ragnet ask --only``, ``ragnet search --only``)
gives a :class:`ScopedIndex`: the same index, read-only, whose ``search`` and ``search_batch``
leave out every chunk of the other files, and whose metadata catalog adds none of them, so every
program (its first search, the bridge hops, an agent's follow-up searches, the metadata rules)
answers from the chosen files alone. Everything else (``get``, ``chunks``, the sentence store)
is the whole index's: chunk ids stay valid.

A pattern matches a chunk's source file (its path relative to the indexed folder, else its
document id) when it is that path, the file's name, a folder above it, or a glob of any of
these (``"gnu/*.pdf"``, ``"sed.pdf"``, ``"gnu"``).

A scoped search scores every chunk of the chosen files (exact cosine and BM25, normalised over
them), whatever the index's size, up to :data:`ragnet.index.hybrid.EXACT_WITHIN` chunks; a larger
scope is searched as the whole index is, its candidate pool drawn from its own chunks: FAISS (an ID
selector) and BM25 filter the other files' chunks out while they search, so a large scope in a huge
index costs about what an unscoped search does (docs/results/scale).

Example:
    >>> scoped = index.scoped("paris")
    >>> [c.id for c in scoped.search("capital of Italy", k=2)]
    ['paris#0']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from ragnet.corpus.locations import file_key
from ragnet.errors import InputError

__all__ = ["MAX_PATTERN", "ScopedIndex", "matches_file", "source_file"]

#: Longest file pattern taken (a path as indexed, a name, a folder or a glob).
MAX_PATTERN = 1000


def source_file(chunk: Any) -> str:
    """The file a chunk comes from, as scopes name it: its location's path relative to the
    indexed folder, else its document id."""
    meta = getattr(chunk, "metadata", None)
    loc = meta.get("location") if isinstance(meta, Mapping) else None
    path = loc.get("file") if isinstance(loc, Mapping) else None
    return file_key(path or chunk.doc_id)


def matches_file(path: str, pattern: str) -> bool:
    """Whether ``pattern`` names ``path`` (see the module docstring).

    Example:
        >>> [matches_file("gnu/sed.pdf", p) for p in ("gnu/sed.pdf", "sed.pdf", "gnu", "gnu/", "*.pdf", "s*.pdf", "man")]
        [True, True, True, True, True, True, False]
    """
    pattern = pattern.replace("\\", "/").strip().rstrip("/")
    if not pattern:
        return False
    parts = PurePosixPath(path).parts
    candidates = [path, parts[-1] if parts else path] + ["/".join(parts[:i]) for i in range(1, len(parts))]
    return any(fnmatchcase(c, pattern) for c in candidates)


class ScopedIndex:
    """``index`` searched over the files ``patterns`` name (see the module docstring).

    Raises:
        InputError: no pattern, or no indexed file matches them (the message lists some files).
    """

    def __init__(self, index: Any, patterns: Sequence[str]) -> None:
        patterns = tuple(p for p in (str(p).strip() for p in patterns) if p)
        if not patterns:
            raise InputError("give at least one file, folder or glob to ask over", argument="only")
        if any(len(p) > MAX_PATTERN for p in patterns):
            raise InputError(f"a pattern longer than {MAX_PATTERN} characters names no file", argument="only")
        self.index, self.patterns = index, patterns
        files, rows = _rows_from_sources(index, patterns) or _rows_from_chunks(index, patterns)
        inside = {index.chunks.id_at(row) for row in rows}
        if not inside:
            shown = ", ".join(sorted(files)[:8]) + (", …" if len(files) > 8 else "")
            raise InputError(f"no indexed file matches {', '.join(map(repr, patterns))}; the index has "
                             f"{len(files)} files: {shown}", argument="only")
        self.files = sorted(f for f, chosen in files.items() if chosen)
        self.rows_in_scope = np.asarray(rows, dtype=np.int64)  # rows of ``chunks`` in the chosen files, sorted
        self._inside = frozenset(inside)
        self._catalog: Any = None

    def __repr__(self) -> str:
        return f"ScopedIndex({self.index!r}, files={len(self.files)}, chunks={len(self._inside)})"

    def __getattr__(self, name: str) -> Any:  # everything but the searches and the catalog: the index's
        if name == "index":  # not set yet (during __init__): never recurse
            raise AttributeError(name)
        return getattr(self.index, name)

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self.index

    def in_scope(self, chunk_id: str) -> bool:
        """Whether ``chunk_id`` is a chunk of the chosen files."""
        return chunk_id in self._inside

    def search(self, query: str, k: int = 5, exclude: Iterable[str] = (), bm25_weight: float = 0.4, pool: int = 100,
               *, lam: float | None = None) -> list:
        """:meth:`ragnet.index.Index.search` over the chosen files (``lam``: the deprecated name of
        ``bm25_weight``)."""
        return self.index.search(query, k=k, exclude=exclude, bm25_weight=bm25_weight, pool=pool,
                                 within=self.rows_in_scope, lam=lam)

    def search_batch(self, queries: Sequence[str], k: int = 5, exclude: Sequence[Iterable[str] | None] | None = None,
                     bm25_weight: float = 0.4, pool: int = 100, *, lam: float | None = None) -> list[list]:
        """:meth:`ragnet.index.Index.search_batch` over the chosen files."""
        return self.index.search_batch(queries, k=k, exclude=exclude, bm25_weight=bm25_weight, pool=pool,
                                       within=self.rows_in_scope, lam=lam)

    def dense_search(self, query: str, k: int = 5) -> list:
        """Dense-only retrieval over the chosen files (``score`` = ``dense_score`` = cosine)."""
        return [c.with_scores(score=c.dense_score, dense_score=c.dense_score)
                for c in self.index.search(query, k=k, bm25_weight=0.0, within=self.rows_in_scope)]

    def bm25_search(self, query: str, k: int = 5) -> list:
        """BM25-only retrieval over the chosen files (positive scores; ``score`` = ``bm25_score``)."""
        return [c.with_scores(score=c.bm25_score, bm25_score=c.bm25_score)
                for c in self.index.search(query, k=k, bm25_weight=1.0, within=self.rows_in_scope)
                if (c.bm25_score or 0) > 0]

    @property
    def catalog(self) -> Any:
        """The index's metadata catalog, whose matches (the chunks metadata rules add) are the
        chosen files' only."""
        if self._catalog is None:
            self._catalog = _ScopedCatalog(self.index.catalog, self._inside)
        return self._catalog


def _rows_from_sources(index: Any, patterns: Sequence[str]) -> tuple[dict[str, bool], list[int]] | None:
    """Which files ``patterns`` name and their rows, read from the index's ``sources.json``
    (each file's documents and their row ranges) without reading a chunk; None when the index
    has none, or its rows do not hold the documents it names (the folder is untrusted)."""
    from ragnet.index.sources import Sources

    path = getattr(index, "path", None)
    sources = Sources.load(path) if path is not None else None
    if sources is None or not sources.files:
        return None
    store = index.chunks
    files: dict[str, bool] = {}
    rows: list[int] = []
    for key, record in sources.files.items():
        files[key] = any(matches_file(key, p) for p in patterns)
        if not files[key]:
            continue
        for doc_id in record.docs:
            doc = sources.docs.get(doc_id)
            if doc is None:
                continue
            if not doc.held_by(store, doc_id):
                return None
            rows.extend(range(doc.row, doc.row + doc.chunks))
    return files, sorted(set(rows))


def _rows_from_chunks(index: Any, patterns: Sequence[str]) -> tuple[dict[str, bool], list[int]]:
    """The same, from every chunk's location (an index built from documents made in Python)."""
    files: dict[str, bool] = {}
    rows: list[int] = []
    for row, chunk in enumerate(index.chunks):
        path = source_file(chunk)
        if path not in files:
            files[path] = any(matches_file(path, p) for p in patterns)
        if files[path]:
            rows.append(row)
    return files, rows


class _ScopedCatalog:
    """A catalog whose ``matches`` keep the chosen chunks; lookups by title stay whole (they say
    whether a name is a document's title, and only searches, which are scoped, fetch chunks)."""

    def __init__(self, catalog: Any, inside: frozenset[str]) -> None:
        self._catalog, self._inside = catalog, inside

    def __getattr__(self, name: str) -> Any:
        if name in ("_catalog", "_inside"):
            raise AttributeError(name)
        return getattr(self._catalog, name)

    def __len__(self) -> int:
        return len(self._catalog)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._catalog

    def matches(self, question_meta: Mapping[str, Any]) -> list[tuple[str, int, str]]:
        return [m for m in self._catalog.matches(question_meta) if m[0] in self._inside]
