"""An evaluation's output folder: resumable rows, the settings that made them, the report.

Every ``ragnet eval`` command writes the same files (:class:`RunFolder`):

``results.jsonl``
    one JSON line per finished row (a question under one strategy, one context of the
    laziness experiment), appended as soon as it exists (:meth:`RunFolder.writer`) and read
    back when the run resumes (:meth:`RunFolder.rows`); :mod:`ragnet.eval.run.results_file`
    writes and reads it, so a crash or a full disk loses at most the line being written.
``run.json``
    the settings of the run. Rows are reused only by a run whose settings match
    (:meth:`RunFolder.start`); a mismatch is refused with a message naming the differing
    settings, unless ``fresh`` discards the old rows first.
``ids.txt``
    the ids of the questions the report covers, one per line, so ``--ids @OUT/ids.txt`` asks
    exactly these again (:meth:`RunFolder.write_ids`; an ``--ids @/tmp/file`` does not outlive
    the machine, the folder does).
``report.md`` and ``summary.json``
    written atomically (temporary file, then rename) by :meth:`RunFolder.write_outputs`.
``.ragnet-eval``
    the marker saying that ragnet eval owns the folder. ragnet writes only into an empty folder
    (and marks it) or one that holds this marker (:meth:`RunFolder.claim`), so ``--out`` never
    replaces a user's own ``report.md``; :meth:`RunFolder.locked` keeps a second run out while
    one is writing.

Example:
    >>> import tempfile
    >>> folder = RunFolder(tempfile.mkdtemp(), key=("id",))
    >>> folder.claim()
    >>> folder.start({"lm": "a"})
    >>> with folder.writer() as write:
    ...     write({"id": "q1", "em": 1.0})
    >>> [row["id"] for row in folder.rows()]
    ['q1']
    >>> folder.start({"lm": "b"})
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: argument 'out': ... holds results of a run with other settings (lm: 'a' -> 'b'); use another --out, or --fresh to discard them
    >>> folder.start({"lm": "b"}, fresh=True); folder.rows()
    []
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ragnet._printable import printable_name
from ragnet.corpus.outputs import EVAL_MARKER
from ragnet.errors import InputError
from ragnet.eval.run.results_file import RESULTS, RowWriter, read_rows

__all__ = ["IDS", "MARKER", "REPORT", "RESULTS", "RUN_FILE", "SUMMARY", "RunFolder", "claim_folder"]

MARKER = EVAL_MARKER  # what ragnet.corpus.outputs recognises an eval run folder by
RUN_FILE = "run.json"
REPORT = "report.md"
SUMMARY = "summary.json"
IDS = "ids.txt"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class RunFolder:
    """The output folder of one evaluation (see the module docstring).

    Args:
        path: the folder (created on :meth:`start` or the first write).
        key: fields that identify a row of ``results.jsonl`` (e.g. ``("strategy", "id")``).
        log: receives warnings (a truncated last line).

    Raises:
        InputError: ``path`` is a file.
    """

    def __init__(self, path: str | Path, *, key: Sequence[str] = (), log: Callable[[str], None] = _stderr) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"{self.path} is a file; give a directory", argument="out")
        self.key = tuple(key)
        self.log = log

    def claim(self) -> None:
        """Make sure the folder is ragnet eval's to write, marking it if it is new or empty.

        A folder that holds anything but no :data:`MARKER` belongs to someone else: it is
        refused, naming a few of its entries, and nothing in it is touched.

        Raises:
            InputError: the folder is not empty and holds no marker.
        """
        from ragnet._atomic import write_json

        marker = self.path / MARKER
        if marker.is_file() and not marker.is_symlink():
            return
        entries = sorted(p.name for p in self.path.iterdir()) if self.path.is_dir() else []
        if entries:
            shown = ", ".join(map(printable_name, entries[:5])) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
            raise InputError(f"{self.path} is not empty and holds no ragnet eval run ({shown}); ragnet eval "
                             "writes only into an empty folder or one an earlier ragnet eval wrote: choose "
                             "another --out", argument="out")
        write_json(marker, {"written_by": "ragnet eval"})

    @contextlib.contextmanager
    def locked(self) -> Iterator["RunFolder"]:
        """Hold the folder's lock for a whole run: a second run on it is refused at once."""
        from ragnet._atomic import dir_lock

        with dir_lock(self.path):
            yield self

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS

    @property
    def run_path(self) -> Path:
        return self.path / RUN_FILE

    def start(self, settings: dict[str, Any], *, compare: Sequence[str] | None = None, fresh: bool = False) -> None:
        """Check that rows already here come from a run with these settings, then record them.

        Args:
            settings: JSON-ready settings of this run, written to ``run.json``.
            compare: the settings that must match to reuse rows (None: all of them; others,
                such as the command line, are recorded only).
            fresh: discard the rows already here instead.

        Raises:
            InputError: rows from a run with other settings (naming them), rows without a
                ``run.json``, or an unreadable ``run.json``; each says to use ``--fresh``.
        """
        from ragnet._atomic import write_json

        self.path.mkdir(parents=True, exist_ok=True)
        if fresh and self.results_path.exists():
            self.results_path.unlink()
        if self.results_path.is_file() and not fresh:
            if not self.run_path.is_file():
                raise InputError(f"{self.path} holds {RESULTS} but no {RUN_FILE} saying which settings made it; "
                                 "use another --out, or --fresh to discard them", argument="out")
            try:
                old = json.loads(self.run_path.read_text(encoding="utf-8"))
                if not isinstance(old, dict):
                    raise ValueError("not an object")
            except (ValueError, UnicodeDecodeError):
                raise InputError("unreadable run settings; use --fresh to start over", path=self.run_path) from None
            keys = list(compare) if compare is not None else sorted(set(old) | set(settings))
            diff = [k for k in keys if old.get(k) != settings.get(k)]
            if diff:
                detail = "; ".join(f"{k}: {old.get(k)!r} -> {settings.get(k)!r}" for k in diff)
                raise InputError(f"{self.path} holds results of a run with other settings ({detail}); "
                                 "use another --out, or --fresh to discard them", argument="out")
        write_json(self.run_path, settings)

    def rows(self) -> list[dict[str, Any]]:
        """Every row of ``results.jsonl`` (see :func:`read_rows`)."""
        return read_rows(self.results_path, key=self.key, log=self.log)

    def writer(self) -> RowWriter:
        """A :class:`RowWriter` appending to ``results.jsonl``."""
        return RowWriter(self.results_path, log=self.log)

    def previous_summary(self) -> dict[str, Any] | None:
        """The ``summary.json`` an earlier run left here, if readable."""
        try:
            old = json.loads((self.path / SUMMARY).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return old if isinstance(old, dict) else None

    def write_ids(self, ids: Sequence[str]) -> Path:
        """Write ``ids.txt`` (one question id per line, atomically); return its path."""
        from ragnet._atomic import write_text

        path = self.path / IDS
        write_text(path, "".join(f"{i}\n" for i in ids))
        return path

    def write_outputs(self, report: str, summary: dict[str, Any]) -> None:
        """Write ``report.md`` (as given) and ``summary.json``, each atomically."""
        from ragnet._atomic import write_json, write_text

        write_text(self.path / REPORT, report)
        write_json(self.path / SUMMARY, summary)


def claim_folder(path: str | Path) -> RunFolder:
    """Check an ``--out`` folder before any index or LM work: writable, and new, empty or an
    earlier ragnet eval's (:meth:`RunFolder.claim`); the evaluation claims it again under its lock.

    Raises:
        InputError: naming ``out``: a file, an unwritable folder, or someone else's files.
    """
    from ragnet._atomic import check_writable_dir

    check_writable_dir(path, argument="out")
    folder = RunFolder(path)
    folder.claim()
    return folder
