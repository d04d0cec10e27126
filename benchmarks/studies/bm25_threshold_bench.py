"""BM25 alone at 1M passages: top-100 plus 100 looked-up rows, ranking every score against
``top_and_scores_at``, on the same dev questions, in one process.

    python -m benchmarks.studies.bm25_threshold_bench INDEX QUESTIONS

QUESTIONS is the ``questions.jsonl`` that ``ragnet bench scale`` writes into its work folder.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence

import numpy as np

from benchmarks.studies import parser


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "bm25_threshold_bench")
    p.add_argument("index_dir", help="An index folder (its bm25/ is read, memory-mapped).")
    p.add_argument("qfile", help="JSON lines with a 'question' each.")
    args = p.parse_args(argv)
    from ragnet._threads import pin_threads

    pin_threads(2)
    from ragnet.index.sparse import SparseIndex, top_positive

    sp = SparseIndex.load(f"{args.index_dir}/bm25", mmap=True)
    with open(args.qfile, encoding="utf-8") as fh:
        qs = [json.loads(line)["question"] for line in fh if line.strip()]
    rng = np.random.default_rng(0)
    extra = [rng.integers(0, len(sp), 100) for _ in qs]
    full, threshold, same = [], [], 0
    for q, rows in zip(qs, extra):
        sp.top_and_scores_at(q, 100, rows)
    for rep in range(2):
        for q, rows in zip(qs, extra):
            t = time.perf_counter()
            s = sp.scores(q)
            a = top_positive(s, 100)
            b = s[rows]
            full.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = sp.top_and_scores_at(q, 100, rows)
            threshold.append(time.perf_counter() - t)
            same += int(np.array_equal(a[0], r[0]) and np.array_equal(a[1], r[1]) and np.array_equal(b, r[2]))
    ms = lambda x: round(1000 * statistics.median(x), 2)  # noqa: E731
    p95 = lambda x: round(1000 * float(np.percentile(x, 95)), 2)  # noqa: E731
    print(json.dumps({"queries": len(qs), "runs": len(full), "exhaustive_ms_p50": ms(full), "exhaustive_ms_p95": p95(full),
                      "threshold_ms_p50": ms(threshold), "threshold_ms_p95": p95(threshold), "identical": same}))


if __name__ == "__main__":
    main()
