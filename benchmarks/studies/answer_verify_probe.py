"""Probe (2026-12-06): can the 1.5B reader, checking one candidate at a time against the one line
that states it, pick the right answer among its own alternatives?

`answer_alternatives_probe` found a right answer among the reader's top-8 first-token branches
for 115 of 125 dev questions (the oracle answers 110), and that neither a support score without
an LM nor a second call shown all the branches' lines at once (87 against 91) picks it. Judges
that compare answers side by side favour a position (the 1.5B chose "A" 42 times of 54 in
``answer_pick_probe``); a pointwise check, as rerankers score passages, has no position to favour.

For each question of the alternatives probe's rows, every distinct branch that a context sentence
states (``ragnet.core.support.states_answer``; the stating sentence closest to the question by the
index's embedder, under its chunk's title, as the oracle's gold lines are shown) is checked alone:
one short prompt (the line, the question, the candidate; "yes or no?"), scored by the reader's
log-odds of "yes" against "no" at its first token, no text generated. ``--summary`` picks the
candidate with the highest log-odds, and, the other way, the highest reader's log-probability under
`auto`'s context plus log P(yes) (the product of the two probabilities); when the reader's own
answer is stated nowhere in the context it is kept unless the pick's check is above even odds. No
weight is fitted, so the printed changes are not fitted to these questions.

    python -m benchmarks.realdocs.build
    RAGNET_LM_THREADS=1 taskset -c 0 python -m benchmarks.studies.answer_verify_probe --ids odd
    RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.studies.answer_verify_probe --ids even
    python -m benchmarks.studies.answer_verify_probe --summary
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.realdocs.build import default_out
from benchmarks.realdocs.check import QUESTIONS, load_questions
from benchmarks.studies import RESULTS, parser, pending
from benchmarks.studies.answer_alternatives_probe import OUT as ALTERNATIVES, _log_softmax, reader_llama, stating_lines

OUT = RESULTS / "realdocs-dev-answer-alternatives" / "verify.jsonl"
LIKELIHOOD_OUT = OUT.with_name("question-likelihood.jsonl")
SYSTEM = "You check answers to questions about software documentation against a passage."
ASK_QUESTION = "Please write a question based on this passage."
PROMPT = ("Passage ({title}):\n{line}\n\nQuestion: {question}\nProposed answer: {candidate}\n\n"
          "According to the passage, is the proposed answer the correct answer to the question? "
          "Reply with yes or no.")


def log_odds(llm, chat, title: str, line: str, question: str, candidate: str, yes: list[int], no: list[int]) -> float:
    """The reader's log-odds of "yes" against "no" as its first token for one candidate."""
    import numpy as np

    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": PROMPT.format(title=title, line=line, question=question, candidate=candidate)}]
    llm.reset()
    llm.eval(llm.tokenize(chat(messages=messages).prompt.encode("utf-8"), add_bos=False, special=True))
    first = _log_softmax(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy())
    return float(np.logaddexp.reduce(first[yes]) - np.logaddexp.reduce(first[no]))


def question_loglik(llm, chat, title: str, line: str, question: str) -> float:
    """log P(question | line): the reader's log-likelihood of the question's tokens as its reply to
    "write a question based on this passage" (zero-shot question-likelihood reranking, UPR)."""
    import numpy as np

    messages = [{"role": "user", "content": f"Passage ({title}):\n{line}\n\n{ASK_QUESTION}"}]
    head = llm.tokenize(chat(messages=messages).prompt.encode("utf-8"), add_bos=False, special=True)
    tail = llm.tokenize(question.encode("utf-8"), add_bos=False, special=False)
    llm.reset()
    llm.eval(head + tail)
    return float(sum(_log_softmax(np.asarray(llm.scores[len(head) - 1 + i]))[token] for i, token in enumerate(tail)))


def probe(ids: str, out: Path, docs: Path, likelihood: bool = False) -> None:
    """Append one row per question of the alternatives probe's rows (``ids``: all, odd or even):
    each stated candidate's check (``odds``), or with ``likelihood`` its line's ``qlik``."""
    from ragnet.eval.metrics.answer_match import contains_match
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.programs.registry import build_program

    index = docs_index(docs)
    program = build_program("oneshot:sentences+hops", index, budget=2000)
    llm, chat = reader_llama(1024 if likelihood else 2048, logits_all=likelihood, generation_prompt=True)
    yes, no = ([llm.tokenize(w.encode(), add_bos=False)[0] for w in words]
               for words in (("yes", "Yes"), ("no", "No")))
    questions = {q["id"]: q for q in load_questions(QUESTIONS)}
    todo = pending(out, load_questions(ALTERNATIVES), ids)
    with open(out, "a", encoding="utf-8") as rows:
        for row in todo:
            q = questions[row["id"]]
            greedy = str(row["answer"] or "")
            texts = [greedy] + [text for text, _, _ in row["alts"][1:]]
            cands, by_line = [], {}
            for text, chunk, line in stating_lines(texts, program, index, q["question"]):
                if likelihood:
                    if line not in by_line:
                        by_line[line] = round(question_loglik(llm, chat, chunk.title, line, q["question"]), 3)
                    score = {"qlik": by_line[line]}
                else:
                    score = {"odds": round(log_odds(llm, chat, chunk.title, line, q["question"], text, yes, no), 3)}
                cands.append({"text": text, "greedy": text == greedy, **score,
                              "right": contains_match(text, q["answers"]) > 0})
            rows.write(json.dumps({"id": row["id"], "greedy": greedy,
                                   "greedy_right": contains_match(greedy, q["answers"]) > 0, "cands": cands}) + "\n")
            rows.flush()
            print(row["id"], repr(greedy), [(c["text"], c.get("odds", c.get("qlik"))) for c in cands], flush=True)


