"""PDF, HTML, DOCX and Markdown ingestion: text, title and date metadata, per-chunk source locations
(file, page, heading path, line), and one clear refusal per bad file (issue 38)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from ragnet.core import rules
from ragnet.corpus.chunking import chunk_documents
from ragnet.corpus.formats import TextBuilder, date_metadata
from ragnet.corpus.loader import LoadReport, load_documents, read_documents
from ragnet.corpus.locations import Locator
from ragnet.corpus.metadata import METADATA_KEYS
from ragnet.corpus.types import Document
from ragnet.errors import InputError
from tests.corpus.make_files import (HTML_PAGE, PAGES, docx_bytes, encrypted_pdf, image_only_pdf, pdf_bytes, write,
                                     zip_without_document)

words = str.split


def offsets_of(text: str, chunks) -> list[int]:
    """Each chunk's start in ``text`` (chunks are exact, overlapping substrings, in order)."""
    out, at = [], 0
    for c in chunks:
        at = text.index(c.text, at)
        out.append(at)
    return out


# ---------------------------------------------------------------- PDF


def test_pdf_text_pages_and_metadata(tmp_path):
    path = write(tmp_path / "docs" / "budget.pdf", pdf_bytes(PAGES))
    [doc] = load_documents(tmp_path / "docs")
    assert doc.id == "budget.pdf" and doc.title == "Annual budget"
    assert [words(p) for p in doc.text.split("\n\n")] == [words(p) for p in PAGES]  # every word, in order
    assert doc.location == {"file": "budget.pdf"}
    starts = [doc.text.index(p[:20]) for p in PAGES]
    assert doc.positions == tuple((s, {"page": n}) for n, s in enumerate(starts, start=1))
    assert doc.metadata == {"author": "Budget Office", "date": "2019-03-04", "pages": 3}
    assert doc.source == str(path)


def test_pdf_chunks_carry_their_first_and_last_page(tmp_path):
    write(tmp_path / "budget.pdf", pdf_bytes(PAGES))
    [doc] = load_documents(tmp_path / "budget.pdf")
    chunks = chunk_documents([doc], chunk_tokens=20, overlap=6)
    assert len(chunks) >= 4
    page_starts = [doc.text.index(p[:20]) for p in PAGES]

    def page_at(offset: int) -> int:
        return max(n for n, s in enumerate(page_starts, start=1) if s <= offset)

    spanning = 0
    for chunk, start in zip(chunks, offsets_of(doc.text, chunks)):
        first, last = page_at(start), page_at(start + len(chunk.text.rstrip()) - 1)
        expected = {"file": "budget.pdf", "page": first}
        if last > first:
            expected["page_end"] = last
            spanning += 1
        assert chunk.metadata["location"] == expected, chunk.text
    assert spanning >= 1  # the overlap carries text across a page break
    assert {c.metadata["location"]["page"] for c in chunks} == {1, 2, 3}


def test_pdf_creation_date_is_kept_but_is_not_a_year_the_chunk_filter_drops_by(tmp_path):
    # a file's date is when it was made, not the year it is about: a question naming another year keeps it
    write(tmp_path / "budget.pdf", pdf_bytes(["Roads were repaired across the region."], title="Roads"))
    [doc] = load_documents(tmp_path / "budget.pdf")
    [chunk] = chunk_documents([doc], chunk_tokens=64, overlap=8)
    assert chunk.metadata["doc"]["date"] == "2019-03-04" and "year" not in chunk.metadata["doc"]
    result = rules.apply({"years": [2018]}, [(chunk.id, chunk.metadata)], rules.MetadataCatalog.build([]))
    assert result.kept == [chunk.id] and not result.dropped


def test_pdf_without_title_falls_back_to_the_first_line(tmp_path):
    write(tmp_path / "notes.pdf", pdf_bytes(["Minutes of the March meeting", "Second page."], title=None))
    [doc] = load_documents(tmp_path / "notes.pdf")
    assert doc.title == "Minutes of the March meeting"


def test_pdf_ligatures_are_spelled_out(tmp_path):
    font = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    if not font.is_file():
        pytest.skip("DejaVuSans.ttf is not installed")
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("dejavu", fname=str(font))
    pdf.set_font("dejavu", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "The \ufb01nance o\ufb03ce \ufb02ew soft\u00adware.")
    write(tmp_path / "lig.pdf", bytes(pdf.output()))
    [doc] = load_documents(tmp_path / "lig.pdf")
    assert doc.text == "The finance office flew software."


