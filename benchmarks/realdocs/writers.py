"""Parsed info manuals written as PDF (with or without an outline), as DOCX and as plain text,
deterministically.

The PDF is laid out like a printed GNU manual: a title page, chapters on new pages, numbered
headings in bold, body text reflowed in Helvetica, examples in Courier, the manual's title as a
running head and the page number as a footer. Cross-references name the target's section and
page ("see Section 2.3 [Basic Startup Options], page 7"): the manual is laid out until every
page a reference names is the page its section starts on (two or three passes).

Both writers fix every date and identifier they embed, so the same inputs give the same bytes.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from typing import Callable, Optional

from benchmarks.realdocs.info import Block, Manual, resolve_xrefs

__all__ = ["write_pdf", "write_docx", "write_text", "FIXED_DATE"]

#: The date written into every generated file (creation and modification), for reproducible bytes.
FIXED_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
_AUTHOR = "Free Software Foundation"
_CREATOR = "ragnet benchmarks.realdocs.build"
# characters Helvetica's and Courier's latin-1 encoding lacks, as a typewriter writes them
_ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-",
                        "\u2014": "--", "\u2026": "...", "\u2022": "-", "\u2192": "->", "\u2190": "<-",
                        "\u2264": "<=", "\u2265": ">=", "\u2260": "!=", "\u2212": "-", "\u00a0": " ",
                        "\u2010": "-", "\u2011": "-", "\u2032": "'", "\u2261": "==", "\u21d2": "=>",
                        "\u2023": "-", "\u2502": "|", "\u2500": "-", "\u250c": "+", "\u2510": "+",
                        "\u2514": "+", "\u2518": "+", "\u251c": "+", "\u2524": "+", "\u2020": "+"})
_HEADING_PT = {0: 16, 1: 13, 2: 11.5, 3: 10.5}
_INDENT_MM = 1.6  # per info column
_BODY_PT, _CODE_PT = 10, 8.8
_LINE_MM, _CODE_LINE_MM = 5.0, 4.1
_MAX_PASSES = 4


def latin1(text: str) -> str:
    """``text`` in the core PDF fonts' latin-1: typographic quotes and dashes as plain ones, any
    other character outside latin-1 as ``?``."""
    return text.translate(_ASCII).encode("latin-1", "replace").decode("latin-1")


def _pdf_class():
    from fpdf import FPDF

    class ManualPDF(FPDF):
        """An FPDF with the manual's title as running head and the page number as footer."""

        def __init__(self, head: str) -> None:
            super().__init__(format="letter", unit="mm")
            self.head = head
            self.set_margins(22, 20, 22)
            self.set_auto_page_break(True, margin=20)

        def header(self) -> None:
            if self.page_no() == 1:
                return
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 5, self.head, align="L")
            self.ln(9)

        def footer(self) -> None:
            self.set_y(-14)
            self.set_font("Helvetica", "", 8)
            self.cell(0, 5, str(self.page_no()), align="C")

    return ManualPDF


