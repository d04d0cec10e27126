"""The real-document dev set: its folder builds from the installed documentation, every committed
question passes the checker against it, and the checker catches the mistakes it exists for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.realdocs import build, check, info, places, writers
from ragnet.corpus.formats.markdown import heading_positions
from ragnet.corpus.types import Document
from tests.required import skip_or_fail

# --- the checker, on two tiny documents -------------------------------------------------------------

PDF_TEXT = "Intro page.\n\nThe default weight is 50 for globs.\n\nSee Section 2 for the weight of globs."
PDF = Document(id="m.pdf", title="M", text=PDF_TEXT, location={"file": "m.pdf"},
               positions=((0, {"page": 1}), (PDF_TEXT.index("The"), {"page": 2}), (PDF_TEXT.index("See"), {"page": 3})))
MD_TEXT = ("# Tool\n\n## OPTIONS\n\n`-k`\nKeep going after errors.\n\n"
           "## EXIT STATUS\n\nIt exits with 1,024 on failure.\n")
MD = Document(id="t.md", title="Tool", text=MD_TEXT, location={"file": "t.md"}, positions=heading_positions(MD_TEXT))
DOCS = {"m.pdf": PDF, "t.md": MD}


def _question(**changes) -> dict:
    gold = [{"file": "m.pdf", "page": 2, "quote": "The default weight is 50 for globs.", "role": "answer"}]
    question = {"id": "rd-001", "question": "What is the default glob weight?", "answers": ["50"], "kind": "numeric",
                "gold": gold}
    question.update(changes)
    return question


def test_the_tiny_documents_are_laid_out_as_the_tests_assume():
    assert places.page_text(PDF, 2) == "The default weight is 50 for globs."
    assert places.section_text(MD, ["Tool", "OPTIONS"]).startswith("## OPTIONS")


def test_a_right_question_has_no_problem():
    assert check.check_question(_question(), DOCS) == []


def test_a_wrong_page_is_caught():
    gold = [{"file": "m.pdf", "page": 3, "quote": "The default weight is 50 for globs.", "role": "answer"}]
    problems = check.check_question(_question(gold=gold), DOCS)
    assert len(problems) == 1 and "not at page 3" in problems[0] and "(at 2)" in problems[0]


def test_a_quote_that_is_not_on_its_page_is_caught():
    gold = [{"file": "m.pdf", "page": 2, "quote": "The default weight is 60 for globs.", "role": "answer"}]
    assert "quote not found" in check.check_question(_question(gold=gold), DOCS)[0]


def test_an_answer_missing_from_its_quote_is_caught():
    problems = check.check_question(_question(answers=["100"]), DOCS)
    assert problems == ["no answer (100) occurs in the answer place's quote"]


def test_an_answer_inside_a_longer_word_does_not_count():
    problems = check.check_question(_question(answers=["5"]), DOCS)
    assert problems and "no answer" in problems[0]


def test_sections_numbers_and_case_are_normalised():
    gold = [{"file": "t.md", "section": ["Tool", "EXIT STATUS"], "quote": "it EXITS with 1,024  on failure.",
             "role": "answer"}]
    assert check.check_question(_question(answers=["1024"], gold=gold), DOCS) == []


def test_a_wrong_section_is_caught():
    gold = [{"file": "t.md", "section": ["Tool", "OPTIONS"], "quote": "It exits with 1,024 on failure.",
             "role": "answer"}]
    assert "not at headings" in check.check_question(_question(answers=["1024"], gold=gold), DOCS)[0]


def test_a_two_part_question_with_one_place_is_caught():
    problems = check.check_question(_question(kind="two-part"), DOCS)
    assert problems == ["a two-part question needs a link place besides its answer place"]


def test_a_two_part_question_whose_link_is_the_same_page_is_caught():
    gold = _question()["gold"] + [{"file": "m.pdf", "page": 2, "quote": "The default weight is 50", "role": "link"}]
    problems = check.check_question(_question(kind="two-part", gold=gold), DOCS)
    assert problems == ["a two-part question's link place must be on another page or in another section"]


def test_a_two_part_question_with_a_link_elsewhere_passes():
    gold = _question()["gold"] + [{"file": "m.pdf", "page": 3, "quote": "See Section 2 for the weight", "role": "link"}]
    assert check.check_question(_question(kind="two-part", gold=gold), DOCS) == []


def test_two_answer_places_and_unknown_files_are_caught():
    gold = _question()["gold"] * 2 + [{"file": "x.pdf", "page": 1, "quote": "No such file.", "role": "answer"}]
    problems = check.check_question(_question(gold=gold), DOCS)
    assert "gold file 'x.pdf' is not in the folder" in problems
    assert "needs exactly one answer place, has 3" in problems


def test_set_rules_ids_size_and_two_part_share():
    questions = [_question(), _question()]
    problems = check.check_questions(DOCS, questions)
    assert "rd-001: id used 2 times" in problems
    assert any(p.startswith("set: 2 questions, fewer than 80") for p in problems)
    assert any("two-part, fewer than 25%" in p for p in problems)
    assert any("m.pdf holds 2 of 2 answers" in p for p in problems)


def test_the_committed_questions_are_well_formed():
    questions = check.load_questions(check.QUESTIONS)
    assert len(questions) >= check.MIN_QUESTIONS
    assert len({q["id"] for q in questions}) == len(questions)
    assert sum(q["kind"] == "two-part" for q in questions) >= check.MIN_TWO_PART * len(questions)
    first = questions[:40]  # strategies are compared on the first 40: they must be a mix too
    assert len({g["file"] for q in first for g in q["gold"]}) >= 10
    assert sum(q["kind"] == "two-part" for q in first) >= 10
    # 300 questions over 15 real PDF manuals of 4 producers, PDFs rendered here under a quarter
    assert check.check_composition(questions) == []


def test_the_sets_make_up_is_checked():
    from benchmarks.realdocs.build import Source

    sources = [Source("pdf/a.pdf", "copy", "/a.pdf", producer="LaTeX"), Source("gnu/b.pdf", "pdf", "/b.info")]
    questions = [{"id": f"rd-{i:03d}", "gold": [{"file": "gnu/b.pdf" if i % 2 else "pdf/a.pdf", "role": "answer"}]}
                 for i in range(10)]
    problems = check.check_composition(questions, sources)
    assert "set: 10 questions, fewer than 300" in problems
    assert "set: answers in 1 real PDF manuals, fewer than 15" in problems
    assert "set: real PDFs from 1 producers (LaTeX), fewer than 4" in problems
    assert "set: 5 of 10 answers in PDFs rendered here, 25% or more" in problems


# --- the writers, on a tiny info manual -------------------------------------------------------------

INFO = """This is demo.info.