def test_pdf_words_broken_at_a_line_end_are_joined_as_the_document_spells_them(tmp_path):
    """Read back, "infor-" / "mation" would be two words to BM25 and to the reader. A word the
    document writes closed elsewhere is joined closed; any other break keeps its hyphen (a compound
    such as "little-known", or a syllable break left readable) and loses the line break; page
    offsets stay exact."""
    from ragnet import Index

    pages = ["The agency keeps infor-\nmation on every bridge. Its little-\nknown survey covers Anglo-\nSaxon roads.",
             "All information is public. Inspec-\ntors visit each year."]
    write(tmp_path / "survey.pdf", pdf_bytes(pages))
    [doc] = load_documents(tmp_path / "survey.pdf")
    assert "keeps information on every bridge" in doc.text
    assert "little-known survey covers Anglo-Saxon roads" in doc.text
    assert "Inspec-tors visit" in doc.text  # no closed "inspectors" in the document: no word is invented
    second = doc.text.index("All information")
    assert doc.positions == ((0, {"page": 1}), (second, {"page": 2}))
    index = Index.build([doc], tmp_path / "index", show_progress=False)
    hit = index.search("information bridge", k=1, bm25_weight=1.0)[0]
    assert "keeps information on every bridge" in hit.text


def test_pdf_with_some_pages_without_text_is_read_with_a_warning_naming_them(tmp_path):
    write(tmp_path / "mixed.pdf", pdf_bytes([PAGES[0], "", PAGES[2], ""]))
    with pytest.warns(UserWarning, match=r"mixed\.pdf: pages 2, 4 have no text layer \(scanned\?\) and were left "
                                         r"out; 2 of 4 pages read"):
        [doc] = load_documents(tmp_path / "mixed.pdf")
    assert [p for _, p in doc.positions] == [{"page": 1}, {"page": 3}]
    assert words(doc.text) == words(PAGES[0]) + words(PAGES[2])


@pytest.mark.parametrize(("make", "message"), [
    (lambda: encrypted_pdf(pdf_bytes(PAGES)), "encrypted PDF (it needs a password)"),
    (image_only_pdf, "no text layer: none of its 2 pages has extractable text"),
    (lambda: pdf_bytes(PAGES)[:900], "truncated or damaged PDF (no %%EOF marker at the end of the file)"),
    (lambda: (lambda d: d[: len(d) // 3] + d[-300:])(pdf_bytes(PAGES)), "damaged PDF: parts of it are missing"),
    (lambda: b"%PDF-1.7\nnothing else\n%%EOF\n", "malformed PDF, pypdf cannot read it"),
    (lambda: b"<html>not a pdf</html>", "not a PDF file (no %PDF- header)"),
    (lambda: b"", "file is empty"),
    (lambda: b" \n ", "file is empty"),
], ids=["encrypted", "image-only", "truncated", "cut-in-the-middle", "malformed", "not-a-pdf", "empty", "blank"])
def test_bad_pdfs_are_refused_in_one_line_naming_the_file(tmp_path, make, message):
    path = write(tmp_path / "bad.pdf", make())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no parser chatter on the way
        with pytest.raises(InputError) as info:
            load_documents(path)
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value) and info.value.path == str(path)


def test_pdf_open_with_an_empty_user_password_is_read(tmp_path):
    from pypdf import PdfReader, PdfWriter
    import io

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(PAGES))))
    writer.encrypt("", owner_password="owner", algorithm="AES-128")  # print/copy limits only
    out = io.BytesIO()
    writer.write(out)
    write(tmp_path / "limited.pdf", out.getvalue())
    [doc] = load_documents(tmp_path / "limited.pdf")
    assert words(doc.text) == words(" ".join(PAGES))


# ---------------------------------------------------------------- HTML


def test_html_drops_boilerplate_and_keeps_blocks(tmp_path):
    write(tmp_path / "road.html", HTML_PAGE)
    [doc] = load_documents(tmp_path / "road.html")
    for junk in ("SCRIPT TEXT", "BANNER TEXT", "Agency home", "NAV HOME", "SKIP LINKS", "RELATED ARTICLES",
                 "FOOTER TEXT", "NOSCRIPT TEXT", "color: red"):
        assert junk not in doc.text
    assert doc.text == ("Road report\n\nThe agency maintains 4000 km of roads.\n\nBridges\n\n"
                        "Twelve bridges were repaired.\n\nNorth\n\nOak bridge\nElm bridge\n\nCosts\n\n"
                        "Item | Cost\nAsphalt | 5 million")
    assert doc.title == "Road report"
    assert doc.metadata == {"date": "2021-06-30"}
    assert doc.location == {"file": "road.html"}


