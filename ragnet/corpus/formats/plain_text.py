"""Plain-text headings: the section path in force at each offset of a ``.txt`` manual.

Two layouts mark sections in plain text: numbered headings, and an indented outline.

A plain-text manual, a specification or an RFC numbers its headings as a PDF without an outline
does ("2.5 Memory management", "3.2.  Commands"), often underlined ("=====") or between form
feeds. The same rules find them (:func:`ragnet.corpus.formats.pdf_sections.numbered_headings`:
the numbers must advance, contents pages and table rows are not headings), with two more that
plain text needs, since nothing but the line itself marks a heading there:

* a heading line starts a block (the text's first line, or one after a blank line), so the
  second and later items of a numbered list are never headings;
* a text has sections only when at least :data:`MIN_HEADINGS` lines pass, so one numbered step
  after a blank line does not give a whole file one section;
* in an indented text a heading sits left of the body, so a man page's indented "1  Some files
  differ." (an exit status) is not a section.

Form feeds (``\\f``) separate pages, as they do in RFCs and printed text exports: each page's
running head and foot ("RFC 9999   Example Protocol   May 2026", "Doe   [Page 3]") leave the text
as they do a PDF's (:func:`ragnet.corpus.formats.pdf.running_line_indexes`), and chunks cite the
page ("p. 3"). :func:`text_structure` puts it all together.

A text without numbered headings may still be an outline: a man page saved as text (``man ssh
> ssh.txt``) sets its sections ("DESCRIPTION", "EXIT STATUS") at column 0 and its subsections at
column 3 over a body indented 7 (:func:`outline_heading_positions`). Such a page also prints a
running head and foot ("SSH(1)   General Commands Manual   SSH(1)"), which
:func:`man_page_parts` takes out, titling the page by its NAME line instead.

The result is ``Document.positions`` entries, ``(offset of the heading line, {"headings":
[...]})``, the shape Markdown's headings take (:mod:`ragnet.corpus.formats.markdown`), so
plain-text chunks carry a section path in prompts, search and citations as the other formats' do.

Example:
    >>> text = ("Example Protocol\\n\\n1.  Introduction\\n\\nIt moves files.\\n\\n"
    ...         "2.  Commands\\n\\n2.1.  GET\\n\\nFetches.")
    >>> [(offset, place["headings"]) for offset, place in numbered_heading_positions(text)]
    [(18, ['1 Introduction']), (53, ['2 Commands']), (67, ['2 Commands', '2.1 GET'])]
    >>> numbered_heading_positions("Steps:\\n\\n1. Download it\\n2. Unpack it\\n3. Run it")
    ()
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import accumulate
from typing import Any, Iterable

from ragnet.corpus.formats.pdf import running_line_indexes
from ragnet.corpus.formats.pdf_sections import numbered_heading_lines

__all__ = ["MIN_HEADINGS", "heading_positions", "man_page_parts", "numbered_heading_positions",
           "outline_heading_positions", "text_structure"]

#: Fewest heading lines for a plain text to count as sectioned.
MIN_HEADINGS = 2
# what a numbered line that does not start a block becomes for the heading search: not a heading
# (the prefix keeps the line, so a page's share of heading-like lines is judged as before)
_NOT_A_HEADING = "\u00b7 "
#: The share of a text's prose lines its body's indentation starts at least (the least such
#: column): an outline's headings sit left of it.
BODY_SHARE = 0.1
#: Fewest words of a prose line (a heading has fewer, or is rare beside them).
PROSE_WORDS = 5
#: Most words an outline heading has ("SSH-BASED VIRTUAL PRIVATE NETWORKS" has 4).
MAX_OUTLINE_WORDS = 10
_MAX_INDENT = 256  # leading whitespace read to measure a line's indentation
# spaced-out columns inside a line: a running head or foot, a table row; never a heading
_WIDE_GAP = re.compile(r"\S {4,}\S")
# a rendered man page's running head: "SSH(1)   General Commands Manual   SSH(1)"
_MAN_HEAD = re.compile(r"^([^\s()]+)\((\w+)\) {4,}.* {4,}\1\(\2\)$")
_MAN_HEAD_CHARS = 200  # a longer first line is not a man page's head (and the pattern backtracks on it)


def _block_starts_only(lines: list[str], body: int) -> str:
    """The page of ``lines`` (``splitlines(keepends=True)``) with every line that does not start
    a block, or sits in the body's indentation ``body`` when that is not column 0 (a man page's
    "1      Some files differ." under EXIT STATUS), prefixed so it cannot match a heading."""
    def heading_like(i: int, line: str) -> bool:
        at = _indent(line)
        return at is None or ((i == 0 or not lines[i - 1].strip()) and (not body or at < body))

    return "".join(line if heading_like(i, line) else _NOT_A_HEADING + line for i, line in enumerate(lines))


def numbered_heading_positions(text: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    """``(offset, {"headings": path})`` where each numbered section of ``text`` starts (at its
    heading line's first character), in text order; ``()`` when fewer than :data:`MIN_HEADINGS`
    are found."""
    pages = [page.splitlines(keepends=True) for page in text.split("\f")]
    body = _body_indent(line for lines in pages for line in lines)
    entries = numbered_heading_lines([_block_starts_only(lines, body) for lines in pages])
    if len(entries) < MIN_HEADINGS:
        return ()
    line_starts, at_text = {}, 0  # each line's offset in text, for the pages that have headings
    with_headings = {page for page, *_ in entries}
    for number, lines in enumerate(pages):
        if number in with_headings:
            line_starts[number] = list(accumulate(map(len, lines), initial=at_text))
        at_text += sum(map(len, lines)) + 1  # the form feed
    return _section_paths((line_starts[page][at] + _lead(pages[page][at]), level, title)
                          for page, at, level, title in entries)


def _lead(line: str) -> int:
    """Characters of ``line``'s leading whitespace: a heading's offset is its first character's."""
    return len(line) - len(line.lstrip())


def _section_paths(headings: Iterable[tuple[int, int, str]]) -> tuple[tuple[int, dict[str, Any]], ...]:
    """``(offset, {"headings": path})`` for ``(offset, level, title)`` headings in text order: each
    heading's path is the titles of the headings it sits under, and its own."""
    out: list[tuple[int, dict[str, Any]]] = []
    path: list[tuple[int, str]] = []
    for offset, level, title in headings:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        out.append((offset, {"headings": [t for _, t in path]}))
    return tuple(out)


def heading_positions(text: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    """The sections of a plain ``text``: its numbered headings, or else its indented outline's
    (``()`` when it has neither)."""
    return numbered_heading_positions(text) or outline_heading_positions(text)


def _body_indent(lines: Iterable[str]) -> int:
    """The body's indentation: the least column that starts :data:`BODY_SHARE` or more of the
    prose lines (:data:`PROSE_WORDS` words or more, no spaced-out columns)."""
    held = Counter(_indent(line) for line in lines
                   if len(line.split(None, PROSE_WORDS)) >= PROSE_WORDS and not _WIDE_GAP.search(line.strip()))
    return min((i for i, n in held.items() if n >= BODY_SHARE * sum(held.values())), default=0)


def _indent(line: str) -> int | None:
    """Columns of leading whitespace (tabs to 8; a run past :data:`_MAX_INDENT` characters
    counts as that many), ``None`` for a blank line."""
    lead = _lead(line)
    if lead == len(line):
        return None
    return len(line[:min(lead, _MAX_INDENT)].expandtabs())


def outline_heading_positions(text: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    """``(offset, {"headings": path})`` at each heading of an indented outline, ``()`` when
    ``text`` is not one.

    The body's indentation is the least column that starts :data:`BODY_SHARE` of the prose lines
    or more (0 for flush-left prose, which then has no outline). A heading is a line left of it that
    starts a block (or follows its parent heading), is followed by a deeper line, ends in no
    ``.``, ``,`` or ``;``, has at most :data:`MAX_OUTLINE_WORDS` words and no spaced-out columns;
    its level is its indentation's rank among the headings' (a man page: column 0, then 3). At
    least :data:`MIN_HEADINGS` are needed.

    Example:
        >>> body = "       It lists the files of a folder.\\n"
        >>> page = "NAME\\n" + body + "\\nDESCRIPTION\\n" + body + "\\n   Sorting\\n" + body
        >>> [place["headings"] for _, place in outline_heading_positions(page)]
        [['NAME'], ['DESCRIPTION'], ['DESCRIPTION', 'Sorting']]
    """
    lines = text.split("\n")
    indents = [_indent(line) for line in lines]
    body = _body_indent(lines)
    if not body:
        return ()
    found: list[tuple[int, int, str]] = []  # (line number, indentation, title)
    deeper = None  # the indentation of the next non-blank line, walking up from the end
    for n in range(len(lines) - 1, -1, -1):
        at = indents[n]
        if at is None:
            continue
        opens = n == 0 or indents[n - 1] is None or indents[n - 1] < at  # a block, or under its parent
        if at < body and deeper is not None and deeper > at and opens:
            title = " ".join(lines[n].split())
            if (title[-1] not in ".,;" and len(title.split()) <= MAX_OUTLINE_WORDS
                    and not _WIDE_GAP.search(lines[n].strip())):
                found.append((n, at, title))
        deeper = at
    if len(found) < MIN_HEADINGS:
        return ()
    levels = {at: rank for rank, at in enumerate(sorted({at for _, at, _ in found}), start=1)}
    starts = list(accumulate((len(line) + 1 for line in lines), initial=0))
    return _section_paths((starts[n] + _lead(lines[n]), levels[at], title) for n, at, title in reversed(found))


def man_page_parts(text: str) -> tuple[str, str | None]:
    """A rendered man page's text without its running head and foot, and its title from its NAME
    section ("ssh — OpenSSH remote login client"); ``(text, None)`` for any other text.

    The head is the first line, the page's name and section at both ends ("LS(1)   User
    Commands   LS(1)"); the foot is the last line when it is laid out in spaced columns too.

    Example:
        >>> page = "LS(1)     User Commands     LS(1)\\n\\nNAME\\n       ls - list\\n\\nGNU     2022     LS(1)\\n"
        >>> man_page_parts(page)
        ('\\n\\nNAME\\n       ls - list\\n\\n\\n', 'ls - list')
    """
    lines = text.split("\n")
    filled = [n for n, line in enumerate(lines) if line.strip()]
    head = lines[filled[0]].strip() if filled else ""
    if len(filled) < 3 or len(head) > _MAN_HEAD_CHARS or not _MAN_HEAD.match(head):
        return text, None
    lines[filled[0]] = ""
    if _WIDE_GAP.search(lines[filled[-1]].strip()):
        lines[filled[-1]] = ""
    title = None
    for n in filled[1:-1]:
        if lines[n].strip() == "NAME":
            title = next((" ".join(line.split()) for line in lines[n + 1:] if line.strip()), None)
            break
    return "\n".join(lines), title


Positions = tuple[tuple[int, dict[str, Any]], ...]


def text_structure(text: str) -> tuple[str, str | None, Positions]:
    """A plain ``text`` as ragnet indexes it: ``(text, title, positions)``.

    A saved man page loses its running head and foot and is titled by its NAME line
    (:func:`man_page_parts`; ``title`` is ``None`` for other texts); a text in pages (form feeds)
    loses each page's running lines, and its positions say each part's page; the section path
    comes from :func:`heading_positions`.

    Example:
        >>> pages = ["1  Files\\n\\nIt reads files.\\n", "It reads links.\\n", "2  Folders\\n\\nIt reads folders.\\n"]
        >>> paged = "\\f".join(f"{page}\\nDoe   [Page {n}]\\n" for n, page in enumerate(pages, start=1))
        >>> text, title, positions = text_structure(paged)
        >>> text.split("\\f")[1], title
        ('It reads links.\\n\\n', None)
        >>> [(text[at:at + 9], place) for at, place in positions]  # doctest: +NORMALIZE_WHITESPACE
        [('1  Files\\n', {'page': 1, 'headings': ['1 Files']}), ('It reads ', {'page': 2, 'headings': ['1 Files']}),
         ('2  Folder', {'page': 3, 'headings': ['2 Folders']})]
    """
    text, title = man_page_parts(text)
    text, page_starts = _without_running_lines(text)
    return text, title, _with_pages(heading_positions(text), page_starts)


def _without_running_lines(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without its pages' running lines, and ``(offset, page number)`` where each page
    with text starts (``[]`` for a text without form feeds)."""
    if "\f" not in text:
        return text, []
    pages = [page.split("\n") for page in text.split("\f")]
    kept = []
    for lines, drop in zip(pages, running_line_indexes(pages)):
        rest = "\n".join(line for i, line in enumerate(lines) if i not in drop)
        kept.append(rest if rest.strip() else "\n".join(lines))  # a page is never emptied (a title page)
    starts = accumulate((len(page) + 1 for page in kept), initial=0)
    return "\f".join(kept), [(at, n) for n, (at, page) in enumerate(zip(starts, kept), start=1) if page.strip()]


def _with_pages(headings: Positions, page_starts: list[tuple[int, int]]) -> Positions:
    """``headings`` positions merged with page starts: every place names its page and the
    section path in force."""
    if not page_starts:
        return headings
    events = sorted([(at, 0, n) for at, n in page_starts] + [(at, 1, place["headings"]) for at, place in headings],
                    key=lambda e: (e[0], e[1]))
    out: list[tuple[int, dict[str, Any]]] = []
    page, path = page_starts[0][1], None
    for at, kind, value in events:
        if kind == 0:
            page = value
        else:
            path = value
        place: dict[str, Any] = {"page": page, **({"headings": path} if path else {})}
        if out and out[-1][0] == at:
            out[-1] = (at, place)
        else:
            out.append((at, place))
    return tuple(out)
