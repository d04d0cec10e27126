"""``ragnet index``, ``search`` and ``ask`` tried as a hostile user would (issue 74, the index and
CLI side): before, an unreadable subfolder's documents left the index with "-1 removed" and exit
0; a link to a file outside the folder (``h.txt -> /etc/hostname``) was indexed without a word;
non-UTF-8 bytes in a question were a traceback; a question of zero-width spaces was not empty; a
missing ``--index`` folder was a traceback in ``serve``; and the ``--no-sentences`` refusal read
"built with sentence data sentence data"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragnet.cli import app

FACTS = {
    "a.md": "# Paris\n\nParis is the capital of France and sits on the Seine.\n",
    "sub/b.md": "# Rome\n\nRome is the capital of Italy, on the Tiber.\n",
    "sub/c.md": "# Oslo\n\nOslo is the capital of Norway, at the head of a fjord.\n",
}


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.strip()]


def write_folder(folder: Path, files: dict[str, str] = FACTS) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def index(folder: Path, out: Path, *args: str):
    return run("index", str(folder), "--out", str(out), "--no-sentences", *args)


def unreadable(monkeypatch, folder: Path) -> None:
    """Make ``folder`` unlistable even to root (the tests run as root, whom chmod 000 does not stop):
    listing it raises PermissionError, as it does for a user without the read bit."""
    real = os.scandir

    def scandir(path=".", *args, **kwargs):
        if not isinstance(path, int) and Path(os.fsdecode(path)) == folder:  # rmtree lists by descriptor
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)


# ---------------------------------------------------------------- item 4: an unreadable subfolder
@pytest.fixture
def indexed(tmp_path):
    folder = write_folder(tmp_path / "docs")
    out = tmp_path / "idx"
    first = index(folder, out)
    assert first.exit_code == 0, first.output
    return folder, out


def doc_ids(out: Path) -> list[str]:
    from ragnet.index import Index

    return sorted({chunk.doc_id for chunk in Index.load(out).chunks})


def test_an_unreadable_subfolder_is_an_error_naming_it_and_removes_nothing(indexed, monkeypatch):
    folder, out = indexed
    unreadable(monkeypatch, folder / "sub")
    result = index(folder, out)
    assert result.exit_code == 2, result.output
    assert lines(result) == [f"error: {folder}/sub: cannot read folder (Permission denied), so its files cannot be "
                             "listed; make it readable, or give --on-error skip to leave it out"]
    assert doc_ids(out) == ["a.md", "sub/b.md", "sub/c.md"]


def test_an_unreadable_subfolder_skipped_is_listed_and_its_documents_stay(indexed, monkeypatch):
    folder, out = indexed
    (folder / "d.md").write_text("# Cairo\n\nCairo is the capital of Egypt, near Giza.\n")
    unreadable(monkeypatch, folder / "sub")
    result = index(folder, out, "--on-error", "skip")
    assert result.exit_code == 0, result.output
    assert "cannot read folder: " + f"{folder}/sub" in result.output
    assert "+1 file, ~0 changed, -0 removed (3 unchanged)" in result.output
    assert doc_ids(out) == ["a.md", "d.md", "sub/b.md", "sub/c.md"]


def test_an_unreadable_folder_in_a_new_index_is_refused(tmp_path, monkeypatch):
    folder = write_folder(tmp_path / "docs")
    unreadable(monkeypatch, folder / "sub")
    refused = index(folder, tmp_path / "idx")
    assert refused.exit_code == 2 and "sub: cannot read folder (Permission denied)" in refused.output
    assert not (tmp_path / "idx").exists()
    unreadable(monkeypatch, folder)
    top = index(folder, tmp_path / "idx")
    assert lines(top) == [f"error: {folder}: cannot read this folder (Permission denied); make it readable"]


# ---------------------------------------------------------------- item 11: links leading outside
def test_a_link_to_a_file_outside_the_folder_is_refused_unless_followed(tmp_path):
    folder = write_folder(tmp_path / "docs", {"a.md": FACTS["a.md"]})
    secret = tmp_path / "secret.txt"
    secret.write_text("The launch code is 0000.\n")
    (folder / "h.txt").symlink_to(secret)
    (folder / "inside.md").symlink_to(folder / "a.md")  # a link within the folder is read as before
    out = tmp_path / "idx"
    refused = index(folder, out)
    assert refused.exit_code == 2
    assert lines(refused) == [f"error: {folder}/h.txt: symbolic link to {secret}, outside the folder; name the file "
                              "itself, or give --follow-links to read files links lead to "
                              "(load_documents(follow_links=True))"]
    skipped = index(folder, out, "--on-error", "skip")
    assert skipped.exit_code == 0 and "symbolic link to " in skipped.output and "h.txt" in skipped.output
    assert doc_ids(out) == ["a.md"]
    followed = index(folder, out, "--follow-links")
    assert followed.exit_code == 0, followed.output
    assert doc_ids(out) == ["a.md", "h.txt"]


# ---------------------------------------------------------------- item 7: a bad --index path
@pytest.mark.parametrize("command", [["search", "capital"], ["ask", "what is the capital?", "--lm", "openai/x"],
                                     ["add-sentences"], ["bench", "serve"], ["serve", "--port", "1"]])
def test_a_missing_or_foreign_index_folder_is_one_line(tmp_path, command):
    (tmp_path / "plain").mkdir()
    (tmp_path / "file").write_text("x")
    for where, says in ((tmp_path / "nope", "the folder does not exist"), (tmp_path / "plain", "no manifest.json"),
                        (tmp_path / "file", "is a file, not an index folder")):
        result = run(*command, *([] if command == ["add-sentences"] else ["--index"]), str(where))
        assert result.exit_code == 2, result.output
        assert len(lines(result)) == 1 and str(where) in result.output and says in result.output


def test_existing_index_names_the_path_and_recovers_a_set_aside_index(indexed):
    from ragnet.cli.common import existing_index
    from ragnet.errors import RagnetError

    _, out = indexed
    with pytest.raises(RagnetError, match="no index at .*nope: the folder does not exist"):
        existing_index(out.parent / "nope")
    os.replace(out, out.with_name(".idx.old-99999999"))  # a swap killed between its two renames
    assert existing_index(out) == out and (out / "manifest.json").is_file()


# ---------------------------------------------------------------- items 6 and 14: the text given
@pytest.mark.parametrize("command", [["search"], ["ask", "--lm", "openai/x"]])
def test_non_utf8_and_invisible_questions_are_one_line(indexed, command):
    _, out = indexed
    bad = os.fsdecode(b"capital \xff\xfe of France")  # what Python makes of bytes that are not UTF-8
    result = run(*command, bad, "--index", str(out))
    assert result.exit_code == 2, result.output
    name = "query" if command[0] == "search" else "question"
    assert lines(result) == [f"error: argument '{name}': not valid UTF-8 text (capital \\xff\\xfe of France); "
                             "give it as UTF-8"]
    blank = run(*command, "\u200b \u200b\ufeff", "--index", str(out))
    assert blank.exit_code == 2
    assert lines(blank) == [f"error: argument '{name}': is empty (only spaces or invisible characters)"]
    lm = run("ask", "capital?", "--lm", os.fsdecode(b"openai/\xff"), "--index", str(out))
    assert lm.exit_code == 2
    assert lines(lm) == ["error: argument 'lm': not valid UTF-8 text (openai/\\xff); give it as UTF-8"]


def test_file_names_need_not_be_utf8(tmp_path):
    folder = write_folder(tmp_path / os.fsdecode(b"d\xff"), {"a.md": FACTS["a.md"]})
    out = tmp_path / "idx"
    assert index(folder, out).exit_code == 0
    found = run("search", "capital", "--only", os.fsdecode(b"\xff.md"), "--index", str(out))
    assert found.exit_code == 2 and "no indexed file matches" in found.output, found.output


def test_the_sentences_refusal_says_it_once(indexed):
    folder, out = indexed
    refused = run("index", str(folder), "--out", str(out), "--sentences")
    assert refused.exit_code == 2
    assert "was built with no sentence data (--no-sentences), not --sentences;" in refused.output
    assert "sentence data sentence data" not in refused.output
