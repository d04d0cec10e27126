"""Latency with cache hits priced: a strategy whose LM calls DSPy's cache answered from another
strategy's rows (a router's simple route and the one-shot) is timed at what those calls cost live."""

from __future__ import annotations

from ragnet.eval.metrics.stats import call_prices, priced_latency
from ragnet.eval.report.markdown_report import format_report
from ragnet.eval.report.summary import build_summary


def _call(key: str, seconds: float, cached: bool = False) -> dict:
    return {"key": key, "seconds": seconds, "cached": cached}


def _row(strategy: str, qid: str, seconds: float, calls: list[dict] | None) -> dict:
    usage = {"seconds": seconds, "lm_calls": len(calls or [1]),
             "cached_calls": sum(1 for c in calls or () if c["cached"])}
    if calls is not None:
        usage["calls"] = calls
    return {"strategy": strategy, "id": qid, "em": 1.0, "f1": 1.0, "contains": 1.0, "llm_match": None,
            "gold_all": 1.0, "gold_fraction": 1.0, "n_gold": 1, "chunks": 1, "trace": [], "usage": usage}


META = {"set": "toy", "mode": "pooled", "questions": 3, "judge": False, "baseline": "oneshot",
        "strategies": [{"label": "oneshot", "spec": "oneshot", "budget": None, "program": None},
                       {"label": "router", "spec": "router", "budget": None, "program": None}]}


def _rows() -> list[dict]:
    return [
        _row("oneshot", "q1", 10.0, [_call("a1", 9.9)]),
        _row("oneshot", "q2", 12.0, [_call("a2", 11.9)]),
        _row("oneshot", "q3", 14.0, [_call("a3", 13.9)]),
        _row("router", "q1", 0.2, [_call("a1", 0.01, cached=True)]),       # simple route: the one-shot's call
        _row("router", "q2", 60.0, [_call("s1", 20.0), _call("s2", 28.0), _call("a9", 11.9)]),  # hard, live
        _row("router", "q3", 0.1, [_call("zz", 0.01, cached=True)]),       # a hit an earlier run paid for
    ]


def test_cache_hits_are_priced_at_the_live_time_of_the_same_call():
    rows = _rows()
    prices = call_prices(rows)
    assert prices["a1"] == 9.9 and "zz" not in prices
    router = priced_latency([r for r in rows if r["strategy"] == "router"], prices)
    assert (router["rows"], router["of"], router["hits_priced"]) == (2, 3, 1)
    assert router["p50"] == round((0.2 + 9.9 - 0.01 + 60.0) / 2, 6)


def test_a_strategys_repeat_of_its_own_live_call_stays_a_cache_hit():
    rows = [_row("agent", "q1", 30.0, [_call("n1", 10.0), _call("n1", 0.01, cached=True)]),
            _row("agent", "q2", 5.0, [_call("n1", 0.01, cached=True)]),
            _row("oneshot", "q1", 50.0, [_call("n1", 50.0)])]  # another strategy paid more for it
    priced = priced_latency(rows[:2], call_prices(rows))
    assert (priced["rows"], priced["hits_priced"], priced["p50"]) == (2, 0, 17.5)


def test_a_row_that_lists_no_calls_is_priced_only_without_cache_hits():
    live_old = _row("oneshot", "q1", 5.0, None)                       # written before calls were kept
    cached_old = _row("oneshot", "q2", 0.1, None)
    cached_old["usage"]["cached_calls"] = 1
    assert priced_latency([live_old, cached_old], {})["rows"] == 1


def test_the_summary_and_report_give_the_priced_latency_and_its_ratio_to_the_baseline():
    summary = build_summary(_rows(), META)
    router = summary["strategies"]["router"]
    assert router["latency_p50"] == 60.0  # the live-only figure: one row of three
    assert router["priced_latency"]["p50"] == round((0.2 + 9.89 + 60.0) / 2, 6)
    assert summary["vs_baseline"]["router"]["deltas"]["priced_p50_ratio"] == round(
        router["priced_latency"]["p50"] / 12.0, 6)
    line = next(x for x in format_report(summary).splitlines() if x.startswith("Latency with cache hits priced"))
    assert "router p50 35.05 s" in line and "(2.92× oneshot's p50)" in line
    assert "over 2 of 3 rows (1 cache hit priced)" in line


def test_no_priced_latency_line_when_no_hit_was_priced():
    rows = [r for r in _rows() if r["strategy"] == "oneshot"]
    meta = {**META, "strategies": META["strategies"][:1]}
    assert "Latency with cache hits priced" not in format_report(build_summary(rows, meta))
