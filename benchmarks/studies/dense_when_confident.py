"""Probe (2026-12-06, commit 998d966, no LM): a denser pack only when the selection is confident?

The oracle's reader answers from a few gold lines, and `auto` at 800 tokens answers some
questions that it misses at 2,000. The issue asks for "a smaller, denser context when the
selection is confident (the sentence knapsack already scores every sentence)". This study
computes, for every real-document dev question, signals of that confidence before any LM call
(from `auto`'s candidates and sentence values at 2,000 tokens: the best sentence's share of the
ten best values, its margin over the second and over the fifth and tenth, the best cosine and its
margin, the best chunks' score margin), and scores the rule "answer at 800 tokens when the signal
is at least t, else at 2,000" from two runs' rows: each threshold is chosen on the odd ids and
scored on the even ones and the other way round (a two-fold estimate), beside the best threshold
on all questions (which is not a result). Also how well each signal separates the questions only
800 tokens answers from those only 2,000 tokens answers (AUROC).

    python -m benchmarks.fetch_rows docs/results/realdocs-dev-split-fix docs/results/realdocs-dev-dense-800
    python -m benchmarks.studies.dense_when_confident
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from benchmarks.studies import parser, result_rows

#: `auto`'s rows at 2,000 tokens and the same program's at 800, both of this commit's packs.
WIDE, DENSE = "realdocs-dev-split-fix", "realdocs-dev-dense-800"

SIGNALS: dict[str, Callable[[dict], float]] = {
    "best / ten best": lambda s: s["v1"] / s["sum10"],
    "best - second": lambda s: s["v1"] - s["v2"],
    "best / fifth": lambda s: s["v1"] / max(s["v5"], 1e-9),
    "best / tenth": lambda s: s["v1"] / max(s["v10"], 1e-9),
    "best cosine": lambda s: s["cos1"],
    "best cosine - second": lambda s: s["cos1"] - s["cos2"],
    "chunk score margin": lambda s: s["s1"] - s["s2"],
}


def signals(docs) -> dict[str, dict]:
    """Per question id, the raw numbers the signals are made of (``auto``'s selection at 2,000 tokens)."""
    from benchmarks.realdocs.check import QUESTIONS, load_questions
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.lm.config import LazyLM
    from ragnet.programs import sentence_packing as sp
    from ragnet.programs.registry import build_program
    from ragnet.programs.trace import Trace

    index = docs_index(docs)
    program = build_program("oneshot:sentences+hops", index, budget=2000, reader=LazyLM("local:qwen2.5-coder-1.5b"))
    out = {}
    for q in load_questions(QUESTIONS):
        chunks, budget = program._candidates(q["question"], Trace())
        selection = sp.select_sentences(chunks, q["question"], index, budget.context_budget)
        v = np.sort(selection.values)[::-1]
        cos = np.sort(selection.candidates.cos)[::-1]
        scores = sorted((c.score or 0.0 for c in chunks), reverse=True)
        out[q["id"]] = {"v1": float(v[0]), "v2": float(v[1]), "v5": float(v[4]), "v10": float(v[9]),
                        "sum10": float(v[:10].sum()), "cos1": float(cos[0]), "cos2": float(cos[1]),
                        "s1": scores[0], "s2": scores[1]}
    return out


def gate(x: Sequence[float], dense: Sequence[bool], wide: Sequence[bool], rows: Sequence[int], t: float) -> int:
    """Right answers among ``rows`` when a signal ``x`` at or above ``t`` picks the dense answer.

    Example:
        >>> gate([0.9, 0.1], [True, False], [False, True], [0, 1], 0.5)
        2
    """
    return sum(dense[k] if x[k] >= t else wide[k] for k in rows)


def auroc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """The chance a ``pos`` value exceeds a ``neg`` one (ties count half).

    Example:
        >>> auroc([2, 3], [1, 2])
        0.875
    """
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__, "dense_when_confident")
    from benchmarks.realdocs.build import default_out

    cli.add_argument("--docs", default=str(default_out()), help="the built dev documents")
    args = cli.parse_args(argv)
    from pathlib import Path

    wide_rows = {r["id"]: r for r in result_rows(WIDE)}
    dense_rows = {r["id"]: r for r in result_rows(DENSE)}
    if not wide_rows or not dense_rows:
        raise SystemExit(f"fetch the rows first: python -m benchmarks.fetch_rows docs/results/{WIDE} docs/results/{DENSE}")
    raw = signals(Path(args.docs))
    ids = sorted(set(raw) & set(wide_rows) & set(dense_rows))
    wide = [(wide_rows[i].get("contains") or 0) >= 1 for i in ids]
    dense = [(dense_rows[i].get("contains") or 0) >= 1 for i in ids]
    print(f"{len(ids)} questions: 2,000 tokens {sum(wide)} right, 800 tokens {sum(dense)}, either {sum(map(max, wide, dense))}")
    odd = [k for k, i in enumerate(ids) if int(i.split("-")[1]) % 2]
    even = [k for k, i in enumerate(ids) if not int(i.split("-")[1]) % 2]
    everyone = range(len(ids))
    for name, signal in SIGNALS.items():
        x = [signal(raw[i]) for i in ids]
        cuts = sorted(set(x)) + [float("inf")]
        best = max(cuts, key=lambda t: gate(x, dense, wide, everyone, t))
        fitted_odd = max(cuts, key=lambda t: gate(x, dense, wide, odd, t))
        fitted_even = max(cuts, key=lambda t: gate(x, dense, wide, even, t))
        two_fold = gate(x, dense, wide, even, fitted_odd) + gate(x, dense, wide, odd, fitted_even)
        only_dense = [x[k] for k in everyone if dense[k] and not wide[k]]
        only_wide = [x[k] for k in everyone if wide[k] and not dense[k]]
        print(f"{name:22s} two-fold {two_fold:3d}   best on all {gate(x, dense, wide, everyone, best):3d} "
              f"({sum(v >= best for v in x)} dense)   AUROC {auroc(only_dense, only_wide):.2f}")


if __name__ == "__main__":
    main()
