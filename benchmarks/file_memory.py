"""Peak memory and time of reading and chunking one hostile file, per case (issue 47).

    python -m benchmarks.file_memory                 # the default bound, --max-file-mb 20
    python -m benchmarks.file_memory --max-file-mb 2 title.html word.txt

Builds each case of ``tests/corpus/test_file_memory.py`` at the size the bound allows (ten times
the test's at the default bound), reads and chunks it in a fresh interpreter
(``tests.corpus.file_memory.measure``) and prints the file's size, how far the peak resident
memory rose while it was read and chunked (embedding excluded), the seconds, and what happened
to it. Run from the repository root (it imports the test helpers).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tests.corpus.file_memory import measure
from tests.corpus.test_file_memory import BOUND_MB, CASES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-file-mb", type=float, default=20.0, help="the bound (cases scale with it)")
    parser.add_argument("cases", nargs="*", help=f"case names (default all: {', '.join(CASES)})")
    args = parser.parse_args(argv)
    scale = args.max_file_mb / BOUND_MB
    with tempfile.TemporaryDirectory() as folder:
        print(f"{'case':<16} {'file MB':>8} {'peak MB':>8} {'seconds':>8}  outcome")
        for name in args.cases or list(CASES):
            path = Path(folder) / name
            path.write_bytes(CASES[name][0](scale))
            started = time.perf_counter()
            got = measure(path, args.max_file_mb, timeout=3600)
            seconds = time.perf_counter() - started
            print(f"{name:<16} {path.stat().st_size / 1e6:>8.2f} {got['peak_mb']:>8.1f} {seconds:>8.1f}  "
                  f"{got['outcome'][:100]}", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
