"""Probe (2026-12-05): does the 1.5B reader answer more manual questions when the pack's best lines
are repeated after the context?

The oracle's reader answers 88% of the real-document dev set from a few gold lines; `auto` at
2,000 tokens answers 72%, and 31 of its 35 misses had the answer's words in the context. This probe
gives the reader `auto`'s own context (``oneshot:sentences+hops`` at 2,000 tokens, the same pack and
order) followed by a "Key lines:" block: the pack's sentences by knapsack value, best first, up to
K that have at least four words, each as ``[cN] line`` with its chunk's id. A sentence that is a
list of option entries (two or more lines opening with ``-x``/``--name``) is cut to the entry
sharing most words with the question. The block is not budgeted (about 100 tokens more); still one
LM call. Rows (one per question) are appended to ``--out``; the summary compares them with
``docs/results/realdocs-dev-auto-2000`` (restore its rows with ``python -m benchmarks.fetch_rows``).

    python -m benchmarks.realdocs.build
    RAGNET_LM_THREADS=1 taskset -c 0 python -m benchmarks.studies.key_lines_probe --ids odd
    RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.studies.key_lines_probe --ids even
    python -m benchmarks.studies.key_lines_probe --summary
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from math import comb
from pathlib import Path

from benchmarks.realdocs.build import default_out
from benchmarks.realdocs.check import QUESTIONS, load_questions
from benchmarks.studies import RESULTS, parser, pending, result_rows

_OPTION_ENTRY = re.compile(r"^\s*(?:-{1,2}\w|`-)")


def best_line(text: str, question: str) -> str:
    """``text`` on one line, or, for a list of option entries, the entry sharing most words with
    ``question``."""
    from ragnet.core.support import _STOP, answer_key

    lines = [line for line in text.split("\n") if line.strip()]
    entries = [line for line in lines if _OPTION_ENTRY.match(line)]
    if len(entries) < 2:
        return " ".join(text.split())
    asked = {word for word in answer_key(question) if word not in _STOP}
    return max(entries, key=lambda line: len(asked & set(answer_key(line)))).strip()


def key_lines_block(program, index, question: str, k: int) -> tuple[str, list[str]]:
    """``auto``'s context for ``question`` with the Key lines block after it, and those lines."""
    from ragnet.programs.sentence_packing import crop_to_sentences, select_sentences
    from ragnet.programs.trace import Trace
    from ragnet.signatures.formatting import format_context, quote

    candidates, budget = program._candidates(question, Trace())
    sel = select_sentences(candidates, question, index, budget.context_budget)
    chunks, _ = crop_to_sentences(candidates, sel.candidates, sel.picked)
    text, id_map = format_context(program.answer.shown_order(question, chunks))
    short_of = {real: short for short, real in id_map.items()}
    lines: list[str] = []
    seen: set[str] = set()
    for j in sorted(sel.picked, key=lambda j: -sel.values[j]):
        line = best_line(sel.candidates.texts[j], question)
        if len(line.split()) < 4 or line in seen:
            continue
        seen.add(line)
        lines.append(f"[{short_of[candidates[int(sel.candidates.chunk_of[j])].id]}] {quote(line)}")
        if len(lines) == k:
            break
    return text + "\n\nKey lines:\n" + "\n".join(lines), lines


def summary(out: Path) -> None:
    """Right answers of the probe against ``auto`` at 2,000 tokens on the same questions, with the
    sign test's two-sided p."""
    base = {r["id"]: r["contains"] >= 1 for r in result_rows("realdocs-dev-auto-2000")}
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    wins = sum(r["right"] and not base[r["id"]] for r in rows)
    losses = sum(base[r["id"]] and not r["right"] for r in rows)
    n = wins + losses
    p = min(1.0, 2 * sum(comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n) if n else 1.0
    print(f"{len(rows)} questions: key lines {sum(r['right'] for r in rows)} right, auto "
          f"{sum(base[r['id']] for r in rows)}; {wins} wins, {losses} losses, sign test p = {p:.2f}")
    for kind in sorted({r["kind"] for r in rows}):
        of = [r for r in rows if r["kind"] == kind]
        print(f"  {kind}: {sum(r['right'] for r in of)} against {sum(base[r['id']] for r in of)} of {len(of)}")


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "key_lines_probe")
    p.add_argument("--ids", default="all", help="all, odd or even question numbers.")
    p.add_argument("-k", type=int, default=3, help="Key lines shown.")
    p.add_argument("--docs", type=Path, default=default_out(),
                   help="The dev documents (python -m benchmarks.realdocs.build).")
    p.add_argument("--out", type=Path, default=RESULTS / "realdocs-dev-key-lines" / "probe.jsonl",
                   help="Rows are appended here (questions already there are skipped).")
    p.add_argument("--summary", action="store_true", help="Only print the comparison of --out's rows.")
    args = p.parse_args(argv)
    if args.summary:
        summary(args.out)
        return

    from ragnet.eval.metrics.answer_match import contains_match
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.lm.config import LazyLM
    from ragnet.programs.registry import build_program

    index = docs_index(args.docs)
    program = build_program("oneshot:sentences+hops", index, budget=2000,
                            reader=LazyLM("local:qwen2.5-coder-1.5b"))
    todo = pending(args.out, load_questions(QUESTIONS), args.ids)
    with open(args.out, "a", encoding="utf-8") as out:
        for q in todo:
            started = time.time()
            context, lines = key_lines_block(program, index, q["question"], args.k)
            answer = str(program.answer(question=q["question"], context=context).answer or "")
            row = {"id": q["id"], "kind": q["kind"], "answer": answer, "answers": q["answers"],
                   "right": bool(contains_match(answer, q["answers"])), "key_lines": lines,
                   "seconds": round(time.time() - started, 1)}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(q["id"], repr(answer), "right" if row["right"] else "wrong", flush=True)


if __name__ == "__main__":
    main()
