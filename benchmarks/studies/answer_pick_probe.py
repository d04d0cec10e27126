"""Probe (2026-12-05): can a rule with no LM pick the right one of the 1.5B reader's answers to the
same manual question at different answer budgets?

`auto`'s answers at 2,000 tokens and at 800 tokens (a pack about the size the oracle's reader gets)
are each right for questions the other misses: the reader's answer moves with its context (figures
on the results page, "Tried and not kept: a dense pack"). A two- or
three-call preset would pay off only if something without an LM tells which answer to keep. This
probe reads the rows of the `oneshot:sentences+hops` runs at several budgets (no LM call) and
prints, per rule, the right answers it would give:

- each budget alone, and the best any pick could do (one of them right);
- grounding: keep the 2,000-token answer unless its words are not in its context and the other's are;
- the shorter answer of the two;
- a majority vote (normalised answers) across three budgets, 2,000 tokens breaking ties;
- with ``--judge`` (LM calls): where the 800- and 2,000-token answers differ, the 1.5B is shown the
  question, the 2,000-token context and the two answers (as A and B, the 2,000-token one first on
  odd question numbers) and names the one the context supports. Rows go to ``--out``; ``--ids odd``
  and ``--ids even`` split the work over two cores.

    python -m benchmarks.fetch_rows docs/results/realdocs-dev-auto-800 docs/results/realdocs-dev-best-last \\
        docs/results/realdocs-dev-auto-1500 docs/results/realdocs-dev-auto-2000 docs/results/realdocs-dev-auto-3000
    python -m benchmarks.studies.answer_pick_probe
    RAGNET_LM_THREADS=1 taskset -c 0 python -m benchmarks.studies.answer_pick_probe --judge --ids odd
    RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.studies.answer_pick_probe --judge --ids even
    python -m benchmarks.studies.answer_pick_probe   # the judge's rows, when there, are summed too
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from benchmarks.studies import RESULTS, in_half, parser, result_rows, rows_done

#: Result folders by the answer budget their `auto` rows were run at.
FOLDERS = {800: "realdocs-dev-auto-800", 1000: "realdocs-dev-best-last", 1500: "realdocs-dev-auto-1500",
           2000: "realdocs-dev-auto-2000", 3000: "realdocs-dev-auto-3000"}
MAIN = 2000
VOTES = ((800, 1500, 2000), (1000, 1500, 2000), (1500, 2000, 3000), (800, 2000, 3000))
JUDGE_ROWS = RESULTS / "realdocs-dev-answer-pick" / "judge.jsonl"


def right(row: dict) -> bool:
    return row["contains"] >= 1


def grounded(row: dict) -> bool:
    """Whether the row's answer occurs (normalised) in the passages its reader was shown."""
    from ragnet.eval.metrics.answer_match import contains_match

    context = "\n".join(p["text"] for p in row["passages"])
    return bool(row["answer"].strip()) and bool(contains_match(context, [row["answer"]]))


def vote(rows: Sequence[dict], tie: dict) -> dict:
    """The row whose normalised answer most of ``rows`` give, ``tie`` when none is given twice."""
    from ragnet.eval.metrics.answer_match import normalize_answer

    counts = Counter(normalize_answer(r["answer"]) for r in rows)
    answer, n = counts.most_common(1)[0]
    return next(r for r in rows if normalize_answer(r["answer"]) == answer) if n >= 2 else tie


def pick_signature():
    """The judge's signature: which of two answers the context supports."""
    import dspy

    class PickAnswer(dspy.Signature):
        """Two readers answered the question from the same manual. Pick the answer that the context
        states as the answer to this exact question: the value, name or option it asks for, not a
        neighbouring one."""

        question: str = dspy.InputField()
        context: str = dspy.InputField(desc="passages of the manual")
        answer_a: str = dspy.InputField()
        answer_b: str = dspy.InputField()
        better: Literal["A", "B"] = dspy.OutputField(desc="A or B")

    return PickAnswer


