"""``ragnet eval`` outputs: the summary of every aggregate, ``report.md`` and the plots.

:func:`build_summary` turns result rows into one JSON-ready dict: per-strategy aggregates
(``ragnet.eval.stats.aggregate``), tables by question type and level, paired comparisons
with the baseline (``basic``) with a sign test, budget curves and the evaluation overhead.
:func:`finish_summary` adds the PNG plots and the overhead, :func:`format_report` renders the
summary as markdown, and the run folder (``ragnet.eval.run_folder``) writes ``summary.json``
and ``report.md`` atomically.

Example:
    >>> rows = [{"strategy": "basic", "id": "q1", "type": "bridge", "level": "easy", "em": 1.0, "f1": 1.0,
    ...          "contains": 1.0, "llm_match": None, "gold_all": 1.0, "gold_fraction": 1.0, "n_gold": 1,
    ...          "chunks": 2, "usage": {"seconds": 1.5, "lm_calls": 1}}]
    >>> meta = {"set": "toy", "mode": "pooled", "questions": 1, "judge": False,
    ...         "strategies": [{"label": "basic", "spec": "basic", "budget": None, "program": None}]}
    >>> summary = build_summary(rows, meta)
    >>> summary["primary_metric"], summary["strategies"]["basic"]["em"]
    ('em', 1.0)
    >>> print(format_report(summary).splitlines()[0])
    # ragnet eval: toy (all split, pooled corpus)
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.oracle import MODES as ORACLE_MODES
from ragnet.eval.stats import aggregate, call_prices, paired_comparison, priced_latency
from ragnet.eval.tables import DASH, markdown_table, number, percent

__all__ = ["build_summary", "choose_baseline", "finish_summary", "format_report"]

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


def _f1_line(f1: dict[str, Any] | None) -> str:
    """The report's F1 clause of a comparison: mean paired difference, 95% interval, bootstrap p
    ("" for summaries written before it was recorded)."""
    boot = (f1 or {}).get("bootstrap")
    if not boot:
        return ""
    return (f"; F1 {percent(boot['mean'], sign=True)} points (95% interval {percent(boot['low'], sign=True)} to "
            f"{percent(boot['high'], sign=True)}, paired bootstrap p = {boot['p_value']:.3g})")


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
    --docs``, :mod:`ragnet.eval.doc_questions`): right answers, and of the two-part questions;
    how often a right answer's citation (its first citation) is at the place that states it;
    and of the misses, how many had the answer's place (the answer itself) in front of the reader.
    LM outages are left out, as in every accuracy figure.

    Example:
        >>> rows = [{"contains": 1.0, "gold_cited": 1.0, "gold_cited_first": 0.0, "gold_place_in_context": 1.0,
        ...          "answer_in_context": 1.0, "type": "lookup", "f1": 1.0, "em": 1.0},
        ...         {"contains": 0.0, "gold_cited": 0.0, "gold_cited_first": 0.0, "gold_place_in_context": 1.0,
        ...          "answer_in_context": 0.0, "type": "two-part", "f1": 0.0, "em": 0.0}]
        >>> d = documents_figures(rows)
        >>> d["right"], d["two_part_right"], d["cited_of_right"], d["misses_with_gold_place"]
        (0.5, 0.0, 1.0, 1.0)
    """
    scored = [r for r in rows if r.get("error_kind") != "lm"]
    right = [r for r in scored if (r.get("contains") or 0) >= 1]
    missed = [r for r in scored if (r.get("contains") or 0) < 1]
    two = [r for r in scored if r.get("type") == TWO_PART]

    def share(part: Sequence[dict[str, Any]], key: str | None = None) -> float | None:
        return None if not part else round(sum(float(r.get(key) or 0) if key else 1.0 for r in part) / len(part), 6)

    return {
        "n": len(scored), "right": share(scored, "contains"), "right_count": len(right),
        "f1": share(scored, "f1"), "em": share(scored, "em"),
        "two_part": len(two), "two_part_right": share(two, "contains"),
        "cited_of_right": share(right, "gold_cited"), "cited_first_of_right": share(right, "gold_cited_first"),
        "gold_place_in_context": share(scored, "gold_place_in_context"),
        "misses": len(missed), "misses_with_gold_place": share(missed, "gold_place_in_context"),
        "misses_with_answer_shown": share(missed, "answer_in_context"),
    }


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


# --------------------------------------------------------------------------- markdown


