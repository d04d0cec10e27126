"""Plain-text headings: the section path in force at each offset of a ``.txt`` manual.

A plain-text manual, a specification or an RFC numbers its headings as a PDF without an outline
does ("2.5 Memory management", "3.2.  Commands"), often underlined ("=====") or between form
feeds. The same rules find them (:func:`ragnet.corpus.formats.pdf_sections.numbered_headings`:
the numbers must advance, contents pages and table rows are not headings), with two more that
plain text needs, since nothing but the line itself marks a heading there:

* a heading line starts a block (the text's first line, or one after a blank line), so the
  second and later items of a numbered list are never headings;
* a text has sections only when at least :data:`MIN_HEADINGS` lines pass, so one numbered step
  after a blank line does not give a whole file one section.

Form feeds (``\\f``) separate pages, as they do in RFCs and printed text exports. The result is
``Document.positions`` entries, ``(offset of the heading line, {"headings": [...]})``, the
shape Markdown's headings take (:mod:`ragnet.corpus.formats.markdown`), so plain-text chunks
carry a section path in prompts, search and citations as the other formats' do.

Example:
    >>> text = ("Example Protocol\\n\\n1.  Introduction\\n\\nIt moves files.\\n\\n"
    ...         "2.  Commands\\n\\n2.1.  GET\\n\\nFetches.")
    >>> [(offset, place["headings"]) for offset, place in numbered_heading_positions(text)]
    [(18, ['1 Introduction']), (53, ['2 Commands']), (67, ['2 Commands', '2.1 GET'])]
    >>> numbered_heading_positions("Steps:\\n\\n1. Download it\\n2. Unpack it\\n3. Run it")
    ()
"""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from ragnet.corpus.formats.pdf_sections import numbered_heading_lines

__all__ = ["MIN_HEADINGS", "numbered_heading_positions"]

#: Fewest heading lines for a plain text to count as sectioned.
MIN_HEADINGS = 2
# what a numbered line that does not start a block becomes for the heading search: not a heading
# (the prefix keeps the line, so a page's share of heading-like lines is judged as before)
_NOT_A_HEADING = "\u00b7 "


def _block_starts_only(lines: list[str]) -> str:
    """The page of ``lines`` (``splitlines(keepends=True)``) with every line that does not start
    a block prefixed so it cannot match a heading."""
    return "".join(line if i == 0 or not lines[i - 1].strip() or not line.strip() else _NOT_A_HEADING + line
                   for i, line in enumerate(lines))


def numbered_heading_positions(text: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    """``(offset, {"headings": path})`` where each numbered section of ``text`` starts (at its
    heading line's first character), in text order; ``()`` when fewer than :data:`MIN_HEADINGS`
    are found."""
    pages = [page.splitlines(keepends=True) for page in text.split("\f")]
    entries = numbered_heading_lines([_block_starts_only(lines) for lines in pages])
    if len(entries) < MIN_HEADINGS:
        return ()
    line_starts, at_text = {}, 0  # each line's offset in text, for the pages that have headings
    with_headings = {page for page, *_ in entries}
    for number, lines in enumerate(pages):
        if number in with_headings:
            line_starts[number] = list(accumulate(map(len, lines), initial=at_text))
        at_text += sum(map(len, lines)) + 1  # the form feed
    out: list[tuple[int, dict[str, Any]]] = []
    path: list[tuple[int, str]] = []
    for page, at, level, title in entries:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        line = pages[page][at]
        out.append((line_starts[page][at] + len(line) - len(line.lstrip()), {"headings": [t for _, t in path]}))
    return tuple(out)
