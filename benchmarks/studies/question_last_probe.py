"""Probe (2026-11-26): does the 1.5B reader answer better when the question comes after the context?

DSPy's ChatAdapter renders input fields in signature order; GenerateAnswer puts the question first,
so with a 1,000-token context the question sits ~900 tokens before the answer. Decoder-only models
are known to use what is nearest the answer best ("lost in the middle", Liu et al. 2023); a 1.5B
reader that names the bridge entity instead of the fact asked about it might be helped most.

Paired, on dev questions of `docs/results/hotpotqa-dev-reader/` (1.5B reader, 0.5B steps):
a seeded sample of N questions where only oneshot:sentences@1000 holds all the gold ("B": where
its gain lives) and N where both contexts do ("A": a regression check). Each question runs basic
and oneshot:sentences@1000 twice: the signature as it was, and the same signature with the question
field moved after the context. Output: docs/results/answer-question-last/probe.jsonl (one row per
question and strategy; a rerun resumes it).

    RAGNET_EMBED_BACKEND=torch RAGNET_CACHE_DIR=~/.cache/ragnet/results_cache \\
        python -m benchmarks.studies.question_last_probe 30
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path

import ragnet
from benchmarks.studies import RESULTS, parser, result_rows
from ragnet.eval.metrics.answer_match import f1
from ragnet.eval.run.eval_indexes import load_pooled
from ragnet.programs.registry import build_program
from ragnet.signatures.answer import GenerateAnswer


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "question_last_probe")
    p.add_argument("n", type=int, nargs="?", default=30, help="Questions per group.")
    p.add_argument("--out", type=Path, default=RESULTS / "answer-question-last" / "probe.jsonl",
                   help="Rows are appended here (rows already there are skipped).")
    args = p.parse_args(argv)
    n, out_path = args.n, args.out
    rows = result_rows("hotpotqa-dev-reader")
    by_id: dict = {}
    for r in rows:
        by_id.setdefault(r["id"], {})[r["strategy"]] = r
    group_a = sorted(q for q, s in by_id.items() if s["basic"]["gold_all"] == 1 and s["oneshot:sentences@1000"]["gold_all"] == 1)
    group_b = sorted(q for q, s in by_id.items() if s["basic"]["gold_all"] < 1 and s["oneshot:sentences@1000"]["gold_all"] == 1)
    rng = random.Random(0)
    # one fixed seeded order per group (a larger N extends a smaller run), groups interleaved
    order_b, order_a = rng.sample(group_b, len(group_b)), rng.sample(group_a, len(group_a))
    picked = [x for pair in zip([("B", q) for q in order_b[:n]], [("A", q) for q in order_a[:n]]) for x in pair]

    question_last = GenerateAnswer.delete("question").append(
        "question", GenerateAnswer.input_fields["question"], type_=str)
    assert list(question_last.input_fields) == ["context", "question"]

    ragnet.configure(lm="local")
    index, _ = load_pooled("hotpotqa_dev_distractor", show_progress=False)
    programs = {spec: build_program(spec, index, budget=1000, reader="local:qwen2.5-coder-1.5b")
                for spec in ("basic", "oneshot:sentences")}
    done = set()
    if out_path.exists():
        with open(out_path, encoding="utf-8") as fh:
            done = {(r["id"], r["spec"]) for r in map(json.loads, fh)}
    with open(out_path, "a", encoding="utf-8") as out:
        for group, qid in picked:
            row = by_id[qid]["basic"]
            for spec, prog in programs.items():
                if (qid, spec) in done:
                    continue
                answers = {}
                for order, sig in (("question_first", GenerateAnswer), ("question_last", question_last)):
                    prog.answer.predict.signature = sig
                    t = time.time()
                    pred = prog(question=row["question"])
                    answers[order] = {"answer": pred.answer, "f1": round(f1(pred.answer, row["answers"]), 4),
                                      "seconds": round(time.time() - t, 1)}
                prog.answer.predict.signature = GenerateAnswer
                rec = {"group": group, "id": qid, "spec": spec, "type": row["type"], "question": row["question"],
                       "gold": row["answers"], **answers}
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                out.flush()
                print(json.dumps({k: rec[k] for k in ("group", "spec")}), answers["question_first"]["f1"],
                      answers["question_last"]["f1"], answers["question_first"]["seconds"], answers["question_last"]["seconds"],
                      flush=True)


if __name__ == "__main__":
    main()
