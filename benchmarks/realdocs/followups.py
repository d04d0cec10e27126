"""Follow-up questions measured: turn two of two-turn conversations over the real-document dev set.

Each conversation of ``followups.jsonl`` pairs two questions of ``questions.jsonl`` about one
manual: turn one is question A word for word, turn two is question B rewritten to refer back to
A ("and its long form?"). Turn one is answered by the program itself (its answer and citations
become the history, as a chat client would send them back); turn two is then asked four ways:

* ``last``: the follow-up alone, as ragnet answered before it read the conversation (the baseline);
* ``condense``: :class:`ragnet.programs.conversation.FollowUp`, the condense step and the signals;
* ``joined``: ``FollowUp(condense=False)``: the follow-up beside the previous question, no LM call;
* ``standalone``: question B as written (the ceiling).

Rows append to ``OUT/rows.jsonl`` (a rerun resumes); the table, right answers per arm and their
share of the standalone figure with wins / losses against ``last``, goes to stdout and
``OUT/summary.json``. A conversation's split is its standalone question's (``split_of``).

    RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.realdocs.followups \\
        --docs ~/.cache/ragnet/realdocs-dev --out runs/followups --split all
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ARMS = ("last", "condense", "joined", "standalone")


def _conversations(path: Path, split: str) -> list[dict[str, Any]]:
    from ragnet.eval.run.question_splits import split_of

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if split == "all" or split_of(r["standalone"]) == split]


def _row(arm: str, convo: dict[str, Any], pred: Any, seconds: float) -> dict[str, Any]:
    from ragnet.eval.metrics.answer_match import contains_match

    return {"id": convo["id"], "arm": arm, "answer": pred.answer, "right": bool(contains_match(pred.answer,
                                                                                               convo["answers"])),
            "standalone_question": pred.get("standalone_question"), "context": list(pred.get("context") or []),
            "seconds": round(seconds, 2)}


def _ask(arm: str, program: Any, convo: dict[str, Any], history: list[dict[str, Any]]) -> Any:
    from ragnet.programs.conversation import FollowUp

    if arm == "last":
        return program(question=convo["question"])
    if arm == "standalone":
        return program(question=convo["standalone_question"])
    return FollowUp(program, condense=arm == "condense")(question=convo["question"], history=history)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Answer every conversation's turn two with each arm; returns all rows (old and new)."""
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.lm.config import LMOptions
    from ragnet.programs.registry import build_program, resolve_strategy

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines()] if rows_path.exists() else []
    done = {(r["id"], r["arm"]) for r in rows}
    index = docs_index(args.docs)
    lms = LMOptions(lm=args.lm, answer_lm=args.answer_lm)
    lms.configure()
    reader = lms.reader_lm()
    spec, budget = resolve_strategy(args.strategy, None, reader, index)
    program = build_program(spec, index, budget=budget, reader=reader)
    convos = _conversations(Path(args.data), args.split)
    for n, convo in enumerate(convos, 1):
        first = program(question=convo["history"][0]["question"])  # turn one, as the user saw it
        history = [{"question": convo["history"][0]["question"], "answer": first.answer,
                    "citations": list(first.citations or [])}]
        for arm in args.arms:
            if (convo["id"], arm) in done:
                continue
            started = time.perf_counter()
            row = _row(arm, convo, _ask(arm, program, convo, history), time.perf_counter() - started)
            rows.append(row)
            with rows_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"[{n}/{len(convos)}] {convo['id']} {arm}: {'right' if row['right'] else 'wrong'} "
                  f"{row['answer'][:60]!r} ({row['seconds']:.1f} s)", flush=True)
    return [r for r in rows if r["id"] in {c["id"] for c in convos}]


def summary(rows: list[dict[str, Any]], arms: tuple[str, ...]) -> dict[str, Any]:
    """Right answers per arm, their share of ``standalone``'s, and wins / losses against ``last``."""
    from ragnet.eval.metrics.stats import sign_test

    by = {(r["id"], r["arm"]): r["right"] for r in rows}
    ids = sorted({r["id"] for r in rows if all((r["id"], a) in by for a in arms)})
    right = {a: sum(by[(i, a)] for i in ids) for a in arms}
    table = {}
    for arm in arms:
        wins = sum(by[(i, arm)] and not by[(i, "last")] for i in ids) if "last" in arms else 0
        losses = sum(by[(i, "last")] and not by[(i, arm)] for i in ids) if "last" in arms else 0
        table[arm] = {"right": right[arm], "n": len(ids),
                      "of_standalone": round(right[arm] / right["standalone"], 3) if right.get("standalone") else None,
                      "wins_vs_last": wins, "losses_vs_last": losses, "p_vs_last": round(sign_test(wins, losses), 4)}
    return {"n": len(ids), "arms": table}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdocs.followups", description=__doc__.split("\n")[0])
    parser.add_argument("--docs", required=True, help="the dev folder (python -m benchmarks.realdocs.build)")
    parser.add_argument("--data", default=str(HERE / "followups.jsonl"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--split", default="all", choices=("tune", "check", "all"))
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--lm", default="local")
    parser.add_argument("--answer-lm", default="local:qwen2.5-coder-1.5b")
    args = parser.parse_args(argv)
    args.arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    unknown = set(args.arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arms {sorted(unknown)}; choose from {', '.join(ARMS)}")
    result = summary(run(args), args.arms)
    from ragnet._atomic import atomic_path

    with atomic_path(Path(args.out) / "summary.json") as tmp:
        tmp.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"{'arm':<11} {'right':>9} {'of standalone':>14} {'W/L vs last':>12} {'p':>7}")
    for arm, r in result["arms"].items():
        print(f"{arm:<11} {r['right']:>4} / {r['n']:<3} {str(r['of_standalone']):>14} "
              f"{r['wins_vs_last']:>5} / {r['losses_vs_last']:<5} {r['p_vs_last']:>7}")


if __name__ == "__main__":
    main()
