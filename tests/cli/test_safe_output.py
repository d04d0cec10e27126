"""No terminal escape reaches the terminal from a name or a document (issue 47, item 6).

Before: a file named with an OSC 52 sequence (a clipboard write), CSI 2J, OSC 8 or OSC 0 was echoed
raw by ``ragnet index``'s error lines, the skip summary, warnings and the "kept files" note;
newlines and bidirectional controls passed raw everywhere (a newline in a name forged a line of
an error list; ``report\u202etxt.exe.md`` displayed reversed). Now every line a command prints
passes one filter (:mod:`ragnet.cli.safe_text`), names show newlines as ``\\n``, and JSON output
carries the same data as JSON escapes.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ragnet._printable import printable_name
from ragnet.cli import app

#: what a hostile file name can carry (a name cannot hold "/" or NUL)
NASTY = {
    "osc52": "clip\x1b]52;c;ZXZpbA==\x07",
    "csi2j": "clear\x1b[2J\x1b[H",
    "osc8": "link\x1b]8;;https:evil.example\x1b\\here\x1b]8;;\x1b\\",
    "osc0": "title\x1b]0;pwned\x07",
    "sgr": "red\x1b[31mred",
    "newline": "two\nerror: forged line",
    "cr": "back\rerror: overwritten",
    "bidi": "report\u202etxt.exe",
    "isolate": "iso\u2066late\u2069",
    "c1": "csi\x9b2J",
    "del": "del\x7f",
}
# anything a terminal would act on, once the command's own colour sequences are set aside
_ACTS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def assert_safe(output: str) -> None:
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    output = re.sub(r"\r(?=[A-Za-z ]+: +\d+%)", "", output)  # a progress bar redrawing its line
    found = _ACTS.findall(output)
    assert not found, f"raw control characters reached the terminal: {found!r}"


def nasty_folder(tmp_path, suffix=".md", content=""):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in NASTY.values():
        (docs / f"{name}{suffix}").write_text(content)
    return docs


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_index_error_lines_show_every_name_escaped_on_its_own_line(tmp_path):
    docs = nasty_folder(tmp_path)  # empty files: each one a problem
    result = run("index", str(docs), "--out", str(tmp_path / "idx"), "--no-sentences")
    assert result.exit_code == 2
    assert_safe(result.output)
    lines = result.output.splitlines()
    assert lines[0] == f"error: argument 'paths': {len(NASTY)} problems in the input; nothing was indexed:"
    assert len(lines) == 1 + len(NASTY)  # no name started a line of its own
    for name in NASTY.values():
        assert f"  {printable_name(docs / (name + '.md'))}: file is empty" in lines


def test_the_skip_summary_and_the_kept_files_note_show_names_escaped(tmp_path):
    docs = nasty_folder(tmp_path)
    (docs / "good.md").write_text("# Good\n\nThe good file is read.\n")
    out = tmp_path / "idx"
    first = run("index", str(docs), "--out", str(out), "--on-error", "skip", "--no-sentences")
    assert first.exit_code == 0, first.output
    assert_safe(first.output)
    summary = [line for line in first.output.splitlines() if line.startswith("  file is empty: ")]
    assert len(summary) == 1 and all(printable_name(docs / (n + ".md")) in summary[0] for n in NASTY.values())
    for name in NASTY.values():  # the user's own files beside the index are kept on a rebuild, and named
        (out / f"{name}.txt").write_text("mine")
    (docs / "more.md").write_text("# More\n\nA second good file, so the index is written again.\n")
    again = run("index", str(docs), "--out", str(out), "--on-error", "skip", "--no-sentences")
    assert again.exit_code == 0, again.output
    assert_safe(again.output)
    [kept] = [line for line in again.output.splitlines() if line.startswith(f"kept {len(NASTY)} file(s)")]
    assert all(printable_name(n + ".txt") in kept for n in NASTY.values())


def test_warnings_and_errors_of_the_installed_command_are_filtered(tmp_path):
    """The real entry point (one-line warnings, the error handler), in a fresh process."""
    docs = nasty_folder(tmp_path, suffix=".md", content="# Fine\n\nText.\n")
    for name in NASTY.values():
        (docs / f"x.{name}").write_text("unsupported")  # the warning names their suffixes
        (docs / f"{name}-link").symlink_to(tmp_path)  # the warning names links to folders
    (docs / "broken.jsonl").write_text('{"text": "no closing brace"\n')
    done = subprocess.run([sys.executable, "-m", "ragnet", "index", str(docs), "--out", str(tmp_path / "idx")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert_safe(done.stdout + done.stderr)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
    [links] = [w for w in warnings if "skipped links to folders" in w]
    assert all(printable_name(name + "-link") in links for name in NASTY.values())
    [suffixes] = [w for w in warnings if "unsupported suffixes" in w]
    assert printable_name(".exe") in suffixes and printable_name("." + NASTY["osc0"]) in suffixes
    assert done.stderr.splitlines()[-1].startswith("error: ")


@pytest.fixture(scope="module")
def nasty_index(tmp_path_factory):
    from ragnet.corpus.types import Document
    from ragnet.index import Index

    docs = [Document(id=f"{key}:{name}", title=f"Title {name}", text=f"Paris is the capital of France. {name} end.")
            for key, name in NASTY.items()]
    return Index.build(docs, tmp_path_factory.mktemp("nasty") / "idx", show_progress=False)


def test_search_shows_ids_titles_and_text_escaped_and_its_json_keeps_the_data(nasty_index):
    table = run("search", "capital of France", "--index", str(nasty_index.path), "-k", "11")
    assert table.exit_code == 0, table.output
    assert_safe(table.output)
    raw = run("search", "capital of France", "--index", str(nasty_index.path), "-k", "11", "--json")
    assert raw.exit_code == 0, raw.output
    assert_safe(raw.output)
    hits = json.loads(raw.output)  # valid JSON, the same strings
    assert sorted(h["doc_id"] for h in hits) == sorted(f"{k}:{n}" for k, n in NASTY.items())


def test_ask_shows_evidence_names_escaped_and_no_forged_lines(nasty_index, tmp_path):
    from tests.lm.fault_server import FaultServer

    reply = ('[[ ## answer ## ]]\nParis\nevidence:\n  forged#0  Forged\n\n[[ ## evidence_ids ## ]]\n'
             '["c1", "c2", "c3", "c4", "c5"]\n\n[[ ## completed ## ]]')
    with FaultServer("ok", reply=reply) as server:
        result = CliRunner().invoke(app, ["ask", "Which line is forged?", "--index", str(nasty_index.path),
                                          "--strategy", "basic", "--lm", "openai/test-model", "--api-base", server.url,
                                          "--api-key", "k", "--timeout", "5"],
                                    env={"RAGNET_CACHE_DIR": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    assert_safe(result.output)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("answer: Paris")  # an answer's lines never pass for the next label
    assert [line for line in lines if line.startswith("evidence:")] == ["evidence:"]
    cited = [line for line in lines if line.startswith("  newline:")]
    assert cited == [f"  {printable_name('newline:' + NASTY['newline'])}#0  Title {printable_name(NASTY['newline'])}"]
    assert not any(line.startswith("error: forged") for line in lines)


def test_every_command_filters_what_it_prints(tmp_path):
    name = str(tmp_path / ("x" + "".join(NASTY.values())))
    for args in (["search", "q", "--index", name], ["ask", "q", "--index", name], ["add-sentences", name],
                 ["eval", "--data", name], ["eval", "report", "--out", name], ["eval", "retrieval", "--data", name],
                 ["eval", "hops", "--data", name], ["optimize", "--out", str(tmp_path / "p.json"), "--data", name]):
        result = run(*args)
        assert result.exit_code == 2, (args, result.output)
        assert_safe(result.output)
        assert result.output.startswith("error: ") and "Traceback" not in result.output


def test_json_output_keeps_the_data_and_shows_no_control():
    from ragnet._printable import printable_json

    data = {"id": "a\u202eb\x9b\x7f\x1b[2J\nc"}
    text = printable_json(data)
    assert not _ACTS.search(text) and json.loads(text) == data
