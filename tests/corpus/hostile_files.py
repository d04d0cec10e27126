"""Hostile documents for the bound, title, nesting and hidden-text tests (issue 47): each a real
file of its format, sized by the caller so the tests can run them against a reduced bound."""

from __future__ import annotations

import io
import random
import zipfile

from tests.corpus.make_files import pdf_bytes


def random_words(n_chars: int, seed: int = 0) -> str:
    """Sentences of random lowercase words (compresses about 2.5-fold, like real text)."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9))) for _ in range(5000)]
    parts, size = [], 0
    while size < n_chars:
        sentence = " ".join(rng.choices(vocab, k=12)).capitalize() + ". "
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:n_chars]


# ---------------------------------------------------------------- DOCX


def _blank_docx() -> zipfile.ZipFile:
    import docx

    d = docx.Document()
    d.add_paragraph("PLACEHOLDER")
    buf = io.BytesIO()
    d.save(buf)
    return zipfile.ZipFile(io.BytesIO(buf.getvalue()))


def docx_with_document_xml(edit) -> bytes:
    """A DOCX from python-docx's template whose ``word/document.xml`` is ``edit(xml)``."""
    src = _blank_docx()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "word/document.xml":
                data = edit(data.decode("utf-8")).encode("utf-8")
            z.writestr(info.filename, data)
    return out.getvalue()


def docx_paragraphs(n_chars: int, seed: int = 0) -> bytes:
    """A DOCX holding about ``n_chars`` of XML of random-word paragraphs."""
    text = random_words(n_chars // 2, seed)
    paras = "".join(f"<w:p><w:r><w:t>{s.strip()}.</w:t></w:r></w:p>" for s in text.split(". ") if s.strip())
    return docx_with_document_xml(lambda xml: xml.replace("<w:p><w:r><w:t>PLACEHOLDER</w:t></w:r></w:p>", paras, 1))


def docx_repeated(n_chars: int) -> bytes:
    """A DOCX whose document.xml is one paragraph repeated: it inflates several hundred-fold."""
    para = "<w:p><w:r><w:t>The agency repaired twelve bridges in the north.</w:t></w:r></w:p>"
    return docx_with_document_xml(lambda xml: xml.replace("<w:body>", "<w:body>" + para * (n_chars // len(para)), 1))


def docx_title(title: str, heading: str) -> bytes:
    """A DOCX whose core properties declare ``title`` and an author as long (python-docx itself
    refuses properties over 255 characters; the XML is edited instead), under a ``heading``."""
    import docx

    d = docx.Document()
    d.add_heading(heading, 1)
    d.add_paragraph(random_words(3000))
    d.core_properties.title = "TITLE"
    d.core_properties.author = "AUTHOR"
    buf = io.BytesIO()
    d.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                data = data.replace(b">TITLE<", f">{title}<".encode()).replace(b">AUTHOR<", f">{'A' * len(title)}<".encode())
            z.writestr(info.filename, data)
    return out.getvalue()


def docx_entity() -> bytes:
    """A DOCX declaring an entity in its own DTD and using it mid-run, plus an external one."""

    def edit(xml: str) -> str:
        head, rest = xml.split("?>", 1)
        dtd = ('<!DOCTYPE w:document [<!ENTITY company "Acme Ltd"><!ENTITY nested "&company; &company;">'
               '<!ENTITY ext SYSTEM "file:///etc/hostname">]>')
        return head + "?>\n" + dtd + rest.replace(
            "PLACEHOLDER", "Made by &company; in 2019, &nested; twice, &ext; outside, and the end.")

    return docx_with_document_xml(edit)


# ---------------------------------------------------------------- PDF


def pdf_shared_stream(pages: int, content_bytes: int) -> bytes:
    """``pages`` pages whose /Contents is one shared, flate-compressed stream of text operators."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import DecodedStreamObject, NameObject

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes([f"Page {i}." for i in range(pages)]))))
    unit = b"BT /F1 11 Tf 10 10 Td (x) Tj ET\n"
    stream = DecodedStreamObject()
    stream.set_data(unit * (content_bytes // len(unit)))
    ref = writer._add_object(stream.flate_encode(level=9))
    for page in writer.pages:
        page[NameObject("/Contents")] = ref
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_big_form(content_bytes: int) -> bytes:
    """One page whose short content draws a form XObject holding ``content_bytes`` of operators."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, FloatObject, NameObject

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(["Cover page."]))))
    form = DecodedStreamObject()
    unit = b"0 0 m 10 10 l S\n"
    form.set_data(unit * (content_bytes // len(unit)))
    form.update({NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Form"),
                 NameObject("/BBox"): ArrayObject([FloatObject(0), FloatObject(0), FloatObject(100), FloatObject(100)])})
    ref = writer._add_object(form.flate_encode(level=9))
    page = writer.pages[0]
    resources = page["/Resources"].get_object()
    resources[NameObject("/XObject")] = DictionaryObject({NameObject("/Fm1"): ref})
    draw = DecodedStreamObject()
    draw.set_data(page.get_contents().get_data() + b"\nq /Fm1 Do Q\n")
    page[NameObject("/Contents")] = writer._add_object(draw)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_long_title(title: str) -> bytes:
    return pdf_bytes(["Roads were repaired.", "Schools opened."], title=title)


def pdf_long_running_head(line_chars: int) -> bytes:
    """Three pages whose first line is the same very long line (printed past the page's edge): the
    running head the title falls back to."""
    from fpdf import FPDF

    head = random_words(line_chars, seed=5).replace(". ", " ")
    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for i in range(3):
        pdf.add_page()
        pdf.cell(text=head, new_x="LMARGIN", new_y="NEXT")
        pdf.multi_cell(0, 6, f"Page {i} has its own text about roads.")
    return bytes(pdf.output())


# ---------------------------------------------------------------- HTML and Markdown


def html_title(title_chars: int, heading_chars: int = 0) -> bytes:
    title = random_words(title_chars, seed=1)
    heading = f"<h2>{random_words(heading_chars, seed=2)}</h2>" if heading_chars else ""
    body = "".join(f"<p>{s}.</p>" for s in random_words(20_000, seed=3).split(". "))
    return f"<html><head><title>{title}</title></head><body><h1>Report</h1>{heading}{body}</body></html>".encode()


def html_nested(depth: int, tag: str = "div", closed: bool = True) -> bytes:
    inner = "<p>Deep text survives.</p>"
    close = f"</{tag}>" * depth if closed else ""
    return f"<html><body><p>Top text.</p>{f'<{tag}>' * depth}{inner}{close}<p>Last words.</p></body></html>".encode()


def html_elements(n: int) -> bytes:
    return ("<html><body>" + "".join(f"<p>item {i}</p>" for i in range(n)) + "</body></html>").encode()


def markdown_heading(heading_chars: int) -> str:
    return f"# {random_words(heading_chars, seed=4)}\n\n{random_words(20_000, seed=6)}\n\n## Next\n\nMore text.\n"
