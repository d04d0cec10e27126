"""``results.jsonl``: an evaluation's rows, one JSON object per line, written and read here only.

Writing (:class:`RowWriter`): each row is appended in one write and fsynced as soon as it
exists. A write that fails part-way (a full disk) is cut back off the file and raises
:class:`~ragnet.errors.DiskFullError` naming it, the rows before it kept.

Reading, two ways:

:func:`read_rows`
    the rows a run resumes from. A crash loses at most the line being written: a truncated
    last line is dropped with a warning and cut from the file (so appending continues
    cleanly); a corrupt line anywhere else is an :class:`~ragnet.errors.InputError` naming the
    file and line, never a silently lost row.
:func:`read_finished_rows`
    the rows of a finished run folder, for ``ragnet eval report``: ``results.jsonl`` or the
    ``results.jsonl.gz`` a results folder keeps, never changed. A line that is not a row is
    skipped with a warning; a row whose fields are not of the types the report reads is an
    :class:`~ragnet.errors.InputError` naming the file, the line and the field (:func:`check_row`).

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / RESULTS
    >>> with RowWriter(path) as write:
    ...     write({"strategy": "basic", "id": "q1", "f1": 1.0})
    >>> [row["id"] for row in read_rows(path, key=ROW_KEY)]
    ['q1']
    >>> check_row({"strategy": "basic", "id": "q1", "f1": "x"}, "results.jsonl", 3)
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: results.jsonl:3: malformed result row: 'f1' must be a number or null, got a string
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragnet._printable import printable_name
from ragnet._secrets import redact
from ragnet.errors import DiskFullError, InputError, is_disk_full

__all__ = ["RESULTS", "RESULTS_GZ", "ROW_KEY", "RowWriter", "check_row", "kind_of", "read_finished_rows", "read_rows"]

RESULTS = "results.jsonl"
#: The compressed rows a results folder keeps (``benchmarks.fetch_rows`` restores them).
RESULTS_GZ = "results.jsonl.gz"
#: The fields that identify a row of ``ragnet eval``: one strategy on one question.
ROW_KEY = ("strategy", "id")

_SCALAR = (str, int, float)
_NUMBERS = ("em", "f1", "llm_match", "gold_all", "gold_fraction", "confidence")
_TEXTS = ("question", "answer", "type", "level", "error", "error_kind")
_SCALAR_LISTS = ("answers", "context", "evidence")
_DICTS = ("usage", "judge", "gold")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- lines


def _lines(data: bytes) -> Iterator[tuple[int, int, bytes, bool]]:
    """``(line number, byte offset, line, is the last line)`` of each line of ``data`` that is not blank."""
    lines = data.split(b"\n")
    last = len(lines) - (lines[-1] == b"")
    offset = 0
    for number, raw in enumerate(lines, 1):
        if raw.strip():
            yield number, offset, raw, number >= last
        offset += len(raw) + 1


def _parse(raw: bytes, key: Sequence[str]) -> dict[str, Any]:
    """One line as a row.

    Raises:
        ValueError: not UTF-8 JSON, not an object, or missing a ``key`` field.
    """
    try:
        row = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(row, dict) or any(k not in row for k in key):
        raise ValueError("not a result row")
    return row


# --------------------------------------------------------------------------- reading


def read_rows(path: str | Path, *, key: Sequence[str] = (), log: Callable[[str], None] = _stderr
              ) -> list[dict[str, Any]]:
    """Rows of a ``results.jsonl`` a run resumes from, in file order; none when the file does not exist.

    A truncated last line (a crash mid-write) is dropped with a warning and cut from the file,
    so appending continues cleanly. A bad line elsewhere (not JSON, not an object, or missing a
    ``key`` field) is an :class:`InputError` naming the file and line.

    Args:
        path: the file.
        key: fields every row must have (those that identify it).
        log: receives the warning about a truncated last line.
    """
    path = Path(path)
    if not path.is_file():
        return []
    rows: list[dict[str, Any]] = []
    for number, offset, raw, is_last in _lines(path.read_bytes()):
        try:
            rows.append(_parse(raw, key))
        except ValueError as exc:
            if not is_last:
                raise InputError(f"corrupt result row ({exc}); remove the line or use --fresh",
                                 path=path, line=number) from None
            log(f"warning: {path}:{number}: ignoring an incomplete last line (an interrupted run); "
                "it will be recomputed")
            with open(path, "r+b") as fh:
                fh.truncate(offset)
    return rows


def read_finished_rows(folder: str | Path, log: Callable[[str], None] = _stderr) -> list[dict[str, Any]]:
    """Every row of a run folder's ``results.jsonl`` (or ``results.jsonl.gz``), read without
    changing the file: a line that is not a JSON object with a strategy and an id is skipped
    with a warning.

    Raises:
        InputError: the folder holds neither file, the compressed file cannot be read, or a row
            has a field of the wrong type (:func:`check_row`).
    """
    folder = Path(folder)
    source = next((p for p in (folder / RESULTS, folder / RESULTS_GZ) if p.is_file()), None)
    if source is None:
        raise InputError(f"{folder} holds no {RESULTS} (or {RESULTS_GZ}): not a ragnet eval run folder",
                         argument="out")
    data = source.read_bytes()
    if source.name == RESULTS_GZ:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=source) from None
    rows = []
    for number, _, raw, _ in _lines(data):
        try:
            row = _parse(raw, ROW_KEY)
        except ValueError:
            log(f"warning: {printable_name(folder)}: skipping line {number} of the results (not a result row)")
            continue
        check_row(row, source, number)  # a field of the wrong type: a named error, not a traceback later
        rows.append(row)
    return rows


def kind_of(value: Any) -> str:
    """What a JSON value is, as an error message names it.

    Example:
        >>> kind_of("x"), kind_of([1]), kind_of(None), kind_of(2.5)
        ('a string', 'an array', 'null', 'a number')
    """
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _bad(where: str | Path, line: int | None, what: str) -> InputError:
    return InputError(f"malformed result row: {what}", path=where, line=line)


def check_row(row: Mapping[str, Any], where: str | Path, line: int | None = None) -> None:
    """Refuse a result row whose fields are not of the types the report reads.

    Raises:
        InputError: naming ``where``, ``line`` and the field.
    """
    for key in ROW_KEY:
        if not isinstance(row.get(key), _SCALAR) or isinstance(row.get(key), bool):
            raise _bad(where, line, f"{key!r} must be a string or a number, got {kind_of(row.get(key))}")
    for key in _NUMBERS:
        value = row.get(key)
        if value is not None and not isinstance(value, (int, float)):
            raise _bad(where, line, f"{key!r} must be a number or null, got {kind_of(value)}")
    for key in _TEXTS:
        value = row.get(key)
        if value is not None and not isinstance(value, _SCALAR):
            raise _bad(where, line, f"{key!r} must be a string, a number or null, got {kind_of(value)}")
    for key in _SCALAR_LISTS:
        value = row.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, _SCALAR) for v in value)):
            raise _bad(where, line, f"{key!r} must be an array of strings, got {kind_of(value)}"
                       + (" holding other values" if isinstance(value, list) else ""))
    for key in _DICTS:
        value = row.get(key)
        if value is not None and not isinstance(value, dict):
            raise _bad(where, line, f"{key!r} must be an object or null, got {kind_of(value)}")
    for key in ("passages", "trace"):
        value = row.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            raise _bad(where, line, f"{key!r} must be an array of objects or null, got {kind_of(value)}"
                       + (" holding other values" if isinstance(value, list) else ""))
    gold = row.get("gold") or {}
    for key in ("documents", "sentences"):
        value = gold.get(key)
        if value is not None and not isinstance(value, list):
            raise _bad(where, line, f"'gold' {key!r} must be an array, got {kind_of(value)}")


# --------------------------------------------------------------------------- writing


def _repair_tail(path: Path, log: Callable[[str], None]) -> None:
    """Make ``path`` end with a complete line before anything is appended to it.

    A last line without its newline is completed when it is a whole JSON object, and cut off
    with a warning when it is not (half a row: a crash or a full disk mid-write); a new row
    appended after it would otherwise turn it into a corrupt line in the middle of the file.
    """
    if not path.is_file():
        return
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        data = fh.read()
        start = data.rfind(b"\n") + 1
        try:
            complete = isinstance(json.loads(data[start:].decode("utf-8")), dict)
        except (ValueError, UnicodeDecodeError):
            complete = False
        if complete:
            fh.write(b"\n")
            return
        line = data.count(b"\n", 0, start) + 1
        log(f"warning: {path}:{line}: ignoring an incomplete last line "
            "(an interrupted run); it will be recomputed")
        fh.truncate(start)


class RowWriter:
    """Appends one complete JSON line per row, in one write, fsynced (use from one thread).

    The file never ends in half a row: a write that fails part-way (a full disk) is cut back
    off before the error propagates, and a half row left by a crash is cut before the first
    append (:func:`read_rows` does the same when the rows are read). A context manager;
    :meth:`close` when used without ``with``.

    Args:
        path: the ``results.jsonl`` to append to (created if missing).
        log: receives the warning about a cut half row.

    Raises:
        DiskFullError: from :meth:`write`, when the disk is full (the rows before are kept).
    """

    def __init__(self, path: Path, log: Callable[[str], None] = _stderr) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        _repair_tail(path, log)
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)

    def write(self, row: dict[str, Any]) -> None:
        """Append ``row`` as one line and make it durable before returning."""
        if self._fd is None:
            raise ValueError("write to a closed RowWriter")
        # a lone surrogate in a text (an LM answer) is written as its JSON escape, which reads back as it was
        # an API key an error or a trace echoed is never written (ragnet._secrets)
        data = (redact(json.dumps(row, ensure_ascii=False, default=str)) + "\n").encode("utf-8", "backslashreplace")
        start = os.fstat(self._fd).st_size
        try:
            written = 0
            while written < len(data):  # one write() unless the kernel takes part of it
                written += os.write(self._fd, data[written:])
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)  # no half row left behind
            if is_disk_full(exc):
                raise DiskFullError(self.path, exc.strerror,
                                    kept="the rows already written are kept (the same command resumes after them)") from exc
            raise

    __call__ = write

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