def test_html_heading_path_at_every_offset(tmp_path):
    write(tmp_path / "road.htm", HTML_PAGE)
    [doc] = load_documents(tmp_path / "road.htm")
    locate = Locator(doc)
    at = lambda s: locate.span(doc.text.index(s), doc.text.index(s) + len(s))["headings"]  # noqa: E731
    assert at("The agency maintains") == ["Road report"]
    assert at("Twelve bridges") == ["Road report", "Bridges"]
    assert at("Oak bridge") == ["Road report", "Bridges", "North"]
    assert at("Asphalt") == ["Road report", "Costs"]  # h2 closes the h3 section


def test_html_chunks_carry_the_heading_path_where_they_start(tmp_path):
    write(tmp_path / "road.html", HTML_PAGE)
    [doc] = load_documents(tmp_path / "road.html")
    chunks = chunk_documents([doc], chunk_tokens=16, overlap=0)
    assert len(chunks) >= 3
    heads = [(doc.text.index(h), path) for h, path in [
        ("Road report", ["Road report"]), ("Bridges", ["Road report", "Bridges"]),
        ("North", ["Road report", "Bridges", "North"]), ("Costs", ["Road report", "Costs"])]]
    for chunk, start in zip(chunks, offsets_of(doc.text, chunks)):
        expected = [path for offset, path in heads if offset <= start][-1]
        assert chunk.metadata["location"] == {"file": "road.html", "headings": expected}


def test_html_prefers_article_and_reads_body_without_one(tmp_path):
    write(tmp_path / "a.html", "<body><div>Menu junk</div><article><h2>Story</h2><p>Real text.</p></article></body>")
    write(tmp_path / "b.html", "<p>Plain <em>page</em> text.</p><p>Second.</p>")
    a, b = load_documents([tmp_path / "a.html", tmp_path / "b.html"])
    assert a.text == "Story\n\nReal text." and a.title == "Story"  # no <title>, no h1: the first line
    assert b.text == "Plain page text.\n\nSecond." and b.positions == ()


def test_html_date_from_time_element_and_published_time(tmp_path):
    write(tmp_path / "t.html", '<h1>News</h1><p>Posted <time datetime="2018-02-03T10:00">Feb 3</time>.</p>')
    write(tmp_path / "m.html", '<head><meta property="article:published_time" content="2017-05-06T01:02:03Z">'
                               '</head><p>Body.</p>')
    t, m = load_documents([tmp_path / "t.html", tmp_path / "m.html"])
    assert t.title == "News" and t.metadata == {"date": "2018-02-03"}
    assert m.metadata == {"date": "2017-05-06"}


def test_html_with_only_boilerplate_is_refused(tmp_path):
    path = write(tmp_path / "nav.html", "<html><body><nav>Home</nav><script>x()</script><footer>(c)</footer></body></html>")
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert str(info.value) == (f"{path}: no text in this HTML page (navigation, scripts and other "
                               "boilerplate are not indexed)")


# ---------------------------------------------------------------- DOCX


def test_docx_paragraphs_tables_headings_and_properties(tmp_path):
    write(tmp_path / "hb.docx", docx_bytes())
    [doc] = load_documents(tmp_path / "hb.docx")
    assert doc.text == ("Staff handbook\n\nWelcome to the agency.\n\nLeave\n\nStaff get 25 days of leave.\n\n"
                        "Sick leave\n\nTell your manager on the first day.\n\nDays | Rule\n1-3 | No note needed\n\n"
                        "Pay\n\nPay day is the last Friday.")
    assert doc.title == "Handbook 2020"
    assert doc.metadata == {"author": "HR team", "date": "2020-01-02"}
    locate = Locator(doc)
    at = lambda s: locate.span(doc.text.index(s), doc.text.index(s) + 1)["headings"]  # noqa: E731
    assert at("Welcome") == ["Staff handbook"]
    assert at("Staff get") == ["Staff handbook", "Leave"]
    assert at("1-3 | No note") == ["Staff handbook", "Leave", "Sick leave"]
    assert at("Pay day") == ["Staff handbook", "Pay"]


