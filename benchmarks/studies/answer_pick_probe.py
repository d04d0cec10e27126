"""Probe (2026-12-05): can a rule with no LM pick the right one of the 1.5B reader's answers to the
same manual question at different answer budgets?

`auto` answers 90 of the 125 real-document dev questions at 2,000 tokens and 84 at 800 tokens (a
pack about the size the oracle's reader gets), yet one of the two is right for 99: the reader's
answer moves with its context, and each budget catches questions the other misses. A two- or
three-call preset would pay off only if something without an LM tells which answer to keep. This
probe reads the rows of the `oneshot:sentences+hops` runs at several budgets (no LM call) and
prints, per rule, the right answers it would give:

- each budget alone, and the best any pick could do (one of them right);
- grounding: keep the 2,000-token answer unless its words are not in its context and the other's are;
- the shorter answer of the two;
- a majority vote (normalised answers) across three budgets, 2,000 tokens breaking ties.

    python -m benchmarks.fetch_rows docs/results/realdocs-dev-auto-800 docs/results/realdocs-dev-best-last \\
        docs/results/realdocs-dev-auto-1500 docs/results/realdocs-dev-auto-2000 docs/results/realdocs-dev-auto-3000
    python -m benchmarks.studies.answer_pick_probe
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from benchmarks.studies import parser, result_rows

#: Result folders by the answer budget their `auto` rows were run at.
FOLDERS = {800: "realdocs-dev-auto-800", 1000: "realdocs-dev-best-last", 1500: "realdocs-dev-auto-1500",
           2000: "realdocs-dev-auto-2000", 3000: "realdocs-dev-auto-3000"}
MAIN = 2000
VOTES = ((800, 1500, 2000), (1000, 1500, 2000), (1500, 2000, 3000), (800, 2000, 3000))


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


def main(argv: Sequence[str] | None = None) -> None:
    parser(__doc__, "answer_pick_probe").parse_args(argv)
    runs = {budget: {r["id"]: r for r in result_rows(folder)} for budget, folder in FOLDERS.items()}
    ids = sorted(runs[MAIN])
    main_rows = runs[MAIN]
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


if __name__ == "__main__":
    main()
