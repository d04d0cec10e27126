"""The eval report shows each router strategy's route share, read from the route events of its rows."""

from __future__ import annotations

from ragnet.eval.report.markdown_report import format_report
from ragnet.eval.report.summary import build_summary


def _row(strategy: str, qid: str, route: str | None) -> dict:
    trace = [{"step": "search", "retrieved": ["a#0"]}]
    if route is not None:
        trace.append({"step": "route", "route": route, "rule": "default", "signals": {}})
    return {"strategy": strategy, "id": qid, "em": 1.0, "f1": 1.0, "contains": 1.0, "llm_match": None,
            "gold_all": 1.0, "gold_fraction": 1.0, "n_gold": 1, "chunks": 1, "trace": trace,
            "usage": {"seconds": 1.0, "lm_calls": 1}}


def test_the_route_share_of_each_router_strategy_is_summarised_and_reported():
    rows = [_row("router@1000", "q1", "hard"), _row("router@1000", "q2", "simple"), _row("router@1000", "q3", "simple"),
            _row("oneshot@1000", "q1", None), _row("oneshot@1000", "q2", None), _row("oneshot@1000", "q3", None)]
    meta = {"set": "toy", "mode": "pooled", "questions": 3, "judge": False,
            "strategies": [{"label": "oneshot@1000", "spec": "oneshot", "budget": 1000, "program": None},
                           {"label": "router@1000", "spec": "router", "budget": 1000, "program": None}]}
    summary = build_summary(rows, meta)
    assert summary["strategies"]["router@1000"]["routes"] == {"simple": 2, "hard": 1}
    assert "routes" not in summary["strategies"]["oneshot@1000"]
    report = format_report(summary)
    assert "router@1000: hard 33.3% (1 of 3), simple 2" in report
    assert "oneshot@1000: hard" not in report


def test_no_route_line_without_a_router():
    meta = {"set": "toy", "mode": "pooled", "questions": 1, "judge": False,
            "strategies": [{"label": "basic", "spec": "basic", "budget": None, "program": None}]}
    assert "Routes (" not in format_report(build_summary([_row("basic", "q1", None)], meta))
