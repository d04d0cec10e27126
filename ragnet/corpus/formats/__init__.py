"""Readers for binary and markup document formats: PDF, HTML and DOCX.

Each reader takes a file's bytes and the name to use in messages and returns an
:class:`Extracted`: the text, the title and metadata the format declares, and ``positions``
(where each page or section starts in the text, for chunk locations). The third-party library a
reader needs (``pypdf``, ``beautifulsoup4``, ``python-docx``) is imported only when a file of that
format is read, so ``import ragnet`` stays fast and a missing package is reported as one
``InputError`` naming the file and the package to install.

A file that cannot be read whole (encrypted, malformed, truncated, without text) raises
``InputError``; nothing of it is returned.

Example:
    >>> html = b"<html><title>Paris</title><nav>Home | About</nav><h1>Paris</h1><p>Capital of France.</p></html>"
    >>> got = read_file("html", html, "paris.html")
    >>> got.title, got.text, got.positions
    ('Paris', 'Paris\\n\\nCapital of France.', ((0, {'headings': ['Paris']}),))
"""

from __future__ import annotations

import datetime as _dt
import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ragnet.corpus.limits import FileBounds, cap_positions, cap_title
from ragnet.errors import InputError

__all__ = ["Extracted", "TextBuilder", "FORMATS", "read_file", "require_reader", "date_metadata"]

#: Format name -> "module:function" of its reader (modules of this package).
FORMATS = {"pdf": "pdf:read_pdf", "html": "html:read_html", "docx": "docx:read_docx"}

#: Package to import for each format, and the name to install it under.
PACKAGES = {"pdf": ("pypdf", "pypdf"), "html": ("bs4", "beautifulsoup4"), "docx": ("docx", "python-docx")}

_SPACES = re.compile(r"[ \t\f\v\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st", "\u00ad": None, "\u200b": None, "\ufeff": None})


@dataclass
class Extracted:
    """What a reader found in one file.

    Attributes:
        text: the document text (blocks separated by blank lines).
        title: the title the file declares ("" when none).
        metadata: JSON-compatible metadata the format declares (``author``, ``date`` as an ISO
            string...), for ``Document.metadata``.
        positions: ``(offset, place)`` pairs for ``Document.positions``.
        notes: things worth a warning that did not stop the reading (pages without text).
    """

    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    positions: tuple[tuple[int, dict[str, Any]], ...] = ()
    notes: list[str] = field(default_factory=list)


