"""Where a PDF's sections start: its outline (bookmarks), else its numbered heading lines, else
the lines it sets larger than its body text.

A manual's chunks, prompts and citations should say where they are ("2.5 Memory management,
p. 8"), not repeat the document's title. A PDF that carries an outline names its sections and
the page each starts on (:func:`outline_entries`); the heading's own line is then looked up on
that page, so a section that starts mid-page starts at its heading. A PDF without an outline
often still numbers its headings ("2.5. MEMORY MANAGEMENT"): :func:`numbered_headings` takes
those lines, skipping table-of-contents pages and numbers that do not advance (a numbered list
item inside a section). A PDF with neither (a report with plain "Installation" headings) still
sets its headings larger than its body text: :func:`type_size_headings` takes short lines at
least :data:`LARGER_THAN_BODY` times the body's size. :func:`section_marks` turns any of these
into ``(offset, heading path)`` marks per page, which the reader records as the document's
positions.

Both walks are iterative (a crafted outline cannot exhaust the stack), and both are bounded:
at most :data:`MAX_SECTIONS` sections, each title cut to :data:`MAX_TITLE_CHARS`.

Example:
    >>> pages = ["Contents\\n1 Intro 1\\n2 Usage 2", "1 Intro\\nThis library parses.", "2 Usage\\n2.1 Setup\\nCall init."]
    >>> numbered_headings(pages)
    [(1, 1, '1 Intro'), (2, 1, '2 Usage'), (2, 2, '2.1 Setup')]
    >>> section_marks(pages, numbered_headings(pages))[2]
    [(0, ['2 Usage']), (8, ['2 Usage', '2.1 Setup'])]
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

__all__ = ["LARGER_THAN_BODY", "MAX_SECTIONS", "MAX_TITLE_CHARS", "numbered_heading_lines", "numbered_headings",
           "outline_entries", "section_marks", "type_size_headings"]

#: Most sections read from one PDF (an outline or numbered headings beyond it are ignored).
MAX_SECTIONS = 5000
#: Longest section title kept; a longer one is cut at a word.
MAX_TITLE_CHARS = 160

# "2.5 Memory management", "2.5. MEMORY MANAGEMENT", "3 Sorting", "Appendix A Copying", "A.1 Licence",
# "7.2 d_type Optimisation", "2.1 'find' Expressions": a number of one to four parts (an appendix letter
# first), then a title that starts with a letter or a quote, on a line of its own
_NUMBERED = re.compile(r"^(Appendix[ \t]+[A-Z]|[A-Z](?:\.\d{1,2}){1,3}|\d{1,2}(?:\.\d{1,2}){0,3})\.?[ \t]+"
                       r"([A-Za-z'‘’\"“`(][^\n]{0,98})$")
_APPENDIX = 100  # appendix letters number after every chapter: A is 100, B 101, ...
_TOC_LINE = re.compile(r"(?:\.\s*){3,}\d*$|\s\d{1,4}$")  # dot leaders or a trailing page number
_DOT_LEADERS = re.compile(r"(?:\.\s*){3,}\d*$")
_MAX_HEADING_WORDS = 12
#: How much larger than the body text a line must be set to be a heading, for a PDF with neither an
#: outline nor numbered headings (a 12-point heading over 10-point text is 1.2).
LARGER_THAN_BODY = 1.15
_TYPE_LEVELS = 4  # heading sizes told apart; smaller ones share the last level
_RUNNING = 3  # a "heading" printed on this many pages is a running head


def _title(text: Any) -> str:
    title = " ".join(str(text).split())
    if len(title) > MAX_TITLE_CHARS:
        title = title[:MAX_TITLE_CHARS].rsplit(" ", 1)[0] + "…"
    return title


def outline_entries(reader: Any) -> list[tuple[int, int, str]]:
    """``(page index, level, title)`` of each outline entry of a ``pypdf.PdfReader``, in outline
    order (level 1 = top); ``[]`` when the PDF has no outline or it cannot be read. Entries whose
    page cannot be resolved are left out.

    Example:
        >>> outline_entries(None)
        []
    """
    try:
        outline = reader.outline
    except Exception:  # a damaged or absent outline is no reason to refuse the text
        return []
    out: list[tuple[int, int, str]] = []
    stack: list[tuple[list, int, int]] = [(list(outline or []), 0, 1)]
    while stack and len(out) < MAX_SECTIONS:
        items, i, level = stack.pop()
        if i >= len(items):
            continue
        stack.append((items, i + 1, level))
        item = items[i]
        if isinstance(item, list):  # the children of the entry before it
            if len(stack) < 64:
                stack.append((item, 0, level + 1))
            continue
        try:
            page = reader.get_destination_page_number(item)
            title = _title(getattr(item, "title", "") or "")
        except Exception:
            continue
        if isinstance(page, int) and page >= 0 and title:
            out.append((page, level, title))
    return out


def _number(text: str) -> tuple[int, ...]:
    """``"2.5"`` -> ``(2, 5)``; an appendix letter counts after every chapter (``"A.1"`` -> ``(100, 1)``)."""
    parts = text.replace("Appendix", "").split(".")
    head = parts[0].strip()
    first = _APPENDIX + ord(head) - ord("A") if head.isalpha() else int(head)
    return (first, *(int(part) for part in parts[1:]))


def _follows(number: tuple[int, ...], last: tuple[int, ...]) -> bool:
    """Whether a heading numbered ``number`` can come next after ``last``: its first subsection
    (``2.5`` -> ``2.5.1``), or a later sibling of ``last`` or of one of its parents, the next
    chapter or at most two sections on (``2.5`` -> ``2.6``, ``2.7``, ``3``, ``3.1``), the first
    appendix after any chapter."""
    if not last:
        return number[0] <= 5 or number[0] == _APPENDIX
    if number[:len(last)] == last and len(number) > len(last):
        return all(part == 1 for part in number[len(last):])
    if number[0] == _APPENDIX and last[0] < _APPENDIX:
        return all(part == 1 for part in number[1:])
    for j in range(min(len(last), len(number))):
        if number[:j] == last[:j] and last[j] < number[j] <= last[j] + (1 if j == 0 else 2):
            return all(part == 1 for part in number[j + 1:])
    return False


def numbered_headings(pages: list[str]) -> list[tuple[int, int, str]]:
    """``(page index, level, title)`` of the numbered heading lines of ``pages`` (level = the
    number's parts: "2.5" is level 2), for a PDF without an outline.

    A heading line is a number and a title of at most a dozen words that does not end like a
    sentence (a chapter's title, of one number, starts with a capital or a quote). Lines ending in a page number or dot leaders (a table of contents) are not
    headings, nor is a page where most lines look like headings, nor a line whose neighbour
    starts with the same number (rows of a table); a number that does not follow the last
    heading's (a numbered list inside a section, a stray number) is skipped.

    Example:
        >>> numbered_headings(["1 Scope\\nThe rules.\\n1. Read them.", "2 Terms\\n2.1 Keys\\nA key is."])
        [(0, 1, '1 Scope'), (1, 1, '2 Terms'), (1, 2, '2.1 Keys')]
    """
    return [(page, level, title) for page, _, level, title in numbered_heading_lines(pages)]


def numbered_heading_lines(pages: list[str]) -> list[tuple[int, int, int, str]]:
    """:func:`numbered_headings` with where each heading is: ``(page index, line index, level,
    title)``, the line index counting the page's ``str.splitlines()``.

    Example:
        >>> numbered_heading_lines(["Intro\\n\\n1 Scope\\nThe rules."])
        [(0, 2, 1, '1 Scope')]
    """
    out: list[tuple[int, int, int, str]] = []
    last: tuple[int, ...] = ()
    for page_no, page in enumerate(pages):
        kept = [(at, line.strip()) for at, line in enumerate(page.splitlines()) if line.strip()]
        lines = [line for _, line in kept]
        found = []
        for i, line in enumerate(lines):
            m = _NUMBERED.match(line)
            if not m:
                continue
            title, lead = m.group(2), line.split(None, 1)[0]
            if title[0].islower() and "." not in m.group(1):
                continue  # "3 modify (change the file's contents)": a list item; a chapter title is capitalised
            if (title[-1] in ".,;:" or len(title.split()) > _MAX_HEADING_WORDS or _TOC_LINE.search(line)
                    or not any(ch.isalpha() for ch in title)
                    or any(0 <= j < len(lines) and lines[j].split(None, 1)[0] == lead for j in (i - 1, i + 1))):
                continue
            found.append((_number(m.group(1)), kept[i][0], f"{m.group(1).rstrip('.')} {title}"))
        if len(found) >= 8 and len(found) * 2 > len(lines):  # a table of contents or an index
            continue
        for number, at, title in found:
            if _follows(number, last):
                out.append((page_no, at, len(number), _title(title)))
                last = number
                if len(out) >= MAX_SECTIONS:
                    return out
    return out


def type_size_headings(page_lines: list[list[tuple[str, float]]]) -> list[tuple[int, int, str]]:
    """``(page index, level, title)`` of the lines set larger than the body text, for a PDF with
    neither an outline nor numbered headings; ``page_lines`` is each page's ``(line, type size)``.

    The body's size is the one most characters are set in. A heading is a line at least
    :data:`LARGER_THAN_BODY` times that, of at most a dozen words with a letter, that does not
    end like a sentence or a contents line and is not printed on three pages or more (a running
    head); the largest size is level 1. A size found once, above every other heading's, is the
    document's title, not a section. At least two headings are needed.

    Example:
        >>> body = [("The tool copies files between hosts.", 10.0)] * 4
        >>> pages = [[("Widget Manual", 20.0), ("Installation", 14.0), *body],
        ...          [("Configuration", 14.0), ("Ports", 12.0), *body]]
        >>> type_size_headings(pages)
        [(0, 1, 'Installation'), (1, 1, 'Configuration'), (1, 2, 'Ports')]
    """
    chars: Counter[float] = Counter()
    for lines in page_lines:
        for text, size in lines:
            chars[_half_points(size)] += len(text.strip())
    body = max(chars, key=chars.__getitem__, default=0.0)
    if body <= 0:
        return []
    found = [(page, _half_points(size), _title(text)) for page, lines in enumerate(page_lines)
             for text, size in lines if size >= LARGER_THAN_BODY * body and _heading_like(" ".join(text.split()))]
    pages_of: dict[str, set[int]] = {}
    for page, _, title in found:
        pages_of.setdefault(title, set()).add(page)
    found = [f for f in found if len(pages_of[f[2]]) < _RUNNING]
    sizes = sorted({size for _, size, _ in found}, reverse=True)
    if len(sizes) > 1 and sum(size == sizes[0] for _, size, _ in found) == 1:
        found = [f for f in found if f[1] != sizes[0]]  # the title
        sizes = sizes[1:]
    if len(found) < 2:
        return []
    level = {size: min(rank, _TYPE_LEVELS) for rank, size in enumerate(sizes, start=1)}
    return [(page, level[size], title) for page, size, title in found][:MAX_SECTIONS]


def _half_points(size: float) -> float:
    """A type size to the nearest half point: sizes a PDF's scaling leaves a hair apart are one."""
    return round(size * 2) / 2


def _heading_like(line: str) -> bool:
    """A short line with a letter that does not end like a sentence or a contents line."""
    return (0 < len(line.split()) <= _MAX_HEADING_WORDS and any(c.isalpha() for c in line)
            and line[-1] not in ".,;" and not _DOT_LEADERS.search(line))


def _find(title: str, text: str, start: int) -> tuple[int, int]:
    """Where ``title`` is printed in ``text`` at or after ``start`` (words in order, case and
    punctuation aside): the offset of its line and the end of the match; ``(-1, start)`` when
    it is not there."""
    words = re.findall(r"\w+", title)
    if not words:
        return -1, start
    pattern = re.compile(r"\W*".join(re.escape(w) for w in words[:12]), re.IGNORECASE)
    m = pattern.search(text, start)
    if m is None:
        return -1, start
    return text.rfind("\n", 0, m.start()) + 1, m.end()


def section_marks(pages: list[str], entries: list[tuple[int, int, str]]) -> list[list[tuple[int, list[str]]]]:
    """Per page, the ``(offset in the page's text, heading path)`` where a section starts, the
    page's own start first (the path in force there; ``[]`` before the first section).

    A section starts at its heading's line when the title is found on its page (after the
    previous section's start), else at the start of its page.

    Example:
        >>> section_marks(["Intro text.", "More.\\nUsage\\nRun it."], [(1, 1, "Usage")])
        [[(0, [])], [(0, []), (6, ['Usage'])]]
    """
    by_page: dict[int, list[tuple[int, str]]] = {}
    for page, level, title in entries:
        if 0 <= page < len(pages):
            by_page.setdefault(page, []).append((level, title))
    path: list[tuple[int, str]] = []
    out: list[list[tuple[int, list[str]]]] = []
    for page_no, text in enumerate(pages):
        marks = [(0, [t for _, t in path])]
        cursor = 0
        for level, title in by_page.get(page_no, []):
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, title))
            at, after = _find(title, text, cursor)
            at = marks[-1][0] if at < 0 else at
            cursor = after
            heads = [t for _, t in path]
            if marks[-1][0] == at:
                marks[-1] = (at, heads)
            else:
                marks.append((at, heads))
        out.append(marks)
    return out
