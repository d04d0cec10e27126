"""Hostile document folders (issue 37, items 12, 15 and 16): what a user's docs folder may hold
that is not a document, each case reported in one line or skipped with one warning.

- ragnet's own output inside the folder it indexes: an index kept in ``docs/idx`` was read back
  as documents on every rebuild (20, 40, 60 documents); an eval run folder likewise.
- a broken or self-looping symbolic link, and a named pipe: a FileNotFoundError / RuntimeError
  traceback (and, for the pipe, a read that never returns).
- a lone surrogate escape in a JSONL record: found only when the index was written, after all the
  embedding, naming no file or line.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from ragnet.corpus.loader import load_documents
from ragnet.corpus.outputs import EVAL_MARKER, INDEX_FORMAT, INDEX_MANIFEST, ragnet_output
from ragnet.errors import InputError


def write_docs(folder: Path, n: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"d{i}.md").write_text(f"# Topic {i}\n\nDocument {i} is about topic number {i}.\n")
    return folder


def index_cli(*args: str):
    return CliRunner().invoke(app, ["index", *args, "--no-sentences"], catch_exceptions=False)


# ---------------------------------------------------------------- item 12: ragnet's own output


def test_an_index_inside_the_folder_it_indexes_is_not_read_back_on_rebuild(tmp_path):
    docs = write_docs(tmp_path / "docs")
    out = docs / "idx"
    first = index_cli(str(docs), "--out", str(out))
    assert first.exit_code == 0, first.output
    assert "indexed 3 documents" in first.output
    for _ in range(2):  # before the fix: 6, then 9 documents
        with pytest.warns(UserWarning, match=r"skipped folders ragnet wrote, which are not documents: idx \(a ragnet index\)"):
            again = index_cli(str(docs), "--out", str(out))
        assert again.exit_code == 0, again.output
        assert "(3 unchanged); 0 chunks embedded, 3 reused" in again.output  # an update: nothing read back
    from ragnet.index import Index
    from ragnet.index.manifest import index_files

    assert sorted({c.doc_id for c in Index.load(out).chunks}) == ["d0.md", "d1.md", "d2.md"]
    # the loader's copies of the writers' names recognise what the writers really write
    from ragnet.eval.run.run_folder import MARKER
    from ragnet.index.manifest import MANIFEST, MANIFEST_FORMAT

    assert (INDEX_MANIFEST, INDEX_FORMAT, EVAL_MARKER) == (MANIFEST, MANIFEST_FORMAT, MARKER)
    assert ragnet_output(out) == "a ragnet index" and index_files(out) is not None


def fake_index(folder: Path, manifest: dict) -> Path:
    folder.mkdir(parents=True)
    (folder / INDEX_MANIFEST).write_text(json.dumps(manifest))
    (folder / "chunks.jsonl").write_text(json.dumps({"id": "d0.md#0", "text": "chunk text"}) + "\n")
    (folder / "notes.md").write_text("# kept beside the index\n\nnot a document of the corpus\n")
    return folder


def eval_run(folder: Path) -> Path:
    from ragnet.eval.run.run_folder import RunFolder

    run = RunFolder(folder, key=("id",))
    folder.mkdir(parents=True)
    run.claim()
    run.start({"lm": "x"})
    with run.writer() as write:
        write({"id": "q1", "em": 1.0})
    run.write_outputs("# Report\n\nbasic: EM 1.0\n", {"strategies": {}})
    return folder


@pytest.mark.parametrize("make, kind", [
    (lambda f: fake_index(f, {"format": "ragnet-index", "files": {}}), "a ragnet index"),
    (eval_run, "a ragnet eval run"),
])
def test_output_folders_are_skipped_in_folders_and_patterns_with_one_warning(tmp_path, make, kind):
    docs = write_docs(tmp_path / "docs", n=2)
    make(docs / "sub" / "out")
    # folders that only look like ragnet's are read: someone else's manifest.json, a broken one
    for name, manifest in [("webapp", json.dumps({"name": "my web app", "files": {}})), ("broken", "{not json")]:
        (docs / name).mkdir()
        (docs / name / INDEX_MANIFEST).write_text(manifest)
        (docs / name / "README.md").write_text(f"# {name}\n\nHow to deploy it.\n")
    for paths, options in [(docs, {}), (docs, {"glob": "**/*.md"}), (f"{docs}/**/*.md", {})]:
        with pytest.warns(UserWarning) as record:
            loaded = load_documents(paths, **options)
        assert [d.id for d in loaded] == ["broken/README.md", "d0.md", "d1.md", "webapp/README.md"]
        assert [str(w.message) for w in record if "ragnet wrote" in str(w.message)] == [
            f"{paths}: skipped folders ragnet wrote, which are not documents: sub/out ({kind})"]


def test_a_folder_holding_only_ragnet_output_says_so(tmp_path):
    docs = tmp_path / "docs"
    fake_index(docs / "idx", {"format": "ragnet-index", "files": {}})
    with pytest.raises(InputError, match=r"docs: no .* files in this folder; skipped folders ragnet wrote: idx "
                                         r"\(a ragnet index\)$"):
        load_documents(docs)
    with pytest.raises(InputError, match="matches only files in folders ragnet wrote"):
        load_documents(f"{docs}/**/*.jsonl")


def test_naming_an_output_folder_itself_is_refused(tmp_path):
    idx = fake_index(tmp_path / "idx", {"format": "ragnet-index", "files": {}})
    with pytest.raises(InputError) as err:
        load_documents(idx)
    assert str(err.value) == (f"{idx}: this folder is a ragnet index (ragnet's own output), not documents; "
                              "name the folder of documents instead")


# ---------------------------------------------------------------- item 15: links and pipes


def test_a_broken_link_is_one_line_naming_it_and_a_good_one_is_read(tmp_path):
    docs = write_docs(tmp_path / "docs", n=1)
    (tmp_path / "elsewhere.md").write_text("# Elsewhere\n\nlinked in\n")
    (docs / "linked.md").symlink_to(tmp_path / "elsewhere.md")
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(InputError) as err:
        load_documents(docs, follow_links=True)
    assert str(err.value) == (f"{docs}/gone.md: broken symbolic link: '{tmp_path}/nowhere.md' does not exist; "
                              "fix or remove the link")
    (docs / "gone.md").unlink()
    # a link leading outside the folder is read only when asked to (issue 74, item 11)
    assert [(d.id, d.title) for d in load_documents(docs, follow_links=True)] == [("d0.md", "Topic 0"),
                                                                                  ("linked.md", "Elsewhere")]


def test_a_link_loop_is_one_line_naming_it(tmp_path):
    docs = write_docs(tmp_path / "docs", n=1)
    (docs / "loop.md").symlink_to("loop.md")
    (docs / "a.jsonl").symlink_to("b.jsonl")
    (docs / "b.jsonl").symlink_to("a.jsonl")
    with pytest.raises(InputError) as err:
        load_documents(docs)
    assert str(err.value).splitlines() == [
        "argument 'paths': 3 problems in the input; nothing was indexed:",
        f"  {docs}/a.jsonl: symbolic link loop (it never leads to a file); fix or remove the link",
        f"  {docs}/b.jsonl: symbolic link loop (it never leads to a file); fix or remove the link",
        f"  {docs}/loop.md: symbolic link loop (it never leads to a file); fix or remove the link",
    ]


def test_broken_links_named_or_matched_are_reported_the_same_way(tmp_path):
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    for paths, options in [(tmp_path / "gone.md", {}), (f"{tmp_path}/*.md", {}), (tmp_path, {"glob": "*.md"})]:
        with pytest.raises(InputError, match=r"gone.md: broken symbolic link: .*nowhere.md' does not exist"):
            load_documents(paths, **options)


def test_a_link_to_a_folder_is_not_followed_and_says_so_once(tmp_path):
    """os.walk does not enter a linked folder (it may loop, or lead outside the folder); the
    documents under one were left out without a word."""
    docs = write_docs(tmp_path / "docs", n=1)
    write_docs(tmp_path / "shared", n=2)
    (docs / "more").symlink_to(tmp_path / "shared")
    (docs / "sub").mkdir()
    (docs / "sub" / "up").symlink_to(docs)  # a loop if it were followed
    with pytest.warns(UserWarning) as record:
        loaded = load_documents(docs)
    assert [d.id for d in loaded] == ["d0.md"]
    assert [str(w.message) for w in record] == [
        f"{docs}: skipped links to folders, which are not followed: more, sub/up (name a linked folder itself to read it)"]
    assert [d.id for d in load_documents(docs / "more")] == ["d0.md", "d1.md"]  # named, it is read


def test_a_folder_holding_only_a_linked_folder_names_the_link(tmp_path):
    write_docs(tmp_path / "shared", n=1)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "more").symlink_to(tmp_path / "shared")
    with pytest.raises(InputError) as err:
        load_documents(tmp_path / "docs")
    assert "(the folder is empty)" not in str(err.value)
    assert str(err.value).endswith("; skipped links to folders, which are not followed: more "
                                   "(name a linked folder itself to read it)")


def test_a_named_pipe_is_refused_instead_of_read_for_ever(tmp_path):
    docs = write_docs(tmp_path / "docs", n=1)
    os.mkfifo(docs / "pipe.md")
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(_raised(load_documents, docs)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    if not outcome:  # before the fix: blocked reading the pipe; open it for writing to let the thread end
        fd = os.open(docs / "pipe.md", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(timeout=10)
        pytest.fail("load_documents blocked reading a named pipe")
    assert outcome == [f"{docs}/pipe.md: not a regular file (a pipe, socket or device); remove it or name only "
                       "the files to read"]


def _raised(func, *args):
    try:
        func(*args)
    except InputError as err:
        return str(err)
    return None


def test_the_index_command_reports_a_broken_link_in_one_line_and_writes_nothing(tmp_path):
    docs = write_docs(tmp_path / "docs", n=1)
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (docs / "loop.md").symlink_to("loop.md")
    result = index_cli(str(docs), "--out", str(tmp_path / "idx"))
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0] == "error: argument 'paths': 2 problems in the input; nothing was indexed:"
    assert [line.split(": ", 1)[1] for line in lines[1:]] == [
        f"broken symbolic link: '{tmp_path}/nowhere.md' does not exist; fix or remove the link",
        "symbolic link loop (it never leads to a file); fix or remove the link"]
    assert "Traceback" not in result.output and not (tmp_path / "idx").exists()


# ---------------------------------------------------------------- item 16: lone surrogates


@pytest.mark.parametrize("record, field", [
    ('{"id": "\\ud800", "text": "hello"}', "'id'"),
    ('{"id": "a", "title": "x\\udfff", "text": "hello"}', "'title'"),
    ('{"id": "a", "text": "hello \\udc80 world"}', "'text'"),
    ('{"id": "a", "text": "hi", "metadata": {"tags": ["ok", "\\ud83d"]}}', "'metadata'['tags'][1]"),
    ('{"id": "a", "text": "hi", "src\\ud800": 1}', "a key in the record"),
])
def test_a_lone_surrogate_is_reported_at_load_naming_file_line_and_field(tmp_path, record, field):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n' + record + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_documents(path)
    code = str(err.value).split("lone surrogate ")[1][:6]
    assert str(err.value) == (f"{path}:2: {field} holds a lone surrogate {code} (half of a UTF-16 pair), which "
                              "is not valid text; fix or remove that escape")
    # a surrogate pair is one character, and an escaped backslash before "ud800" is plain text
    path.write_text('{"id": "\\ud83d\\ude00", "text": "a smile"}\n{"id": "b", "text": "C:\\\\ud800 is a path"}\n',
                    encoding="utf-8")
    assert [(d.id, d.text) for d in load_documents(path)] == [("\U0001F600", "a smile"), ("b", "C:\\ud800 is a path")]


def test_the_index_command_reports_a_surrogate_before_loading_the_embedder(tmp_path, monkeypatch):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "ok", "text": "fine"}\n{"id": "\\ud800", "text": "hello"}\n', encoding="utf-8")

    def no_embedding(*args, **kwargs):
        raise AssertionError("the embedder was built before the documents were checked")

    monkeypatch.setattr("ragnet.index.embedder.build_embedder", no_embedding)
    monkeypatch.setattr("ragnet.index.embedder.Embedder", no_embedding)
    result = index_cli(str(path), "--out", str(tmp_path / "idx"))
    assert result.exit_code == 2
    assert result.output == (f"error: {path}:2: 'id' holds a lone surrogate \\ud800 (half of a UTF-16 pair), "
                             "which is not valid text; fix or remove that escape\n")
