"""``feedback.jsonl`` in the index folder: the marks people give answers on ``ragnet serve``'s
page, one question row each, kept across index updates.

A mark is written by rewriting the whole file (:func:`ragnet._atomic.write_text`: a temporary
file renamed over it), so a reader, ``ragnet eval --docs`` included, never sees half a row and a
crash leaves the file as it was. The rewrite holds the index folder's writer lock
(:func:`ragnet._atomic.dir_lock`, the lock ``ragnet index`` and ``Index.sync`` hold from reading
the old index to the swap), because an update carries the files it does not own over into the
new folder (hard links, :func:`ragnet._atomic.atomic_dir`) before it renames that folder into
place: a mark renamed into the old folder in between would be left behind with it. So a mark
waits for an update under way (at most :data:`LOCK_WAIT_S`, then it is refused as busy and may
be sent again), and an update that starts while a mark is being written (a few milliseconds) is
refused at once, as it would be beside any other writer. Threads of one server take turns by a
lock of their own: the folder lock lets its own process in again.

One row per question: the row's id is made from the question (:func:`row_id`), so a question
marked again replaces its earlier row (the last mark stands) and the file never holds the
duplicate ids ``ragnet eval --docs`` refuses. The file is bounded (:data:`MAX_FEEDBACK_BYTES`):
past it a mark is refused with what to do, never truncated.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> marks = FeedbackFile(folder)
    >>> row = {"id": row_id("Which port?"), "question": "Which port?", "answers": ["8000"]}
    >>> marks.add(row), marks.add({**row, "answers": ["8080"]}), marks.path.name
    ((False, 1), (True, 1), 'feedback.jsonl')
    >>> marks.path.read_text()
    '{"id": "fb-b92b6f832a", "question": "Which port?", "answers": ["8080"]}\\n'
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from ragnet._atomic import dir_lock, write_text
from ragnet._text import normalize_text
from ragnet.errors import InputError, RagnetError

__all__ = ["FEEDBACK_FILE", "LOCK_WAIT_S", "MAX_FEEDBACK_BYTES", "FeedbackBusy", "FeedbackFile", "FeedbackFull",
           "row_id"]

#: The file's name in the index folder.
FEEDBACK_FILE = "feedback.jsonl"
#: The largest file a mark is added to; a team past it moves the file aside and starts a new one.
MAX_FEEDBACK_BYTES = 8 * 1024 * 1024
#: Seconds a mark waits for an update of the index folder (or another process's mark) to finish.
LOCK_WAIT_S = 10.0

_LOCKS: dict[str, threading.Lock] = {}  # one per file: the threads of this process take turns
_LOCKS_GUARD = threading.Lock()


class FeedbackFull(RagnetError):
    """The file holds :data:`MAX_FEEDBACK_BYTES`, or would with the new row."""


class FeedbackBusy(RagnetError):
    """The index folder stayed locked by another writer (an update) for :data:`LOCK_WAIT_S`."""


def row_id(question: str) -> str:
    """The id of a question's row: ``fb-`` and a hash of the question, case and spacing aside
    (the same question marked again replaces its row)."""
    key = normalize_text(question)
    return "fb-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]


class FeedbackFile:
    """The marks file of the index folder ``folder`` (see the module docstring).

    Args:
        folder: the index folder (the served path; a symbolic link is written through, as
            ``ragnet index`` writes it).
        max_bytes: the largest file a row is added to.
        wait: seconds to wait for the folder's writer lock.
    """

    def __init__(self, folder: str | Path, max_bytes: int = MAX_FEEDBACK_BYTES, wait: float = LOCK_WAIT_S) -> None:
        self.served = Path(folder)
        self.max_bytes, self.wait = max_bytes, wait
        with _LOCKS_GUARD:
            self._lock = _LOCKS.setdefault(str(self.served.absolute()), threading.Lock())

    @property
    def folder(self) -> Path:
        """The folder written: the served path, through a symbolic link as it points now (as
        ``ragnet index`` writes it, and locks it)."""
        from ragnet.index.manifest import through_link

        return through_link(self.served)

    @property
    def path(self) -> Path:
        return self.folder / FEEDBACK_FILE

    def add(self, row: dict[str, Any]) -> tuple[bool, int]:
        """Write ``row`` (a JSON object with an ``id``) into the file, replacing the row of the
        same id; whether it replaced one, and the rows the file now holds.

        Raises:
            FeedbackBusy: the folder stayed locked by another writer.
            FeedbackFull: the file is at its bound.
        """
        line = json.dumps(row, ensure_ascii=False)
        with self._lock:
            folder = self.folder
            with self._folder_lock(folder):
                kept, replaced = self._rows_but(folder / FEEDBACK_FILE, str(row["id"]))
                text = "".join(f"{r}\n" for r in kept) + line + "\n"
                size = len(text.encode("utf-8"))
                if size > self.max_bytes:
                    raise FeedbackFull(f"{FEEDBACK_FILE} would hold {size:,} bytes, more than the {self.max_bytes:,} "
                                       "a mark is added to; move it aside (to keep its marks, e.g. as "
                                       "feedback-1.jsonl) and new marks start a new file")
                write_text(folder / FEEDBACK_FILE, text)
        return replaced, len(kept) + 1

    @staticmethod
    def _rows_but(path: Path, qid: str) -> tuple[list[str], bool]:
        """The lines of ``path`` but the row whose id is ``qid`` (blank lines dropped; a line that
        is not a JSON object is kept as it is, for whoever edited it to fix)."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return [], False
        kept = []
        for text in lines:
            if not text.strip():
                continue
            try:
                same = str(json.loads(text).get("id")) == qid
            except (ValueError, AttributeError):
                same = False
            if not same:
                kept.append(text)
        return kept, len(kept) < len([t for t in lines if t.strip()])

    @contextlib.contextmanager
    def _folder_lock(self, folder: Path) -> Iterator[None]:
        """The writer lock of the index folder ``folder``, tried until :attr:`wait` seconds have passed."""
        deadline = time.monotonic() + self.wait
        while True:
            held = False
            try:
                with dir_lock(folder):
                    held = True
                    yield
                return
            except InputError:
                if held:  # the write's own error, not the lock's
                    raise
                if time.monotonic() >= deadline:
                    raise FeedbackBusy(f"the index folder {folder.name} is being written (an update?) "
                                       f"and stayed locked for {self.wait:g}s; the mark was not saved, "
                                       "send it again") from None
                time.sleep(0.1)