def test_docx_from_the_blank_template_keeps_no_template_dates(tmp_path):
    import io

    import docx

    d = docx.Document()
    d.add_paragraph("Just text.")
    out = io.BytesIO()
    d.save(out)
    write(tmp_path / "plain.docx", out.getvalue())
    [doc] = load_documents(tmp_path / "plain.docx")
    assert doc.metadata == {} and doc.title == "Just text." and doc.positions == ()


@pytest.mark.parametrize(("make", "message"), [
    (lambda: b"plain text, not a zip", "not a DOCX file: not a ZIP archive"),
    (lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64, "not a DOCX file: not a ZIP archive (an old binary .doc"),
    (lambda: docx_bytes()[:3000], "truncated or damaged DOCX"),
    (zip_without_document, "not a DOCX file: a ZIP archive without word/document.xml"),
    (lambda: b"", "file is empty"),
], ids=["text", "old-doc", "truncated", "zip-without-document", "empty"])
def test_bad_docx_are_refused_in_one_line_naming_the_file(tmp_path, make, message):
    path = write(tmp_path / "bad.docx", make())
    with pytest.raises(InputError) as info:
        load_documents(path)
    assert str(info.value).startswith(f"{path}: {message}") and "\n" not in str(info.value)


# ---------------------------------------------------------------- Markdown, text, JSONL


def test_markdown_chunks_carry_their_heading_path(tmp_path):
    text = ("# Guide\n\nThis guide explains the tool.\n\n## Install\n\nRun pip install ragnet to get it.\n\n"
            "```\n# not a heading\n```\n\nSetup\n-----\n\nCopy the config file.\n\n# Notes\n\nNothing else.\n")
    write(tmp_path / "docs" / "guide.md", text)
    [doc] = load_documents(tmp_path / "docs")
    assert [p["headings"] for _, p in doc.positions] == [["Guide"], ["Guide", "Install"], ["Guide", "Setup"], ["Notes"]]
    chunks = chunk_documents([doc], chunk_tokens=16, overlap=0)
    assert len(chunks) >= 4
    heads = [(offset, place["headings"]) for offset, place in doc.positions]
    for chunk, start in zip(chunks, offsets_of(doc.text, chunks)):
        expected = [path for offset, path in heads if offset <= start][-1]
        assert chunk.metadata["location"] == {"file": "guide.md", "headings": expected}, chunk.text
    assert len({tuple(c.metadata["location"]["headings"]) for c in chunks}) >= 3


def test_jsonl_records_and_text_files_carry_file_and_line(tmp_path):
    folder = tmp_path / "docs"
    write(folder / "sub" / "recs.jsonl", "\n" + json.dumps({"id": "a", "text": "Alpha text."}) + "\n")
    write(folder / "note.txt", "A plain note.")
    note, recs = load_documents(folder)
    [c1] = chunk_documents([recs], chunk_tokens=64, overlap=8)
    [c2] = chunk_documents([note], chunk_tokens=64, overlap=8)
    assert c1.metadata["location"] == {"file": "sub/recs.jsonl", "line": 2}
    assert c2.metadata["location"] == {"file": "note.txt"}


def test_documents_made_in_code_get_no_location_and_old_calls_still_work():
    doc = Document("d1", "Paris", "Paris is the capital of France.", {"year": 2019}, "src")
    [chunk] = chunk_documents([doc], chunk_tokens=64, overlap=8)
    assert "location" not in chunk.metadata
    assert set(chunk.metadata) == {*METADATA_KEYS, "doc"}


def test_location_is_its_own_key_beside_the_rule_metadata(tmp_path):
    write(tmp_path / "r.pdf", pdf_bytes(PAGES))
    [doc] = load_documents(tmp_path / "r.pdf")
    chunk = chunk_documents([doc], chunk_tokens=64, overlap=8)[0]
    assert set(chunk.metadata) == {*METADATA_KEYS, "doc", "location"}
    assert "location" not in chunk.metadata["doc"]  # a document's own "location" (a place) stays the rules' one
    json.dumps(chunk.to_dict())  # JSON-compatible, as the index stores it


@pytest.mark.parametrize(("positions", "message"), [
    (((5, {"page": 2}), (1, {"page": 1})), r"positions\[1\] has offset 1, before the previous one \(5\)"),
    (((99, {"page": 1}),), r"positions\[0\] has offset 99, outside its text"),
    ((("0", {"page": 1}),), r"positions\[0\] must be an \(offset, dict\) pair"),
])
def test_bad_positions_are_refused_naming_the_document(positions, message):
    doc = Document(id="d", title="", text="Some text here.", positions=positions)
    with pytest.raises(InputError, match=message):
        chunk_documents([doc], chunk_tokens=64, overlap=8)


