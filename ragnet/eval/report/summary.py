"""``summary.json``: every aggregate of a ``ragnet eval`` run, from its result rows.

:func:`build_summary` turns result rows into one JSON-ready dict: per-strategy aggregates
(``ragnet.eval.metrics.stats.aggregate``), tables by question type and level, paired comparisons
with the baseline (``basic``) with a sign test, budget curves and the evaluation overhead.
:func:`finish_summary` adds the PNG plots and the overhead;
:func:`ragnet.eval.report.markdown_report.format_report` renders the summary as ``report.md``, and
the run folder (``ragnet.eval.run.run_folder``) writes ``summary.json`` and ``report.md`` atomically.

Example:
    >>> rows = [{"strategy": "basic", "id": "q1", "type": "bridge", "level": "easy", "em": 1.0, "f1": 1.0,
    ...          "contains": 1.0, "llm_match": None, "gold_all": 1.0, "gold_fraction": 1.0, "n_gold": 1,
    ...          "chunks": 2, "usage": {"seconds": 1.5, "lm_calls": 1}}]
    >>> meta = {"set": "toy", "mode": "pooled", "questions": 1, "judge": False,
    ...         "strategies": [{"label": "basic", "spec": "basic", "budget": None, "program": None}]}
    >>> summary = build_summary(rows, meta)
    >>> summary["primary_metric"], summary["strategies"]["basic"]["em"]
    ('em', 1.0)
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.metrics.answer_match import strict_contains_match
from ragnet.eval.metrics.stats import aggregate, call_prices, paired_comparison, priced_latency
from ragnet.eval.run.oracle import MODES as ORACLE_MODES

__all__ = ["SIGNIFICANCE", "build_summary", "choose_baseline", "confidence_figures", "documents_figures",
           "finish_summary", "row_confidence"]

#: A strategy "beats basic" only when its mean gain is positive and the sign test says p < this.
SIGNIFICANCE = 0.05
OVERHEAD_TARGET = 0.05


def _small(rows: Sequence[dict[str, Any]], extra: Sequence[str] = ()) -> dict[str, Any]:
    agg = aggregate(rows, extra)
    return {k: agg[k] for k in ("n", "errors", "em", "f1", "contains", "llm_match", "gold_all", "gold_fraction", *extra)}


def _group(rows: Sequence[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get(key) is not None:
            groups[str(r[key])].append(r)
    return dict(sorted(groups.items()))


def choose_baseline(labels: Sequence[str], chosen: str | None = None) -> str | None:
    """The label the others are compared with: ``chosen`` (a label, or a spec that names exactly
    one label), else ``basic`` when it ran, else none.

    Example:
        >>> choose_baseline(["basic", "oneshot@1000"]), choose_baseline(["basic", "oneshot@1000"], "oneshot")
        ('basic', 'oneshot@1000')
    """
    if chosen:
        matches = [lb for lb in labels if lb == chosen] or [lb for lb in labels if lb.split("@")[0] == chosen]
        if len(matches) != 1:
            raise InputError(f"{chosen!r} names {'no' if not matches else 'more than one'} strategy of this run; "
                             f"choose one of {', '.join(labels)}", argument="baseline")
        return matches[0]
    if "basic" in labels:
        return "basic"
    return next((lb for lb in labels if lb.split(":")[0].split("@")[0] == "basic"), None)


def _verdict(cmp: dict[str, Any], baseline: str) -> tuple[bool, str]:
    delta, p = cmp["delta"], cmp["p_value"]
    if delta > 0 and p < SIGNIFICANCE:
        return True, f"beats {baseline} (p={p:.3g})"
    if delta > 0:
        return False, f"does not beat {baseline}: gain not significant (p={p:.3g})"
    if delta == 0:
        return False, f"does not beat {baseline}: no difference"
    return False, f"does not beat {baseline}: worse"


def _overhead(rows_new: Sequence[dict[str, Any]], loop_s: float, report_s: float, threads: int) -> dict[str, Any]:
    """Evaluation overhead: (wall − Σ program s − Σ judge s) / Σ program s over this run's rows.

    ``loop_ratio`` covers the evaluation loop (scoring, gold mapping, writing rows); ``ratio``
    adds the report and plots, a fixed cost of a few seconds. Per-question index set-up
    (cached, one-off) is left out of both."""
    program_s = judge_s = index_s = job_s = 0.0
    for r in rows_new:
        judge = r.get("judge") or {}
        j = float(judge.get("seconds", 0) or 0)
        i = float(r.get("index_seconds", 0) or 0)
        p = float((r.get("usage") or {}).get("seconds", 0) or 0) if not r.get("error") else max(
            0.0, float(r.get("job_seconds", 0) or 0) - i)
        program_s, judge_s, index_s = program_s + p, judge_s + j, index_s + i
        job_s += float(r.get("job_seconds", 0) or 0)
    out: dict[str, Any] = {
        "rows": len(rows_new), "loop_s": round(loop_s, 4), "report_s": round(report_s, 4),
        "program_s": round(program_s, 4), "judge_s": round(judge_s, 4), "index_s": round(index_s, 4),
        "threads": threads, "ratio": None, "loop_ratio": None, "target": OVERHEAD_TARGET,
    }
    if not rows_new or program_s <= 0:
        out["method"] = "no new rows in this run" if not rows_new else "no program time"
        return out
    if threads == 1:
        out["wall_s"] = round(loop_s + report_s, 4)
        loop_overhead = loop_s - program_s - judge_s - index_s
        out["method"] = "(evaluation loop wall - program s - judge s - per-question index s) / program s"
    else:
        loop_overhead = job_s - program_s - judge_s - index_s
        out["method"] = ("threads > 1: (sum of job walls - program s - judge s - per-question index s) / program s")
    out["loop_ratio"] = round(loop_overhead / program_s, 6)
    out["ratio"] = round((loop_overhead + report_s) / program_s, 6)
    return out


#: The question kind whose answer needs two places of a document (``ragnet eval --docs``).
TWO_PART = "two-part"


def documents_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a team asks of ragnet over its own documents, for one strategy's rows (``ragnet eval
    --docs``, :mod:`ragnet.eval.run.doc_questions`): right answers (and with the strict match,
    :func:`ragnet.eval.metrics.answer_match.strict_contains_match`), and of the two-part questions;
    how often a right answer's citation (its first citation) is at the place that states it;
    how often the line that states the answer was shown (of the questions whose place has a
    quote); and of the misses, how many had the answer's place (the answer itself, its line) in
    front of the reader.
    LM outages are left out, as in every accuracy figure.

    Example:
        >>> rows = [{"contains": 1.0, "gold_cited": 1.0, "gold_cited_first": 0.0, "gold_place_in_context": 1.0,
        ...          "answer_in_context": 1.0, "type": "lookup", "f1": 1.0, "em": 1.0},
        ...         {"contains": 0.0, "gold_cited": 0.0, "gold_cited_first": 0.0, "gold_place_in_context": 1.0,
        ...          "answer_in_context": 0.0, "type": "two-part", "f1": 0.0, "em": 0.0}]
        >>> d = documents_figures(rows)
        >>> d["right"], d["two_part_right"], d["cited_of_right"], d["misses_with_gold_place"]
        (0.5, 0.0, 1.0, 1.0)
        >>> documents_figures([{**rows[0], "answer": "1", "answers": ["-1"]}])["right_strict_count"]
        0
    """
    scored = [r for r in rows if r.get("error_kind") != "lm"]
    right = [r for r in scored if (r.get("contains") or 0) >= 1]
    missed = [r for r in scored if (r.get("contains") or 0) < 1]
    two = [r for r in scored if r.get("type") == TWO_PART]
    strict = sum(strict_contains_match(str(r.get("answer") or ""), r.get("answers") or ()) for r in scored)

    def share(part: Sequence[dict[str, Any]], key: str | None = None) -> float | None:
        return None if not part else round(sum(float(r.get(key) or 0) if key else 1.0 for r in part) / len(part), 6)

    def quoted(part: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows whose answer's place has a quote (``line_in_context`` is scored for those)."""
        return [r for r in part if r.get("line_in_context") is not None]

    return {
        "n": len(scored), "right": share(scored, "contains"), "right_count": len(right),
        "right_strict": round(strict / len(scored), 6) if scored else None, "right_strict_count": int(strict),
        "f1": share(scored, "f1"), "em": share(scored, "em"),
        "two_part": len(two), "two_part_right": share(two, "contains"),
        "cited_of_right": share(right, "gold_cited"), "cited_first_of_right": share(right, "gold_cited_first"),
        "gold_place_in_context": share(scored, "gold_place_in_context"),
        "misses": len(missed), "misses_with_gold_place": share(missed, "gold_place_in_context"),
        "misses_with_answer_shown": share(missed, "answer_in_context"),
        "line_in_context": share(quoted(scored), "line_in_context"), "quoted_misses": len(quoted(missed)),
        "misses_with_line_shown": share(quoted(missed), "line_in_context"),
        **confidence_figures(scored),
    }


def row_confidence(row: dict[str, Any]) -> float | None:
    """The reader's confidence in a row's answer (``pred.confidence``): the row's own field, else its
    trace's last answer event; None where the reader's LM reported no logprobs."""
    if row.get("confidence") is not None:
        return float(row["confidence"])
    answers = [e for e in row.get("trace") or () if isinstance(e, dict) and e.get("step") == "answer"]
    value = answers[-1].get("confidence") if answers else None
    return None if value is None else float(value)


def confidence_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How well the reader's confidence tells right answers from misses, over the rows that have one:
    ``confidence_auroc``, the chance that a right answer's confidence is above a miss's (0.5: no
    better than a coin; ties count half), and the right share of the surer half of the answers (at
    or above the median confidence) and of the rest. Empty when no row has a confidence.

    Example:
        >>> rows = [{"contains": c, "confidence": p} for c, p in [(1, 0.9), (1, 0.8), (0, 0.7), (1, 0.3), (0, 0.2)]]
        >>> figures = confidence_figures(rows)
        >>> figures["confidence_auroc"], figures["right_of_surer_half"], figures["right_of_other_half"]
        (0.833333, 0.666667, 0.5)
    """
    pairs = [(conf, (r.get("contains") or 0) >= 1) for r in rows if (conf := row_confidence(r)) is not None]
    if not pairs:
        return {}
    right = [c for c, ok in pairs if ok]
    wrong = [c for c, ok in pairs if not ok]
    auroc = (None if not right or not wrong else
             round(sum((a > b) + 0.5 * (a == b) for a in right for b in wrong) / (len(right) * len(wrong)), 6))
    ranked = sorted(pairs, key=lambda p: -p[0])
    median = ranked[(len(ranked) - 1) // 2][0]
    surer = [ok for c, ok in ranked if c >= median]
    other = [ok for c, ok in ranked if c < median]
    return {"confidence_n": len(pairs), "confidence_auroc": auroc, "confidence_median": round(median, 6),
            "right_of_surer_half": round(sum(surer) / len(surer), 6),
            "right_of_other_half": round(sum(other) / len(other), 6) if other else None}


def build_summary(rows: Sequence[dict[str, Any]], meta: dict[str, Any], timing: dict[str, Any] | None = None,
                  *, extra: Sequence[str] = (), primary: str | None = None) -> dict[str, Any]:
    """Every aggregate of a run, JSON-ready (written as ``summary.json``).

    Args:
        rows: the latest row per (strategy, question) of the selected questions and strategies.
        meta: run settings; ``meta["strategies"]`` lists ``{label, spec, budget, program}``, and
            ``meta["baseline"]`` may name the strategy the others are compared with (default basic).
        timing: ``setup_s``, ``loop_s``, ``threads``, ``new_rows`` (rows computed in this run).
        extra: further per-row accuracy fields to aggregate (from scoring hooks).
        primary: the metric compared with the baseline (default ``llm_match`` when judged, else ``em``).
    """
    timing = timing or {}
    labels = [s["label"] for s in meta["strategies"]]
    by_label: dict[str, list[dict[str, Any]]] = {lb: [] for lb in labels}
    for r in rows:
        by_label.setdefault(r["strategy"], []).append(r)
    judged = bool(meta.get("judge"))
    primary = primary or ("llm_match" if judged else "em")
    baseline = choose_baseline(labels, meta.get("baseline"))
    summary: dict[str, Any] = {
        "meta": meta,
        "primary_metric": primary,
        "baseline": baseline,
        "strategies": {lb: aggregate(by_label[lb], extra) for lb in labels},
        "by_type": {lb: {k: _small(v, extra) for k, v in _group(by_label[lb], "type").items()} for lb in labels},
        "by_level": {lb: {k: _small(v, extra) for k, v in _group(by_label[lb], "level").items()} for lb in labels},
        "vs_baseline": {},
        "budget_curves": {},
    }
    prices = call_prices(rows)  # shared calls (a router's routes) are timed as if each strategy ran alone
    for lb in labels:
        summary["strategies"][lb]["priced_latency"] = priced_latency(by_label[lb], prices)
    for lb in labels:  # the oracle's rows say what each question's gold context was built from
        modes = [r["oracle"] for r in by_label[lb] if r.get("oracle")]
        if modes:
            summary["strategies"][lb]["oracle"] = {m: modes.count(m) for m in ORACLE_MODES}
    if baseline is not None:
        for lb in labels:
            if lb == baseline:
                continue
            cmp = paired_comparison(by_label[lb], by_label[baseline], primary)
            gold_cmp = paired_comparison(by_label[lb], by_label[baseline], "gold_all")
            # F1 moves where EM does not (a partly right answer), so its paired bootstrap goes beside the sign test
            f1_cmp = cmp if primary == "f1" else paired_comparison(by_label[lb], by_label[baseline], "f1")
            beats, verdict = _verdict(cmp, baseline)
            mine, base = summary["strategies"][lb], summary["strategies"][baseline]
            deltas = {k: (None if mine.get(k) is None or base.get(k) is None else round(mine[k] - base[k], 6))
                      for k in ("em", "f1", "llm_match", "gold_all", "gold_fraction", "input_tokens", "lm_calls",
                                "latency_p50")}
            priced, base_priced = mine["priced_latency"]["p50"], base["priced_latency"]["p50"]
            deltas["priced_p50_ratio"] = round(priced / base_priced, 6) if priced and base_priced else None
            summary["vs_baseline"][lb] = {**cmp, "gold_all": gold_cmp, "f1": f1_cmp, "deltas": deltas,
                                          "beats_baseline": beats, "verdict": verdict}
    curves: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in meta["strategies"]:
        if s.get("budget") is not None:
            agg = summary["strategies"][s["label"]]
            curves[s["spec"]].append({"budget": s["budget"], "label": s["label"], primary: agg[primary],
                                      "gold_all": agg["gold_all"], "input_tokens": agg["input_tokens"]})
    summary["budget_curves"] = {k: sorted(v, key=lambda p: p["budget"]) for k, v in curves.items() if len(v) > 1}
    if any("gold_cited" in r for r in rows):  # questions over documents (ragnet eval --docs)
        summary["documents"] = {lb: documents_figures(by_label[lb]) for lb in labels}
    for lb in labels:  # RouterRAG records each question's route in its trace
        routes = [e.get("route") for r in by_label[lb] for e in r.get("trace") or () if e.get("step") == "route"]
        if routes:
            summary["strategies"][lb]["routes"] = {route: routes.count(route) for route in ("simple", "hard")}
    summary["timing"] = {"setup_s": round(float(timing.get("setup_s", 0.0)), 4),
                         "loop_s": round(float(timing.get("loop_s", 0.0)), 4)}
    if extra:
        summary["extra_metrics"] = list(extra)
    summary["_new_rows"] = list(timing.get("new_rows", []))
    return summary


def finish_summary(summary: dict[str, Any], folder: Any = None, *, plots: bool = True,
                   log: Callable[[str], None] = print, started: float | None = None) -> dict[str, Any]:
    """Write the plots into ``folder`` (a ``RunFolder``; None: no plots) and add the evaluation
    overhead, including the time spent since ``started``; returns ``summary``.

    A re-report of finished rows (no new rows) keeps the overhead measured when they were
    computed, read from the folder's earlier ``summary.json``.
    """
    from ragnet.errors import MissingDependencyError

    started = time.perf_counter() if started is None else started
    summary["plots"] = []
    if plots and folder is not None:
        try:
            from ragnet.eval.report.plots import write_plots

            summary["plots"] = [str(p) for p in write_plots(summary, folder.path)]
        except MissingDependencyError as exc:
            summary["plots_skipped"] = str(exc)
            log(f"warning: plots skipped: {exc}")
    new_rows = summary.pop("_new_rows", [])
    timing = summary.get("timing", {})
    summary["overhead"] = _overhead(new_rows, float(timing.get("loop_s", 0.0)), time.perf_counter() - started,
                                    int(summary["meta"].get("threads", 1)))
    if not new_rows and folder is not None:
        previous = (folder.previous_summary() or {}).get("overhead") or {}
        if previous.get("ratio") is not None:
            summary["overhead"] = {**previous, "carried_over": True}
    return summary

