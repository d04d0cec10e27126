"""DOCX files: paragraphs and tables in order, with the heading path from the paragraph styles.

Read with ``python-docx``. Each non-empty paragraph is one paragraph of the text; a table gives
one line per row (cells joined by ``" | "``, a merged cell once), as one paragraph. Paragraphs
styled ``Title`` and ``Heading 1``..``Heading 9`` (or any style based on one of them) set the
heading path (``Title`` outermost), recorded in ``positions`` for the blocks that follow. Title,
author and creation date (``date``) come from the core properties; the title falls
back to the first ``Title``-styled paragraph.

Refused, one line naming the file: not a ZIP file (a ``.doc`` renamed, a truncated download),
a ZIP without ``word/document.xml``, an unparsable document part, or a document with no text.

Example:
    >>> import docx, io  # doctest: +SKIP
    >>> d = docx.Document(); _ = d.add_heading("Budget", 1); _ = d.add_paragraph("Costs rose.")  # doctest: +SKIP
    >>> buf = io.BytesIO(); d.save(buf)  # doctest: +SKIP
    >>> read_docx(buf.getvalue(), "budget.docx").positions  # doctest: +SKIP
    ((0, {'headings': ['Budget']}),)
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from ragnet.corpus.formats import Extracted, TextBuilder, date_metadata, require_reader
from ragnet.errors import InputError

__all__ = ["read_docx"]

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
_WS = re.compile(r"\s+")
# the core properties python-docx's own blank template carries: not the author's, so not kept
_TEMPLATE_AUTHOR = "python-docx"


def _check_container(data: bytes, where: str) -> None:
    if not data.startswith(b"PK"):
        hint = " (an old binary .doc renamed? save it as .docx)" if data.startswith(b"\xd0\xcf\x11\xe0") else ""
        raise InputError(f"not a DOCX file: not a ZIP archive{hint}", path=where)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            bad = archive.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as exc:
        raise InputError(f"truncated or damaged DOCX (the ZIP archive cannot be read: {exc})", path=where) from None
    except Exception as exc:  # a corrupt member can fail decompression in other ways
        raise InputError(f"truncated or damaged DOCX ({type(exc).__name__}: {exc})", path=where) from None
    if bad is not None:
        raise InputError(f"truncated or damaged DOCX (member {bad!r} fails its CRC check)", path=where)
    if "word/document.xml" not in names and "[Content_Types].xml" not in names:
        raise InputError("not a DOCX file: a ZIP archive without word/document.xml", path=where)


def _heading_level(paragraph: Any) -> int | None:
    """0 for ``Title``, n for ``Heading n`` (or a style based on one), None for body text."""
    style = paragraph.style
    for _ in range(5):  # follow base styles a few steps: custom heading styles derive from them
        if style is None:
            return None
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        m = _HEADING_STYLE.match(name)
        if m:
            return int(m.group(1))
        style = style.base_style
    return None


def _row_text(row: Any) -> str:
    cells: list[str] = []
    seen: set[int] = set()
    for cell in row.cells:
        key = id(cell._tc)
        if key in seen:  # a merged cell is listed once per grid column it spans
            continue
        seen.add(key)
        text = _WS.sub(" ", cell.text).strip()
        if text:
            cells.append(text)
    return " | ".join(cells)


def read_docx(data: bytes, where: str) -> Extracted:
    """The paragraphs and tables of a DOCX file, with heading-path positions, title and date.

    Raises:
        InputError: not a DOCX file, damaged, no text, or ``python-docx`` is missing.
    """
    _check_container(data, where)
    docx = require_reader("docx", where)
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # PackageNotFoundError, KeyError, XML syntax errors...
        detail = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise InputError(f"not a readable DOCX file ({detail})", path=where) from None
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    builder = TextBuilder()
    headings: list[tuple[int, str]] = []
    first_title = ""

    def place() -> dict[str, Any]:
        return {"headings": [text for _, text in headings]} if headings else {}

    try:
        for block in document.iter_inner_content():
            if isinstance(block, Paragraph):
                text = _WS.sub(" ", block.text).strip()
                if not text:
                    continue
                level = _heading_level(block)
                if level is not None:
                    while headings and headings[-1][0] >= level:
                        headings.pop()
                    headings.append((level, text))
                    if level == 0 and not first_title:
                        first_title = text
                builder.add(block.text, place())
            elif isinstance(block, Table):
                rows = [_row_text(row) for row in block.rows]
                builder.add("\n".join(r for r in rows if r), place())
    except Exception as exc:
        detail = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise InputError(f"malformed DOCX, python-docx cannot read its body ({detail})", path=where) from None
    if not len(builder):
        raise InputError("no text in this DOCX file (no paragraph or table cell has text)", path=where)

    props = document.core_properties
    meta: dict[str, Any] = {}
    author = (props.author or "").strip()
    if author != _TEMPLATE_AUTHOR:  # a file python-docx wrote from its blank template: its dates are the template's
        if author:
            meta["author"] = author
        meta.update(date_metadata(props.created))
    title = _WS.sub(" ", props.title or "").strip() or first_title
    positions = tuple((offset, p) for offset, p in builder.positions() if p)
    return Extracted(text=builder.text(), title=title, metadata=meta, positions=positions)
