"""Summarise probe.jsonl: mean answer F1 per group, strategy and field order, with paired intervals."""
import json
import sys
from pathlib import Path

from ragnet.eval.stats import paired_bootstrap

rows = [json.loads(line) for line in open(Path(__file__).resolve().parent / "probe.jsonl")]
by = {(r["id"], r["spec"]): r for r in rows}
ids = sorted({r["id"] for r in rows if (r["id"], "basic") in by and (r["id"], "oneshot:sentences") in by})
group = {r["id"]: r["group"] for r in rows}


def f1(qid, spec, order):
    return by[(qid, spec)][order]["f1"]


def ci(diffs):
    b = paired_bootstrap(diffs)
    return f"{100 * b['mean']:+.1f} ({100 * b['low']:+.1f} … {100 * b['high']:+.1f}, p = {b['p_value']:.2f})"


print("| questions | n | basic F1 first / last | oneshot F1 first / last | oneshot − basic, first | oneshot − basic, last |")
print("|---|---|---|---|---|---|")
for name, members in (("B: only oneshot holds all gold", [q for q in ids if group[q] == "B"]),
                      ("A: both hold all gold", [q for q in ids if group[q] == "A"]), ("all", ids)):
    if not members:
        continue
    n = len(members)
    mean = lambda spec, order: 100 * sum(f1(q, spec, order) for q in members) / n  # noqa: E731
    gap = lambda order: ci([f1(q, "oneshot:sentences", order) - f1(q, "basic", order) for q in members])  # noqa: E731
    print(f"| {name} | {n} | {mean('basic', 'question_first'):.1f} / {mean('basic', 'question_last'):.1f} | "
          f"{mean('oneshot:sentences', 'question_first'):.1f} / {mean('oneshot:sentences', 'question_last'):.1f} | "
          f"{gap('question_first')} | {gap('question_last')} |")
for spec in ("basic", "oneshot:sentences"):
    d = [f1(q, spec, "question_last") - f1(q, spec, "question_first") for q in ids]
    changed = sum(1 for q in ids if by[(q, spec)]["question_last"]["answer"] != by[(q, spec)]["question_first"]["answer"])
    print(f"{spec}: question last − first {ci(d)}; answers changed {changed} of {len(ids)}")