# ---------------------------------------------------------------- on_error


def bad_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(folder / "a_good.pdf", pdf_bytes(PAGES))
    write(folder / "b_good.md", "# Notes\n\nSome notes.\n")
    write(folder / "c_locked.pdf", encrypted_pdf(pdf_bytes(PAGES)))
    write(folder / "d_scan.pdf", image_only_pdf())
    write(folder / "e_cut.pdf", pdf_bytes(PAGES)[:700])
    write(folder / "f_bad.docx", b"not a zip")
    write(folder / "g_nav.html", "<nav>menu</nav>")
    write(folder / "h_empty.txt", "")
    write(folder / "i_locked2.pdf", encrypted_pdf(pdf_bytes(["x"])))
    return folder


def test_fail_lists_every_bad_file_and_reads_nothing(tmp_path):
    folder = bad_folder(tmp_path)
    with pytest.raises(InputError) as info:
        load_documents(folder)
    message = str(info.value)
    assert message.startswith("argument 'paths': 7 problems in the input; nothing was indexed:")
    for name in ("c_locked.pdf", "d_scan.pdf", "e_cut.pdf", "f_bad.docx", "g_nav.html", "h_empty.txt", "i_locked2.pdf"):
        assert re.search(rf"\n  {re.escape(str(folder / name))}: ", message), name


def test_skip_leaves_bad_files_out_whole_and_says_why(tmp_path):
    folder = bad_folder(tmp_path)
    report = read_documents(folder, on_error="skip")
    assert isinstance(report, LoadReport)
    assert [d.id for d in report.documents] == ["a_good.pdf", "b_good.md"]
    assert report.files_read == 2 and len(report.skipped) == 7
    assert report.reasons() == {
        "encrypted PDF": [str(folder / "c_locked.pdf"), str(folder / "i_locked2.pdf")],
        "no text layer": [str(folder / "d_scan.pdf")],
        "truncated or damaged PDF": [str(folder / "e_cut.pdf")],
        "not a DOCX file": [str(folder / "f_bad.docx")],
        "no text in this HTML page": [str(folder / "g_nav.html")],
        "file is empty": [str(folder / "h_empty.txt")],
    }
    summary = report.summary().split("\n")
    assert summary[0] == "read 2 files (2 documents); skipped 7 files:"
    assert summary[1] == f"  encrypted PDF: {folder / 'c_locked.pdf'}, {folder / 'i_locked2.pdf'}"
    with pytest.warns(UserWarning, match=r"read 2 files \(2 documents\); skipped 7 files"):
        assert [d.id for d in load_documents(folder, on_error="skip")] == ["a_good.pdf", "b_good.md"]


def test_skip_drops_a_whole_jsonl_file_with_a_bad_line_or_a_duplicate_id(tmp_path):
    folder = tmp_path / "docs"
    write(folder / "a.jsonl", json.dumps({"id": "x", "text": "First x."}) + "\n")
    write(folder / "b.jsonl", json.dumps({"id": "y", "text": "Fine."}) + "\n" + json.dumps({"id": "x", "text": "Again."}) + "\n")
    write(folder / "c.jsonl", json.dumps({"id": "z", "text": "Fine."}) + "\n{broken\n")
    report = read_documents(folder, on_error="skip")
    assert [d.id for d in report.documents] == ["x"]  # not y, read before b.jsonl's clash, nor z
    assert list(report.reasons()) == ["duplicate document id 'x'", "invalid JSON"]
    assert read_documents(folder / "a.jsonl", on_error="skip").skipped == []


def test_skip_with_nothing_left_is_an_error_listing_the_files(tmp_path):
    write(tmp_path / "scan.pdf", image_only_pdf())
    with pytest.raises(InputError, match=r"no documents left in .*: every file was skipped\n  no text layer: .*scan\.pdf"):
        read_documents(tmp_path, on_error="skip")


def test_on_error_must_be_fail_or_skip(tmp_path):
    with pytest.raises(InputError, match=r"argument 'on_error': must be one of fail, skip, got 'ignore'"):
        load_documents(tmp_path, on_error="ignore")


# ---------------------------------------------------------------- helpers