def _priced_latency_lines(summary: dict[str, Any], labels: Sequence[str]) -> list[str]:
    """Latency with cache hits priced (``ragnet.eval.stats.priced_latency``), when a strategy had any."""
    aggs = summary["strategies"]
    if not any((aggs[lb].get("priced_latency") or {}).get("hits_priced") for lb in labels):
        return []
    base = summary.get("baseline")
    cells = []
    for lb in labels:
        p = aggs[lb].get("priced_latency") or {}
        if not p.get("rows"):
            cells.append(f"{lb} {DASH} (no row priced)")
            continue
        ratio = (summary.get("vs_baseline", {}).get(lb, {}).get("deltas") or {}).get("priced_p50_ratio")
        cells.append(f"{lb} p50 {number(p['p50'], 2)} s, p95 {number(p['p95'], 2)} s, mean {number(p['mean'], 2)} s"
                     + (f" ({number(ratio, 2)}× {base}'s p50)" if ratio else "")
                     + f" over {p['rows']} of {p['of']} rows ({p['hits_priced']} cache hit{'' if p['hits_priced'] == 1 else 's'} priced)")
    return ["Latency with cache hits priced: each call DSPy's cache answered counts the live seconds the same call "
            "took in another row of this run, so strategies that share calls (a router and the programs it routes "
            "to) are timed as if each ran alone; a row with a hit that no row of the run paid for is left out. "
            + "; ".join(cells) + ".", ""]


def _documents_section(docs: dict[str, dict[str, Any]], labels: Sequence[str]) -> list[str]:
    lines = ["### Over your documents", "",
             ("Right = a gold answer occurs in the answer (case, punctuation and number formatting aside). Cited = "
              "a citation (the first citation) is at the page or section that states the answer, of the right "
              "answers. Misses with the gold place = the reader had a chunk from that place (the answer itself) "
              "in its context and still missed."), ""]
    table = []
    for lb in labels:
        d = docs.get(lb)
        if d is None:
            continue
        table.append([lb, str(d["n"]), f"{d['right_count']} ({percent(d['right'])})", percent(d["f1"]),
                      f"{percent(d['two_part_right'])} of {d['two_part']}", percent(d["cited_of_right"]),
                      percent(d["cited_first_of_right"]), percent(d["gold_place_in_context"]),
                      f"{percent(d['misses_with_gold_place'])} ({percent(d['misses_with_answer_shown'])}) of "
                      f"{d['misses']}"])
    lines += markdown_table(["strategy", "n", "right", "F1", "two-part right", "cited", "cited first",
                             "gold place in context", "misses with the gold place (answer shown)"], table)
    return lines + [""]


