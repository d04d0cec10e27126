"""Bench helpers return the documented figures (tiny inputs; not timed assertions)."""

from __future__ import annotations

from ragnet.bench.index_timings import run_index_bench, run_search_bench

from .conftest import QUERIES, make_docs


def test_run_search_bench_reports_all_modes(built):
    result = run_search_bench(built, QUERIES, repeats=1, threads=1, warmup=2)
    for mode in ("hybrid", "dense", "bm25", "embed"):
        assert set(result[mode]) == {"median_ms", "p95_ms", "mean_ms"}
        assert result[mode]["median_ms"] > 0
    assert result["queries"] == len(QUERIES) and result["chunks"] == len(built)


def test_run_index_bench_reports_overhead(embedder):
    before = embedder.batch_size
    result = run_index_bench([d.text for d in make_docs()[:8]], embedder=embedder, batch_size=32, threads=1)
    assert result["chunks"] == 8 and result["batch_size"] == 32
    assert result["raw_encode_s"] > 0 and "overhead_pct" in result and "embed_overhead_pct" in result
    assert embedder.batch_size == before != 32  # restored
