"""Where a chunk came from: a document's ``location`` and ``positions`` mapped onto a chunk's span.

A :class:`~ragnet.corpus.types.Document` read from a file knows its file (``location``) and,
for formats with structure, the page or heading path of each part of its text
(``positions``: ``(offset, place)`` pairs). Chunking cuts the text into spans; this module
turns a span into the chunk's ``metadata["location"]``, a JSON-compatible dict holding only
the keys that are known:

* ``"file"``: the path relative to the folder indexed (the file name for a file named directly);
* ``"line"``: the 1-based line of a JSONL record;
* ``"page"``: the 1-based page where the chunk starts (PDF);
* ``"page_end"``: the page where it ends, only when that is a later page;
* ``"page_label"``, ``"page_label_end"``: the page numbers printed on those pages where they
  differ from the page's place in the file (a PDF's page labels: "iv", "16" on the 19th page);
* ``"headings"``: the heading path in force where the chunk starts, outermost first (HTML,
  DOCX, Markdown); absent before the first heading.

The heading path is taken where the chunk starts, not where most of its text is, so that a
citation points at a place the reader can find the chunk's first words under.

Example:
    >>> from ragnet.corpus.types import Document
    >>> doc = Document(id="r", title="", text="One.\\n\\nTwo.\\n\\nThree.", location={"file": "r.pdf"},
    ...                positions=((0, {"page": 1}), (6, {"page": 2}), (12, {"page": 3})))
    >>> Locator(doc).span(0, 10)
    {'file': 'r.pdf', 'page': 1, 'page_end': 2}
    >>> Locator(doc).span(12, 18)
    {'file': 'r.pdf', 'page': 3}
"""

from __future__ import annotations

import bisect
from pathlib import PurePosixPath
from typing import Any, Mapping

from ragnet.corpus.limits import cap_title
from ragnet.corpus.types import Document
from ragnet.errors import InputError

__all__ = ["Locator", "check_positions", "file_key", "section_title", "SECTION_SEPARATOR"]

#: Joins a section path's parts, in chunk titles and citations ("libtasn1 › 2 Usage › 2.5 Memory").
SECTION_SEPARATOR = " › "
#: Innermost headings a chunk title keeps after the document's title.
TITLE_HEADINGS = 2
_MAX_HEADING_CHARS = 80

_WHITESPACE = " \t\n\r\f\v"


def file_key(path: Any) -> str:
    """A location's ``file`` as places, scopes and citations compare it: forward slashes, no
    ``.`` parts.

    Example:
        >>> file_key("gnu\\sed.pdf"), file_key("./gnu//sed.pdf")
        ('gnu/sed.pdf', 'gnu/sed.pdf')
    """
    return str(PurePosixPath(str(path).replace("\\", "/")))


def check_positions(doc: Document) -> None:
    """Refuse a document whose ``location`` or ``positions`` cannot be mapped (wrong types, offsets
    out of order or outside the text), naming the document.

    Example:
        >>> check_positions(Document(id="d", title="", text="abc", positions=((5, {"page": 1}),)))
        Traceback (most recent call last):
        ...
        ragnet.errors.InputError: argument 'docs': document 'd': positions[0] has offset 5, outside its text of 3 characters
    """

    def fail(message: str) -> InputError:
        return InputError(f"document {doc.id!r}: {message}", argument="docs")

    if not isinstance(doc.location, Mapping):
        raise fail(f"location must be a dict, got {type(doc.location).__name__}")
    if not isinstance(doc.positions, (tuple, list)):
        raise fail(f"positions must be a tuple of (offset, dict) pairs, got {type(doc.positions).__name__}")
    previous = -1
    for i, item in enumerate(doc.positions):
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], Mapping)
                and isinstance(item[0], int) and not isinstance(item[0], bool)):
            raise fail(f"positions[{i}] must be an (offset, dict) pair, got {item!r:.80}")
        offset = item[0]
        if not 0 <= offset <= len(doc.text):
            raise fail(f"positions[{i}] has offset {offset}, outside its text of {len(doc.text)} characters")
        if offset < previous:
            raise fail(f"positions[{i}] has offset {offset}, before the previous one ({previous}); sort them")
        previous = offset


class Locator:
    """Maps character spans of one document's text to ``location`` dicts.

    Args:
        doc: the document; its ``positions`` are assumed valid (see :func:`check_positions`).
    """

    def __init__(self, doc: Document) -> None:
        self.text = doc.text
        self.base = dict(doc.location or {})
        self.offsets = [offset for offset, _ in doc.positions]
        self.places = [place for _, place in doc.positions]

    def __bool__(self) -> bool:
        return bool(self.base or self.offsets)

    def _place(self, offset: int) -> Mapping[str, Any]:
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.places[i] if i >= 0 else {}

    def span(self, start: int, end: int, at: int | None = None) -> dict[str, Any]:
        """The location of ``text[start:end]`` (leading and trailing whitespace ignored).

        Args:
            start, end: the span.
            at: the offset whose heading path names the span (default: where it starts); a
                chunk that opens with a bare heading line is named by the section after it.

        Returns:
            A new dict: the document's ``location`` plus ``page``/``page_end``/``headings``
            as known; empty when nothing is known.
        """
        while start < end - 1 and self.text[start] in _WHITESPACE:
            start += 1
        last = end - 1
        while last > start and self.text[last] in _WHITESPACE:
            last -= 1
        out = dict(self.base)
        if not self.offsets:
            return out
        first = self._place(start)
        page = first.get("page")
        if isinstance(page, int):
            out["page"] = page
            end = self._place(last)
            end_page = end.get("page")
            if isinstance(end_page, int) and end_page > page:
                out["page_end"] = end_page
            labels = [place.get("label") for place in (first, end if "page_end" in out else {})]
            if isinstance(labels[0], str):
                out["page_label"] = labels[0]
                if isinstance(labels[1], str):
                    out["page_label_end"] = labels[1]
        headings = (first if at is None else self._place(at)).get("headings")
        if headings:
            out["headings"] = [cap_title(h) for h in headings]  # copied into every chunk: capped
        return out


def section_title(doc_title: str, headings: Any) -> str:
    """A chunk's title: its document's title and the innermost :data:`TITLE_HEADINGS` headings of
    its section path, joined by :data:`SECTION_SEPARATOR` (a first heading that repeats the
    document's title is not shown twice). The document's title alone where no heading is known.

    Prompts, search and citations read this title: "Programming with libbzip2" on every chunk of
    a manual says nothing about where in it a chunk sits, its section does.

    Example:
        >>> section_title("GNU sed", ["3 sed scripts", "3.2 Commands", "3.2.1 Common commands"])
        'GNU sed › 3.2 Commands › 3.2.1 Common commands'
        >>> section_title("Ninja", ["Ninja", "Variables"]), section_title("Paris", None)
        ('Ninja › Variables', 'Paris')
    """
    if not isinstance(headings, (list, tuple)):
        return doc_title
    path = [" ".join(str(h).split()) for h in headings]
    path = [h if len(h) <= _MAX_HEADING_CHARS else h[:_MAX_HEADING_CHARS - 1].rstrip() + "…" for h in path if h]
    if path and doc_title and path[0].casefold() == " ".join(doc_title.split()).casefold():
        path = path[1:]
    parts = ([doc_title] if doc_title else []) + path[-TITLE_HEADINGS:]
    return SECTION_SEPARATOR.join(parts) if parts else doc_title