def judge(runs: dict, ids: Sequence[str], out: Path, half: str) -> None:
    """Ask the 1.5B to pick between the 800- and 2,000-token answers where they differ."""
    import time

    import dspy

    from ragnet.eval.metrics.answer_match import normalize_answer
    from ragnet.lm.config import LazyLM
    from ragnet.signatures.formatting import format_chunks

    reader = LazyLM("local:qwen2.5-coder-1.5b")
    step = dspy.Predict(pick_signature())
    out.parent.mkdir(parents=True, exist_ok=True)
    done = rows_done(out)
    with open(out, "a", encoding="utf-8") as fh:
        for i in ids:
            full, dense = runs[MAIN][i], runs[800][i]
            number = int(i.split("-")[1])
            if i in done or not in_half(i, half) \
                    or normalize_answer(full["answer"]) == normalize_answer(dense["answer"]):
                continue
            first, second = (full, dense) if number % 2 else (dense, full)
            started = time.time()
            with reader.settings():
                pred = step(question=full["question"], context=format_chunks(full["passages"])[0],
                            answer_a=first["answer"], answer_b=second["answer"])
            chosen = first if pred.better == "A" else second
            row = {"id": i, "kind": full["type"], "full": full["answer"], "dense": dense["answer"],
                   "full_first": bool(number % 2), "better": pred.better, "picked_full": chosen is full,
                   "right": right(chosen), "seconds": round(time.time() - started, 1)}
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(i, pred.better, "right" if row["right"] else "wrong", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "answer_pick_probe")
    p.add_argument("--judge", action="store_true", help="Ask the 1.5B to pick where the answers differ.")
    p.add_argument("--ids", default="all", help="all, odd or even question numbers (with --judge).")
    p.add_argument("--out", type=Path, default=JUDGE_ROWS, help="The judge's rows (appended; done ids skipped).")
    args = p.parse_args(argv)
    runs = {budget: {r["id"]: r for r in result_rows(folder)} for budget, folder in FOLDERS.items()}
    ids = sorted(runs[MAIN])
    main_rows = runs[MAIN]
    if args.judge:
        judge(runs, ids, args.out, args.ids)
        return
    for budget, rows in runs.items():
        print(f"{budget} tokens alone: {sum(right(rows[i]) for i in ids)} of {len(ids)}")
    for budget in (800, 3000):
        other = runs[budget]
        either = sum(right(main_rows[i]) or right(other[i]) for i in ids)
        kept = [other[i] if grounded(other[i]) and not grounded(main_rows[i]) else main_rows[i] for i in ids]
        shorter = [other[i] if len(other[i]["answer"]) < len(main_rows[i]["answer"]) else main_rows[i] for i in ids]
        print(f"{MAIN} with {budget}: one of the two right {either}; grounding picks {sum(map(right, kept))}; "
              f"the shorter answer {sum(map(right, shorter))}")
    for budgets in VOTES:
        picked = [vote([runs[b][i] for b in budgets], main_rows[i]) for i in ids]
        print(f"vote of {budgets}: {sum(map(right, picked))}")
    print(f"any budget right: {sum(any(right(runs[b][i]) for b in runs) for i in ids)}")
    if args.out.exists():
        picks = {r["id"]: r for r in map(json.loads, args.out.read_text(encoding="utf-8").splitlines())}
        total = sum(picks[i]["right"] if i in picks else right(main_rows[i]) for i in ids)
        full_first = [r for r in picks.values() if r["full_first"]]
        print(f"the 1.5B judging {len(picks)} differing pairs: {total} right; it took the 2,000-token answer "
              f"{sum(r['picked_full'] for r in picks.values())} times, A {sum(r['better'] == 'A' for r in picks.values())} "
              f"times ({len(full_first)} pairs had the 2,000-token answer as A)")


if __name__ == "__main__":
    main()
