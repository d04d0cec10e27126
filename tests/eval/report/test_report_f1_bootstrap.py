"""The eval report's comparison with the baseline gives F1's paired bootstrap beside EM's sign test:
F1 moves where EM does not (a partly right answer), and it is the figure a results page quotes."""

from __future__ import annotations

from ragnet.eval.metrics.stats import paired_bootstrap
from ragnet.eval.report.markdown_report import format_report
from ragnet.eval.report.summary import build_summary


def _row(strategy: str, qid: str, em: float, f1: float) -> dict:
    return {"strategy": strategy, "id": qid, "em": em, "f1": f1, "contains": em, "llm_match": None,
            "gold_all": 1.0, "gold_fraction": 1.0, "n_gold": 1, "chunks": 1, "trace": [],
            "usage": {"seconds": 1.0, "lm_calls": 1}}


META = {"set": "toy", "mode": "pooled", "questions": 8, "judge": False,
        "strategies": [{"label": "basic", "spec": "basic", "budget": None, "program": None},
                       {"label": "oneshot@1000", "spec": "oneshot", "budget": 1000, "program": None}]}


def test_f1_bootstrap_is_summarised_and_reported_beside_the_sign_test():
    base_f1 = [0.0, 0.5, 0.2, 0.0, 1.0, 0.4, 0.0, 0.3]
    mine_f1 = [0.5, 0.5, 0.6, 0.4, 1.0, 0.8, 0.2, 0.4]  # partly right answers: EM never moves
    rows = [_row("basic", f"q{i}", 1.0 if f == 1.0 else 0.0, f) for i, f in enumerate(base_f1)]
    rows += [_row("oneshot@1000", f"q{i}", 1.0 if f == 1.0 else 0.0, f) for i, f in enumerate(mine_f1)]
    summary = build_summary(rows, META)
    cmp = summary["vs_baseline"]["oneshot@1000"]
    assert cmp["metric"] == "em" and cmp["delta"] == 0.0 and not cmp["beats_baseline"]
    expected = paired_bootstrap([m - b for m, b in zip(mine_f1, base_f1)])
    assert cmp["f1"]["metric"] == "f1" and cmp["f1"]["bootstrap"] == expected
    assert expected["mean"] == 0.25 and expected["low"] > 0 and expected["p_value"] < 0.05
    line = next(x for x in format_report(summary).splitlines() if x.startswith("- ❌ **oneshot@1000**"))
    assert line.endswith(f"; F1 +25.0 points (95% interval +{100 * expected['low']:.1f} to "
                         f"+{100 * expected['high']:.1f}, paired bootstrap p = {expected['p_value']:.3g}).")


def test_a_summary_written_before_the_f1_comparison_still_reports():
    rows = [_row("basic", "q0", 0.0, 0.0), _row("oneshot@1000", "q0", 1.0, 1.0)]
    summary = build_summary(rows, META)
    del summary["vs_baseline"]["oneshot@1000"]["f1"]  # as in an older summary.json
    line = next(x for x in format_report(summary).splitlines() if x.startswith("- ❌ **oneshot@1000**"))
    assert "paired bootstrap" not in line and line.endswith("(0/0).")
