"""Uncompiled AssessSufficiency prompt variants on the showcase's held-out cases (dev split only).

Same questions, split and cases as the showcase command in docs/results/README.md
(-n 68, --val-fraction 0.62, --paragraphs 3, --max-words 150, seed 0); the first N validation
cases (balanced, alternating Sufficient / Refine). Variants:

* base: AssessSufficiency as ragnet runs it (SufficiencyStep, JSON prompt for the local model);
* demos: plus four hand-labelled training cases as demos (Sufficient, Refine, Sufficient,
  Refine; a Refine demo names the withheld paragraph as what is missing);
* cot: dspy.ChainOfThought(AssessSufficiency);
* cotdemos: ChainOfThought plus the four demos with a templated rationale built from the gold
  titles ("The answer needs facts about A, B. The context has paragraphs about A. Nothing about B.").

    RAGNET_CACHE_DIR=... [RAGNET_GGUF=...] python -m benchmarks.studies.sufficiency_prompt_variants VARIANT N
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import dspy

import ragnet
from benchmarks.studies import parser
from ragnet.eval.run.datasets import load_questions, resolve_dataset
from ragnet.optimize.cases import sufficiency_cases
from ragnet.optimize.run import _select_questions
from ragnet.signatures import AssessSufficiency, SufficiencyStep


def main(argv: Sequence[str] | None = None) -> None:
    parse = parser(__doc__, "sufficiency_prompt_variants")
    parse.add_argument("variant", choices=("base", "demos", "cot", "cotdemos"))
    parse.add_argument("n", type=int, help="Validation cases (the first N).")
    args = parse.parse_args(argv)
    variant, N = args.variant, args.n
    records = load_questions(resolve_dataset("hotpotqa_dev_distractor", None), split="dev")
    train_r, val_r = _select_questions(records, 68, 0.62, 0)
    train = sufficiency_cases(train_r, paragraphs=3, max_words=150, seed=0)
    val = sufficiency_cases(val_r, paragraphs=3, max_words=150, seed=0)[:N]
    ragnet.configure(lm="local")
    pred_cls = dspy.ChainOfThought if variant.startswith("cot") else dspy.Predict
    p = pred_cls(AssessSufficiency)
    step = SufficiencyStep()
    step.predict = p  # the step as programs run it, with this variant's predictor
    if "demos" in variant:
        S = [c for c in train if c.verdict == "Sufficient"][:2]
        R = [c for c in train if c.verdict == "Refine"][:2]
        demos = [S[0], R[0], S[1], R[1]]
        for d in demos:
            if d.verdict == "Refine":
                d.missing = "a paragraph about " + ", ".join(d.missing_titles)
        if variant.startswith("cot"):
            for d in demos:
                needed = ", ".join(d.gold_titles)
                have = ", ".join(d.present_titles)
                d.reasoning = (f"The answer needs facts about {needed}. The context has paragraphs about {have}."
                               + ("" if d.verdict == "Sufficient" else f" Nothing about {', '.join(d.missing_titles)}."))
        (p.predict if hasattr(p, "predict") else p).demos = demos
    right = {"Sufficient": [0, 0], "Refine": [0, 0]}
    t = time.time()
    for i, c in enumerate(val):
        out = step(question=c.question, context=c.context)
        right[c.verdict][0] += out.verdict == c.verdict
        right[c.verdict][1] += 1
        print(i, c.verdict, out.verdict, round(out.confidence, 2), repr(out.missing[:60]), flush=True)
    acc = sum(v[0] for v in right.values()) / sum(v[1] for v in right.values())
    print(f"VARIANT {variant} acc {acc:.3f}", {k: f"{a}/{b}" for k, (a, b) in right.items()}, f"{time.time()-t:.0f}s")


if __name__ == "__main__":
    main()
