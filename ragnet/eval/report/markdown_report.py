"""``report.md``: a run's summary (:func:`ragnet.eval.report.summary.build_summary`) as markdown.

One function per section, in report order: the run, accuracy (with the documents figures of
``ragnet eval --docs``, the oracle's contexts and the judge check), the comparison with the
baseline, accuracy by question type and level, chunk retention by stage, cost, token budgets,
plots and the evaluation overhead. ``report.html`` shows the same text (``ragnet.eval.report.html_report``).

Example:
    >>> from ragnet.eval.report.summary import build_summary
    >>> rows = [{"strategy": "basic", "id": "q1", "em": 1.0, "f1": 1.0, "gold_all": 1.0, "usage": {"seconds": 1.5}}]
    >>> meta = {"set": "toy", "mode": "pooled", "questions": 1,
    ...         "strategies": [{"label": "basic", "spec": "basic", "budget": None, "program": None}]}
    >>> report = format_report(build_summary(rows, meta))
    >>> report.splitlines()[0]
    '# ragnet eval: toy (all split, pooled corpus)'
    >>> "| basic | 1 | 100.0 | 100.0 |" in report
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragnet.eval.report.markdown_tables import DASH, markdown_table, number, percent
from ragnet.eval.report.summary import SIGNIFICANCE

__all__ = ["format_report"]

_METRIC_NAMES = {"llm_match": "LLM match", "em": "EM", "contains": "right (answer contained)"}


def format_report(summary: dict[str, Any]) -> str:
    """``report.md``: command, side-by-side accuracy with deltas vs basic, verdicts, by type and
    level, chunk retention by stage, cost, budgets, and the evaluation overhead."""
    labels = [s["label"] for s in summary["meta"]["strategies"]]
    primary = summary["primary_metric"]
    pname = _METRIC_NAMES.get(primary, primary)
    lines = _run_lines(summary["meta"], labels)
    lines += _accuracy_lines(summary, labels, pname)
    lines += _baseline_lines(summary, labels, pname)
    lines += _group_lines(summary, labels, pname)
    lines += _retention_lines(summary["strategies"], labels)
    lines += _cost_lines(summary, labels)
    lines += _budget_lines(summary.get("budget_curves") or {}, primary, pname)
    lines += _plot_lines(summary)
    lines += _overhead_lines(summary.get("overhead") or {})
    return "\n".join(lines)


def _run_lines(meta: dict[str, Any], labels: Sequence[str]) -> list[str]:
    """The title, the command, what ran where, and what was left out."""
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
    return lines


def _accuracy_lines(summary: dict[str, Any], labels: Sequence[str], pname: str) -> list[str]:
    """The accuracy table, then the documents figures, the oracle's contexts and the judge check."""
    aggs, primary, baseline = summary["strategies"], summary["primary_metric"], summary["baseline"]
    extra = list(summary.get("extra_metrics") or ())
    lines = ["## Accuracy", "",
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
        lines += _documents_lines(summary["documents"], labels)
    return lines + _oracle_lines(aggs, labels) + _judge_check_lines(aggs, labels)


def _documents_lines(docs: dict[str, dict[str, Any]], labels: Sequence[str]) -> list[str]:
    lines = ["### Over your documents", "",
             ("Right = a gold answer occurs in the answer (case, punctuation and number formatting aside); "
              "strict = the same with a sign, an option's dashes and a number's point kept (\"1\" is not "
              "\"-1\", \"s\" not \"-s\"). Cited = "
              "a citation (the first citation) is at the page or section that states the answer, of the right "
              "answers. Line in context = the line that states the answer (its quote) was among the sentences "
              "the reader saw, of the questions with a quote. Misses with the gold place = the reader had a chunk "
              "from that place (the answer itself) in its context and still missed; misses with the line = it "
              "had the answer's line."), ""]
    table = []
    for lb in labels:
        d = docs.get(lb)
        if d is None:
            continue
        strict = "–" if d.get("right_strict") is None else f"{d['right_strict_count']} ({percent(d['right_strict'])})"
        table.append([lb, str(d["n"]), f"{d['right_count']} ({percent(d['right'])})", strict, percent(d["f1"]),
                      _count_of(d["two_part_right"], d["two_part"]), percent(d["cited_of_right"]),
                      percent(d["cited_first_of_right"]), percent(d["gold_place_in_context"]),
                      percent(d.get("line_in_context")),
                      f"{_count_of(d['misses_with_gold_place'], d['misses'])} "
                      f"({_count_of(d['misses_with_answer_shown'], d['misses'])})",
                      _count_of(d.get("misses_with_line_shown"), d.get("quoted_misses", 0))])
    lines += markdown_table(["strategy", "n", "right", "right, strict", "F1", "two-part right", "cited", "cited first",
                             "gold place in context", "line in context",
                             "misses with the gold place (answer shown)", "misses with the line"], table)
    sure = [f"- {lb}: AUROC {number(d['confidence_auroc'], 2)}; the surer half of its answers (confidence "
            f"≥ {number(d['confidence_median'], 2)}) {percent(d['right_of_surer_half'], symbol=True)} right, "
            f"the rest {percent(d['right_of_other_half'], symbol=True)}"
            for lb in labels if (d := docs.get(lb)) and d.get("confidence_n")]
    if sure:
        lines += ["", ("The reader's confidence (its probability of the answer's tokens, where its LM reports "
                       "logprobs): how well it tells right answers from misses (AUROC 0.5 is a coin, 1 perfect)."),
                  "", *sure]
    return lines + [""]


def _count_of(share: float | None, n: int) -> str:
    """``share`` of ``n`` questions as a count: "3 of 10" (a share alone would read as a count)."""
    return "–" if share is None or not n else f"{round(share * n)} of {n}"


def _oracle_lines(aggs: dict[str, Any], labels: Sequence[str]) -> list[str]:
    oracles = {lb: aggs[lb]["oracle"] for lb in labels if aggs[lb].get("oracle")}
    if not oracles:
        return []
    return [("Oracle context, in questions (the reader given only each question's gold evidence: the "
             "ceiling that separates what retrieval loses from what the reader gets wrong): "
             + "; ".join(f"{lb}: " + (f"gold passages {c['passages']} (the quotes of the gold places), "
                                        if c.get("passages") else "")
                         + f"gold sentences {c['sentences']}, gold documents {c['documents']} (no usable "
                         f"sentence-level gold), none {c['none']} (no gold evidence: not answered, counted "
                         "wrong)" for lb, c in oracles.items()) + "."), ""]


def _judge_check_lines(aggs: dict[str, Any], labels: Sequence[str]) -> list[str]:
    suspicious = {lb: aggs[lb].get("judge_zero_f1_matches", 0) for lb in labels}
    calls = sum(aggs[lb].get("judge_calls", 0) for lb in labels)
    if not sum(suspicious.values()):
        return []
    return [(f"> ⚠️ Judge check: {sum(suspicious.values())} of {calls} judged answers were called a match "
             "while sharing no word with any gold answer ("
             + ", ".join(f"{lb}: {k}" for lb, k in suspicious.items() if k)
             + "). A small judge LM is unreliable; prefer a stronger `--judge-lm`, or read EM/F1."), ""]


def _f1_clause(f1: dict[str, Any] | None) -> str:
    """The F1 clause of a comparison: mean paired difference, 95% interval, bootstrap p
    ("" for summaries written before it was recorded)."""
    boot = (f1 or {}).get("bootstrap")
    if not boot:
        return ""
    return (f"; F1 {percent(boot['mean'], sign=True)} points (95% interval {percent(boot['low'], sign=True)} to "
            f"{percent(boot['high'], sign=True)}, paired bootstrap p = {boot['p_value']:.3g})")


def _baseline_lines(summary: dict[str, Any], labels: Sequence[str], pname: str) -> list[str]:
    """Each strategy against the baseline: verdict, wins / losses / ties, gold recall, F1."""
    baseline, vs = summary["baseline"], summary.get("vs_baseline", {})
    if baseline is None or not vs:
        return []
    lines = [f"### Against {baseline}", "",
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
                     f"({c['gold_all']['wins']}/{c['gold_all']['losses']}){_f1_clause(c.get('f1'))}.")
    return lines + [""]


def _group_lines(summary: dict[str, Any], labels: Sequence[str], pname: str) -> list[str]:
    """Accuracy (and all-gold recall) by question type and by level."""
    primary = summary["primary_metric"]
    lines: list[str] = []
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
    return lines


def _retention_lines(aggs: dict[str, Any], labels: Sequence[str]) -> list[str]:
    lines = ["## Chunk retention by stage", "",
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
    return lines + [""]


def _cost_lines(summary: dict[str, Any], labels: Sequence[str]) -> list[str]:
    """The cost table, latency with cache hits priced, and the router's routes."""
    aggs = summary["strategies"]
    cost_note = ", ".join(
        f"{lb} {aggs[lb].get('cost_rows', aggs[lb]['n'])}/{aggs[lb]['n']}"
        + (" (every row had cached calls, so all are counted and understate its cost)"
           if aggs[lb].get("cost_all_cached") else "")
        for lb in labels)
    lines = ["## Cost", "", "Means per question (latency: program wall seconds; judge time not included). Tokens "
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
    return lines


def _priced_latency_lines(summary: dict[str, Any], labels: Sequence[str]) -> list[str]:
    """Latency with cache hits priced (``ragnet.eval.metrics.stats.priced_latency``), when a strategy had any."""
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


def _budget_lines(curves: dict[str, list[dict[str, Any]]], primary: str, pname: str) -> list[str]:
    if not curves:
        return []
    lines = ["## Token budgets", "", f"Cells: {pname} % / all-gold recall % / mean tokens in.", ""]
    for spec, points in curves.items():
        lines.append(f"- **{spec}**: " + "; ".join(
            f"{p['budget']:,}: {percent(p[primary])} / {percent(p['gold_all'])} / {number(p['input_tokens'], 0)}"
            for p in points))
    return lines + [""]


def _plot_lines(summary: dict[str, Any]) -> list[str]:
    plots = summary.get("plots") or []
    if plots:
        return ["## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots] + [""]
    if summary.get("plots_skipped"):
        return [f"Plots skipped: {summary['plots_skipped']}", ""]
    return []


def _overhead_lines(ov: dict[str, Any]) -> list[str]:
    lines = ["## Evaluation overhead", ""]
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
    return lines + [""]
