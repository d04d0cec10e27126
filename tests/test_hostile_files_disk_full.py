"""A full disk during ``ragnet index`` and ``ragnet eval`` (issue 37, item 14): one line naming
what was being written and "disk full", exit status 4, nothing lost, and ``results.jsonl``
never left ending in half a row.

The disk fills up by monkeypatch: a write to the chosen file takes part of its bytes and then
fails with ENOSPC, as the kernel does; FAISS's own writer reports the same as a RuntimeError
carrying the system's message. Before the fix each case was an OSError (or RuntimeError)
traceback, and the eval's last row was left half written.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import dspy
import numpy as np
import pytest
from typer.testing import CliRunner

from ragnet._atomic import write_text
from ragnet.cli import app
from ragnet.cli.common import new_app
from ragnet.errors import DiskFullError
from ragnet.eval.run.results_file import RowWriter
from ragnet.eval.run.run_folder import RunFolder
from tests.eval.tiny_set import tiny_lm, write_tiny_set

NO_SPACE = os.strerror(errno.ENOSPC)


def no_space() -> OSError:
    return OSError(errno.ENOSPC, NO_SPACE)


def fill_disk_on(monkeypatch, path: Path, after_writes: int, partial: int = 10):
    """Writes (``os.write``) to ``path``: the first ``after_writes`` succeed, the next takes
    ``partial`` bytes, then every write fails with ENOSPC. Returns a function that frees the disk."""
    real_write = os.write
    calls = {"n": 0}

    def write(fd, data):
        try:
            ours = os.path.samestat(os.fstat(fd), os.stat(path))
        except OSError:
            ours = False
        if not ours:
            return real_write(fd, data)
        calls["n"] += 1
        if calls["n"] <= after_writes:
            return real_write(fd, data)
        if calls["n"] == after_writes + 1 and partial:
            return real_write(fd, bytes(data)[:partial])
        raise no_space()

    monkeypatch.setattr(os, "write", write)
    return lambda: monkeypatch.setattr(os, "write", real_write)


# ---------------------------------------------------------------- ragnet index


def write_docs(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.md").write_text(f"# {name}\n\n{name} is a document about {name}.\n")
    return folder


def half_written_npy(file, arr, *args, **kwargs):
    with open(file, "wb") as fh:  # the header fits, the data does not
        fh.write(b"\x93NUMPY\x01\x00")
    raise no_space()


def faiss_full(index, path):
    raise RuntimeError(f"Error in void faiss::write_index(const Index*, IOWriter*, int) at index_write.cpp:499: "
                       f"Error: 'ret == (size * 4)' failed: write error in {path}: 102355 != 307200 ({NO_SPACE})")


def fallocate_full(fd, offset, length):
    raise no_space()


# os.posix_fallocate: the vectors are written through a memory map, where a full disk is a SIGBUS
# unless the file's blocks are reserved first (the reservation is where ENOSPC must surface)
@pytest.mark.parametrize("fault", ["numpy.save", "faiss.write_index", "os.posix_fallocate"])
def test_a_full_disk_during_index_is_one_line_and_keeps_the_old_index(tmp_path, monkeypatch, fault):
    from ragnet.index import Index

    out = tmp_path / "idx"
    built = CliRunner().invoke(app, ["index", str(write_docs(tmp_path / "v1", ["alpha", "beta"])), "--out", str(out),
                                     "--no-sentences"], catch_exceptions=False)
    assert built.exit_code == 0, built.output
    (out / "notes.txt").write_text("my own notes\n")
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    if fault == "numpy.save":
        monkeypatch.setattr(np, "save", half_written_npy)
    elif fault == "os.posix_fallocate":
        monkeypatch.setattr(os, "posix_fallocate", fallocate_full)
    else:
        import faiss

        monkeypatch.setattr(faiss, "write_index", faiss_full)
    result = CliRunner().invoke(app, ["index", str(write_docs(tmp_path / "v2", ["gamma", "delta", "omega"])),
                                      "--out", str(out), "--no-sentences"], catch_exceptions=False)
    assert result.exit_code == 4
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: disk full: cannot write {out} ({NO_SPACE}); {out} is as it was; free some space "
                      "and run again"]
    assert "Traceback" not in result.output
    # nothing lost, nothing left behind
    monkeypatch.undo()
    after = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "v1", "v2"]
    assert sorted({c.doc_id for c in Index.load(out, verify=True).chunks}) == ["alpha.md", "beta.md"]


# ---------------------------------------------------------------- ragnet eval


def test_a_row_cut_by_a_full_disk_is_taken_back_and_the_error_names_the_file(tmp_path, monkeypatch):
    path = tmp_path / "results.jsonl"
    writer = RowWriter(path)
    writer.write({"id": "q1", "answer": "Tokyo"})
    fill_disk_on(monkeypatch, path, after_writes=0)
    with pytest.raises(DiskFullError) as err:
        writer.write({"id": "q2", "answer": "a long answer " * 50})
    writer.close()
    assert str(err.value) == (f"disk full: cannot write {path} ({NO_SPACE}); the rows already written are kept "
                              "(the same command resumes after them); free some space and run again")
    assert path.read_text(encoding="utf-8") == '{"id": "q1", "answer": "Tokyo"}\n'  # no half row


def test_half_a_row_left_by_a_crash_is_cut_before_the_next_append(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "q1"}\n{"id": "q2", "answ', encoding="utf-8")
    logs: list[str] = []
    with RunFolder(tmp_path, key=("id",), log=logs.append).writer() as write:  # without reading the rows first
        write({"id": "q3"})
    assert logs == [f"warning: {path}:2: ignoring an incomplete last line (an interrupted run); it will be recomputed"]
    assert [r["id"] for r in RunFolder(tmp_path, key=("id",)).rows()] == ["q1", "q3"]


def test_report_files_survive_a_full_disk(tmp_path, monkeypatch):
    report = tmp_path / "report.md"
    report.write_text("the previous report\n")

    def fsync(fd):
        raise no_space()

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(DiskFullError) as err:
        write_text(report, "a new report\n")
    assert str(err.value) == (f"disk full: cannot write {report} ({NO_SPACE}); {report} is as it was; free some "
                              "space and run again")
    assert report.read_text() == "the previous report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # the temporary copy is gone


@pytest.fixture
def tiny_env(tmp_path, monkeypatch):
    """The tiny benchmark and its scripted LM, answered through `--lm scripted`."""
    data = write_tiny_set(tmp_path / "data", dev=("q1", "q2"), acceptance=("q3",))
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("ragnet.lm.config.configure", lambda lm=None, **kwargs: dspy.settings.lm)
    with dspy.context(lm=tiny_lm().lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        yield data, tmp_path


def test_a_full_disk_during_eval_is_one_line_and_the_run_resumes(tiny_env, monkeypatch):
    data, tmp = tiny_env
    out = tmp / "out"
    args = ["eval", "--data", "tiny", "--data-dir", str(data), "--strategies", "basic,oneshot", "--lm", "scripted",
            "--no-judge", "--no-plots", "--threads", "1", "--out", str(out)]
    free_space = fill_disk_on(monkeypatch, out / "results.jsonl", after_writes=1)
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 4
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: disk full: cannot write {out / 'results.jsonl'} ({NO_SPACE}); the rows already "
                      "written are kept (the same command resumes after them); free some space and run again"]
    assert "Traceback" not in result.output
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["strategy"] == "basic"  # one whole row, no half one

    free_space()
    again = CliRunner().invoke(app, args, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "resuming: 1 of 4 rows" in again.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted((r["strategy"], r["id"]) for r in rows) == [("basic", "q1"), ("basic", "q2"),
                                                             ("oneshot", "q1"), ("oneshot", "q2")]


# ---------------------------------------------------------------- any other write


def test_a_full_disk_anywhere_else_is_one_line_with_exit_status_4():
    cli = new_app("test")

    @cli.command("cache")
    def cache() -> None:
        raise OSError(errno.ENOSPC, NO_SPACE, "/home/u/.cache/ragnet/model.onnx")

    @cli.command("faiss")
    def faiss_write() -> None:
        faiss_full(None, "/x/.dense.faiss.tmp")

    @cli.command("other")
    def other() -> None:
        raise OSError(errno.EACCES, "Permission denied")

    result = CliRunner().invoke(cli, ["cache"])
    assert (result.exit_code, result.output) == (4, "error: disk full: cannot write /home/u/.cache/ragnet/model.onnx "
                                                    f"({NO_SPACE}); free some space and run again\n")
    result = CliRunner().invoke(cli, ["faiss"])
    assert (result.exit_code, result.output) == (4, f"error: disk full: cannot write the output ({NO_SPACE}); free "
                                                    "some space and run again\n")
    result = CliRunner().invoke(cli, ["other"])  # other errors are not disk-full messages
    assert isinstance(result.exception, PermissionError)
