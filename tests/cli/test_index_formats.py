"""``ragnet index`` on a folder of PDF, HTML, DOCX and Markdown files: chunk locations survive the
index's save and load and show in ``ragnet search --json``; every bad file kind is one line and
exit status 2, or with ``--on-error skip`` a summary and an index of the rest (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from tests.corpus.make_files import (HTML_PAGE, PAGES, docx_bytes, encrypted_pdf, image_only_pdf, pdf_bytes, write,
                                     zip_without_document)


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def good_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    write(folder / "budget.pdf", pdf_bytes(PAGES))
    write(folder / "web" / "road.html", HTML_PAGE)
    write(folder / "handbook.docx", docx_bytes())
    write(folder / "guide.md", "# Guide\n\nThe guide explains leave rules.\n\n## Forms\n\nUse form A7 for leave.\n")
    return folder


BAD = {
    "locked.pdf": lambda: encrypted_pdf(pdf_bytes(PAGES)),
    "scan.pdf": image_only_pdf,
    "cut.pdf": lambda: pdf_bytes(PAGES)[:800],
    "old.docx": lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 32,
    "archive.docx": zip_without_document,
    "menu.html": lambda: "<html><body><nav>Home</nav><footer>(c)</footer></body></html>",
    "empty.pdf": lambda: b"",
}


def test_index_a_folder_of_formats_keeps_pages_and_headings_through_save_and_load(tmp_path):
    folder = good_folder(tmp_path)
    out = tmp_path / "idx"
    result = run("index", str(folder), "--out", str(out), "--no-sentences", "--chunk-tokens", "32", "--overlap", "8")
    assert result.exit_code == 0, result.output
    assert "indexed 4 documents" in result.output and "skipped" not in result.output

    from ragnet.index import Index

    chunks = list(Index.load(out).chunks)
    by_file: dict[str, list[dict]] = {}
    for c in chunks:
        by_file.setdefault(c.metadata["location"]["file"], []).append(c.metadata["location"])
    assert set(by_file) == {"budget.pdf", "web/road.html", "handbook.docx", "guide.md"}
    covered = set().union(*(range(loc["page"], loc.get("page_end", loc["page"]) + 1) for loc in by_file["budget.pdf"]))
    assert covered == {1, 2, 3} and any("page_end" in loc for loc in by_file["budget.pdf"])
    assert all("headings" not in loc for loc in by_file["budget.pdf"])
    for name, top in (("web/road.html", "Road report"), ("handbook.docx", "Staff handbook")):
        paths = [loc["headings"] for loc in by_file[name]]
        assert paths[0] == [top] and all(p[0] == top for p in paths) and max(map(len, paths)) >= 2, paths
    assert by_file["guide.md"][0] == {"file": "guide.md", "headings": ["Guide"]}

    found = run("search", "hospitals received million", "--index", str(out), "--json", "-k", "1")
    assert found.exit_code == 0, found.output
    [hit] = json.loads(found.output)
    loc = hit["metadata"]["location"]
    assert hit["doc_id"] == "budget.pdf" and "Hospitals received" in hit["text"]
    assert loc["file"] == "budget.pdf" and loc["page"] <= 2 <= loc.get("page_end", loc["page"])
    assert set(loc) <= {"file", "page", "page_end"}
    assert hit["metadata"]["doc"]["date"] == "2019-03-04" and "year" not in hit["metadata"]["doc"]


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_bad_file_kind_is_one_line_and_exit_status_2(tmp_path, name):
    path = write(tmp_path / name, BAD[name]())
    out = tmp_path / "idx"
    result = run("index", str(path), "--out", str(out), "--no-sentences")
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: "), result.output
    assert not out.exists()


def test_fail_is_the_default_it_lists_every_bad_file_and_indexes_nothing(tmp_path):
    folder = good_folder(tmp_path)
    for name, make in BAD.items():
        write(folder / "bad" / name, make())
    out = tmp_path / "idx"
    result = run("index", str(folder), "--out", str(out), "--no-sentences")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"error: argument 'paths': {len(BAD)} problems in the input; nothing was indexed:" in result.output
    for name in BAD:
        assert f"  {folder / 'bad' / name}: " in result.output
    assert not out.exists()


def test_skip_indexes_the_readable_files_and_summarises_the_others(tmp_path):
    folder = good_folder(tmp_path)
    for name, make in BAD.items():
        write(folder / "bad" / name, make())
    out = tmp_path / "idx"
    result = run("index", str(folder), "--out", str(out), "--no-sentences", "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "read 4 files (4 documents); skipped 7 files:" in result.output
    assert f"  encrypted PDF: {folder / 'bad' / 'locked.pdf'}\n" in result.output
    assert f"  not a DOCX file: {folder / 'bad' / 'archive.docx'}, {folder / 'bad' / 'old.docx'}\n" in result.output
    assert f"  file is empty: {folder / 'bad' / 'empty.pdf'}\n" in result.output
    assert "indexed 4 documents as" in result.output and "(7 unreadable file(s) skipped, listed above)" in result.output

    from ragnet.index import Index

    assert {c.doc_id for c in Index.load(out).chunks} == {"budget.pdf", "web/road.html", "handbook.docx", "guide.md"}


def test_skip_with_only_bad_files_is_exit_status_2(tmp_path):
    write(tmp_path / "docs" / "scan.pdf", image_only_pdf())
    result = run("index", str(tmp_path / "docs"), "--out", str(tmp_path / "idx"), "--on-error", "skip")
    assert result.exit_code == 2 and "every file was skipped" in result.output and "scan.pdf" in result.output


def test_on_error_takes_fail_or_skip(tmp_path):
    result = run("index", str(tmp_path), "--out", str(tmp_path / "idx"), "--on-error", "ignore")
    assert result.exit_code == 2
    assert "error: argument 'on-error': choose one of fail, skip, got 'ignore'" in result.output


def test_a_file_over_a_bound_is_one_line_and_exit_2_or_counted_under_skip(tmp_path):
    """Issue 47: a bound on the work a file costs (here a PDF whose pages share one large content
    stream) is named in one line with the file, like any unreadable file."""
    from tests.corpus.hostile_files import pdf_shared_stream

    docs = tmp_path / "docs"
    write(docs / "shared.pdf", pdf_shared_stream(5, 400_000))
    write(docs / "ok.md", "# Fine\n\nA small note about roads.\n")
    result = run("index", str(docs), "--out", str(tmp_path / "idx"), "--max-file-mb", "1", "--no-sentences")
    assert result.exit_code == 2
    assert result.output == (f"error: {docs}/shared.pdf: too much to read (--max-file-mb 1): page 1 holds 0.4 MB "
                             "of drawing instructions, over the 0.1 MB a page may hold (a tenth of the bound); raise "
                             "--max-file-mb (load_documents(max_file_mb=...)) if it is a real document\n")
    result = run("index", str(docs), "--out", str(tmp_path / "idx"), "--max-file-mb", "1", "--on-error", "skip",
                 "--no-sentences")
    assert result.exit_code == 0, result.output
    assert f"skipped 1 file:\n  too much to read: {docs}/shared.pdf\n" in result.output
    assert "indexed 1 documents" in result.output


def test_max_file_mb_help_names_what_it_bounds():
    import inspect

    from ragnet.cli.index_search import index

    text = inspect.signature(index).parameters["max_file_mb"].default.help
    for bound in ("on disk", "DOCX that unpacks", "PDF whose pages", "HTML page"):
        assert bound in text
