"""A served folder's index kept in step with the folder, and what each sync changed.

:class:`Library` runs ``Index.sync``, what ``ragnet index FOLDER --out IDX`` runs, with its
defaults: only added and changed files are read and embedded, removed ones leave the index, and
the index is written atomically under its folder's lock, so a server answering from it swaps the
new version in whole (:class:`ragnet.serve.state.IndexHolder`). Files that cannot be read (empty,
binary, encrypted, damaged) are skipped and listed with their reason (``on_error="skip"``): one
bad file never stops the server or the files beside it. One sync runs at a time; one that fails
(the folder gone, a full disk, another process updating the index) leaves the index as it was,
and its error is recorded until a sync succeeds.

The embedder that embeds new passages is made once and kept: a sync after an editor's save
embeds a few passages, not a model's load.

What a client may read (:meth:`Library.status`, :meth:`Library.summary`) names files by their
path inside the folder, never an absolute path, with secrets redacted
(:func:`ragnet.serve.errors.public_error`).

Example:
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "paris.md").write_text("# Paris\\n\\nParis is the capital of France.\\n")
    >>> _ = (folder / "empty.md").write_text("")
    >>> library = Library(folder, pathlib.Path(tempfile.mkdtemp()) / "idx")
    >>> print(library.open().line())
    +1 file, ~0 changed, -0 removed (0 unchanged); 1 chunks embedded, 0 reused
    >>> status = library.status()
    >>> status["files"], status["last_update"]["added"], status["unreadable"]
    (['paris.md'], ['paris.md'], [{'file': 'empty.md', 'reason': 'file is empty'}])
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

__all__ = ["SHOWN", "Library", "Update"]

#: Most file names one list of :meth:`Library.status` holds (the counts are whole).
SHOWN = 500


@dataclass(frozen=True)
class Update:
    """What one sync that wrote the index changed: files by their path inside the folder."""

    at: float
    added: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    line: str


@dataclass(frozen=True)
class _State:
    """A library's state after its last sync, replaced whole (readers never see half of one)."""

    files: tuple[str, ...] = ()
    unreadable: tuple[tuple[str, str], ...] = ()  # (file, reason) of the files the last sync skipped
    checked_at: float | None = None  # the last sync that ran to its end
    updated_at: float | None = None  # when the index was last written
    update: Update | None = None  # what the last sync that wrote it changed (this process)
    error: str | None = None  # why the last sync failed; None after one that did not
    error_at: float | None = None


def _iso(at: float | None) -> str | None:
    return None if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _file_hashes(index: Path) -> dict[str, str]:
    """The index's files (their paths inside the folder) and the hashes of their bytes."""
    from ragnet.index.sources import Sources

    with contextlib.suppress(Exception):  # no index yet, or one that records no files
        sources = Sources.load(index)
        if sources is not None:
            return sources.file_hashes()
    return {}


def _sync_embedder(manifest: dict[str, Any]) -> Any:
    """The embedder later syncs embed with: the index's model, int8 weights only if it has them."""
    from ragnet.index.embedder import Embedder, build_embedder

    if manifest.get("embedder_backend") == "onnx-int8":
        return Embedder(manifest["embedder"], backend="onnx-int8")
    return build_embedder(manifest["embedder"])