def scored(row: dict, alternatives: dict) -> list[dict]:
    """The row's candidates, each with ``combined``: the reader's total log-probability of the
    candidate under `auto`'s context (its branch in the alternatives probe; the reader's own answer
    takes branch 0's) plus the candidate's own log-probability, log P(yes) from the check or
    log P(question | line), so the two probabilities multiplied, with no weight."""
    import numpy as np

    totals = {text: total for text, _, total in alternatives["alts"][1:]}
    totals[row["greedy"]] = alternatives["alts"][0][2]
    return [{**c, "combined": totals[c["text"]] + (c["qlik"] if "qlik" in c else -float(np.logaddexp(0.0, -c["odds"])))}
            for c in row["cands"]]


def pick(row: dict, key: str = "odds") -> bool:
    """Whether the pick by ``key`` (``odds``, ``qlik``, or ``combined`` from :func:`scored`) is
    right for one row: the best candidate (the first of a tie), where the reader's own answer is
    stated nowhere in the context only when the check is above even odds (for ``qlik``, never).

    Example:
        >>> row = {"greedy_right": False, "cands": [{"greedy": True, "odds": -1.0, "right": False},
        ...                                         {"greedy": False, "odds": 0.5, "right": True}]}
        >>> pick(row), pick({"greedy_right": True, "cands": [{"greedy": False, "odds": -0.2, "right": False}]})
        (True, True)
    """
    if not row["cands"]:
        return row["greedy_right"]
    best = max(row["cands"], key=lambda c: c[key])
    if not any(c["greedy"] for c in row["cands"]) and best.get("odds", 0.0) <= 0:
        return row["greedy_right"]
    return best["right"]


def summary(out: Path) -> None:
    from ragnet.eval.metrics.stats import sign_test

    alternatives = {r["id"]: r for r in load_questions(ALTERNATIVES)}
    rows = [{**r, "cands": scored(r, alternatives[r["id"]])} for r in load_questions(out)]
    own = "qlik" if any("qlik" in c for r in rows for c in r["cands"]) else "odds"
    greedy = sum(r["greedy_right"] for r in rows)
    print(f"{len(rows)} questions: the reader's answer right {greedy}; a right candidate stated for "
          f"{sum(any(c['right'] for c in r['cands']) for r in rows)}; candidates: "
          f"{sum(len(r['cands']) for r in rows)}")
    names = {"odds": "the check alone", "qlik": "log P(question | line) alone"}
    for key, name in ((own, names[own]), ("combined", f"the reader's log-probability plus {names[own][:-6]}")):
        picked = [pick(r, key) for r in rows]
        wins = sum(p and not r["greedy_right"] for p, r in zip(picked, rows))
        losses = sum(r["greedy_right"] and not p for p, r in zip(picked, rows))
        print(f"  picked by {name}: {sum(picked)} right ({wins} wins, {losses} losses, sign test p = "
              f"{sign_test(wins, losses):.2f})")


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "answer_verify_probe")
    p.add_argument("--ids", default="all", help="all, odd or even question numbers.")
    p.add_argument("--docs", type=Path, default=default_out(),
                   help="The dev documents (python -m benchmarks.realdocs.build).")
    p.add_argument("--out", type=Path, default=OUT, help="Rows are appended here (questions already there are skipped).")
    p.add_argument("--summary", action="store_true", help="Only score --out's rows (no LM; with --likelihood, its rows).")
    p.add_argument("--likelihood", action="store_true",
                   help=f"Score each candidate's line by log P(question | line) instead, into {LIKELIHOOD_OUT.name}.")
    args = p.parse_args(argv)
    out = LIKELIHOOD_OUT if args.likelihood and args.out == OUT else args.out
    summary(out) if args.summary else probe(args.ids, out, args.docs, args.likelihood)


if __name__ == "__main__":
    main()
