"""Benchmark (2026-12-06): what asking some files of a large index costs (``Index.scoped``).

Builds (once, under ``--workdir``) an index of ``--passages`` passages as ``ragnet bench scale``
does (the pooled HotpotQA paragraphs, embedded for real, then distractor passages ``distractor-N``
with vectors drawn from a model of the real ones; IVF-PQ on disk by default), then times in one
process, query by query and interleaved, for HotpotQA dev questions:

* **unscoped**: ``index.search(q, k=5)``, the baseline;
* **small scope** (at most ``EXACT_WITHIN`` passages): every chunk of the scope scored exactly;
* **large scope, filtered**: the HotpotQA paragraphs (titles ``[A-Z]*``, where the questions'
  answers are) and ``distractor-1*`` (about 120,000 passages at 300,000): the search of the whole
  index with FAISS's ID selector and BM25 keeping to the scope's rows;
* **large scope, by exclusion**: the same scope searched as ragnet did before the filter (the rows
  outside it excluded from an unfiltered search, the candidate pool widened by their count).

It prints the medians and p95 of each in milliseconds, their ratios to the unscoped search, the
seconds a view takes to build, and how often each large-scope search's best chunk is the best
chunk of the whole scope scored exactly (and their top-5 overlap), then writes them as JSON with
``--out``. Every search embeds its question (the embedder's query cache is off). The small scope
is ``distractor-1????``: the distractors numbered 10,000 to 19,999 that the index holds.

    python -m benchmarks.studies.scope_search_timing --passages 300000 --workdir scale-bench \\
        --out docs/results/scale/scope-search.json
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.studies import parser


def _build(workdir: Path, passages: int, faiss_index: str, data_dir: str | None) -> tuple[Path, Path]:
    """The large index (built when absent) and the questions file, as ``ragnet bench scale`` makes them."""
    from ragnet.bench import scale
    from ragnet.eval.run.eval_indexes import load_pooled

    workdir.mkdir(parents=True, exist_ok=True)
    real_index, _ = load_pooled(scale.REAL_SET, data_dir=data_dir, log=print)
    questions = scale.question_file(workdir, real_index, data_dir, 200)
    big = workdir / f"scope-{passages}-{faiss_index}"
    if not (big / "manifest.json").exists():
        real = [scale.real_parts(real_index)]
        model = scale.VectorModel.fit(real[0][1], seed=0)
        pool = scale.SentencePool(scale.distractor_documents(data_dir))
        print(json.dumps(scale.build_corpus(big, real, passages, pool, model, faiss_index,
                                            real_index.manifest["embedder"], show_progress=False)))
    return big, questions


def _ms(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(float(np.percentile(times, 95)), 2)}


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__, "scope_search_timing")
    cli.add_argument("--passages", type=int, default=300_000)
    cli.add_argument("--workdir", default="scale-bench")
    cli.add_argument("--faiss-index", default="ivfpq")
    cli.add_argument("--questions", type=int, default=100)
    cli.add_argument("--data-dir", default=None)
    cli.add_argument("--out", default=None, help="write the figures here as JSON")
    args = cli.parse_args(argv)

    import ragnet.index.hybrid as hybrid
    from ragnet.index import Index

    big, qfile = _build(Path(args.workdir), args.passages, args.faiss_index, args.data_dir)
    questions = [json.loads(line)["question"] for line in qfile.read_text().splitlines()][: args.questions]
    index = Index.load(big, verify=False)
    index.embedder.query_cache = 0  # every search embeds its question, as a new question does
    t = time.perf_counter()
    small = index.scoped("distractor-1????")
    small_view_s = time.perf_counter() - t
    t = time.perf_counter()
    large = index.scoped("[A-Z]*", "distractor-1*")  # the real paragraphs (titled) and a third of the rest
    large_view_s = time.perf_counter() - t
    rows = large.rows_in_scope
    outside = np.setdiff1d(np.arange(len(index), dtype=np.int64), rows)
    print(f"{len(index)} chunks; small scope {len(small.rows_in_scope)} rows (view {small_view_s:.2f} s), "
          f"large scope {len(rows)} rows (view {large_view_s:.2f} s)")

    def by_exclusion(q: str):  # before the filter: the other rows excluded, the pool widened by their count
        index._excluded_rows = lambda exclude: outside
        try:
            return index.search(q, k=5)
        finally:
            del index._excluded_rows

    runs = {"unscoped": lambda q: index.search(q, k=5), "small scope, exact": lambda q: small.search(q, k=5),
            "large scope, filtered": lambda q: large.search(q, k=5), "large scope, by exclusion": by_exclusion}
    for run in runs.values():
        run("warm up the embedder and the mapped lists")
    times: dict[str, list[float]] = {name: [] for name in runs}
    approximate = ("large scope, filtered", "large scope, by exclusion")
    top1 = dict.fromkeys(approximate, 0)
    overlap = dict.fromkeys(approximate, 0)
    for q in questions:
        found = {}
        for name, run in runs.items():
            t = time.perf_counter()
            found[name] = [h.id for h in run(q)]
            times[name].append((time.perf_counter() - t) * 1000)
        saved, hybrid.EXACT_WITHIN = hybrid.EXACT_WITHIN, len(rows)
        try:
            exact = [h.id for h in large.search(q, k=5)]
        finally:
            hybrid.EXACT_WITHIN = saved
        for name in approximate:
            top1[name] += found[name][:1] == exact[:1]
            overlap[name] += len(set(found[name]) & set(exact))
    base = statistics.median(times["unscoped"])
    figures = {"passages": len(index), "faiss_index": index.manifest["faiss_index"], "questions": len(questions),
               "small_scope_rows": int(len(small.rows_in_scope)), "large_scope_rows": int(len(rows)),
               "view_s": {"small": round(small_view_s, 2), "large": round(large_view_s, 2)},
               "search": {name: {**_ms(ts), "x_unscoped": round(statistics.median(ts) / base, 2)}
                          for name, ts in times.items()},
               "same_best_chunk_as_the_scope_scored_exactly_pct": {
                   name: round(100 * top1[name] / len(questions), 1) for name in approximate},
               "top5_overlap_with_the_scope_scored_exactly_pct": {
                   name: round(100 * overlap[name] / (5 * len(questions)), 1) for name in approximate}}
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