\x1f
File: demo.info,  Node: Top,  Next: Running,  Up: (dir)

Demo Tool
*********

This manual documents Demo 1.0.

* Menu:

* Running::

\x1f
File: demo.info,  Node: Running,  Next: Limits,  Prev: Top,  Up: Top

1 Running demo
**************

Demo reads its input and writes a report.  For its limits, *note
Limits::.

‘-k’
‘--keep’
     Keep going after an error, as described in the section on
     limits of the tool (*note Limits::).

     demo -k input.txt

\x1f
File: demo.info,  Node: Limits,  Prev: Running,  Up: Top

1.1 Limits
==========

A report holds at most 512 lines.

\x1f
Tag Table:
Node: Top\x7f20
Node: Running\x7f200
Node: Limits\x7f600
\x1f
End Tag Table
"""


@pytest.fixture
def demo_manual(tmp_path: Path) -> info.Manual:
    path = tmp_path / "demo.info"
    path.write_text(INFO, encoding="utf-8")
    return info.read_manual(path)


def test_an_info_manual_is_parsed_into_sections_and_blocks(demo_manual):
    assert demo_manual.title == "Demo Tool"
    assert [(s.title, s.level, s.number) for s in demo_manual.sections] == [("1 Running demo", 0, "1"),
                                                                          ("1.1 Limits", 1, "1.1")]
    kinds = [(b.kind, b.text) for b in demo_manual.sections[0].blocks]
    assert kinds[1:4] == [("label", "‘-k’"), ("label", "‘--keep’"),
                          ("prose", "Keep going after an error, as described in the section on limits of the tool "
                                    "(*note Limits::).")]
    assert kinds[4] == ("pre", "demo -k input.txt")


def test_cross_references_are_written_as_a_printed_manual_writes_them(demo_manual):
    text = demo_manual.sections[0].blocks[0].text
    assert info.resolve_xrefs(text, demo_manual, {"Limits": 3}.get).endswith(
        "For its limits, Section 1.1 [Limits], page 3.")
    assert info.resolve_xrefs("(*note Limits::)", demo_manual, lambda node: None) == "(see Section 1.1 [Limits])"


def test_the_pdf_writer_is_deterministic_and_its_outline_optional(demo_manual):
    import io

    import pypdf

    first, pages = writers.write_pdf(demo_manual, outline=True)
    again, _ = writers.write_pdf(demo_manual, outline=True)
    flat, _ = writers.write_pdf(demo_manual, outline=False)
    assert first == again and pages == 2  # a title page, then chapter 1 with its section
    outline = pypdf.PdfReader(io.BytesIO(first)).outline
    assert [item.title for item in outline if not isinstance(item, list)] == ["1 Running demo"]
    assert pypdf.PdfReader(io.BytesIO(flat)).outline == []
    text = " ".join(pypdf.PdfReader(io.BytesIO(first)).pages[1].extract_text().split())
    assert "(see Section 1.1 [Limits], page 2)" in text and "Demo Tool" in text  # and the running head


def test_the_docx_writer_is_deterministic_with_heading_styles(demo_manual, tmp_path):
    import ragnet

    data = writers.write_docx(demo_manual)
    assert data == writers.write_docx(demo_manual)
    (tmp_path / "demo.docx").write_bytes(data)
    doc = ragnet.load_documents(tmp_path / "demo.docx")[0]
    assert ["Demo Tool", "1 Running demo", "1.1 Limits"] in places.sections(doc)


def test_the_text_writer_lays_out_numbered_headings_that_the_loader_reads_as_sections(demo_manual, tmp_path):
    import ragnet

    data = writers.write_text(demo_manual)
    assert data == writers.write_text(demo_manual)
    text = data.decode("utf-8")
    assert text.startswith("Demo Tool\n*********\n") and "\n1.1 Limits\n==========\n" in text
    assert "(see Section 1.1 [Limits])" in text and "\n          demo -k input.txt\n" in text
    (tmp_path / "demo.txt").write_bytes(data)
    doc = ragnet.load_documents(tmp_path / "demo.txt")[0]
    assert doc.title == "Demo Tool"
    assert [place["headings"] for _, place in doc.positions] == [["1 Running demo"], ["1 Running demo", "1.1 Limits"]]


def test_the_plain_text_study_moves_gold_places_to_the_text_files():
    from benchmarks.studies.plain_text_manuals import text_questions

    q = {"id": "q", "question": "?", "answers": ["2"], "gold": [
        {"file": "gnu/grep.docx", "section": ["grep", "2 Invoking"], "quote": "It is 2."},
        {"file": "gnu/wget.pdf", "page": 9, "quote": "See it.", "role": "link"}]}
    [moved] = text_questions([q, {**q, "gold": [{"file": "man/tar.md", "section": ["tar"]}]}, {**q, "gold": []}])
    assert moved["gold"] == [{"file": "gnu/grep.txt", "quote": "It is 2.", "role": "answer"},
                             {"file": "gnu/wget.txt", "quote": "See it.", "role": "link"}]


# --- the real folder ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    build.install_packages(log=lambda line: None)  # the documentation packages, as the build does (root only)
    missing = build.missing_sources()
    if missing:
        skip_or_fail(f"the dev set's sources are not installed here: {', '.join(missing)}")
    out = tmp_path_factory.mktemp("realdocs") / "realdocs-dev"
    build.build(out, log=lambda line: None)
    return out


@pytest.mark.slow
def test_the_folder_is_built_with_every_source_and_its_manifest(folder):
    manifest = json.loads((folder / build.MANIFEST).read_text())
    assert [f["file"] for f in manifest["files"]] == [s.out for s in build.SOURCES]
    assert all((folder / s.out).is_file() for s in build.SOURCES)
    assert 3000 <= manifest["pages"] <= 4000  # SystemTap's 781-page tapset reference is the largest
    assert manifest["generators"]["fpdf2"] != "missing"


@pytest.mark.slow
def test_every_committed_question_passes_the_checker(folder):
    problems = check.check_questions(places.load(folder), check.load_questions(check.QUESTIONS))
    assert problems == []
