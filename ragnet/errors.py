"""Exceptions raised by ragnet.

Every error a user can cause carries enough context (file, line, argument) to fix the
input without reading a traceback. The CLI prints ``str(err)`` and exits with the error's
``exit_code``: 2 for bad input, 3 when the LM failed, 4 when the disk filled up.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ragnet._printable import printable_name


class RagnetError(Exception):
    """Base class of all errors ragnet raises on purpose.

    ``exit_code`` is the ``ragnet`` command's exit status for it (2: bad input).
    """

    exit_code = 2


class LMUnavailableError(RagnetError):
    """The LM failed for most recent calls (no key, no server, timeouts): an outage, not bad input."""

    exit_code = 3


class InputError(RagnetError, ValueError):
    """Bad user input: a file, a line in it, or an argument.

    Args:
        message: what is wrong and, ideally, how to fix it.
        path: the offending file, if any.
        line: 1-based line number inside ``path``, if any.
        argument: the offending argument name (e.g. ``"budget"``), if any.

    The path is written with :func:`ragnet._printable.printable_name`: a control character,
    a bidirectional control or a newline in a file name is shown escaped, never obeyed by the
    terminal or taken for the start of another line.

    Example:
        >>> str(InputError("missing 'text'", path="docs.jsonl", line=3))
        "docs.jsonl:3: missing 'text'"
        >>> print(InputError("file is empty", path="a\\nerror: b.md"))
        a\\nerror: b.md: file is empty
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        argument: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.argument = argument
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            path = printable_name(self.path)
            where = path if self.line is None else f"{path}:{self.line}"
        elif self.argument is not None:
            where = f"argument {self.argument!r}"
        return f"{where}: {self.message}" if where else self.message


class DiskFullError(RagnetError, OSError):
    """The disk (or the user's quota) filled up while ragnet wrote ``path``.

    Raised instead of the write's ``OSError`` (ENOSPC, EDQUOT) by ragnet's writers, which
    leave what they were replacing whole: an index being rebuilt, a report, the rows of an
    evaluation already written. Still an ``OSError``, so ``except OSError`` keeps working.

    Args:
        path: what was being written.
        reason: the system's message (``"No space left on device"``).
        kept: what survives, for the message (``"the previous index is unchanged"``).

    Example:
        >>> str(DiskFullError("idx", kept="the previous index is unchanged"))
        'disk full: cannot write idx (No space left on device); the previous index is unchanged; free some space and run again'
    """

    exit_code = 4

    def __init__(self, path: str | Path, reason: str | None = None, kept: str = "") -> None:
        reason = reason or os.strerror(errno.ENOSPC)
        super().__init__(errno.ENOSPC, reason, str(path))
        self.kept = kept
        self.message = f"disk full: cannot write {printable_name(path)} ({reason}); {kept + '; ' if kept else ''}free some space and run again"

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # OSError pickles its (errno, strerror) args, which this __init__ does not take
        return type(self), (self.filename, self.strerror, self.kept)


#: ``errno`` values that mean the disk or the quota is full.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or quota) is full: an ``OSError`` with ENOSPC or EDQUOT, or
    the ``RuntimeError`` FAISS raises for a failed write, whose message carries the system's text.

    Example:
        >>> is_disk_full(OSError(errno.ENOSPC, "No space left on device")), is_disk_full(OSError(2, "x"))
        (True, False)
    """
    if isinstance(exc, OSError):
        return exc.errno in DISK_FULL_ERRNOS
    return isinstance(exc, RuntimeError) and any(os.strerror(code) in str(exc) for code in DISK_FULL_ERRNOS)


class IndexFormatError(RagnetError):
    """A persisted index is missing files, corrupt, from another format version,
    or was built with a different embedder than the one requested."""


class MissingDependencyError(RagnetError, ImportError):
    """An optional dependency is not installed; the message says how to install it."""


def require(module: str, extra: str | None = None, purpose: str = ""):
    """Import ``module`` lazily, failing with an actionable message.

    Example:
        >>> np = require("numpy")
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        hint = f"pip install 'ragnet[{extra}]'" if extra else f"pip install {module}"
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingDependencyError(f"{module} is not installed{why}; run: {hint}") from exc


def describe(exc: BaseException, limit: int | None = 500) -> str:
    """One line naming an exception: ``"Type: message"`` with whitespace collapsed, the message
    cut to ``limit`` characters (marked with ``...``); just ``"Type"`` when it has no message.

    Used wherever a failure is recorded rather than raised (error rows of ``ragnet eval``, LM
    step failures in traces).

    Example:
        >>> describe(ValueError("bad\\n  value"))
        'ValueError: bad value'
        >>> describe(RuntimeError("x" * 10), limit=4)
        'RuntimeError: xxxx...'
        >>> describe(KeyError())
        'KeyError'
    """
    message = " ".join(str(exc).split())
    if limit is not None and len(message) > limit:
        message = message[:limit] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