class Library:
    """The folder ``folder`` and its index at ``index``, synced on demand.

    Args:
        folder: the folder of documents (resolved).
        index: the index folder (made when missing).
        on_line: called with a line for the server's terminal after each sync (what changed,
            the files skipped when they differ from the last sync's, a failure).
        max_file_mb: the work bound per file of ``ragnet index --max-file-mb``.
    """

    def __init__(self, folder: str | Path, index: str | Path, *, on_line: Callable[[str], Any] | None = None,
                 max_file_mb: float = 20.0) -> None:
        self.folder, self.index = Path(folder), Path(index)
        self.on_line, self.max_file_mb = on_line, max_file_mb
        self.watching: str | None = None  # how the folder is watched once the server runs
        self.seen: dict[str, tuple[int, int, int]] | None = None  # the folder as the first sync found it
        self.syncing = False
        self._lock = threading.Lock()
        self._embedder: Any = None
        self._state = _State()

    def open(self, show_progress: bool = False) -> Any:
        """The first sync, before the server answers: builds the index, or brings it up to date.

        Returns:
            Its :class:`~ragnet.index.update.UpdateReport`, or None when it failed but an index
            is there to serve (the error is recorded and the next change tries again).

        Raises:
            RagnetError: it failed and there is no index to serve (a folder with no document).
        """
        from ragnet.index.manifest import index_files
        from ragnet.serve.watch import snapshot

        had = index_files(self.index) is not None
        self.seen = snapshot(self.folder, [self.index.resolve()])
        try:
            return self.sync(show_progress, check=True)
        except Exception:
            if not had:
                raise
            return None

    def sync(self, show_progress: bool = False, check: bool = False) -> Any:
        """Bring the index in step with the folder (one sync at a time: a second waits).

        Returns:
            The :class:`~ragnet.index.update.UpdateReport` (``written`` False when nothing
            changed), or None when the sync failed (its error recorded; raised with ``check``).
        """
        with self._lock:
            self.syncing = True
            try:
                return self._sync(show_progress, check)
            finally:
                self.syncing = False

    def _sync(self, show_progress: bool, check: bool) -> Any:
        from ragnet.index import Index

        before = _file_hashes(self.index)
        try:
            self.index.parent.mkdir(parents=True, exist_ok=True)
            index, report = Index.sync(self.folder, self.index, on_error="skip", embedder=self._embedder,
                                       max_file_mb=self.max_file_mb, show_progress=show_progress)
        except Exception as exc:
            self._state = replace(self._state, error=f"{type(exc).__name__}: {exc}", error_at=time.time())
            self._say(f"{self.folder.name}: the update failed ({exc}); the index as it was keeps serving")
            if check:
                raise
            return None
        try:
            if self._embedder is None:
                self._embedder = _sync_embedder(index.manifest)
            chunks = len(index)
        finally:
            with contextlib.suppress(Exception):
                index.chunks.close()
        self._record(report, before, chunks)
        return report

    def _record(self, report: Any, before: dict[str, str], chunks: int) -> None:
        """Keep what a sync found, and tell the terminal what changed."""
        now = time.time()
        after = _file_hashes(self.index)
        skipped = list(report.load.skipped) if report.load is not None else []
        unreadable = tuple((self._inside(err.path), err.message) for err in skipped)
        previous = self._state
        state = replace(previous, files=tuple(sorted(after)), unreadable=unreadable, checked_at=now, error=None,
                        error_at=None)
        if report.written:
            left_out = {name for name, _ in unreadable}
            state = replace(state, updated_at=now, update=Update(
                now, tuple(sorted(after.keys() - before.keys())),
                tuple(sorted(k for k in after.keys() & before.keys() if after[k] != before[k])),
                tuple(sorted(k for k in before.keys() - after.keys() if k not in left_out)), report.line()))
            self._say(f"{self.folder.name}: {report.line()} ({chunks:,} chunks, {report.seconds:.1f}s)")
        elif state.updated_at is None:
            with contextlib.suppress(OSError):
                state = replace(state, updated_at=(self.index / "manifest.json").stat().st_mtime)
        self._state = state
        if unreadable != previous.unreadable and skipped:
            self._say(f"{self.folder.name}: {report.load.summary()}")

    def _inside(self, path: str | None) -> str:
        """A skipped file's path inside the folder (its name when it is not under it)."""
        if not path:
            return self.folder.name
        with contextlib.suppress(ValueError):
            return Path(path).relative_to(self.folder).as_posix()
        return Path(path).name

    def _say(self, line: str) -> None:
        if self.on_line is not None:
            self.on_line(line)

    # -- what a client reads -----------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Counts and times only, for ``GET /health`` (open to anyone): no file name."""
        s = self._state
        return {"files": len(s.files), "unreadable": len(s.unreadable), "updated_at": _iso(s.updated_at),
                "checked_at": _iso(s.checked_at), "syncing": self.syncing, "watch": self.watching,
                "failed": s.error is not None}

    def status(self, shown: int = SHOWN) -> dict[str, Any]:
        """The folder's name, its files, the last update and what it changed, the files left out
        and why, and the last sync's error: ``GET /library``, behind the API key. Each list holds
        at most ``shown`` names; the ``*_total`` counts are whole."""
        from ragnet.serve.errors import public_error, public_text

        s = self._state
        names = lambda items: [public_text(name) for name in items[:shown]]  # noqa: E731
        update = None
        if s.update is not None:
            u = s.update
            update = {"at": _iso(u.at), "added": names(u.added), "updated": names(u.updated),
                      "removed": names(u.removed), "line": u.line,
                      "counts": {"added": len(u.added), "updated": len(u.updated), "removed": len(u.removed)}}
        return {"folder": public_text(self.folder.name), "watch": self.watching, "syncing": self.syncing,
                "files": names(s.files), "files_total": len(s.files), "updated_at": _iso(s.updated_at),
                "checked_at": _iso(s.checked_at), "last_update": update,
                "unreadable": [{"file": public_text(name), "reason": public_error(reason, self.folder)}
                               for name, reason in s.unreadable[:shown]],
                "unreadable_total": len(s.unreadable),
                "error": public_error(s.error, self.folder), "error_at": _iso(s.error_at)}
