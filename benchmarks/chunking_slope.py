"""How chunking time grows with the length of unbroken text (issue 47, item 1).

    python -m benchmarks.chunking_slope                  # 10 KB, 100 KB, 1 MB, 10 MB of random letters
    python -m benchmarks.chunking_slope --kinds letters,blanks,dots,words --sizes 10000,1000000

Chunks one document of each size with ``chunk_documents`` (256/32 tokens, as ``ragnet index``)
and prints the seconds, the microseconds per character, and the slope of log(time) against
log(size) fitted over the sizes: 1.0 is linear, 2.0 quadratic. Kinds of text, none with a
sentence end:

* ``letters``: random lowercase letters, one word (a base64 blob, a hash dump);
* ``blanks``: two words with a run of spaces between them;
* ``dots``: a run of dots between two words;
* ``words``: one-letter words separated by single spaces, no punctuation (a log line).

The best of ``--repeats`` runs is kept. Pin the process to one core (``taskset -c 1``) for
figures to compare.
"""

from __future__ import annotations

import argparse
import math
import random
import time

from ragnet.corpus.chunking import chunk_documents
from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Document


def make_text(kind: str, size: int, seed: int = 0) -> str:
    """``size`` characters of text of one ``kind`` (see the module docstring)."""
    if kind == "letters":
        rng = random.Random(seed)
        return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=size))
    if kind == "blanks":
        return "A" + " " * (size - 2) + "B"
    if kind == "dots":
        return "A" + "." * (size - 2) + "B"
    if kind == "words":
        return ("a b " * (size // 4 + 1))[:size]
    raise SystemExit(f"unknown kind {kind!r}; choose letters, blanks, dots or words")


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(seconds) against log(size)."""
    xs = [math.log(s) for s, _ in points]
    ys = [math.log(max(t, 1e-6)) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def measure(kind: str, size: int, repeats: int) -> tuple[float, int]:
    """Best seconds of ``repeats`` chunkings of one text, and its chunk count."""
    text = make_text(kind, size)
    best, count = math.inf, 0
    for _ in range(repeats):
        started = time.perf_counter()
        chunks = chunk_documents([Document(id=kind, title=kind, text=text)], 256, 32)
        best = min(best, time.perf_counter() - started)
        count = len(chunks)
    return best, count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default="letters", help="comma-separated: letters, blanks, dots, words")
    parser.add_argument("--sizes", default="10000,100000,1000000,10000000", help="comma-separated sizes in characters")
    parser.add_argument("--repeats", type=int, default=1, help="runs per size (the best is kept)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    count_tokens("warm up")  # the encoding's load is not chunking
    print(f"{'kind':<8} {'size':>12} {'chunks':>8} {'seconds':>9} {'us/char':>8}")
    for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
        points = []
        for size in sizes:
            seconds, chunks = measure(kind, size, args.repeats)
            points.append((size, seconds))
            print(f"{kind:<8} {size:>12,} {chunks:>8,} {seconds:>9.3f} {1e6 * seconds / size:>8.2f}", flush=True)
        if len(points) > 1:
            print(f"{kind:<8} slope of log(time) on log(size): {slope(points):.2f} (1 = linear, 2 = quadratic)")


if __name__ == "__main__":
    main()
