"""Answers of an older commit's programs on today's questions, scored by today's scorer.

What changed between two commits is easiest to see by asking the older code itself: check it out
in a git worktree, build its own index of the same folder with its ``ragnet index``, and answer a
questions file (``ragnet eval --docs`` format) with its ``basic`` and ``auto`` through the Python
API both commits share (``Index.load``, ``resolve_strategy``, ``build_program``). Older commits have no
``ragnet eval --docs``, so this study stands in for it; ``score`` then marks each answer with
today's ``contains`` match, so the rows compare with a ``ragnet eval`` run's rows question by question.

    git worktree add /tmp/old e50607a
    PYTHONPATH=/tmp/old python -m ragnet index ~/.cache/ragnet/realdocs-dev --out /tmp/old-index --on-error skip
    PYTHONPATH=/tmp/old:. RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.studies.old_commit_answers \\
        answer --questions check.jsonl --index /tmp/old-index --out old.jsonl --strategies basic
    python -m benchmarks.studies.old_commit_answers score --rows old.jsonl --out old-scored.jsonl

Run 2026-12-07 for e50607a over the new PDFs' check questions (docs/results/realdocs-check-e50607a).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def answer(questions: Path, index_dir: Path, out: Path, strategies: list[str], reader: str) -> None:
    """Answer every question with each strategy of the ragnet on ``sys.path``; appends rows, resumes."""
    from ragnet.index import Index
    from ragnet.lm.config import LMOptions
    from ragnet.programs.registry import build_program, resolve_strategy

    asked = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    done = set()
    if out.exists():
        done = {(r["strategy"], r["id"]) for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    lms = LMOptions(lm="local", answer_lm=reader)
    index = Index.load(index_dir)
    lms.configure()
    reader_lm = lms.reader_lm()
    for name in strategies:
        strategy, budget = resolve_strategy(name, None, reader_lm)
        program = build_program(strategy, index, budget=budget, reader=reader_lm)
        for q in asked:
            if (name, q["id"]) in done:
                continue
            start = time.time()
            pred = program(question=q["question"])
            row = {"strategy": name, "spec": strategy, "budget": budget, "id": q["id"], "answer": pred.answer,
                   "context": list(getattr(pred, "context", None) or []), "seconds": round(time.time() - start, 1)}
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, default=str) + "\n")
            print(name, q["id"], row["seconds"], repr(pred.answer)[:60], flush=True)


def score(rows: Path, questions: Path, out: Path) -> None:
    """Mark each row with today's ``contains`` match against its question's answers."""
    from ragnet._atomic import atomic_path
    from ragnet.eval.metrics.row_scores import contains_match
    from ragnet.eval.run.doc_questions import load_doc_questions

    answers = {q.id: q.answers for q in load_doc_questions(questions)}
    scored = []
    for line in rows.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row["contains"] = float(contains_match(row["answer"], answers[row["id"]]))
        scored.append(row)
    with atomic_path(out) as tmp:
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in scored), encoding="utf-8")
    print(f"{sum(r['contains'] >= 1 for r in scored)} of {len(scored)} rows right")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.studies.old_commit_answers",
                                     description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="job", required=True)
    ask = sub.add_parser("answer", help="answer with the ragnet on sys.path (an older commit's worktree)")
    ask.add_argument("--questions", type=Path, required=True)
    ask.add_argument("--index", type=Path, required=True, help="an index that commit's `ragnet index` built")
    ask.add_argument("--out", type=Path, required=True)
    ask.add_argument("--strategies", default="basic,auto")
    ask.add_argument("--reader", default="local:qwen2.5-coder-1.5b")
    mark = sub.add_parser("score", help="mark rows with today's contains match")
    mark.add_argument("--rows", type=Path, required=True)
    mark.add_argument("--questions", type=Path, default=Path("benchmarks/realdocs/questions.jsonl"))
    mark.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.job == "answer":
        answer(args.questions, args.index, args.out, [s for s in args.strategies.split(",") if s], args.reader)
    else:
        score(args.rows, args.questions, args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
