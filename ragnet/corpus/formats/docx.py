"""DOCX files: paragraphs and tables in order, with the heading path from the paragraph styles.

Read with ``python-docx``. Each non-empty paragraph is one paragraph of the text; a table gives
one line per row (cells joined by ``" | "``, a merged cell once), as one paragraph. Paragraphs
styled ``Title`` and ``Heading 1``..``Heading 9`` (or any style based on one of them) set the
heading path (``Title`` outermost), recorded in ``positions`` for the blocks that follow. Title,
author and creation date (``date``) come from the core properties; the title falls
back to the first ``Title``-styled paragraph.

Refused, one line naming the file: not a ZIP file (a ``.doc`` renamed, a truncated download),
a ZIP without ``word/document.xml``, one whose entries declare more than ``--max-file-mb``
unpacked or inflate like a compression bomb (read from the ZIP directory before anything is
inflated: :class:`ragnet.corpus.limits.FileBounds`), an unparsable document part, or a document
with no text. Entities are never expanded by the parser; an entity reference the document
declares as plain text is spelled out afterwards, any other is kept as written, with a note.

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
from ragnet.corpus.limits import FileBounds, cap_title
from ragnet.errors import InputError

__all__ = ["read_docx"]

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.I)
_WS = re.compile(r"\s+")
# the core properties python-docx's own blank template carries: not the author's, so not kept
_TEMPLATE_AUTHOR = "python-docx"
_ENTITY_CHARS = 1_000  # longest entity text spelled out, and all spelled out together
_ENTITY_TOTAL = 1_000_000


def _check_container(data: bytes, where: str, bounds: FileBounds) -> None:
    if not data.startswith(b"PK"):
        hint = " (an old binary .doc renamed? save it as .docx)" if data.startswith(b"\xd0\xcf\x11\xe0") else ""
        raise InputError(f"not a DOCX file: not a ZIP archive{hint}", path=where)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            bounds.check_zip(archive, where)  # from the directory, before anything is inflated
            bad = archive.testzip()
    except InputError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as exc:
        raise InputError(f"truncated or damaged DOCX (the ZIP archive cannot be read: {exc})", path=where) from None
    except Exception as exc:  # a corrupt member can fail decompression in other ways
        raise InputError(f"truncated or damaged DOCX ({type(exc).__name__}: {exc})", path=where) from None
    if bad is not None:
        raise InputError(f"truncated or damaged DOCX (member {bad!r} fails its CRC check)", path=where)
    if "word/document.xml" not in names and "[Content_Types].xml" not in names:
        raise InputError("not a DOCX file: a ZIP archive without word/document.xml", path=where)


def _heading_level(paragraph: Any, levels: dict[Any, int | None]) -> int | None:
    """0 for ``Title``, n for ``Heading n`` (or a style based on one), None for body text.

    ``levels`` caches the answer by style id: python-docx looks a paragraph's style up among all
    the document's styles each time (about 1.5 ms a paragraph, 96 s for 5 MB of paragraphs).
    """
    key = paragraph._p.style  # the w:pStyle id, None for the default style
    if key not in levels:
        levels[key] = _style_level(paragraph.style)
    return levels[key]


def _style_level(style: Any) -> int | None:
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


def read_docx(data: bytes, where: str, bounds: FileBounds | None = None) -> Extracted:
    """The paragraphs and tables of a DOCX file, with heading-path positions, title and date.

    Args:
        data: the file's bytes.
        where: the file as named in messages.
        bounds: what reading it may cost (default: :class:`ragnet.corpus.limits.FileBounds`'s).

    Raises:
        InputError: not a DOCX file, damaged, over a bound, no text, or ``python-docx`` is missing.
    """
    _check_container(data, where, bounds if bounds is not None else FileBounds())
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
    levels: dict[Any, int | None] = {}
    kept = _spell_entities(document.element)

    def place() -> dict[str, Any]:
        return {"headings": [text for _, text in headings]} if headings else {}

    try:
        for block in document.iter_inner_content():
            if isinstance(block, Paragraph):
                text = _WS.sub(" ", block.text).strip()
                if not text:
                    continue
                level = _heading_level(block, levels)
                if level is not None:
                    while headings and headings[-1][0] >= level:
                        headings.pop()
                    headings.append((level, cap_title(text)))
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
    notes = []
    if kept:
        names = ", ".join(f"&{name};" for name in dict.fromkeys(kept[:5]))
        notes.append(f"{len(kept)} XML entity reference(s) ({names}) have no plain-text definition ragnet "
                     "spells out and were kept as written")
    return Extracted(text=builder.text(), title=title, metadata=meta, positions=positions, notes=notes)


def _spell_entities(root: Any) -> list[str]:
    """Replace each entity reference the XML parser left in the tree by text, and return the
    names of those kept as written.

    python-docx parses without expanding entities (so a "billion laughs" file stays small), which
    left each ``&name;`` as a node whose following text the paragraph's text never read: "Made by
    &co; in 2019." became "Made by". An entity the document declares as plain text (no markup, no
    other reference; at most 1,000 characters, 1,000,000 in all) is spelled out; any other keeps
    its reference as written, and the rest of the text is read either way.
    """
    from lxml import etree

    refs = list(root.iter(etree.Entity))
    if not refs:
        return []
    dtd = root.getroottree().docinfo.internalDTD
    plain = {}
    for entity in dtd.iterentities() if dtd is not None else ():
        content = entity.content
        if isinstance(content, str) and len(content) <= _ENTITY_CHARS and "&" not in content and "<" not in content:
            plain[entity.name] = content
    kept: list[str] = []
    spelled = 0
    for ref in refs:
        value = plain.get(ref.name)
        if value is None or spelled + len(value) > _ENTITY_TOTAL:
            value = ref.text or f"&{ref.name};"
            kept.append(ref.name)
        spelled += len(value)
        text = value + (ref.tail or "")
        parent, before = ref.getparent(), ref.getprevious()
        if parent is None:
            continue
        if before is not None:
            before.tail = (before.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(ref)
    return kept
