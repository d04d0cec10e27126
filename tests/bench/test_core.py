"""``ragnet bench core``: the numpy core's timings come back as JSON-able figures (not timed assertions)."""

from __future__ import annotations

import pytest

from ragnet.bench.core import run_core_bench
from ragnet.errors import InputError


def test_core_bench_returns_json_able_medians():
    import json

    result = run_core_bench(repeats=1, sizes=(100, 1000), noise_sizes=(50,), gap_instances=2)
    json.dumps(result)
    rows = {(r["n"], r["method"]): r for r in result["knapsack"]}
    assert set(rows) == {(100, "exact"), (100, "greedy"), (1000, "exact"), (1000, "greedy")}
    assert all(r["median_ms"] > 0 and r["tokens_used"] <= 32_000 for r in rows.values())
    assert result["optimality"]["exact_certified_gap"] <= 0.005
    assert result["optimality"]["exact_gap_to_optimum"] <= 0.005
    assert result["noise"][0]["n"] == 50 and result["noise"][0]["median_ms"] > 0
    with pytest.raises(InputError):
        run_core_bench(repeats=0)
