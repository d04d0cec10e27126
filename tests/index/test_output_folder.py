"""`Index.build` / `ragnet index --out` never delete what ragnet did not write.

Covers the data-loss cases found by hand: a folder that merely holds a file named
``manifest.json``, files a user keeps inside an index folder, leftovers of killed builds,
two builds to one folder at once, and output paths that cannot be written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragnet._atomic import DirSwap, atomic_dir, atomic_path, clean_stale, dir_lock
from ragnet.cli import app
from ragnet.errors import InputError
from ragnet.index import Index
from ragnet.index.manifest import index_files
from tests.index.conftest import make_docs


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_web_app_folder_with_a_manifest_is_refused_and_untouched(tmp_path, embedder):
    app_dir = tmp_path / "webapp"
    app_dir.mkdir()
    (app_dir / "manifest.json").write_text('{"name": "My App", "start_url": "/index.html"}')
    (app_dir / "index.html").write_text("<html>precious</html>")
    before = _files(app_dir)
    with pytest.raises(InputError, match="not a ragnet index manifest"):
        Index.build(make_docs()[:2], app_dir, embedder=embedder, show_progress=False)
    assert _files(app_dir) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["webapp"]


def test_cli_refuses_web_app_folder_before_reading_documents(tmp_path):
    app_dir = tmp_path / "webapp"
    app_dir.mkdir()
    (app_dir / "manifest.json").write_text('{"name": "My App"}')
    (app_dir / "index.html").write_text("<html>precious</html>")
    result = CliRunner().invoke(app, ["index", str(tmp_path / "does-not-exist.txt"), "--out", str(app_dir)])
    assert result.exit_code == 2
    assert "not a ragnet index" in result.output and "does-not-exist" not in result.output
    assert (app_dir / "index.html").read_text() == "<html>precious</html>"


def test_files_kept_in_an_index_folder_survive_a_rebuild(tmp_path, embedder):
    target = tmp_path / "idx"
    Index.build(make_docs()[:4], target, embedder=embedder, show_progress=False)
    (target / "NOTES.txt").write_text("my notes")
    (target / "extra").mkdir()
    (target / "extra" / "eval.csv").write_text("a,b\n")
    (target / "bm25" / "mine.txt").write_text("inside an index subfolder")
    rebuilt = Index.build(make_docs()[:6], target, embedder=embedder, show_progress=False)
    assert len(Index.load(target)) == len(rebuilt) == 6
    assert sorted(rebuilt.kept_files) == ["NOTES.txt", "bm25/mine.txt", "extra"]
    assert (target / "NOTES.txt").read_text() == "my notes"
    assert (target / "extra" / "eval.csv").read_text() == "a,b\n"
    assert (target / "bm25" / "mine.txt").read_text() == "inside an index subfolder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no lock, temp or backup left


def test_cli_says_which_files_it_kept(tmp_path, embedder):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"Text number {i}."})
                              for i in range(3)) + "\n")
    out = tmp_path / "idx"
    runner = CliRunner()
    assert runner.invoke(app, ["index", str(docs), "--out", str(out)]).exit_code == 0
    (out / "NOTES.txt").write_text("keep me")
    result = runner.invoke(app, ["index", str(docs), "--out", str(out), "--rebuild"])  # unchanged files: no rewrite without it
    assert result.exit_code == 0, result.output
    assert "kept 1 file(s)" in result.output and "NOTES.txt" in result.output
    assert (out / "NOTES.txt").read_text() == "keep me"


def test_index_manifest_marks_the_folder_as_ragnet(built):
    owned = index_files(built.path)
    assert owned is not None and "manifest.json" in owned and "chunks.jsonl" in owned
    assert built.manifest["format"] == "ragnet-index"


def test_manifest_naming_files_outside_its_folder_is_not_ragnet(index_copy):
    m = json.loads((index_copy / "manifest.json").read_text())
    m["files"]["../elsewhere.txt"] = "0" * 64
    (index_copy / "manifest.json").write_text(json.dumps(m))
    assert index_files(index_copy) is None


def test_leftovers_of_a_killed_build_are_cleaned(tmp_path, embedder):
    target = tmp_path / "idx"
    Index.build(make_docs()[:3], target, embedder=embedder, show_progress=False)
    pid = _dead_pid()
    stale_tmp = tmp_path / f".idx.{pid}.abcdefgh.tmp"
    stale_tmp.mkdir()
    (stale_tmp / "embeddings.npy").write_bytes(b"half written")
    stale_backup = tmp_path / f".idx.old-{pid}"
    stale_backup.mkdir()
    (stale_backup / "chunks.jsonl").write_text("{}")
    stale_file = tmp_path / f".idx.{pid}.ijklmnop.tmp"
    stale_file.write_text("x")
    Index.build(make_docs()[:5], target, embedder=embedder, show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_a_live_process_leftovers_are_not_touched(tmp_path):
    mine = tmp_path / f".out.{os.getpid()}.abcdefgh.tmp"
    mine.mkdir()
    assert clean_stale(tmp_path / "out") == []
    assert mine.exists()


def test_crash_between_the_two_renames_restores_the_previous_index(tmp_path, embedder):
    """Killed after the old index was set aside and before the new one was renamed in."""
    target = tmp_path / "idx"
    Index.build(make_docs()[:3], target, embedder=embedder, show_progress=False)
    (target / "NOTES.txt").write_text("mine")
    before = _files(target)
    pid = _dead_pid()
    os.replace(target, tmp_path / f".idx.old-{pid}")
    half = tmp_path / f".idx.{pid}.qrstuvwx.tmp"
    half.mkdir()
    done = clean_stale(target)
    assert any("restored" in d for d in done)
    assert _files(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    assert len(Index.load(target)) == 3


def test_a_second_concurrent_build_is_refused(tmp_path, embedder):
    target = tmp_path / "idx"
    Index.build(make_docs()[:3], target, embedder=embedder, show_progress=False)
    before = _files(target)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from ragnet._atomic import dir_lock
            with dir_lock({str(target)!r}):
                print("locked", flush=True)
                time.sleep(30)
        """)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        with pytest.raises(InputError, match=rf"another ragnet process \(pid {holder.pid}\) is writing"):
            Index.build(make_docs()[:5], target, embedder=embedder, show_progress=False)
        assert time.perf_counter() - t0 < 5  # refused at once, not after embedding
    finally:
        holder.kill()
        holder.wait()
    assert _files(target) == before
    # the holder was killed: its lock is released, and the next build goes through
    assert len(Index.build(make_docs()[:5], target, embedder=embedder, show_progress=False)) == 5