def test_text_builder_tidies_blocks_and_records_changed_places():
    b = TextBuilder()
    assert b.add("  a\u00a0 b \n\n\n c\u00ad d ", {"page": 1})
    assert not b.add(" \n ", {"page": 2})
    assert b.add("e", {"page": 2}, separator="\n")
    assert b.add("f", {"page": 2})
    assert b.text() == "a b\n\nc d\ne\n\nf" and b.positions() == ((0, {"page": 1}), (9, {"page": 2}))


@pytest.mark.parametrize(("value", "expected"), [
    ("2019", {"date": "2019"}),
    ("2019-07", {"date": "2019-07"}),
    ("2019-02-30", {"date": "2019-02"}),
    ("0001-01-01", {}),
    ("yesterday", {}),
    (None, {}),
])
def test_date_metadata(value, expected):
    assert date_metadata(value) == expected


def _pdf_with_running_lines(bodies: list[str]) -> bytes:
    """A PDF whose pages carry a running header and a numbered footer, as fpdf2 prints them."""
    from fpdf import FPDF

    class Report(FPDF):
        def header(self):
            self.cell(0, 8, "City of Springfield - Annual budget", new_x="LMARGIN", new_y="NEXT")

        def footer(self):
            self.set_y(-15)
            self.cell(0, 8, f"Page {self.page_no()}")

    pdf = Report()
    pdf.set_font("Helvetica", size=11)
    for body in bodies:
        pdf.add_page()
        pdf.multi_cell(0, 6, body)
    return bytes(pdf.output())


def test_pdf_running_headers_and_page_numbers_are_not_indexed(tmp_path):
    bodies = ["Roads were repaired in the north.", "Schools got new roofs.", "Taxes on land fell.",
              "The harbour was dredged."]
    write(tmp_path / "budget.pdf", _pdf_with_running_lines(bodies))
    [doc] = load_documents(tmp_path / "budget.pdf")
    assert "Annual budget" not in doc.text and "Page " not in doc.text
    assert doc.title == "City of Springfield - Annual budget"  # no /Title: the running head names it
    assert [line for line in doc.text.split("\n") if line] == bodies  # every body line kept, in order
    chunks = chunk_documents([doc], chunk_tokens=16, overlap=0)
    covered = [p for c in chunks for p in range(c.metadata["location"]["page"],
                                                c.metadata["location"].get("page_end", c.metadata["location"]["page"]) + 1)]
    assert covered == [1, 2, 3, 4]  # the page positions still line up with the text once the lines are gone


def test_pdf_sentence_running_across_a_page_break_stays_one_sentence(tmp_path):
    """A sentence cut by a page break ("…starting with" / "the tenth, use '10~5'") was two: pages
    were joined by a blank line, a paragraph break to sentence splitting, so chunking and the
    sentence pack could keep its halves apart. A page that ends a sentence still starts a new
    paragraph."""
    from ragnet.corpus.sentence_split import sentence_spans

    write(tmp_path / "sed.pdf", pdf_bytes(["Addresses. To pick every fifth line starting with",
                                           "the tenth, use 10~5 as the address.", "Ranges come next."]))
    [doc] = load_documents(tmp_path / "sed.pdf")
    assert doc.text == ("Addresses. To pick every fifth line starting with\nthe tenth, use 10~5 as the address."
                        "\n\nRanges come next.")
    sentences = [doc.text[a:b] for a, b in sentence_spans(doc.text)]
    assert "To pick every fifth line starting with\nthe tenth, use 10~5 as the address." in sentences
    assert [place["page"] for _, place in doc.positions] == [1, 2, 3]
    assert doc.text[doc.positions[1][0]:].startswith("the tenth")


def test_pdf_line_repeated_on_two_pages_without_a_page_number_is_kept(tmp_path):
    # two pages are too few to tell a repeated line from a running head, unless it carries the page number
    write(tmp_path / "memo.pdf", pdf_bytes(["Budget memo\nRoads first.", "Budget memo\nSchools next."]))
    [doc] = load_documents(tmp_path / "memo.pdf")
    assert doc.text.count("Budget memo") == 2


def test_pdf_numbers_that_do_not_move_with_the_page_are_text():
    from ragnet.corpus.formats.pdf import strip_running_lines

    pages = ["Step 1: open the valve.\nWait.", "Step 1: open the valve.\nWait longer.", "Close it.\nStep 2 follows."]
    assert strip_running_lines(pages) == pages
    # a slide that is only its title and page number is kept whole rather than emptied
    slides = ["Roadmap\n1", "Roadmap\n2", "Roadmap\n3"]
    assert strip_running_lines(slides) == slides
