"""Decomposed sufficiency variants (the LM extracts, code decides) on the showcase's held-out cases.

Same cases as sufficiency_prompt_variants. ``span``: the LM answers with a phrase copied from the
context or NONE; Sufficient iff the phrase is in the context (or is yes/no). ``quotes``: the LM
lists the needed facts with a verbatim quote each; Sufficient iff every quote is found.

    RAGNET_CACHE_DIR=... python -m benchmarks.studies.sufficiency_decomposed_variants VARIANT N
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import dspy
import pydantic

import ragnet
from benchmarks.studies import parser
from ragnet.eval.run.datasets import load_questions, resolve_dataset
from ragnet.optimize.cases import sufficiency_cases
from ragnet.optimize.run import _select_questions
from ragnet.signatures.step import run_step


class FactQuote(pydantic.BaseModel):
    fact: str
    quote: str


class CheckEvidence(dspy.Signature):
    """List the facts needed to answer the question (usually one or two). For each fact, copy the
    exact sentence from the context that states it. If no sentence in the context states it,
    write NOT FOUND as the quote."""
    question: str = dspy.InputField()
    context: str = dspy.InputField()
    facts: list[FactQuote] = dspy.OutputField(desc="one entry per needed fact")


class SpanAnswer(dspy.Signature):
    """Answer the question with a short phrase copied exactly from the context. If the context
    does not contain the answer, write NONE."""
    question: str = dspy.InputField()
    context: str = dspy.InputField()
    answer: str = dspy.OutputField()


def norm(t: str) -> str:
    return re.sub(r"\W+", " ", t.lower()).strip()


def quoted(q: str, ctx: str) -> bool:
    q = norm(q)
    if not q or q.startswith("not found"):
        return False
    words = q.split()
    ctxn = norm(ctx)
    if q in ctxn:
        return True
    # lenient: 80% of the quote's words in the context
    cw = set(ctxn.split())
    return len(words) >= 3 and sum(w in cw for w in words) / len(words) >= 0.8


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "sufficiency_decomposed_variants")
    p.add_argument("variant", choices=("span", "quotes"))
    p.add_argument("n", type=int, help="Validation cases (the first N).")
    args = p.parse_args(argv)
    variant, N = args.variant, args.n
    records = load_questions(resolve_dataset("hotpotqa_dev_distractor", None), split="dev")
    train_r, val_r = _select_questions(records, 68, 0.62, 0)
    val = sufficiency_cases(val_r, paragraphs=3, max_words=150, seed=0)[:N]
    ragnet.configure(lm="local")
    right = {"Sufficient": [0, 0], "Refine": [0, 0]}
    t = time.time()
    for i, c in enumerate(val):
        if variant == "quotes":
            pred = dspy.Predict(CheckEvidence)
            out = run_step(pred, question=c.question, context=c.context, step="check", trace=None,
                           default={"facts": []})
            facts = list(out.facts or [])
            ok = bool(facts) and all(quoted(f.quote, c.context) for f in facts)
            detail = [(f.fact[:40], f.quote[:40], quoted(f.quote, c.context)) for f in facts]
        else:
            pred = dspy.Predict(SpanAnswer)
            out = run_step(pred, question=c.question, context=c.context, step="span", trace=None,
                           default={"answer": "NONE"})
            a = str(out.answer or "")
            ok = bool(norm(a)) and norm(a) not in ("none",) and (norm(a) in norm(c.context) or norm(a) in ("yes", "no"))
            detail = a[:60]
        said = "Sufficient" if ok else "Refine"
        right[c.verdict][0] += said == c.verdict
        right[c.verdict][1] += 1
        print(i, c.verdict, said, detail, flush=True)
    acc = sum(v[0] for v in right.values()) / sum(v[1] for v in right.values())
    print(f"VARIANT {variant} acc {acc:.3f}", {k: f"{a}/{b}" for k, (a, b) in right.items()}, f"{time.time()-t:.0f}s")


if __name__ == "__main__":
    main()
