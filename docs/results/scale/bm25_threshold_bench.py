"""BM25 alone at 1M (python bm25_threshold_bench.py INDEX QUESTIONS): top-100 plus 100 looked-up rows, ranking every score vs top_and_scores_at, same 200 dev questions, one process."""
import json, statistics, sys, time
import numpy as np
from ragnet._threads import pin_threads
pin_threads(2)
from ragnet.index.sparse import SparseIndex, top_positive
index_dir, qfile = sys.argv[1], sys.argv[2]
sp = SparseIndex.load(f"{index_dir}/bm25", mmap=True)
qs = [json.loads(l)["question"] for l in open(qfile) if l.strip()]
rng = np.random.default_rng(0)
extra = [rng.integers(0, len(sp), 100) for _ in qs]
full, threshold, same = [], [], 0
for q, rows in zip(qs, extra):
    sp.top_and_scores_at(q, 100, rows)
for rep in range(2):
    for q, rows in zip(qs, extra):
        t = time.perf_counter(); s = sp.scores(q); a = top_positive(s, 100); b = s[rows]; full.append(time.perf_counter() - t)
        t = time.perf_counter(); r = sp.top_and_scores_at(q, 100, rows); threshold.append(time.perf_counter() - t)
        same += int(np.array_equal(a[0], r[0]) and np.array_equal(a[1], r[1]) and np.array_equal(b, r[2]))
ms = lambda x: round(1000 * statistics.median(x), 2)
p95 = lambda x: round(1000 * float(np.percentile(x, 95)), 2)
print(json.dumps({"queries": len(qs), "runs": len(full), "exhaustive_ms_p50": ms(full), "exhaustive_ms_p95": p95(full),
                  "threshold_ms_p50": ms(threshold), "threshold_ms_p95": p95(threshold), "identical": same}))
