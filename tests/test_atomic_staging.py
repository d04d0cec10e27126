"""A killed build's staging folder is removed by the next build, whatever its target (issue 47,
item 11): before, it stayed (2.8 GB in one case) until a rebuild of the same name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragnet._atomic import atomic_dir, clean_stale_staging, scratch_dir

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from ragnet._atomic import scratch_dir
    with scratch_dir(Path(sys.argv[1])) as staging:
        (staging / "vectors.npy").write_bytes(b"x" * 100_000)
        print(staging, flush=True)
        time.sleep(600)
""")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def staging_of(target: Path, home: Path) -> tuple[subprocess.Popen, Path]:
    """A process holding a staging folder for ``target`` (as `ragnet index --out target` does)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(target)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "RAGNET_HOME": str(home)})
    staging = Path(proc.stdout.readline().strip())
    assert staging.is_dir() and (staging / "vectors.npy").is_file()
    return proc, staging


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def test_the_next_build_in_the_same_folder_removes_a_killed_builds_staging_folder(tmp_path, home):
    proc, staging = staging_of(tmp_path / "big-index", home)
    kill(proc)
    with atomic_dir(tmp_path / "other-index") as tmp:  # another target, same folder
        (tmp / "x").write_text("y")
    assert not staging.exists() and (tmp_path / "other-index" / "x").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no records left either


def test_a_build_anywhere_removes_it_through_the_record_under_ragnet_home(tmp_path, home):
    (tmp_path / "a").mkdir()
    proc, staging = staging_of(tmp_path / "a" / "idx", home)
    kill(proc)
    with scratch_dir(tmp_path / "b" / "program.json"):  # another folder: `ragnet optimize --out b/...`
        pass
    assert not staging.exists()
    assert list((home / "staging").iterdir()) == []


def test_a_running_builds_staging_folder_is_left_alone(tmp_path, home):
    proc, staging = staging_of(tmp_path / "idx", home)
    try:
        assert clean_stale_staging(tmp_path) == []
        assert staging.is_dir()
    finally:
        kill(proc)
    assert clean_stale_staging(tmp_path) == [str(staging.absolute())]


def test_a_folder_that_only_looks_like_staging_is_never_removed(tmp_path, home):
    lookalike = tmp_path / ".idx.99999999.abcdefgh.tmp"  # a dead pid, but no owner record: not ours to judge
    lookalike.mkdir()
    (lookalike / "keep.txt").write_text("mine")
    (tmp_path / ".x.99999999.abcdefgh.tmp.owner").write_text('{"pid": 99999999, "staging": "/etc"}')
    with atomic_dir(tmp_path / "other"):
        pass
    assert (lookalike / "keep.txt").read_text() == "mine" and Path("/etc").is_dir()


def test_ragnet_index_removes_a_killed_builds_staging_folder(tmp_path, home):
    from typer.testing import CliRunner

    from ragnet.cli import app

    proc, staging = staging_of(tmp_path / "killed-index", home)
    kill(proc)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text about roads.\n")
    result = CliRunner().invoke(app, ["index", str(docs), "--out", str(tmp_path / "fresh-index"), "--no-sentences"])
    assert result.exit_code == 0, result.output
    assert not staging.exists()


def test_the_staging_records_live_where_ragnet_home_is(home):
    from ragnet._atomic import _ragnet_home
    from ragnet.lm.models import ragnet_home

    assert _ragnet_home() == ragnet_home() == home


# ---------------------------------------------------------------- issue 74: the swap itself
def test_a_reader_puts_back_a_folder_a_killed_swap_left_aside(tmp_path):
    """Killed between the two renames of a swap, the previous version sat beside the path, and
    readers said "no index" until the next write put it back."""
    from ragnet._atomic import recover_set_aside

    target = tmp_path / "idx"
    aside = tmp_path / ".idx.old-99999999"  # a dead writer's pid
    aside.mkdir()
    (aside / "manifest.json").write_text("{}")
    assert recover_set_aside(target) == target
    assert (target / "manifest.json").read_text() == "{}" and not aside.exists()
    running = tmp_path / f".idx.old-{os.getpid()}"  # a swap under way in a live process is left alone
    os.replace(target, running)
    assert recover_set_aside(target) == target and not target.exists() and running.is_dir()


def test_a_folder_swap_flushes_every_file_and_the_parent_to_disk(tmp_path, monkeypatch):
    """Without fsync, a power cut after the rename could leave the new index with empty files."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    target = tmp_path / "out"
    for version in ("one", "two"):
        synced.clear()
        with atomic_dir(target, owned=lambda old: {"a.bin", "sub/b.bin"}) as tmp:
            (tmp / "a.bin").write_text(version)
            (tmp / "sub").mkdir()
            (tmp / "sub" / "b.bin").write_text(version)
        assert (target / "a.bin").read_text() == version
        staged = {str(Path(p).parent) for p in synced if p.endswith("a.bin")}  # the staging folder's path
        assert len(staged) == 1
        tmp_name = staged.pop()
        assert {f"{tmp_name}/a.bin", f"{tmp_name}/sub/b.bin", f"{tmp_name}/sub", tmp_name, str(tmp_path)} <= set(synced)
