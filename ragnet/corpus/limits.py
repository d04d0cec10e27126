"""Bounds on what one file may cost to read, checked before the expensive part.

A document's size on disk says little about the work it takes: a 200 KB DOCX can unpack to
48 MB of paragraphs, a 29 KB PDF can hold a content stream of 8 MB that every page reads again,
and a 600 KB HTML page can hold a 300 KB title that chunking copies into every chunk. So
``--max-file-mb N`` (``load_documents(max_file_mb=N)``, :class:`FileBounds`) bounds, for each file:

* its size on disk: N MB;
* what a DOCX unpacks to: the sum of its ZIP entries' declared sizes, N MB, and no entry larger
  than 1 MB may inflate more than :data:`MAX_INFLATE_RATIO`-fold (a compression bomb); both read
  from the ZIP directory before anything is inflated or parsed (the ZIP reader inflates no entry
  past the size it declares);
* the drawing instructions a PDF's pages hold (the page's content streams and the forms it
  draws, which the text extractor reads operator by operator): N/10 MB per page, 3N MB in all,
  a stream shared by several pages counting once for each page that reads it;
* the elements of an HTML page: N x :data:`HTML_ELEMENTS_PER_MB` (each costs about a kilobyte
  of memory once parsed).

A file over a bound is refused in one line naming it and the bound (or left out with
``on_error="skip"``), like any other unreadable file. Titles and headings are capped at
:data:`MAX_TITLE_CHARS` characters wherever they come from (:func:`cap_title`), so that one
copied into every chunk stays small.

Example:
    >>> bounds = FileBounds(max_file_mb=2)
    >>> bounds.page_content_bytes, bounds.html_elements
    (200000, 40000)
    >>> title = cap_title("Annual report " * 40)
    >>> len(title), title[-12:]
    (294, 'nual report…')
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ragnet.errors import InputError

__all__ = ["DEFAULT_MAX_FILE_MB", "FileBounds", "HTML_ELEMENTS_PER_MB", "MAX_INFLATE_RATIO", "MAX_TITLE_CHARS",
           "cap_place", "cap_positions", "cap_title"]

#: Default ``max_file_mb``.
DEFAULT_MAX_FILE_MB = 20.0
#: Longest title or heading kept, in characters (a longer one is cut at a word, with "…").
MAX_TITLE_CHARS = 300
#: Most a DOCX part over :data:`_RATIO_GRACE_BYTES` may inflate (Apache POI's default, 1/0.01).
MAX_INFLATE_RATIO = 100
_RATIO_GRACE_BYTES = 1_000_000
#: HTML elements allowed per MB of ``max_file_mb``.
HTML_ELEMENTS_PER_MB = 20_000
_PAGE_SHARE = 10  # a page may read a tenth of the bound
_CONTENT_TIMES = 3  # all pages together three times it
_FORM_DEPTH = 8  # forms drawn inside forms, followed this deep
_OVER = "too much to read"


def cap_title(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """``text`` cut to at most ``limit`` characters, at a word when one ends in its last fifth,
    marked with "…"; unchanged when it fits.

    Example:
        >>> cap_title("Short title"), len(cap_title("x" * 10_000))
        ('Short title', 300)
    """
    if not isinstance(text, str) or len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ", (limit * 4) // 5)
    return (cut[:space] if space > 0 else cut).rstrip() + "…"


def cap_place(place: Mapping[str, Any]) -> Mapping[str, Any]:
    """A ``positions`` place with each heading of its ``headings`` path capped (the same dict
    when none needs it).

    Example:
        >>> cap_place({"headings": ["Intro", "y" * 500]})["headings"][1][-3:]
        'yy…'
    """
    headings = place.get("headings") if isinstance(place, Mapping) else None
    if not isinstance(headings, (list, tuple)) or all(not isinstance(h, str) or len(h) <= MAX_TITLE_CHARS
                                                        for h in headings):
        return place
    return {**place, "headings": [cap_title(h) for h in headings]}


def cap_positions(positions: Iterable[tuple[int, Mapping[str, Any]]]) -> tuple[tuple[int, Any], ...]:
    """``positions`` with every heading capped (:func:`cap_place`)."""
    return tuple((offset, cap_place(place)) for offset, place in positions)


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


@dataclass(frozen=True)
class FileBounds:
    """The bounds ``max_file_mb`` sets on reading one file (see the module docstring).

    Args:
        max_file_mb: megabytes; None for no bound at all.
    """

    max_file_mb: float | None = DEFAULT_MAX_FILE_MB

    @property
    def file_bytes(self) -> int | None:
        """Largest file on disk, and the most a DOCX may unpack to."""
        return None if self.max_file_mb is None else int(self.max_file_mb * 1_000_000)

    @property
    def page_content_bytes(self) -> int | None:
        """Most drawing instructions one PDF page may hold."""
        return None if self.file_bytes is None else self.file_bytes // _PAGE_SHARE

    @property
    def content_bytes(self) -> int | None:
        """Most drawing instructions all the pages of a PDF may hold together."""
        return None if self.file_bytes is None else self.file_bytes * _CONTENT_TIMES

    @property
    def html_elements(self) -> int | None:
        """Most elements an HTML page may hold."""
        return None if self.max_file_mb is None else int(self.max_file_mb * HTML_ELEMENTS_PER_MB)

    def _refuse(self, what: str, where: str) -> InputError:
        return InputError(f"{_OVER} (--max-file-mb {self.max_file_mb:g}): {what}; raise --max-file-mb "
                          "(load_documents(max_file_mb=...)) if it is a real document", path=where)

    # -- DOCX ----------------------------------------------------------------------------------

    def check_zip(self, archive: zipfile.ZipFile, where: str) -> None:
        """Refuse a ZIP container (DOCX) whose entries declare more than :attr:`file_bytes` in
        all, or an entry over 1 MB inflating more than :data:`MAX_INFLATE_RATIO`-fold; reads only
        the ZIP directory.

        Raises:
            InputError: naming the file, the bound and what is over it.
        """
        if self.file_bytes is None:
            return
        total = 0
        infos = archive.infolist()
        for info in infos:
            total += info.file_size
            if info.file_size > _RATIO_GRACE_BYTES and info.file_size > MAX_INFLATE_RATIO * max(1, info.compress_size):
                ratio = info.file_size / max(1, info.compress_size)
                raise InputError(f"{_OVER}: ZIP entry {info.filename!r} would inflate {ratio:,.0f}-fold "
                                 f"({_mb(info.file_size)} from {info.compress_size / 1e3:,.0f} KB), over the "
                                 f"{MAX_INFLATE_RATIO}-fold bound on a document part (a compression bomb?)",
                                 path=where)
        if total > self.file_bytes:
            raise self._refuse(f"it unpacks to {_mb(total)} ({len(infos)} ZIP entries), over the "
                               f"{self.max_file_mb:g} MB a DOCX may unpack to", where)

    # -- PDF -----------------------------------------------------------------------------------

    def check_pdf(self, reader: Any, where: str) -> None:
        """Refuse a PDF (a ``pypdf.PdfReader``) whose pages hold more drawing instructions than
        :attr:`page_content_bytes` on one page or :attr:`content_bytes` on all of them, before
        any text is extracted; the streams are inflated (pypdf bounds that itself) but not parsed.

        Raises:
            InputError: naming the file, the page and the bound.
        """
        if self.file_bytes is None:
            return
        per_page, in_all = self.page_content_bytes, self.content_bytes
        total = 0
        sizes: dict[tuple[int, int], int] = {}  # a stream's decoded size, by its object number
        try:
            pages = list(reader.pages)
        except Exception:  # a damaged page tree: the text extraction meets it too, and says what it is
            return
        for number, page in enumerate(pages, start=1):
            try:
                size = _page_content(page, sizes)
            except Exception:  # likewise for a damaged page
                continue
            if size > per_page:
                raise self._refuse(f"page {number} holds {_mb(size)} of drawing instructions, over the "
                                   f"{_mb(per_page)} a page may hold (a tenth of the bound)", where)
            total += size
            if total > in_all:
                raise self._refuse(f"its pages hold more than {_mb(in_all)} of drawing instructions in all "
                                   f"(over 3 times the bound by page {number}; a stream several pages "
                                   "share counts for each)", where)

    # -- HTML ----------------------------------------------------------------------------------

    def check_html(self, data: bytes, where: str) -> None:
        """Refuse an HTML page of more than :attr:`html_elements` elements (counted from its start
        tags, before it is parsed).

        Raises:
            InputError: naming the file and the bound.
        """
        if self.html_elements is None:
            return
        elements = data.count(b"<") - data.count(b"</")  # start tags, comments and the like
        if elements > self.html_elements:
            raise self._refuse(f"about {elements:,} HTML elements, over the {self.html_elements:,} a page may "
                               f"hold ({HTML_ELEMENTS_PER_MB:,} per MB)", where)


def _stream_size(obj: Any, sizes: dict[tuple[int, int], int]) -> int:
    """The decoded length of a (possibly indirect) stream, once per stream."""
    key = (getattr(obj, "idnum", -1), getattr(obj, "generation", -1)) if hasattr(obj, "idnum") else None
    if key is not None and key in sizes:
        return sizes[key]
    stream = obj.get_object() if hasattr(obj, "get_object") else obj
    try:
        size = len(stream.get_data())
    except Exception:  # an undecodable stream: the extractor will fail on it and say so
        size = 0
    if key is not None:
        sizes[key] = size
    return size


def _page_content(page: Any, sizes: dict[tuple[int, int], int]) -> int:
    """Bytes of drawing instructions a page's text extraction reads: its content streams and the
    form XObjects it draws (forms inside forms too, each form once per page)."""
    from pypdf.generic import ArrayObject

    contents = page.get("/Contents")
    contents = contents.get_object() if contents is not None and hasattr(contents, "get_object") else contents
    streams = list(contents) if isinstance(contents, ArrayObject) else ([page.get("/Contents")] if contents is not None else [])
    total = sum(_stream_size(s, sizes) for s in streams if s is not None)
    seen: set[tuple[int, int]] = set()
    todo = [(page.get("/Resources"), 0)]
    while todo:
        resources, depth = todo.pop()
        resources = resources.get_object() if resources is not None and hasattr(resources, "get_object") else resources
        if not isinstance(resources, Mapping) or depth > _FORM_DEPTH:
            continue
        xobjects = resources.get("/XObject")
        xobjects = xobjects.get_object() if xobjects is not None and hasattr(xobjects, "get_object") else xobjects
        if not isinstance(xobjects, Mapping):
            continue
        for ref in xobjects.values():
            key = (getattr(ref, "idnum", id(ref)), getattr(ref, "generation", 0))
            if key in seen:
                continue
            seen.add(key)
            form = ref.get_object() if hasattr(ref, "get_object") else ref
            if not isinstance(form, Mapping) or form.get("/Subtype") != "/Form":
                continue
            total += _stream_size(ref, sizes)
            todo.append((form.get("/Resources"), depth + 1))
    return total
