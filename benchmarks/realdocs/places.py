"""The text of a place in the built folder, as ragnet reads it: a PDF page, a section, a found quote.

Shared by the checker and by the ``show`` command used to read the documents while writing
questions. A place is a PDF page (``{"page": n}``) or a heading path (``{"section": [...]}``,
outermost first, as :class:`ragnet.corpus.locations.Locator` reports ``headings``).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Iterator

__all__ = ["load", "normalise", "find_all", "page_text", "section_text", "sections", "place_of"]

_NUMBER_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def load(folder: Path) -> dict:
    """The folder's documents by their file (relative path), read by ``ragnet.load_documents``."""
    import ragnet

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        docs = ragnet.load_documents(Path(folder))
    return {doc.location.get("file", doc.id): doc for doc in docs}


def normalise(text: str) -> str:
    """Lower case, whitespace runs as one space, ``1,024`` as ``1024``, trimmed."""
    return " ".join(_NUMBER_COMMA.sub("", text).lower().split())


def _normalised_with_map(text: str) -> tuple[str, list[int]]:
    """:func:`normalise` of ``text`` (without the number rule) and, per output character, its offset in ``text``."""
    out: list[str] = []
    where: list[int] = []
    space = True  # drop leading whitespace
    for i, ch in enumerate(text):
        if ch.isspace():
            if not space:
                out.append(" ")
                where.append(i)
            space = True
            continue
        space = False
        for low in ch.lower():
            out.append(low)
            where.append(i)
    return "".join(out), where


def find_all(text: str, quote: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` offsets in ``text`` of every occurrence of ``quote``, compared with
    whitespace and case normalised."""
    hay, where = _normalised_with_map(text)
    needle = " ".join(quote.lower().split())
    if not needle:
        return
    at = hay.find(needle)
    while at >= 0:
        yield where[at], where[at + len(needle) - 1] + 1
        at = hay.find(needle, at + 1)


def place_of(doc, start: int, end: int) -> dict:
    """The Locator's place of ``doc.text[start:end]``: ``file``, ``page``, ``page_end``, ``headings``."""
    from ragnet.corpus.locations import Locator

    return Locator(doc).span(start, end)


def _spans(doc, keep) -> list[tuple[int, int]]:
    """The spans of ``doc.text`` whose position's place satisfies ``keep``."""
    bounds = [offset for offset, _ in doc.positions] + [len(doc.text)]
    return [(bounds[i], bounds[i + 1]) for i, (_, place) in enumerate(doc.positions) if keep(place)]


def page_text(doc, page: int) -> str:
    """The text of one PDF page (1-based), as ragnet reads it."""
    return "".join(doc.text[s:e] for s, e in _spans(doc, lambda place: place.get("page") == page)).strip()


def section_text(doc, section: list[str]) -> str:
    """The text under exactly this heading path (not its subsections)."""
    return "".join(doc.text[s:e] for s, e in _spans(doc, lambda place: place.get("headings") == section)).strip()


def sections(doc) -> list[list[str]]:
    """The document's heading paths in reading order, each once."""
    seen: list[list[str]] = []
    for _, place in doc.positions:
        path = place.get("headings")
        if path and path not in seen:
            seen.append(list(path))
    return seen
