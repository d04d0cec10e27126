"""Document structure in every chunk: PDF outlines and numbered headings become heading paths, chunks
are cut at section starts, and a chunk's title names its section (issue 46, item 2)."""

from __future__ import annotations

import pytest

from ragnet.corpus.chunking import chunk_documents
from ragnet.corpus.formats.pdf_sections import MAX_SECTIONS, numbered_headings, section_marks
from ragnet.corpus.loader import load_documents
from ragnet.corpus.locations import section_title
from ragnet.corpus.types import Document
from tests.corpus.make_files import write

INTRO = "This library parses definitions. " * 6
MEMORY = "Memory is freed by the caller with asn1_delete_structure. " * 4
USAGE = "Call the init function first. " * 5


def _outlined_pdf(outline: bool = True) -> bytes:
    """Three pages; the second holds the end of one section and the start of the next, each with its
    heading line. With ``outline``, the sections are bookmarks too (fpdf2's start_section)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.set_title("Libfoo manual")

    def para(text: str) -> None:
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")

    def heading(text: str, level: int) -> None:
        if outline:
            pdf.start_section(text, level=level)
        para(text)

    pdf.add_page()
    heading("1 Introduction", 0)
    para(INTRO)
    pdf.add_page()
    heading("2 Usage", 0)
    para(USAGE)
    heading("2.1 Memory management", 1)
    para(MEMORY)
    pdf.add_page()
    para("More on memory: buffers are never shared.")
    return bytes(pdf.output())


@pytest.mark.parametrize("outline", [True, False], ids=["outline", "numbered-headings"])
def test_pdf_sections_become_heading_paths_at_their_heading_lines(tmp_path, outline):
    [doc] = load_documents([write(tmp_path / "foo.pdf", _outlined_pdf(outline))])
    assert doc.metadata["sections"] == ("outline" if outline else "numbered headings")
    places = [(doc.text[offset:].split("\n", 1)[0], place) for offset, place in doc.positions]
    assert places == [
        ("1 Introduction", {"page": 1, "headings": ["1 Introduction"]}),
        ("2 Usage", {"page": 2, "headings": ["2 Usage"]}),
        ("2.1 Memory management", {"page": 2, "headings": ["2 Usage", "2.1 Memory management"]}),
        ("More on memory: buffers are never shared.", {"page": 3, "headings": ["2 Usage", "2.1 Memory management"]}),
    ]


def test_chunks_are_cut_at_sections_and_titled_by_them(tmp_path):
    [doc] = load_documents([write(tmp_path / "foo.pdf", _outlined_pdf())])
    chunks = chunk_documents([doc], chunk_tokens=256, overlap=32)
    # every chunk lies in one section (one chunk per section here: each is short)
    assert [c.title for c in chunks] == ["Libfoo manual › 1 Introduction", "Libfoo manual › 2 Usage",
                                         "Libfoo manual › 2 Usage › 2.1 Memory management"]
    assert chunks[1].text.startswith("2 Usage") and "Memory is freed" not in chunks[1].text
    assert chunks[2].metadata["location"] == {"file": "foo.pdf", "page": 2, "page_end": 3,
                                              "headings": ["2 Usage", "2.1 Memory management"]}
    assert all(c.metadata["doc"]["title"] == "Libfoo manual" for c in chunks)


def test_a_bare_heading_line_joins_the_section_after_it():
    text = "Guide\n\nSetup\n\nInstall it with pip and run the tests before you start."
    doc = Document(id="g.md", title="Guide", text=text, location={"file": "g.md"},
                   positions=((0, {"headings": ["Guide"]}), (7, {"headings": ["Guide", "Setup"]})))
    [chunk] = chunk_documents([doc], chunk_tokens=64, overlap=8)
    assert chunk.text == text and chunk.title == "Guide › Setup"  # named by the section with the text
    assert chunk.metadata["location"]["headings"] == ["Guide", "Setup"]


def test_documents_without_sections_keep_their_title_and_chunks():
    doc = Document(id="d", title="Paris", text="Paris is the capital of France. " * 30)
    chunks = chunk_documents([doc], chunk_tokens=64, overlap=8)
    assert len(chunks) > 1 and {c.title for c in chunks} == {"Paris"}
    assert all("title" not in c.metadata["doc"] for c in chunks)


def test_section_title_keeps_the_document_and_the_two_innermost_headings():
    assert section_title("Doc", ["A", "B", "C"]) == "Doc › B › C"
    assert section_title("Doc", ["doc", "B"]) == "Doc › B"
    assert section_title("Doc", []) == "Doc"
    assert len(section_title("Doc", ["x" * 500])) < 100


def test_numbered_headings_skip_contents_pages_lists_and_table_rows():
    pages = [
        "Contents\n1 Scope 3\n2 Terms 4\n2.1 Keys 4",  # a table of contents: trailing page numbers
        "1 Scope\nThe rules apply.\n1. Read them first.\n2 Apply them.",  # "2 Apply them." ends like a sentence
        "2 Terms\n2.1 Keys\nLayout:\n4 CARD32 OFFSET\n4 CARD32 LENGTH\n9 Index\n2.2 Values",
    ]
    assert numbered_headings(pages) == [(1, 1, "1 Scope"), (2, 1, "2 Terms"), (2, 2, "2.1 Keys"),
                                        (2, 2, "2.2 Values")]


def test_numbered_headings_take_appendices_after_chapters():
    pages = ["1 Intro\nText.", "Appendix A Copying\nA.1 Licence\nText."]
    assert numbered_headings(pages) == [(0, 1, "1 Intro"), (1, 1, "Appendix A Copying"), (1, 2, "A.1 Licence")]


def test_a_section_not_found_on_its_page_starts_at_the_page():
    marks = section_marks(["Intro.", "Text without the heading."], [(1, 1, "Usage")])
    assert marks == [[(0, [])], [(0, ["Usage"])]]


def test_section_count_is_bounded():
    pages = ["\n".join(f"{i} Section {i}" for i in range(1, 50)) + "\nText."] * 3
    assert len(numbered_headings(pages)) <= MAX_SECTIONS


def test_printed_page_numbers_are_kept_beside_the_page_and_cited(tmp_path):
    """A manual numbers its front matter i, ii and its body from 1: citations print what the reader sees."""
    from fpdf import FPDF

    from ragnet.programs.citations import citation, source_line

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for i, text in enumerate(["Title page of the manual.", "Preface: how to read this manual.",
                              "Chapter one starts here and explains the tool.", "Chapter one goes on."]):
        pdf.add_page()
        if i == 0:
            pdf.set_page_label("r")  # i, ii
        elif i == 2:
            pdf.set_page_label("D", label_start=1)  # 1, 2
        pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    [doc] = load_documents([write(tmp_path / "m.pdf", bytes(pdf.output()))])
    assert [place.get("label") for _, place in doc.positions] == ["i", "ii", "1", "2"]
    [last] = [c for c in chunk_documents([doc], chunk_tokens=16, overlap=0) if "goes on" in c.text]
    loc = last.metadata["location"]
    assert (loc["page"], loc.get("page_end"), loc["page_label"], loc.get("page_label_end")) == (3, 4, "1", "2")
    assert source_line(citation(last)).endswith("p. 1–2")


RFC = ("Network Working Group                                        J. Doe\n"
       "Request for Comments: 9999                                   Example\n\n"
       "                 The Example Transfer Protocol\n\n"
       "Table of Contents\n\n"
       "   1.  Introduction ....................................... 2\n"
       "   2.  Commands ........................................... 2\n\n"
       "1.  Introduction\n\n"
       "   The protocol moves files between hosts. Setup takes three steps:\n\n"
       "   1. Install the server.\n   2. Open port 9999.\n   3. Start it.\n\n"
       "Doe                          Informational                     [Page 1]\n\f"
       "RFC 9999                 Example Transfer Protocol            May 2026\n\n"
       "2.  Commands\n\n"
       "2.1.  GET\n\n   The GET command fetches a file.\n\n"
       "2.2.  PUT\n\n   The PUT command stores a file. The default timeout is 30 seconds.\n")


def test_a_plain_text_manual_gets_its_numbered_sections(tmp_path):
    """An RFC-like .txt: numbered headings (across a form feed) give each chunk its section path;
    the contents lines, a numbered list and the page header are not headings, and the title stays
    the first line, its spaced-out columns joined."""
    from ragnet.corpus.formats.plain_text import heading_positions

    write(tmp_path / "rfc.txt", RFC.encode())
    [doc] = load_documents([tmp_path])
    assert doc.title == "Network Working Group J. Doe"
    headings = heading_positions(doc.text)
    paths = [place["headings"] for _, place in headings]
    assert paths == [["1 Introduction"], ["2 Commands"], ["2 Commands", "2.1 GET"], ["2 Commands", "2.2 PUT"]]
    for offset, place in headings:  # each starts at its heading's line, form feed counted
        assert doc.text[offset:].startswith(place["headings"][-1].split(" ", 1)[0])
    assert {k: v for _, place in doc.positions for k, v in place.items() if k == "headings"} == {"headings": paths[-1]}
    chunks = chunk_documents([doc], chunk_tokens=64, overlap=8)
    put = next(c for c in chunks if "default timeout" in c.text)
    assert put.title == "Network Working Group J. Doe › 2 Commands › 2.2 PUT"
    assert put.metadata["location"]["headings"] == ["2 Commands", "2.2 PUT"]
    assert put.metadata["location"]["page"] == 2  # the form feed starts page 2


def test_a_paged_plain_text_loses_its_running_lines_and_cites_its_pages(tmp_path):
    """An RFC's header and footer ("RFC 9999 … May 2026", "Doe … [Page 3]") on every page leave
    the text, so no chunk carries them; chunks cite the pages their text is on."""
    body = ["1.  Introduction\n\n   The protocol moves files between two hosts.\n",
            "   It runs over TCP and\n",
            "   needs no login. The default port is 9999.\n\n2.  Commands\n\n   GET fetches a file.\n",
            "   PUT stores a file.\n"]
    pages = [(f"RFC 9999                 Example Protocol                 May 2026\n\n" if n > 1 else "")
             + text + f"\nDoe                          Informational                     [Page {n}]\n"
             for n, text in enumerate(body, start=1)]
    write(tmp_path / "rfc9999.txt", "\f\n".join(pages).encode())
    [doc] = load_documents([tmp_path])
    assert "[Page" not in doc.text and "May 2026" not in doc.text
    chunks = chunk_documents([doc], chunk_tokens=24, overlap=0)
    port = next(c for c in chunks if "default port" in c.text)
    assert (port.metadata["location"]["page"], port.metadata["location"]["headings"]) == (3, ["1 Introduction"])
    get = next(c for c in chunks if "GET fetches" in c.text)
    assert (get.metadata["location"]["page"], get.metadata["location"]["headings"]) == (3, ["2 Commands"])


@pytest.mark.parametrize("text", [
    "Steps:\n\n1. Download it\n2. Unpack it\n3. Run it\n",  # a numbered list: one block
    "Notes\n\n1 Overview\n\nThe tool copies files.\n",  # a single numbered line is not a structure
    "Plain prose with no headings at all. " * 20,
])
def test_plain_text_without_numbered_sections_has_none(tmp_path, text):
    write(tmp_path / "notes.txt", text.encode())
    [doc] = load_documents([tmp_path])
    assert doc.positions == ()
    assert {c.title for c in chunk_documents([doc], chunk_tokens=64, overlap=8)} == {doc.title}


def test_a_plain_text_appendix_heading_and_the_headings_after_it_are_sections():
    from ragnet.corpus.formats.plain_text import numbered_heading_positions

    text = "Guide\n\n1 Intro\n\nText.\n\nAppendix A. Copying\n\nTerms.\n\nA.1 Licence\n\nMore terms."
    positions = numbered_heading_positions(text)
    assert [place["headings"] for _, place in positions] == [
        ["1 Intro"], ["Appendix A Copying"], ["Appendix A Copying", "A.1 Licence"]]
    assert [text[offset:].split("\n", 1)[0] for offset, _ in positions] == ["1 Intro", "Appendix A. Copying",
                                                                           "A.1 Licence"]


MAN_PAGE = ("CP(1)                          User Commands                         CP(1)\n\n"
            "NAME\n       cp - copy files and directories\n\n"
            "SYNOPSIS\n       cp [OPTION]... SOURCE DEST\n\n"
            "DESCRIPTION\n       Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY.\n\n"
            "   Backups\n       A backup is made of each existing destination file before it is\n"
            "       overwritten, named with the suffix that SIMPLE_BACKUP_SUFFIX sets.\n\n"
            "       -b     like --backup but does not accept an argument\n\n"
            "EXIT STATUS\n       0      Success, every file was copied to its place.\n\n"
            "       1      Some files could not be copied, and the rest were.\n\n"
            "GNU coreutils 9.1              September 2022                        CP(1)\n")


def test_a_man_page_saved_as_text_gets_its_sections_and_its_name_as_title(tmp_path):
    """``man cp > cp.txt``: the sections at column 0 and subsections at column 3 give the chunks
    their path; the running head and foot leave the text; the NAME line titles it. The exit
    statuses ("1      Some files…", numbered lines in the body) are not sections."""
    write(tmp_path / "cp.txt", MAN_PAGE.encode())
    [doc] = load_documents([tmp_path])
    assert doc.title == "cp - copy files and directories"
    assert "User Commands" not in doc.text and "September 2022" not in doc.text
    assert [place["headings"] for _, place in doc.positions] == [
        ["NAME"], ["SYNOPSIS"], ["DESCRIPTION"], ["DESCRIPTION", "Backups"], ["EXIT STATUS"]]
    for offset, place in doc.positions:
        assert doc.text[offset:].startswith(place["headings"][-1])
    chunks = chunk_documents([doc], chunk_tokens=48, overlap=0)
    backup = next(c for c in chunks if "SIMPLE_BACKUP_SUFFIX" in c.text)
    assert backup.title == "cp - copy files and directories › DESCRIPTION › Backups"


@pytest.mark.parametrize("text", [
    # flush-left prose with short lines: its body is column 0, so nothing sits left of it
    "Notes\n\nThe tool copies every file it is given.\n\nUsage\n\nRun it with the files to copy.\n" * 3,
    # an indented quotation in a letter: one short flush-left line is not an outline
    "Dear team,\n\n    The tool copies every file it is given, and keeps its mode.\n"
    "    It never follows a symbolic link unless it is told to.\n\nRegards\n",
])
def test_text_that_is_not_an_outline_gets_no_outline_sections(tmp_path, text):
    from ragnet.corpus.formats.plain_text import outline_heading_positions

    assert outline_heading_positions(text) == ()
    write(tmp_path / "notes.txt", text.encode())
    [doc] = load_documents([tmp_path])
    assert doc.positions == () and doc.text.startswith(text.split("\n", 1)[0])


def test_a_text_that_only_looks_like_a_man_page_keeps_its_lines():
    from ragnet.corpus.formats.plain_text import man_page_parts

    text = "CP(1) and LS(1) are both documented below.\n\nNAME\n    cp\n"
    assert man_page_parts(text) == (text, None)


def test_a_paged_text_whose_pages_are_all_running_lines_is_kept_whole():
    """Slides saved as text, a title and a page number a page: every line looks running, and
    removing them would leave nothing, so each page is kept whole (as a PDF's is) and cited."""
    from ragnet.corpus.formats.plain_text import text_structure

    text = "\f".join(f"Roadmap\n{n}\n" for n in range(1, 5))
    kept, title, positions = text_structure(text)
    assert kept == text and title is None
    assert [place["page"] for _, place in positions] == [1, 2, 3, 4]


def test_a_huge_first_line_is_not_read_as_a_man_page_head():
    from ragnet.corpus.formats.plain_text import man_page_parts

    text = "CP(1)" + " " * 100_000 + "x CP(1)\n\nNAME\n       cp - copy\n\nmore\n"
    assert man_page_parts(text) == (text, None)


def _sized_pdf(blocks: list[list[tuple[int, str]]]) -> bytes:
    """A PDF without an outline or numbered headings: each page's ``(type size, text)`` blocks."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Widget Manual")
    for page in blocks:
        pdf.add_page()
        for size, text in page:
            pdf.set_font("Helvetica", size=size)
            pdf.multi_cell(0, size * 0.6, text, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def test_a_pdf_without_outline_or_numbers_takes_its_sections_from_type_sizes(tmp_path):
    """Headings set larger than the body ("Installation" at 14 pt over 11 pt text) are sections,
    the largest size level 1; the title, set once at the largest size, is not one."""
    body = "Run the installer and follow the steps it shows on the screen. " * 3
    write(tmp_path / "widget.pdf", _sized_pdf([
        [(20, "Widget Manual"), (14, "Installation"), (11, body), (13, "Requirements"),
         (11, "It needs two gigabytes of memory and a network. " * 2)],
        [(14, "Configuration"), (11, "The default port is 8080. Change it in widget.conf. " * 3)]]))
    [doc] = load_documents([tmp_path])
    assert doc.metadata["sections"] == "type sizes"
    assert [place.get("headings") for _, place in doc.positions] == [
        None, ["Installation"], ["Installation", "Requirements"], ["Configuration"]]
    port = next(c for c in chunk_documents([doc], chunk_tokens=64, overlap=0) if "8080" in c.text)
    assert port.title == "Widget Manual › Configuration" and port.metadata["location"]["page"] == 2


def test_larger_type_that_is_not_a_heading_gives_no_sections(tmp_path):
    """One larger line (a title alone) is no structure, and a larger line printed on every page
    is a running head, not a section."""
    body = "The default port is 8080 and it can be changed in the file. " * 3
    write(tmp_path / "title.pdf", _sized_pdf([[(20, "Widget Manual"), (11, body)], [(11, body)]]))
    write(tmp_path / "running.pdf", _sized_pdf([[(14, "Widget news"), (11, body)]] * 3))
    for doc in load_documents([tmp_path]):
        assert "sections" not in doc.metadata and all("headings" not in p for _, p in doc.positions), doc.id
