"""``ragnet eval report`` writes only where ``ragnet eval`` may, and reads malformed run folders
as named errors (issue 47, items 8 and 9).

Before: ``--html RUN/summary.json`` destroyed the run, a user's ``mine.html`` was replaced, a
folder gave an ``IsADirectoryError`` traceback, and ``--out`` on a folder holding a copied
``summary.json`` and ``results.jsonl`` but no marker overwrote the user's ``report.html``;
``summary.json`` of ``{"meta": {}}`` gave a ``KeyError``, and rows with ``passages: "abc"``,
``context: 5``, ``usage: "x"`` or ``f1: "x"`` tracebacks.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragnet.cli import app

ROW = {"strategy": "basic", "id": "q1", "question": "Capital of France?", "answers": ["Paris"], "answer": "Paris",
       "em": 1.0, "f1": 1.0, "llm_match": None, "gold_all": 1.0, "gold_fraction": 1.0, "context": ["Paris#0"],
       "evidence": ["Paris#0"], "passages": [{"id": "Paris#0", "title": "Paris", "text": "Paris is the capital."}],
       "gold": {"documents": ["Paris"], "sentences": [["Paris", 0, "Paris is the capital."]]},
       "usage": {"lm_calls": 1, "seconds": 0.5}, "trace": [{"step": "search", "query": "capital"}],
       "judge": {"rationale": "same"}, "error": None, "error_kind": None, "type": "bridge", "level": "easy"}
SUMMARY = {"meta": {"set": "toy", "mode": "pooled", "split": "dev", "questions": 1,
                    "strategies": [{"label": "basic"}]}, "strategies": {}}
MINE = "<html><body>my own page</body></html>"


def run_folder(path: Path, rows=(ROW,), summary=SUMMARY, *, marked: bool = True, report_md: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if marked:
        (path / ".ragnet-eval").write_text('{"written_by": "ragnet eval"}')
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if report_md:
        (path / "report.md").write_text("# ragnet eval: toy\n\nbasic: EM 1.0\n")
    return path


def report(*args: str):
    return CliRunner().invoke(app, ["eval", "report", *args], catch_exceptions=False)


# ---------------------------------------------------------------- item 8: where the page may go


def test_the_run_folders_own_page_and_a_new_file_are_written(tmp_path):
    run = run_folder(tmp_path / "run")
    assert report("--out", str(run)).exit_code == 0
    assert report("--out", str(run)).exit_code == 0  # its own page, again
    page = tmp_path / "elsewhere" / "page.html"
    assert report("--out", str(run), "--html", str(page)).exit_code == 0
    assert report("--out", str(run), "--html", str(page)).exit_code == 0  # a page it wrote
    assert 'name="generator" content="ragnet eval report"' in page.read_text()


@pytest.mark.parametrize("target", ["summary.json", "results.jsonl", "report.md", "mine.html"])
def test_html_never_replaces_a_file_ragnet_did_not_write(tmp_path, target):
    run = run_folder(tmp_path / "run")
    (run / "mine.html").write_text(MINE)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    result = report("--out", str(run), "--html", str(run / target))
    assert result.exit_code == 2
    assert result.output == (f"error: argument 'html': {run / target} exists and is not a page ragnet eval wrote; "
                             "ragnet eval report writes only a new file, or report.html in a ragnet eval run folder: "
                             "choose another path (nothing was changed)\n")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_html_naming_a_folder_is_one_line(tmp_path):
    run = run_folder(tmp_path / "run")
    result = report("--out", str(run), "--html", str(tmp_path))
    assert result.exit_code == 2  # before: IsADirectoryError traceback
    assert result.output == (f"error: argument 'html': {tmp_path} is a folder; give the path of the page to write "
                             "(a new .html file)\n")


def test_out_without_the_marker_keeps_a_users_report_html(tmp_path):
    copied = run_folder(tmp_path / "copied", marked=False)
    (copied / "report.html").write_text(MINE)
    result = report("--out", str(copied))
    assert result.exit_code == 2 and "argument 'out'" in result.output and "nothing was changed" in result.output
    assert (copied / "report.html").read_text() == MINE
    (copied / "report.html").unlink()  # with no page there, the page is a new file
    assert report("--out", str(copied)).exit_code == 0


# ---------------------------------------------------------------- item 9: malformed folders


BAD_VALUES = ["abc", 5, 1.5, True, [1], [[1]], {"x": 1}, [{"x": [1]}], None]


@pytest.mark.parametrize("field", sorted(ROW))
def test_a_row_with_a_field_of_any_wrong_type_is_a_named_error_or_renders(tmp_path, field):
    for n, value in enumerate(BAD_VALUES):
        row = copy.deepcopy(ROW)
        row[field] = value
        run = run_folder(tmp_path / f"run{n}", rows=(ROW | {"id": "q0"}, row))
        result = report("--out", str(run))  # catch_exceptions=False: a traceback fails the test
        assert result.exit_code in (0, 2), (field, value, result.output)
        if result.exit_code == 2:
            assert result.output.startswith(f"error: {run / 'results.jsonl'}:2: malformed result row: '{field}' must be")


@pytest.mark.parametrize("field, value, message", [
    ("passages", "abc", "'passages' must be an array of objects or null, got a string"),
    ("context", 5, "'context' must be an array of strings, got a number"),
    ("usage", "x", "'usage' must be an object or null, got a string"),
    ("f1", "x", "'f1' must be a number or null, got a string"),
    ("trace", [1], "'trace' must be an array of objects or null, got an array holding other values"),
])
def test_the_issues_mutations_name_file_line_and_field(tmp_path, field, value, message):
    run = run_folder(tmp_path / "run", rows=(ROW | {field: value},))
    result = report("--out", str(run))
    assert result.exit_code == 2
    assert result.output == f"error: {run / 'results.jsonl'}:1: malformed result row: {message}\n"


@pytest.mark.parametrize("summary", [
    {"meta": {}}, {"meta": []}, {"meta": {"strategies": "x"}}, {"meta": {"strategies": [1]}},
    {"meta": {"strategies": [{"x": 1}]}}, {"meta": {"data": 5}}, {"meta": {}, "strategies": "x"}, [1], "x",
])
@pytest.mark.parametrize("report_md", [True, False])
def test_a_malformed_summary_is_a_named_error_or_renders(tmp_path, summary, report_md):
    run = run_folder(tmp_path / "run", summary=summary, report_md=report_md)
    result = report("--out", str(run))
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert "summary.json" in result.output and result.output.count("\n") == 1
