"""Summarise the question-last probe's rows: mean answer F1 per group, strategy and field order,
with paired intervals, as a Markdown table.

    python -m benchmarks.studies.question_last_summarize [--rows docs/results/answer-question-last/probe.jsonl]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.studies import RESULTS, parser
from ragnet.eval.metrics.stats import paired_bootstrap


def ci(diffs: list[float]) -> str:
    b = paired_bootstrap(diffs)
    return f"{100 * b['mean']:+.1f} ({100 * b['low']:+.1f} … {100 * b['high']:+.1f}, p = {b['p_value']:.2f})"


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "question_last_summarize")
    p.add_argument("--rows", type=Path, default=RESULTS / "answer-question-last" / "probe.jsonl",
                   help="The probe's output (question_last_probe).")
    args = p.parse_args(argv)
    with open(args.rows, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    by = {(r["id"], r["spec"]): r for r in rows}
    ids = sorted({r["id"] for r in rows if (r["id"], "basic") in by and (r["id"], "oneshot:sentences") in by})
    group = {r["id"]: r["group"] for r in rows}

    def f1(qid, spec, order):
        return by[(qid, spec)][order]["f1"]

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


if __name__ == "__main__":
    main()
