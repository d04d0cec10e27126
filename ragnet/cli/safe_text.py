r"""Every line a ``ragnet`` command prints passes one filter (:func:`ragnet._printable.printable_stream`).

While a command runs, ``sys.stdout`` and ``sys.stderr`` are :class:`SafeStream` wrappers of the
real streams: whatever reaches them (typer's echo, rich tables, tqdm's bars, warnings, a
library's ``print`` to stderr, the one-line error) has its control characters, escape sequences
and bidirectional controls shown escaped, but for the command's own colours and a progress bar's
carriage return; and every secret ragnet was given (an LM's API key, a server URL's password) is
shown ``***`` (:func:`ragnet._secrets.redact`). Names embedded in messages are escaped where the message is made
(:func:`ragnet._printable.printable_name`), so that a newline in a file name shows as ``\n``
rather than starting a line; JSON output keeps its data as JSON escapes
(:func:`ragnet._printable.printable_json`).

Example:
    >>> import io
    >>> raw = io.StringIO()
    >>> with filtered_output(stdout=raw):
    ...     print("kept files: a\x1b]52;c;ZXZpbA==\x07.md, b\u202etxt.exe")
    >>> raw.getvalue()
    'kept files: a\\x1b]52;c;ZXZpbA==\\x07.md, b\\u202etxt.exe\n'
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, TextIO

from ragnet._printable import printable_stream
from ragnet._secrets import redact

__all__ = ["SafeStream", "filtered_output"]


class SafeStream:
    """A text stream that writes :func:`printable_stream` of what it is given to ``raw``; every
    other attribute (``isatty``, ``encoding``, ``fileno``, ``flush``...) is ``raw``'s."""

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw

    def write(self, text: Any) -> int:
        if isinstance(text, str):
            self._raw.write(printable_stream(redact(text)))
            return len(text)
        return self._raw.write(text)  # bytes probes (click's) go through untouched

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


@contextlib.contextmanager
def filtered_output(stdout: TextIO | None = None, stderr: TextIO | None = None) -> Iterator[None]:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`SafeStream` for the block (the
    current streams unless others are given); re-entered, it changes nothing."""
    saved = sys.stdout, sys.stderr
    out, err = stdout or sys.stdout, stderr or sys.stderr
    if not isinstance(out, SafeStream):
        sys.stdout = SafeStream(out)  # type: ignore[assignment]
    if not isinstance(err, SafeStream):
        sys.stderr = SafeStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