class _Layout:
    """One layout pass of a manual: writes the PDF and records the page each node starts on."""

    def __init__(self, manual: Manual, outline: bool, pages: dict[str, int]) -> None:
        self.manual = manual
        self.outline = outline
        self.pages = pages  # node -> page from the previous pass (empty on the first)
        self.starts: dict[str, int] = {}
        self.pdf = _pdf_class()(latin1(_head(manual)))
        self.level = -1
        self.widths: dict[tuple[str, str], float] = {}

    def text(self, text: str) -> str:
        return latin1(resolve_xrefs(text, self.manual, self.pages.get))

    def write(self) -> bytes:
        pdf = self.pdf
        pdf.set_title(latin1(_head(self.manual)))
        pdf.set_author(_AUTHOR)
        pdf.set_creator(_CREATOR)
        pdf.set_producer(_CREATOR)
        pdf.set_creation_date(FIXED_DATE)
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 24)
        pdf.multi_cell(0, 11, latin1(_head(self.manual)), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(8)
        for block in self.manual.front:
            self.block(block)
        for section in self.manual.sections:
            self.heading(section.title, section.level, section.node)
            for block in section.blocks:
                self.block(block)
        return bytes(pdf.output())

    def heading(self, title: str, level: int, node: str) -> None:
        pdf = self.pdf
        if level == 0:
            pdf.add_page()
        elif pdf.get_y() > pdf.h - pdf.b_margin - 30:  # no heading alone at a page's foot
            pdf.add_page()
        else:
            pdf.ln(3)
        self.starts.setdefault(node, pdf.page_no())
        if self.outline:
            level = min(level, self.level + 1)
            pdf.start_section(latin1(title), level=level)
            self.level = level
        pdf.set_font("Helvetica", "B", _HEADING_PT.get(level, 10))
        self.lines(latin1(title), 0, 7)
        pdf.ln(1.5)

    def lines(self, text: str, indent: float, height: float) -> None:
        """Write ``text`` filled to the text width from ``indent`` mm (faster than fpdf2's
        ``multi_cell`` line breaking, which measures each line character by character)."""
        pdf = self.pdf
        width = pdf.epw - indent
        font = f"{pdf.font_family}{pdf.font_style}{pdf.font_size_pt}"

        def measure(word: str) -> float:
            key = (font, word)
            if key not in self.widths:
                self.widths[key] = pdf.get_string_width(word)
            return self.widths[key]

        space = measure(" ")
        line: list[str] = []
        used = 0.0
        for word in _split_long(text.split(), measure, width):
            size = measure(word)
            if line and used + space + size > width:
                self.cell(" ".join(line), indent, height)
                line, used = [], 0.0
            used += (space if line else 0.0) + size
            line.append(word)
        self.cell(" ".join(line), indent, height)

    def cell(self, text: str, indent: float, height: float) -> None:
        self.pdf.set_x(self.pdf.l_margin + indent)
        self.pdf.cell(0, height, text, new_x="LMARGIN", new_y="NEXT")

    def block(self, block: Block) -> None:
        pdf = self.pdf
        indent = min(block.indent, 12) * _INDENT_MM
        if block.kind == "pre":
            pdf.set_font("Courier", "", _CODE_PT)
            for line in self.text(block.text).split("\n"):
                lead = len(line) - len(line.lstrip(" "))
                self.lines(line.strip(), indent + 8 + lead * 1.9, _CODE_LINE_MM)
            pdf.ln(2)
            return
        text = self.text(block.text)
        if block.kind == "item":
            text = re.sub(r"^(•|\*)\s+", "- ", text.translate({0x2022: "-"}))
        pdf.set_font("Helvetica", "B" if block.kind == "label" else "", _BODY_PT)
        self.lines(text, indent, _LINE_MM)
        pdf.ln(0.5 if block.kind == "label" else 2)


def _split_long(words: list[str], measure: Callable[[str], float], width: float) -> list[str]:
    """The words, any wider than ``width`` (a long URL) cut into pieces that fit."""
    out = []
    for word in words:
        while measure(word) > width and len(word) > 1:
            cut = len(word) - 1
            while cut > 1 and measure(word[:cut]) > width:
                cut = max(1, cut * 3 // 4)
            out.append(word[:cut])
            word = word[cut:]
        out.append(word)
    return out


def _head(manual: Manual) -> str:
    """The manual's display title: the Top node's title, its program name unquoted."""
    return " ".join(manual.title.replace("\u2018", "").replace("\u2019", "").split())


def write_pdf(manual: Manual, outline: bool = True) -> tuple[bytes, int]:
    """The manual as a PDF.

    Args:
        manual: the parsed manual.
        outline: write the PDF outline (bookmarks), one entry per heading.

    Returns:
        The PDF's bytes and its page count.
    """
    pages: dict[str, int] = {}
    for _ in range(_MAX_PASSES):
        layout = _Layout(manual, outline, pages)
        data = layout.write()
        if layout.starts == pages:
            break
        pages = layout.starts
    return data, layout.pdf.page_no()


def write_docx(manual: Manual) -> bytes:
    """The manual as a DOCX: the title in the ``Title`` style, headings in ``Heading 1..4``,
    examples in Courier New, table terms in bold, list items in ``List Bullet``/``List Number``."""
    import docx
    from docx.shared import Cm, Pt

    document = docx.Document()
    props = document.core_properties
    props.title, props.author, props.last_modified_by = _head(manual), _AUTHOR, _AUTHOR
    props.created = props.modified = FIXED_DATE.replace(tzinfo=None)
    props.revision = 1
    document.add_heading(_head(manual), 0)

    def text(value: str) -> str:
        return resolve_xrefs(value, manual, lambda node: None)

    def add(block: Block) -> None:
        if block.kind == "pre":
            paragraph = document.add_paragraph()
            run = paragraph.add_run(text(block.text))
            run.font.name, run.font.size = "Courier New", Pt(9)
        elif block.kind == "item":
            numbered = re.match(r"^\d+\.\s+", block.text)
            body = re.sub(r"^(?:•|\*|-|\d+\.|[a-z]\.)\s+", "", block.text)
            paragraph = document.add_paragraph(text(body), style="List Number" if numbered else "List Bullet")
        elif block.kind == "label":
            paragraph = document.add_paragraph()
            paragraph.add_run(text(block.text)).bold = True
            paragraph.paragraph_format.space_after = Pt(0)
        else:
            paragraph = document.add_paragraph(text(block.text))
        if block.indent >= 5:
            paragraph.paragraph_format.left_indent = Cm(1)

    for block in manual.front:
        add(block)
    for section in manual.sections:
        document.add_heading(section.title, min(section.level + 1, 9))
        for block in section.blocks:
            add(block)
    buffer = io.BytesIO()
    document.save(buffer)
    return _fixed_zip(buffer.getvalue())


#: Underline characters by heading level, as ``makeinfo --plaintext`` draws them.
_UNDERLINES = "*=-."


def write_text(manual: Manual, width: int = 72) -> bytes:
    """The manual as plain text (UTF-8), laid out as ``makeinfo --plaintext`` lays a manual out:
    the title, then each heading on a line of its own, underlined by level, prose reflowed to
    ``width`` columns, list items and table descriptions indented, examples kept as they are."""
    import textwrap

    out = [_head(manual), "*" * len(_head(manual)), ""]

    def text(value: str) -> str:
        return resolve_xrefs(value, manual, lambda node: None)

    def add(block: Block) -> None:
        indent = " " * (5 if block.indent >= 5 else 0)
        if block.kind == "pre":
            out.extend(indent + "     " + line for line in text(block.text).split("\n"))
        elif block.kind == "item":
            out.extend(textwrap.wrap(text(block.text), width, initial_indent=indent + "   ",
                                     subsequent_indent=indent + "     "))
        else:
            out.extend(textwrap.wrap(text(block.text), width, initial_indent=indent, subsequent_indent=indent))
        out.append("")

    for block in manual.front:
        add(block)
    for section in manual.sections:
        out.extend(["", section.title, _UNDERLINES[min(section.level, 3)] * len(section.title), ""])
        for block in section.blocks:
            add(block)
    return ("\n".join(out).rstrip() + "\n").encode("utf-8")


def _fixed_zip(data: bytes) -> bytes:
    """The ZIP archive rewritten with fixed member dates, so equal contents give equal bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def page_count(data: bytes) -> Optional[int]:
    """The page count of a PDF's bytes (pypdf), or None when it cannot be read."""
    try:
        import pypdf

        return len(pypdf.PdfReader(io.BytesIO(data)).pages)
    except Exception:
        return None
