"""docs/results stays small in git (the rows leave the tree), and a folder's rows come back from
history with ``python -m benchmarks.fetch_rows``."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import fetch_rows

REPO = Path(__file__).resolve().parents[2]
MAX_TRACKED_BYTES = 5_000_000


def _tracked_results() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "docs/results"], cwd=REPO, check=True, capture_output=True, text=True)
        return [REPO / line for line in out.stdout.splitlines()]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: what git would track
        ignored = ("results.jsonl", "results.jsonl.gz", "report.html")
        return [p for p in (REPO / "docs" / "results").rglob("*") if p.is_file() and p.name not in ignored]


def test_docs_results_tracks_at_most_5_mb_and_no_rows():
    tracked = _tracked_results()
    assert not [p for p in tracked if p.name.startswith("results.jsonl")]
    total = sum(p.stat().st_size for p in tracked if p.is_file())
    assert total <= MAX_TRACKED_BYTES, f"docs/results tracks {total / 1e6:.1f} MB"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)


def test_rows_come_back_from_the_commit_before_they_left_the_tree(tmp_path):
    folder = tmp_path / "docs" / "results" / "run-a"
    folder.mkdir(parents=True)
    rows = gzip.compress(b'{"id": "q1", "f1": 1.0}\n')
    (folder / "results.jsonl.gz").write_bytes(rows)
    (folder / "run.json").write_text(json.dumps({"command": "ragnet eval --out run-a"}))
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "rows")
    _git(tmp_path, "rm", "-q", "--cached", "docs/results/run-a/results.jsonl.gz")
    _git(tmp_path, "commit", "-qm", "rows leave the tree")
    (folder / "results.jsonl.gz").unlink()

    assert fetch_rows.fetch(folder, root=tmp_path).read_bytes() == rows

    never = tmp_path / "docs" / "results" / "run-b"
    never.mkdir()
    (never / "run.json").write_text(json.dumps({"command": "ragnet eval --out run-b"}))
    with pytest.raises(FileNotFoundError, match="run-b.*ragnet eval --out run-b"):
        fetch_rows.fetch(never, root=tmp_path)


def test_all_finds_a_studys_runs_in_sub_folders(tmp_path):
    for name in ("run-a", "study/baseline", "study/change"):
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "run.json").write_text("{}")
    (tmp_path / "study" / "notes.md").write_text("no run here")
    assert fetch_rows.result_folders(tmp_path) == [tmp_path / "run-a", tmp_path / "study" / "baseline",
                                                    tmp_path / "study" / "change"]