def test_dir_lock_is_reentrant_and_removed_after_use(tmp_path):
    out = tmp_path / "idx"
    with dir_lock(out):
        with dir_lock(out):
            assert (tmp_path / ".idx.lock").read_text() == str(os.getpid())
        assert (tmp_path / ".idx.lock").exists()
    assert not (tmp_path / ".idx.lock").exists()


def test_unwritable_output_is_refused_before_any_embedding(tmp_path, embedder, monkeypatch):
    def no_embedding(self, *a, **k):
        raise AssertionError("embedding started before the output path was checked")

    monkeypatch.setattr(type(embedder), "encode", no_embedding)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="is a file, not a folder"):
        Index.build(make_docs()[:3], blocker / "idx", embedder=embedder, show_progress=False)
    with pytest.raises(InputError, match="exists and is a file"):
        Index.build(make_docs()[:3], blocker, embedder=embedder, show_progress=False)
    assert blocker.read_text() == "x"


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's read-only /proc")
def test_read_only_parent_is_refused_with_the_path(embedder):
    with pytest.raises(InputError, match="is not writable"):
        Index.build(make_docs()[:3], Path("/proc/ragnet-test/idx"), embedder=embedder, show_progress=False)


def test_atomic_dir_refuses_a_kept_file_that_clashes_with_a_new_one(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("owned")
    (target / "b.txt").write_text("user's")
    with pytest.raises(InputError, match="b.txt .* not part of the old version"):
        with atomic_dir(target, owned=lambda p: {"a.txt"}) as tmp:
            (tmp / "a.txt").write_text("new")
            (tmp / "b.txt").write_text("new b")
    assert (target / "a.txt").read_text() == "owned" and (target / "b.txt").read_text() == "user's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_atomic_dir_reports_what_it_kept(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("owned")
    (target / "user.txt").write_text("user's")
    swap = DirSwap()
    with atomic_dir(target, owned=lambda p: {"a.txt"}, swap=swap) as tmp:
        (tmp / "a.txt").write_text("new")
    assert swap.kept == ["user.txt"]
    assert (target / "a.txt").read_text() == "new" and (target / "user.txt").read_text() == "user's"


def test_atomic_writes_get_the_usual_permissions_not_mkstemps(tmp_path):
    """mkstemp/mkdtemp make owner-only entries; what ragnet renames into place follows the umask
    (a report or compiled program at 0600 is unreadable to the user's group on a shared server)."""
    import os

    from ragnet._atomic import write_json

    old = os.umask(0o027)
    try:
        write_json(tmp_path / "report.json", {"ok": True})
        with atomic_dir(tmp_path / "folder") as tmp:
            (tmp / "a.txt").write_text("a")
        with atomic_path(tmp_path / "blob.bin") as tmp:
            tmp.write_bytes(b"x")  # a writer that reopens the temporary path keeps its mode
    finally:
        os.umask(old)
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "blob.bin").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "folder").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "folder" / "a.txt").stat().st_mode & 0o777 == 0o640
