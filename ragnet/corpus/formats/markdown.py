"""Markdown headings: the heading path in force at each offset of a Markdown text.

Markdown is read as text by the loader; this module only finds its ATX (``## Scope``) and
setext (a line underlined with ``===`` or ``---``) headings, outside fenced code blocks, and
returns them as ``Document.positions`` entries, ``(offset of the heading line, {"headings":
[...]})``, so Markdown chunks carry a heading path like HTML and DOCX ones. No third-party
package is needed.

Example:
    >>> text = "# Guide\\n\\nIntro.\\n\\n## Install\\n\\nRun pip.\\n\\n# Notes\\n"
    >>> heading_positions(text)
    ((0, {'headings': ['Guide']}), (17, {'headings': ['Guide', 'Install']}), (39, {'headings': ['Notes']}))
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["heading_positions", "strip_inline_data", "ATX_HEADING", "SETEXT_UNDERLINE"]

#: An ATX heading line; group 1 is the hashes, group 2 the text.
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
#: A setext underline: ``===`` (level 1) or ``---`` (level 2).
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = ("```", "~~~")
# a data: URI carrying base64 bytes (an inline image), long enough not to be prose
_INLINE_DATA = re.compile(r"(data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,)[A-Za-z0-9+/]{64,}={0,2}")


def strip_inline_data(text: str) -> str:
    """``text`` with the base64 payload of each ``data:`` URI (an image pasted into a note) left
    out: hundreds of kilobytes that are not text, and that chunking would cut into hundreds of
    chunks of noise. The URI's type stays, followed by "…".

    Example:
        >>> strip_inline_data("See ![chart](data:image/png;base64," + "iVBORw0K" * 20 + ") above.")
        'See ![chart](data:image/png;base64,…) above.'
    """
    if "base64," not in text:
        return text
    return _INLINE_DATA.sub(lambda m: m.group(1) + "…", text)


def heading_positions(text: str) -> tuple[tuple[int, dict[str, Any]], ...]:
    """``(offset, {"headings": path})`` at each heading of a Markdown ``text`` (``\\n`` line ends).

    A setext heading counts only when its text is a one-line paragraph (a blank line or the
    start of the text before it), so a ``---`` rule under a list is not taken for one.
    """
    lines = text.split("\n")
    offsets = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    out: list[tuple[int, dict[str, Any]]] = []
    path: list[tuple[int, str]] = []
    in_code = False

    def enter(level: int, title: str, offset: int) -> None:
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        out.append((offset, {"headings": [t for _, t in path]}))

    for i, line in enumerate(lines):
        if line.lstrip().startswith(_FENCE):
            in_code = not in_code
            continue
        if in_code:
            continue
        m = ATX_HEADING.match(line)
        if m:
            enter(len(m.group(1)), m.group(2).strip(), offsets[i])
            continue
        if (line.strip() and i + 1 < len(lines) and SETEXT_UNDERLINE.match(lines[i + 1])
                and (i == 0 or not lines[i - 1].strip()) and not SETEXT_UNDERLINE.match(line)):
            enter(1 if lines[i + 1].strip().startswith("=") else 2, line.strip(), offsets[i])
    return tuple(out)