def format_report(summary: dict[str, Any]) -> str:
    """``report.md``: command, side-by-side accuracy with deltas vs basic, verdicts, by type and
    level, chunk retention by stage, cost, budgets, and the evaluation overhead."""
    meta = summary["meta"]
    labels = [s["label"] for s in meta["strategies"]]
    aggs = summary["strategies"]
    primary = summary["primary_metric"]
    baseline = summary["baseline"]
    pname = {"llm_match": "LLM match", "em": "EM", "contains": "right (answer contained)"}.get(primary, primary)
    extra = [k for k in summary.get("extra_metrics") or ()]
    lines = [f"# ragnet eval: {meta['set']} ({meta.get('split') or 'all'} split, {meta['mode']} corpus)", ""]
    if meta.get("command"):
        lines += [f"Command: `{meta['command']}`", ""]
    judge = f"judge {meta.get('judge_lm')}" if meta.get("judge") else "no LLM judge (--no-judge)"
    lines += [
        (f"{meta['questions']} questions × {len(labels)} strategies; LM {meta.get('lm')}"
         + (f" (answers: {meta['answer_lm']})" if meta.get("answer_lm") else "") + f"; {judge}; "
        f"threads {meta.get('threads')}; index `{meta.get('index')}`; rows in `{meta.get('results')}`; "
        + (f"question ids in `{meta['ids_file']}` (`--ids @` that file asks the same questions); "
           if meta.get("ids_file") else "") +
        f"{meta.get('created')}."),
        "",
    ]
    if meta.get("left_out_trained"):
        lines += [f"Left out: {meta['left_out_trained']} questions that a compiled program was trained on "
                  "(`ragnet optimize` records them in its file), so every column is scored on held-out questions.",
                  ""]
    if meta.get("split") == "acceptance":
        lines += ["> Acceptance split: for final measurement only. Do not tune anything on these figures.", ""]
    programs = meta.get("programs") or {}
    if programs:
        lines += ["Compiled programs: " + ", ".join(f"{k} ← `{v['file']}`" for k, v in programs.items()), ""]

    lines += ["## Accuracy", "",
              (f"Primary metric: **{pname}**. A program that raised counts as wrong; an answer lost to an LM "
               "failure (no key, server down, timeout) is left out of the accuracy figures and counted under "
               "'LM failures' (a resumed run asks again). Δ columns are percentage points vs "
              f"{baseline or '(no basic strategy in this run)'}; gold recall = every gold document has a chunk in "
              "the final context."), ""]
    vs = summary.get("vs_baseline", {})
    table = []
    for lb in labels:
        a = aggs[lb]
        d = vs.get(lb, {}).get("deltas", {})
        table.append([
            lb, str(a["n"]), percent(a["em"]), percent(a["f1"]), percent(a["llm_match"]),
            *(percent(a.get(k)) for k in extra),
            percent(d.get(primary), sign=True) if lb != baseline else "(base)", percent(a["gold_all"]),
            percent(d.get("gold_all"), sign=True) if lb != baseline else "(base)", percent(a["gold_fraction"]),
            number(a["redundancy"], 3), number(a["chunks"]), str(a["errors"] - a.get("lm_failures", 0)),
            str(a.get("lm_failures", 0)),
        ])
    lines += markdown_table(["strategy", "n", "EM", "F1", "LLM match", *extra, f"Δ {pname}", "all-gold recall",
                             "Δ gold", "gold fraction", "redundancy", "chunks", "errors", "LM failures"], table)
    lines.append("")
    if summary.get("documents"):
        lines += _documents_section(summary["documents"], labels)
    oracles = {lb: aggs[lb]["oracle"] for lb in labels if aggs[lb].get("oracle")}
    if oracles:
        lines += [("Oracle context, in questions (the reader given only each question's gold evidence: the "
                   "ceiling that separates what retrieval loses from what the reader gets wrong): "
                   + "; ".join(f"{lb}: " + (f"gold passages {c['passages']} (the quotes of the gold places), "
                                              if c.get("passages") else "")
                               + f"gold sentences {c['sentences']}, gold documents {c['documents']} (no usable "
                               f"sentence-level gold), none {c['none']} (no gold evidence: not answered, counted "
                               "wrong)" for lb, c in oracles.items()) + "."), ""]
    suspicious = {lb: aggs[lb].get("judge_zero_f1_matches", 0) for lb in labels}
    calls = sum(aggs[lb].get("judge_calls", 0) for lb in labels)
    if sum(suspicious.values()):
        lines += [(f"> ⚠️ Judge check: {sum(suspicious.values())} of {calls} judged answers were called a match "
                   "while sharing no word with any gold answer ("
                   + ", ".join(f"{lb}: {k}" for lb, k in suspicious.items() if k)
                   + "). A small judge LM is unreliable; prefer a stronger `--judge-lm`, or read EM/F1."), ""]
    if baseline is not None and vs:
        lines += [f"### Against {baseline}", "",
                  (f"Per question on {pname}: wins / losses / ties, two-sided sign test. A strategy *beats* "
                  f"{baseline} only with a positive mean gain and p < {SIGNIFICANCE}. F1: the mean paired "
                  "difference with its 95% interval and p-value from a paired bootstrap (10,000 resamples)."), ""]
        for lb in labels:
            if lb not in vs:
                continue
            c = vs[lb]
            flag = "✅" if c["beats_baseline"] else "❌"
            lines.append(f"- {flag} **{lb}** {c['verdict']}: {percent(c['delta'], sign=True)} points, {c['wins']} wins"
                         f" / {c['losses']} losses / {c['ties']} ties over {c['questions']} questions; gold recall "
                         f"{percent(c['gold_all']['delta'], sign=True)} points "
                         f"({c['gold_all']['wins']}/{c['gold_all']['losses']}){_f1_line(c.get('f1'))}.")
        lines.append("")

    for key, title in (("by_type", "By question type"), ("by_level", "By level")):
        groups = sorted({g for lb in labels for g in summary[key].get(lb, {})})
        if not groups:
            continue
        lines += [f"## {title}", "", f"Cells: {pname} % (all-gold recall %), n questions.", ""]
        table = []
        for g in groups:
            cells, n = [], 0
            for lb in labels:
                cell = summary[key].get(lb, {}).get(g)
                if cell is None:
                    cells.append(DASH)
                    continue
                n = max(n, cell["n"])
                cells.append(f"{percent(cell[primary])} ({percent(cell['gold_all'])})")
            table.append([g, str(n), *cells])
        lines += markdown_table([key[3:], "n", *labels], table)
        lines.append("")

    lines += ["## Chunk retention by stage", "",
              ("Mean chunks after each stage, mean gold documents present, and the share of the gold documents "
               "retrieved that are still present (kept). Stages a strategy does not have are left out."), ""]
    for lb in labels:
        stages = aggs[lb].get("stages") or {}
        if not stages:
            continue
        parts = []
        for stage, s in stages.items():
            note = ""
            if "removed" in s:
                note = f", −{number(s['removed'])} removed"
            if "cropped" in s:
                note = f", {number(s['cropped'])} cropped"
            parts.append(f"{stage} {number(s['chunks'])} ({number(s['gold'], 2)} gold, "
                         f"{percent(s['gold_retention'])}% kept{note})")
        lines.append(f"- **{lb}**: " + " → ".join(parts))
    lines.append("")

    cost_note = ", ".join(
        f"{lb} {aggs[lb].get('cost_rows', aggs[lb]['n'])}/{aggs[lb]['n']}"
        + (" (every row had cached calls, so all are counted and understate its cost)"
           if aggs[lb].get("cost_all_cached") else "")
        for lb in labels)
    lines += ["## Cost", "", "Means per question (latency: program wall seconds; judge time not included). Tokens "
              "and latency count only rows whose LM calls all ran live, since a DSPy cache hit reports no tokens "
              f"and takes ~0 s (rows counted: {cost_note}).", ""]
    table = [[lb, number(a["searches"]), number(a["turns"]), number(a["lm_calls"]), number(a["cached_calls"]),
              number(a["input_tokens"], 0), number(a["output_tokens"], 0), number(a["context_tokens"], 0),
              number(a["latency_p50"], 2), number(a["latency_p95"], 2), str(a["total_lm_errors"]),
              str(a["judge_calls"])] for lb, a in ((lb, aggs[lb]) for lb in labels)]
    lines += markdown_table(["strategy", "searches", "turns", "LM calls", "cached", "tokens in", "tokens out",
                             "context tokens", "p50 s", "p95 s", "LM errors", "judge calls"], table)
    lines.append("")
    lines += _priced_latency_lines(summary, labels)
    routed = {lb: aggs[lb]["routes"] for lb in labels if aggs[lb].get("routes")}
    if routed:
        lines += ["Routes (the router's LM-free choice per question: one search, or its multi-step program): " + "; ".join(
            f"{lb}: hard {percent(c['hard'] / max(sum(c.values()), 1), symbol=True)} ({c['hard']} of "
            f"{sum(c.values())}), simple {c['simple']}" for lb, c in routed.items()) + ".", ""]

    curves = summary.get("budget_curves") or {}
    if curves:
        lines += ["## Token budgets", "", f"Cells: {pname} % / all-gold recall % / mean tokens in.", ""]
        for spec, points in curves.items():
            lines.append(f"- **{spec}**: " + "; ".join(
                f"{p['budget']:,}: {percent(p[primary])} / {percent(p['gold_all'])} / {number(p['input_tokens'], 0)}"
                for p in points))
        lines.append("")

    plots = summary.get("plots") or []
    if plots:
        lines += ["## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots] + [""]
    elif summary.get("plots_skipped"):
        lines += [f"Plots skipped: {summary['plots_skipped']}", ""]

    ov = summary.get("overhead") or {}
    lines += ["## Evaluation overhead", ""]
    if ov.get("ratio") is None:
        lines.append(f"Not measured ({ov.get('method', 'n/a')}).")
    else:
        ok = "✅" if ov["loop_ratio"] < ov["target"] else "❌"
        if ov.get("carried_over"):
            lines.append("(Measured by the earlier run that computed these rows; this run only re-reported them.)")
        lines.append(
            f"{ok} evaluation loop: **{100 * ov['loop_ratio']:.2f}%** of program time (target < "
            f"{100 * ov['target']:.0f}%); with the report and plots ({ov['report_s']:.2f} s, a fixed cost): "
            f"{100 * ov['ratio']:.2f}%. {ov['rows']} rows, program {ov['program_s']:.2f} s, judge "
            f"{ov['judge_s']:.2f} s, per-question index set-up {ov['index_s']:.2f} s (left out), loop "
            f"{ov['loop_s']:.2f} s. Method: {ov['method']}."
        )
    lines.append("")
    return "\n".join(lines)


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
            from ragnet.eval.plots import write_plots

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

