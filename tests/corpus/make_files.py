"""Real PDF, HTML and DOCX files for the format tests, written with the libraries users' files come from."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

PAGES = [
    "Budget overview. The agency spent 12 million on roads in 2019. Bridges were repaired in the north.",
    "Health spending. Hospitals received 30 million. Clinics in rural areas opened on weekends.",
    "Education. Schools hired 200 teachers. Class sizes fell for the third year in a row.",
]


def pdf_bytes(pages: list[str], *, title: str | None = "Annual budget", created: dt.datetime | None = None) -> bytes:
    """A PDF with one page per text (an empty string makes a page without text)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    if title:
        pdf.set_title(title)
    pdf.set_author("Budget Office")
    pdf.set_creation_date(created or dt.datetime(2019, 3, 4, tzinfo=dt.timezone.utc))
    return bytes(pdf.output())


def image_only_pdf() -> bytes:
    """A two-page PDF holding only drawings (what a scan without OCR looks like to a text extractor)."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.set_fill_color(40, 40, 40)
        pdf.rect(20, 20, 100, 60, style="F")
    return bytes(pdf.output())


def encrypted_pdf(data: bytes, password: str = "secret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(password, algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


HTML_PAGE = """<!doctype html>
<html><head><title>Road report</title><meta name="date" content="2021-06-30">
<script>var tracking = "SCRIPT TEXT";</script><style>.x { color: red }</style></head>
<body>
<header><a href="/">Agency home</a> BANNER TEXT</header>
<nav><ul><li>NAV HOME</li><li>NAV ABOUT</li></ul></nav>
<div role="navigation">SKIP LINKS</div>
<main>
  <h1>Road report</h1>
  <p>The   agency maintains
     4000 km of roads.</p>
  <h2>Bridges</h2>
  <p>Twelve bridges were repaired.</p>
  <h3>North</h3>
  <ul><li>Oak bridge</li><li>Elm bridge</li></ul>
  <h2>Costs</h2>
  <table><tr><th>Item</th><th>Cost</th></tr><tr><td>Asphalt</td><td>5 million</td></tr></table>
  <aside>RELATED ARTICLES</aside>
</main>
<footer>FOOTER TEXT (c) Agency</footer>
<noscript>NOSCRIPT TEXT</noscript>
</body></html>
"""


def docx_bytes() -> bytes:
    """A DOCX with a Title, Heading 1/2 sections, body paragraphs and a table."""
    import docx

    d = docx.Document()
    d.add_heading("Staff handbook", 0)
    d.add_paragraph("Welcome to the agency.")
    d.add_heading("Leave", 1)
    d.add_paragraph("Staff get 25 days of leave.")
    d.add_heading("Sick leave", 2)
    d.add_paragraph("Tell your manager on the first day.")
    table = d.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "Days", (0, 1): "Rule", (1, 0): "1-3", (1, 1): "No note needed"}.items():
        table.cell(r, c).text = text
    d.add_heading("Pay", 1)
    d.add_paragraph("Pay day is the last Friday.")
    d.core_properties.author = "HR team"
    d.core_properties.title = "Handbook 2020"
    d.core_properties.created = dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc)
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def zip_without_document() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("notes.txt", "not a word document")
    return out.getvalue()


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path
