"""Fetch the per-question rows (``results.jsonl.gz``) of result folders from git history.

``docs/results`` keeps each folder's ``report.md``, ``summary.json``, ``run.json`` and
``ids.txt`` in git; the rows left the tree to keep the checkout small. They are still in the
history: this restores a folder's rows from the last commit that held them, so ``ragnet eval
report`` and a resumed ``ragnet eval`` work on it again. A folder whose rows were never
committed is rebuilt by running its ``run.json`` command again (the DSPy cache answers the
calls it already made).

    python -m benchmarks.fetch_rows docs/results/realdocs-dev docs/results/2wiki-dev-hops
    python -m benchmarks.fetch_rows --all
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from ragnet._atomic import atomic_path

ROWS = "results.jsonl.gz"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"


def _git(args: list[str], root: Path) -> bytes:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True).stdout


def rows_commit(folder: Path, root: Path = ROOT) -> str | None:
    """The last commit that held ``folder``'s rows, or None when history never had them."""
    relative = (folder / ROWS).resolve().relative_to(root.resolve()).as_posix()
    removed = _git(["log", "-1", "--format=%H", "--diff-filter=D", "--", relative], root).decode().strip()
    return f"{removed}^" if removed else None


def fetch(folder: Path, root: Path = ROOT) -> Path:
    """Write ``folder/results.jsonl.gz`` from history (atomically); returns its path.

    Raises:
        FileNotFoundError: history never held the rows; the message names the folder's command.
    """
    target = folder / ROWS
    if target.is_file():
        return target
    commit = rows_commit(folder, root)
    if commit is None:
        run = folder / "run.json"
        command = json.loads(run.read_text(encoding="utf-8")).get("command") if run.is_file() else None
        raise FileNotFoundError(f"{folder}: no rows in git history; rebuild them with its command"
                                + (f": {command}" if command else " (see its report.md)"))
    relative = target.resolve().relative_to(root.resolve()).as_posix()
    data = _git(["show", f"{commit}:{relative}"], root)
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def result_folders(results: Path = RESULTS) -> list[Path]:
    """Every folder under ``results`` with a ``run.json``, at any depth (a study keeps its runs
    in sub-folders, ``realdocs-dev-listings/listings``)."""
    return sorted(p.parent for p in results.glob("**/run.json"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="result folders (docs/results/NAME)")
    parser.add_argument("--all", action="store_true", help="every folder under docs/results (at any depth) with a run.json")
    args = parser.parse_args(argv)
    folders = result_folders() if args.all else args.folders
    if not folders:
        parser.error("name result folders, or give --all")
    failed = 0
    for folder in folders:
        try:
            print(fetch(folder))
        except (FileNotFoundError, subprocess.CalledProcessError) as exc:
            failed += 1
            print(f"error: {exc}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
