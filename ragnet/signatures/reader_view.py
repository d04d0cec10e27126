"""What the answer step's reader reads of a chunk from a document with sections.

A chunk of a manual is titled by its section path (``"GNU sed › 3.2 Commands"``) and its text holds the
manual's own heading lines (``"16.4 Options for Scanner Speed and Size"``). Both serve search and
citations, but handed to a small reader as text they are answers waiting to be taken: on manuals kept out of
development the 1.5B answered "7.7" or a whole heading path while the sentence stating the value was in
front of it. So the reader sees such a chunk under its document's title only, and a heading line without
its multi-level section number; the chunk itself (title, text, location) is unchanged for everything else.

Chunks without a heading path (a JSONL record, a Wikipedia paragraph) are shown exactly as they are.

Example:
    >>> from ragnet import Chunk
    >>> chunk = Chunk(id="f#3", doc_id="f", title="Flex › 16 Scanner Options", tokens=9,
    ...               text="16.4 Options for Scanner Speed and Size\\n'-C' compresses the tables.",
    ...               metadata={"location": {"file": "flex.pdf", "headings": ["16 Scanner Options"]}})
    >>> shown = reader_view([chunk])[0]
    >>> shown["title"], shown["text"]
    ('Flex', "Options for Scanner Speed and Size\\n'-C' compresses the tables.")
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ragnet.corpus.locations import SECTION_SEPARATOR

__all__ = ["reader_text", "reader_title", "reader_view"]

# A heading line's number: two or more levels ("16.4 ", "5.9.1. "), then a heading's first word, on a
# short line that does not end like a sentence. One level ("4096 Display ...", a table row; "9 UUCP lock
# files must ...", a footnote) is left alone: it is too often a value.
_SECTION_NUMBER = re.compile(
    r"^[ \t]*\d+(?:\.\d+)+\.?[ \t]+(?=[A-Z/'\u2018\"(_-]|[a-z]\w*\W)(?=[^\n]{0,90}$)(?![^\n]*[.:;]$)([^\n]*)$",
    re.M)


def reader_title(title: str) -> str:
    """The document's part of a chunk title: what comes before its section path.

    Example:
        >>> reader_title("GNU sed › 3.2 Commands › 3.2.1 Common commands"), reader_title("Paris")
        ('GNU sed', 'Paris')
    """
    return str(title or "").split(SECTION_SEPARATOR, 1)[0]


def reader_text(text: str) -> str:
    """``text`` with each heading line's multi-level section number left out.

    Example:
        >>> reader_text("5.9.1. Purpose\\nLock files are stored here.\\n1.2.3 release was made in 2004.")
        'Purpose\\nLock files are stored here.\\n1.2.3 release was made in 2004.'
    """
    return _SECTION_NUMBER.sub(r"\1", str(text or ""))


def _field(chunk: Any, name: str) -> Any:
    return chunk.get(name, "") if isinstance(chunk, dict) else getattr(chunk, name, "")


def _has_heading_path(chunk: Any) -> bool:
    """Whether ``chunk`` (a ``Chunk``, or a dict with ``metadata.location.headings``) sits in a section."""
    if not isinstance(chunk, dict):
        return bool(getattr(chunk, "headings", ()))
    location = (chunk.get("metadata") or {}).get("location") if isinstance(chunk.get("metadata"), dict) else None
    return isinstance(location, dict) and bool(location.get("headings"))


def reader_view(chunks: Iterable[Any]) -> list[Any]:
    """``chunks`` as the reader reads them: a chunk with a heading path becomes ``{"id", "title", "text"}``
    with :func:`reader_title` and :func:`reader_text`; any other chunk is returned as it is."""
    return [{"id": _field(c, "id"), "title": reader_title(_field(c, "title")), "text": reader_text(_field(c, "text"))}
            if _has_heading_path(c) else c for c in chunks]
