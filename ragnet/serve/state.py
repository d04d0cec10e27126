"""The index a server answers from, swapped whole when the folder is updated.

``ragnet index`` updates an index by writing a new folder and renaming it into place
(:mod:`ragnet.index.update`). :class:`IndexHolder` notices the new ``manifest.json`` (its inode
and modification time change), loads the new index completely (checksums checked, the sentence
store, catalog and embedder opened), and only then swaps it in: a request holds the snapshot it
started with to its end, so no request ever sees part of one index and part of another, and a
failed load leaves the current index serving.

A version that fails to load is tried again, after 1, 2, 4 ... seconds (at most a minute apart,
:data:`RETRIES` times), even though its manifest does not change: an index copied into place
file by file (``cp``, ``rsync``) is read mid-copy, fails its checksums, and loads once the copy
is done. A newer version starts the count again.

Example:
    >>> holder = IndexHolder(index.path)
    >>> snap = holder.current
    >>> snap.generation, len(snap.index), holder.reload().generation
    (1, 3, 1)
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnet.corpus.outputs import INDEX_MANIFEST

__all__ = ["RETRIES", "RETRY_FIRST_S", "RETRY_MOST_S", "IndexHolder", "Snapshot"]

#: Tries again of a version that failed to load, and the seconds before the first and between two.
RETRIES = 10
RETRY_FIRST_S = 1.0
RETRY_MOST_S = 60.0


@dataclass(frozen=True)
class Snapshot:
    """One loaded index and what identifies its version on disk."""

    index: Any
    generation: int
    stamp: tuple[int, int, int]
    loaded_at: float

    def describe(self) -> dict[str, Any]:
        m = self.index.manifest
        return {"name": self.index.path.name, "chunks": len(self.index), "documents": m.get("doc_count"),
                "embedder": m.get("embedder"), "created": m.get("created"), "generation": self.generation,
                "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.loaded_at))}


def _stamp(path: Path) -> tuple[int, int, int]:
    st = os.stat(path / INDEX_MANIFEST)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class IndexHolder:
    """The current :class:`Snapshot` of the index at ``path``, reloaded when it changes.

    Args:
        path: the index folder.
        load: how to open it (default ``Index.load``, checksums checked).
        retry_first: seconds before a failed version is tried again (doubling, at most
            :data:`RETRY_MOST_S`, :data:`RETRIES` times).
    """

    def __init__(self, path: str | os.PathLike, load: Any = None, retry_first: float = RETRY_FIRST_S) -> None:
        self.path = Path(path)
        self._load = load
        self._lock = threading.Lock()
        self.last_error: str | None = None
        self._failed_stamp: tuple[int, int, int] | None = None  # the on-disk version that last failed to load
        self._failures = 0  # how often it failed
        self._retry_at = 0.0  # when to try it again (time.monotonic)
        self.retry_first = retry_first
        self._current = self._open(1, _stamp(self.path))

    @property
    def current(self) -> Snapshot:
        """The snapshot to answer a request from (hold on to it for the whole request)."""
        return self._current

    def _open(self, generation: int, stamp: tuple[int, int, int]) -> Snapshot:
        """The folder's index as snapshot ``generation``; ``stamp`` is the folder's version, read
        before loading."""
        from ragnet.index import Index

        index = (self._load or Index.load)(self.path)
        # the parts an index opens on first use are opened now, from this version of the folder:
        # opened later, after an update renamed a new folder into place, they would be the new one's
        _ = index.catalog, index.sentences, index.embedder
        index.embed_query("warm up")
        return Snapshot(index, generation, stamp, time.time())

    def changed(self) -> bool:
        """Whether the folder holds another version than the current snapshot to try: a version
        that already failed to load counts again only when its next try is due (after 1, 2, 4
        ... seconds, :data:`RETRIES` times; ``reload(force=True)`` tries it at once)."""
        try:
            stamp = _stamp(self.path)
        except OSError:  # mid-swap (between the two renames): look again later
            return False
        if stamp == self._current.stamp:
            return False
        if stamp != self._failed_stamp:
            return True
        return self._failures <= RETRIES and time.monotonic() >= self._retry_at

    def reload(self, force: bool = False) -> Snapshot:
        """Load the folder again if it changed (or ``force``) and swap the new index in.

        Raises:
            RagnetError: the new version cannot be loaded; the current one keeps serving.
        """
        with self._lock:
            if not force and not self.changed():
                return self._current
            stamp = None  # stays None when the folder is mid-swap: no version to hold the failure against
            try:
                stamp = _stamp(self.path)
                snap = self._open(self._current.generation + 1, stamp)
            except Exception as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._failures = self._failures + 1 if stamp == self._failed_stamp else 1
                self._failed_stamp = stamp
                wait = min(RETRY_MOST_S, self.retry_first * 2 ** (self._failures - 1))
                self._retry_at = time.monotonic() + wait
                raise
            self.last_error = None
            self._failed_stamp, self._failures = None, 0
            self._current = snap
            return snap