class TextBuilder:
    """Joins text blocks, remembering the place (page, heading path) each one starts at.

    A block's whitespace is tidied (runs of spaces and tabs become one space, lines are
    stripped, blank-line runs become one blank line, ligature characters such as ``"ﬁ"`` become
    their letters, soft hyphens and zero-width spaces go); a block left empty is dropped. A
    place is recorded only where it differs from the one before.

    Example:
        >>> b = TextBuilder()
        >>> [b.add("First  page.", {"page": 1}), b.add("  ", {"page": 2}), b.add("Third", {"page": 3})]
        [True, False, True]
        >>> b.text(), b.positions()
        ('First page.\\n\\nThird', ((0, {'page': 1}), (13, {'page': 3})))
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._positions: list[tuple[int, dict[str, Any]]] = []

    @staticmethod
    def clean(text: str) -> str:
        """``text`` with its whitespace tidied and ligatures spelled out, as blocks are added."""
        lines = [_SPACES.sub(" ", line).strip() for line in text.translate(_LIGATURES).splitlines()]
        out: list[str] = []
        for line in lines:
            if line or (out and out[-1]):
                out.append(line)
        return "\n".join(out).strip("\n")

    def add(self, text: str, place: dict[str, Any] | None = None, *, separator: str = "\n\n",
            marks: tuple[tuple[int, dict[str, Any]], ...] = ()) -> bool:
        """Append a block (after ``separator`` unless it is the first); False when it was empty.

        ``marks`` are places that start inside the block: ``(offset, place)`` pairs, the offset
        into the block's cleaned text (:meth:`clean`), in ascending order (a PDF page's sections).
        """
        text = self.clean(text)
        if not text:
            return False
        if self._parts:
            self._parts.append(separator)
            self._size += len(separator)
        for offset, where in ((0, place), *marks):
            if where is None or not 0 <= offset < len(text):
                continue
            at = self._size + offset
            if self._positions and self._positions[-1][0] == at:
                self._positions[-1] = (at, dict(where))  # a section starting where its page starts
            elif not self._positions or self._positions[-1][1] != where:
                self._positions.append((at, dict(where)))
        self._parts.append(text)
        self._size += len(text)
        return True

    def __len__(self) -> int:
        return self._size

    def text(self) -> str:
        return "".join(self._parts)

    def positions(self) -> tuple[tuple[int, dict[str, Any]], ...]:
        return tuple(self._positions)


def require_reader(kind: str, where: str) -> Any:
    """Import the library format ``kind`` needs, or raise an InputError naming the file and the
    package to install."""
    module, package = PACKAGES[kind]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"reading {kind.upper()} files needs the {package} package, which is not installed; "
                         f"run: pip install {package}", path=where) from None


def read_file(kind: str, data: bytes, where: str, bounds: FileBounds | None = None) -> Extracted:
    """Read one file's bytes as format ``kind`` (a key of :data:`FORMATS`).

    The title, the author and every heading are capped (:func:`ragnet.corpus.limits.cap_title`). Whatever
    goes wrong inside a reader is this file's error, never the caller's: a structure nested too
    deep for the parser (a ``RecursionError``) or any other failure becomes an ``InputError``
    naming the file.

    Args:
        kind: ``"pdf"``, ``"html"`` or ``"docx"``.
        data: the file's bytes.
        where: the file as named in messages.
        bounds: what reading it may cost (:class:`ragnet.corpus.limits.FileBounds`; default
            that of ``max_file_mb=20``).

    Raises:
        InputError: the file is empty, cannot be parsed, is encrypted, holds no text, is over a
            bound, or the format's package is missing; the message names ``where``.
    """
    if not data.strip():
        raise InputError("file is empty", path=where)
    module, function = FORMATS[kind].split(":")
    reader: Callable[..., Extracted] = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    try:
        got = reader(data, where, bounds=bounds if bounds is not None else FileBounds())
    except InputError:
        raise
    except RecursionError:
        raise InputError(f"malformed {kind.upper()}: its structure is nested too deep to read", path=where) from None
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reader's surprise is this file's problem, not the run's
        detail = " ".join(str(exc).split())[:160]
        raise InputError(f"malformed {kind.upper()}, it cannot be read ({type(exc).__name__}"
                         f"{': ' + detail if detail else ''})", path=where) from None
    got.title = cap_title(got.title)  # these three are copied into every chunk of the file
    got.positions = cap_positions(got.positions)
    if isinstance(got.metadata.get("author"), str):
        got.metadata["author"] = cap_title(got.metadata["author"])
    return got


_ISO_DATE = re.compile(r"^\s*(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")


def date_metadata(value: Any) -> dict[str, Any]:
    """``{"date": "YYYY-MM-DD"}`` from a datetime, a date or an ISO-like string
    (``"2019-03-04T10:00:00Z"``, ``"2019-03"``, ``"2019"``); ``{}`` when it holds no plausible date.

    No ``year`` key: a file's date says when it was made or published, not the year it is about
    (a 2023 report on 2019; a PDF stamped with the day it was exported), and ``year`` is what the
    chunk filter (:mod:`ragnet.core.rules`) drops chunks by when a question names another year.
    Give ``year`` in a JSONL record's metadata where it is the document's subject.

    Example:
        >>> date_metadata("2019-03-04T10:00:00+01:00"), date_metadata("n/a")
        ({'date': '2019-03-04'}, {})
    """
    if isinstance(value, _dt.datetime):
        value = value.date()
    if isinstance(value, _dt.date):
        if 1000 <= value.year <= 2100:
            return {"date": value.isoformat()}
        return {}
    if not isinstance(value, str):
        return {}
    m = _ISO_DATE.match(value)
    if not m:
        return {}
    year = int(m.group(1))
    month = int(m.group(2)) if m.group(2) else None
    day = int(m.group(3)) if m.group(3) else None
    if not 1000 <= year <= 2100 or (month is not None and not 1 <= month <= 12):
        return {}
    if day is not None:
        try:
            _dt.date(year, month or 1, day)
        except ValueError:
            day = None
    date = f"{year:04d}" + (f"-{month:02d}" if month else "") + (f"-{day:02d}" if month and day else "")
    return {"date": date}
