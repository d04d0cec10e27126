"""Noticing that a served folder changed: watchdog's events, or polling where there are none.

:class:`FolderWatch` calls ``on_change`` (a sync of the folder's index,
:class:`ragnet.serve.library.Library`) in a thread of its own once the folder has been quiet for
a moment after a change, so that an editor's save (a temporary file renamed over the old one) or
a copy of fifty files is one sync, not fifty; a folder written without a pause is synced after
:data:`MOST_WAIT_S` anyway. ``on_change`` is never called again before it returns (one thread calls
it); a change made while it runs calls it once more afterwards.

``mode="auto"`` uses watchdog's ``Observer`` (inotify on Linux, FSEvents on macOS, ...) when
watchdog is installed and the observer starts (an exhausted inotify watch limit stops it), and
polls otherwise: every ``every`` seconds it reads the size, modification time and inode of each
document of the folder, one ``stat`` per file. ``"poll"`` asks for polling where events never come:
network and FUSE folders, some container mounts. What is never a document is ignored: hidden files
and folders (an editor's swap file), unsupported file types, and the index when it lives inside
the folder; so are watchdog's events that only read (opened, closed unwritten): the sync's own
reading would otherwise wake it again.

Example:
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.md").write_text("# A\\n\\nText.\\n"); _ = (folder / ".a.md.swp").write_text("x")
    >>> sorted(snapshot(folder))
    ['a.md']
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from ragnet.errors import InputError

__all__ = ["MODES", "MOST_WAIT_S", "QUIET_S", "FolderWatch", "snapshot"]

#: How the folder may be watched: ``off`` serves the index as it is after the first sync.
MODES = ("auto", "watchdog", "poll", "off")
#: Seconds without a change before a sync starts (at most the polling interval).
QUIET_S = 1.0
#: Seconds a folder that never stops changing waits for its sync at most.
MOST_WAIT_S = 30.0
#: watchdog's events that say a file or folder was written, made, removed or renamed.
_WRITES = ("created", "deleted", "modified", "moved", "closed")

log = logging.getLogger("ragnet.serve")


def _is_document(name: str) -> bool:
    from ragnet.corpus.loader import SUFFIXES

    return Path(name).suffix.lower() in SUFFIXES


def snapshot(folder: str | Path, ignore: Iterable[Path] = ()) -> dict[str, tuple[int, int, int]]:
    """Each document under ``folder`` (its path inside it) with its size, modification time and
    inode; hidden entries, unsupported types and the folders in ``ignore`` left out. Folders are
    walked as ``ragnet index`` walks them: links to folders are not entered."""
    folder, skip = Path(folder), {Path(p) for p in ignore}
    seen: dict[str, tuple[int, int, int]] = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and Path(root, d) not in skip]
        for name in names:
            if name.startswith(".") or not _is_document(name):
                continue
            path = Path(root, name)
            try:
                st = path.stat()
            except OSError:  # removed meanwhile, or a broken link: the sync reports it
                continue
            seen[path.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return seen


class FolderWatch:
    """Calls ``on_change`` after the documents under ``folder`` change (see the module docstring).

    Args:
        folder: the folder (as resolved: watchdog reports paths under the one it was given).
        on_change: what to run after a change, in the watch's thread; its errors are logged.
        mode: one of :data:`MODES`.
        every: seconds between two looks when polling; the quiet pause is at most this.
        ignore: folders inside ``folder`` whose changes are not the documents' (the index).
    """

    def __init__(self, folder: str | Path, on_change: Callable[[], Any], *, mode: str = "auto",
                 every: float = 2.0, ignore: Iterable[str | Path] = ()) -> None:
        if mode not in MODES:
            raise InputError(f"choose one of {', '.join(MODES)}, got {mode!r}", argument="watch")
        self.folder, self.on_change, self.requested = Path(folder), on_change, mode
        self.every, self.quiet = every, min(QUIET_S, every)
        self.ignore = tuple(Path(p).resolve() for p in ignore)
        self.mode: str | None = None  # how it watches once started: watchdog, poll or off
        self._stop, self._wake, self._guard = threading.Event(), threading.Event(), threading.Lock()
        self._changed_at: float | None = None  # the last change not yet synced (time.monotonic)
        self._first_at: float | None = None  # the first one
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._observer: Any = None
        self._thread: threading.Thread | None = None

    def start(self, seen: dict[str, tuple[int, int, int]] | None = None) -> str:
        """Start watching; returns the mode used. ``seen``: the folder's :func:`snapshot` when
        its index was last synced: a change made since (while the server started) syncs at once.

        Raises:
            InputError: ``mode="watchdog"`` and watchdog is missing or cannot watch the folder.
        """
        if self.requested == "off":
            self.mode = "off"
            return self.mode
        if self.requested in ("auto", "watchdog"):
            self._observer = self._start_observer(required=self.requested == "watchdog")
        self.mode = "watchdog" if self._observer is not None else "poll"
        self._seen = snapshot(self.folder, self.ignore)
        if seen is not None and seen != self._seen:
            self._note()
        self._thread = threading.Thread(target=self._run, name="ragnet-watch", daemon=True)
        self._thread.start()
        return self.mode

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; waits for a sync under way to end (at most ``timeout`` seconds)."""
        self._stop.set()
        self._wake.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        if self._thread is not None:
            self._thread.join(timeout)

    # -- noticing ----------------------------------------------------------------------------
    def _start_observer(self, required: bool) -> Any:
        """watchdog's observer of the folder, started; None where it cannot run (polling then)."""
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:
            if required:
                raise InputError("watching by events needs the watchdog package (pip install watchdog); "
                                 "or give --watch poll", argument="watch") from None
            return None
        watch = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watch._event(event)

        observer = Observer()
        try:
            observer.schedule(Handler(), str(self.folder), recursive=True)
            observer.start()
        except Exception as exc:  # noqa: BLE001 - an inotify limit, a folder it cannot watch: poll instead
            if required:
                raise InputError(f"watchdog cannot watch this folder ({exc}); give --watch poll",
                                 path=self.folder) from None
            log.warning("watchdog cannot watch %s (%s); polling it every %g s instead", self.folder, exc, self.every)
            return None
        return observer

    def _event(self, event: Any) -> None:
        """One watchdog event: a change of a document (or of a folder of them) counts."""
        if event.event_type not in _WRITES or (event.is_directory and event.event_type == "modified"):
            return  # a folder's "modified" is a file made or removed in it, reported on its own
        paths = [os.fsdecode(p) for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        if any(self._counts(Path(p), event.is_directory) for p in paths):
            self._note()

    def _counts(self, path: Path, is_folder: bool) -> bool:
        try:
            inside = path.absolute().relative_to(self.folder)
        except ValueError:
            return False
        if any(part.startswith(".") for part in inside.parts):
            return False
        if any(path == skip or skip in path.parents for skip in self.ignore):
            return False
        return is_folder or _is_document(path.name)

    def _look(self) -> None:
        """Polling: note a change when the folder's snapshot differs from the last one."""
        seen = snapshot(self.folder, self.ignore)
        if seen != self._seen:
            self._seen = seen
            self._note()

    def _note(self) -> None:
        with self._guard:
            now = time.monotonic()
            self._changed_at = now
            self._first_at = self._first_at or now
        self._wake.set()

    # -- syncing -----------------------------------------------------------------------------
    def _due(self) -> bool:
        """Whether a change waits and the folder has been quiet since (or waited long enough)."""
        with self._guard:
            if self._changed_at is None:
                return False
            now = time.monotonic()
            if now - self._changed_at < self.quiet and now - (self._first_at or now) < MOST_WAIT_S:
                return False
            self._changed_at = self._first_at = None
            return True

    def _run(self) -> None:
        while not self._stop.is_set():
            waiting = self._changed_at is not None
            if self.mode == "poll":
                self._stop.wait(self.quiet if waiting else self.every)
                if not self._stop.is_set():
                    self._look()
            else:
                self._wake.wait(self.quiet if waiting else None)
                self._wake.clear()
            if self._stop.is_set() or not self._due():
                continue
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - the server goes on with the index it has
                log.exception("the sync of %s failed", self.folder)
