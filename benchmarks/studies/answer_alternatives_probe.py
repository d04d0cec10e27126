"""Probe (2026-12-06): are the right answers the 1.5B reader misses among its own alternatives, and
can a signal without an LM pick them?

`auto` over the real-document dev set (``oneshot:sentences+hops`` at 2,000 tokens) answers 72.8%
and the oracle 88%; with any change of context about a third of the answers move both ways. This
probe reads `auto`'s own answer prompt once (the same messages, taken from the program's call,
which DSPy's cache answers when it was asked before) and branches the reader at the first token of
its answer: the ``--branches`` most likely first tokens after ``"answer": "``, each continued
greedily to the closing quote, with its first-token and total log-probability. The first branch is
the reader's own greedy answer. One prompt read; about 8 x 10 tokens more to generate.

``--summary`` scores the branches without an LM: whether a context sentence states the candidate
(``ragnet.core.support.states_answer``), the best cosine (the index's embedder) and the best share
of the question's words among the sentences stating it, and how much of it repeats the question.
A candidate is picked by ``total logprob + a * cosine + b * question share - c * echo`` among
those stated in the context within ``d`` nats of the greedy answer; the four weights are fitted on
one half of the questions (odd positions) and scored on the other, then the other way round, so
the printed change is cross-validated, not fitted.

``--reask`` tries the other way to pick, with the reader itself: a second call whose context is only
the lines that state the branches (for each distinct branch stated in the context, the stating
sentence closest to the question by the index's embedder, in branch order, each under its chunk's
title, as the oracle's gold lines are shown); its rows go to ``reask.jsonl`` beside ``--out``.

    python -m benchmarks.realdocs.build
    RAGNET_LM_THREADS=1 taskset -c 0 python -m benchmarks.studies.answer_alternatives_probe --ids odd
    RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.studies.answer_alternatives_probe --ids even
    python -m benchmarks.studies.answer_alternatives_probe --summary
    RAGNET_LM_THREADS=1 taskset -c 0 python -m benchmarks.studies.answer_alternatives_probe --reask --ids odd
    RAGNET_LM_THREADS=1 taskset -c 1 python -m benchmarks.studies.answer_alternatives_probe --reask --ids even
    python -m benchmarks.studies.answer_alternatives_probe --reask --summary
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.realdocs.build import default_out
from benchmarks.realdocs.check import QUESTIONS, load_questions
from benchmarks.studies import RESULTS, parser, pending

OUT = RESULTS / "realdocs-dev-answer-alternatives" / "probe.jsonl"
#: What the JSON adapter's reply holds before the answer's first token.
ANSWER_OPENING = '```json\n{\n  "answer": "'
#: The weights the summary searches: cosine, question share, echo, nats below the greedy answer.
GRID = list(itertools.product([0, 1, 2, 4, 8], [0, 1, 2, 4, 8], [0, 0.5, 1, 2], [0.5, 1, 2, 3, 5]))


def _log_softmax(logits):
    import numpy as np

    top = logits.max()
    return logits - (top + np.log(np.exp(logits - top).sum()))


def branches(llm, prompt: str, k: int, max_tokens: int = 24) -> list[tuple[str, float, float]]:
    """The ``k`` most likely answers' openings after ``prompt``, each continued greedily until its
    closing quote: ``(text, first-token logprob, total logprob)``, most likely first token first."""
    import numpy as np

    def last_logits():
        return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()

    llm.reset()
    llm.eval(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
    first = _log_softmax(last_logits())
    read = llm.n_tokens
    out = []
    for token in np.argsort(-first)[:k]:
        llm.n_tokens = read  # eval() drops the KV cache past n_tokens: the prompt stays read
        llm.eval([int(token)])
        seq, total = [int(token)], float(first[token])
        for _ in range(max_tokens):
            if '"' in llm.detokenize(seq).decode("utf-8", "ignore"):
                break
            step = _log_softmax(last_logits())
            nxt = int(np.argmax(step))
            seq.append(nxt)
            total += float(step[nxt])
            llm.eval([nxt])
        text = llm.detokenize(seq).decode("utf-8", "ignore").split('"')[0]
        out.append((text, round(float(first[token]), 3), round(total, 3)))
    return out


def reader_llama(n_ctx: int, *, logits_all: bool = False, generation_prompt: bool = False):
    """The 1.5B reader as a raw ``llama_cpp.Llama`` on one thread, and its chat formatter (with the
    assistant turn opened when ``generation_prompt``): what the probes read logits from."""
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from ragnet.lm.models import default_model_path

    llm = llama_cpp.Llama(model_path=str(default_model_path("qwen2.5-coder-1.5b")), n_ctx=n_ctx, n_threads=1,
                          n_threads_batch=1, logits_all=logits_all, verbose=False)
    chat = Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"],
                               eos_token=llm._model.token_get_text(llm.token_eos()), bos_token="",
                               add_generation_prompt=generation_prompt)
    return llm, chat


def probe(ids: str, out: Path, docs: Path, k: int) -> None:
    """Append one row per question of ``ids`` (all, odd or even) to ``out``."""
    import dspy

    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.lm.config import LazyLM, configure
    from ragnet.programs.registry import build_program

    index = docs_index(docs)
    configure("local")
    program = build_program("oneshot:sentences+hops", index, budget=2000, reader=LazyLM("local:qwen2.5-coder-1.5b"))
    llm, chat = reader_llama(n_ctx=4096)
    todo = pending(out, load_questions(QUESTIONS), ids)
    with open(out, "a", encoding="utf-8") as rows:
        for q in todo:
            pred = program(question=q["question"])
            messages = dspy.clients.base_lm.GLOBAL_HISTORY[-1]["messages"]
            alts = branches(llm, chat(messages=messages).prompt + ANSWER_OPENING, k)
            rows.write(json.dumps({"id": q["id"], "gold": q["answers"], "answer": pred.answer, "alts": alts}) + "\n")
            rows.flush()
            print(q["id"], repr(pred.answer), [a[0] for a in alts], flush=True)


def shown_with_cosines(program, index, question: str) -> tuple[list, list[float]]:
    """The sentences `auto`'s reader is shown for ``question``, as ``(chunk, sentence)`` pairs, and
    each sentence's cosine with the question (the index's embedder). No LM."""
    import numpy as np

    from ragnet.programs.citations import shown_sentences

    pairs = [(chunk, s) for chunk in program.retrieve(question) for s in shown_sentences(chunk)]
    vectors = index.embedder.encode_queries([s for _, s in pairs] + [question])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return pairs, (vectors[:-1] @ vectors[-1]).tolist()


def features(rows: list[dict], docs: Path) -> list[dict]:
    """Each row's branches with the signals the summary picks by (no LM)."""
    from ragnet.core.support import _STOP, answer_key, states_answer
    from ragnet.eval.metrics.answer_match import contains_match
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.programs.registry import build_program

    index = docs_index(docs)
    program = build_program("oneshot:sentences+hops", index, budget=2000)
    questions = {q["id"]: q for q in load_questions(QUESTIONS)}
    scored = []
    for row in rows:
        q = questions[row["id"]]
        pairs, cos = shown_with_cosines(program, index, q["question"])
        sentences = [s for _, s in pairs]
        asked = {w for w in answer_key(q["question"]) if w not in _STOP}
        # Branch 0 stands for the reader's own answer: forced after ANSWER_OPENING and cut at 24
        # tokens, its text differs from the answer for a few questions (long or re-spaced replies).
        alts = [(str(row["answer"] or ""), *row["alts"][0][1:]), *row["alts"][1:]]
        seen, cands = set(), []
        for text, first, total in alts:
            words = set(answer_key(text))
            stating = [i for i, s in enumerate(sentences) if text.strip() and states_answer(text, s)]
            cands.append({
                "text": text, "first": first, "total": total, "repeat": " ".join(answer_key(text)) in seen,
                "stated": bool(stating), "cos": max((cos[i] for i in stating), default=0.0),
                "share": max((len((set(answer_key(sentences[i])) - words) & asked) / max(1, len(asked))
                              for i in stating), default=0.0),
                "echo": len(words & asked) / max(1, len(words - _STOP)) if words else 0.0,
                "right": contains_match(text, q["answers"]) > 0,
            })
            seen.add(" ".join(answer_key(text)))
        scored.append({"id": row["id"], "kind": q["kind"], "cands": cands})
    return scored


def pick(cands: list[dict], a: float, b: float, c: float, d: float) -> int:
    """The branch chosen with weights ``a`` (cosine), ``b`` (question share), ``c`` (echo) among
    those stated in the context within ``d`` nats of the greedy answer (branch 0, the fallback).

    Example:
        >>> greedy = {"total": -0.8, "repeat": False, "stated": True, "cos": 0.65, "share": 0.1, "echo": 1.0}
        >>> rej = {"total": -3.8, "repeat": False, "stated": True, "cos": 0.75, "share": 0.6, "echo": 0.0}
        >>> pick([greedy, rej], 0, 8, 1, 3), pick([greedy, rej], 0, 8, 1, 1), pick([greedy, rej], 0, 0, 0, 5)
        (1, 0, 0)
    """
    best, best_score = 0, float("-inf")
    for i, x in enumerate(cands):
        if i and (x["repeat"] or not x["stated"] or x["total"] < cands[0]["total"] - d):
            continue
        score = x["total"] + a * x["cos"] + b * x["share"] - c * x["echo"]
        if score > best_score:
            best, best_score = i, score
    return best


def summary(out: Path, docs: Path) -> None:
    from ragnet.eval.metrics.stats import sign_test

    scored = features(load_questions(out), docs)

    def right(rows, w):
        return sum(r["cands"][pick(r["cands"], *w)]["right"] for r in rows)

    greedy = sum(r["cands"][0]["right"] for r in scored)
    print(f"{len(scored)} questions: the reader's answer right {greedy}; a right answer among the branches "
          f"{sum(any(x['right'] for x in r['cands']) for r in scored)}; the best weights fitted on all "
          f"{max(right(scored, w) for w in GRID)} (fitted, not a result)")
    ranks = Counter(next((i + 1 for i, x in enumerate(r["cands"]) if x["right"]), None)
                    for r in scored if not r["cands"][0]["right"])
    print(f"  of the {sum(ranks.values())} greedy misses, the first right branch is branch "
          + ", ".join(f"{rank}: {ranks[rank]}" for rank in sorted(k for k in ranks if k)) + f"; none: {ranks[None]}")
    halves = (scored[0::2], scored[1::2])
    wins = losses = 0
    for train, test in (halves, halves[::-1]):
        w = max(GRID, key=lambda w: (right(train, w), -sum(w)))
        pairs = [(r["cands"][pick(r["cands"], *w)]["right"], r["cands"][0]["right"]) for r in test]
        won, lost = sum(a > b for a, b in pairs), sum(a < b for a, b in pairs)
        wins, losses = wins + won, losses + lost
        print(f"  weights {w} fitted on {len(train)}: {sum(a for a, _ in pairs)} right of the other {len(test)} "
              f"against greedy {sum(r['cands'][0]['right'] for r in test)} ({won} wins, {lost} losses)")
    print(f"cross-validated: {greedy + wins - losses} right against {greedy} ({wins} wins, {losses} losses, "
          f"sign test p = {sign_test(wins, losses):.2f})")


def stating_lines(texts: Sequence[str], program, index, question: str) -> list[tuple[str, object, str]]:
    """For each distinct candidate answer of ``texts`` (in order) that a sentence of `auto`'s
    context states, ``(candidate, chunk, sentence)``: the stating sentence closest to the question
    by the index's embedder, and its chunk. No LM."""
    from ragnet.core.support import answer_key, states_answer

    sentences, cos = shown_with_cosines(program, index, question)
    out, seen = [], set()
    for text in texts:
        key = " ".join(answer_key(text))
        if not text.strip() or key in seen:
            continue
        seen.add(key)
        stating = [i for i, (_, s) in enumerate(sentences) if states_answer(text, s)]
        if stating:
            best = max(stating, key=lambda i: cos[i])
            out.append((text, *sentences[best]))
    return out


def _branch_lines(row: dict, program, index, question: str) -> list:
    """The context sentences stating the row's branches (see ``--reask``), as chunks."""
    from ragnet.corpus.tokens import encode

    lines, used = [], set()
    for _, chunk, sentence in stating_lines([text for text, _, _ in row["alts"]], program, index, question):
        if (chunk.id, sentence) not in used:
            used.add((chunk.id, sentence))
            lines.append(chunk.with_text(sentence, len(encode(sentence))))
    return lines


def reask(ids: str, out: Path, docs: Path) -> None:
    """Append to ``reask.jsonl`` beside ``out`` the reader's answer from its branches' lines."""
    from ragnet.eval.metrics.answer_match import contains_match
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.lm.config import LazyLM, configure
    from ragnet.programs.registry import build_program
    from ragnet.signatures.formatting import format_context

    index = docs_index(docs)
    configure("local")
    program = build_program("oneshot:sentences+hops", index, budget=2000, reader=LazyLM("local:qwen2.5-coder-1.5b"))
    questions = {q["id"]: q for q in load_questions(QUESTIONS)}
    target = out.with_name("reask.jsonl")
    todo = pending(target, load_questions(out), ids)
    with open(target, "a", encoding="utf-8") as rows:
        for row in todo:
            q = questions[row["id"]]
            lines = _branch_lines(row, program, index, q["question"])
            context = format_context(lines)[0] if lines else ""
            answer = str(program.answer(question=q["question"], context=context).answer or "") if lines \
                else str(row["answer"] or "")
            rows.write(json.dumps({
                "id": row["id"], "answer": answer, "greedy": row["answer"], "lines": len(lines), "context": context,
                "right": contains_match(answer, q["answers"]) > 0,
                "greedy_right": contains_match(str(row["answer"] or ""), q["answers"]) > 0}) + "\n")
            rows.flush()
            print(row["id"], repr(answer), flush=True)


def reask_summary(out: Path) -> None:
    from statistics import median

    from ragnet.eval.metrics.stats import sign_test

    rows = load_questions(out.with_name("reask.jsonl"))
    wins = sum(r["right"] and not r["greedy_right"] for r in rows)
    losses = sum(r["greedy_right"] and not r["right"] for r in rows)
    print(f"{len(rows)} questions: re-asked from the branches' lines {sum(r['right'] for r in rows)} right, the "
          f"reader's first answer {sum(r['greedy_right'] for r in rows)} ({wins} wins, {losses} losses, sign test "
          f"p = {sign_test(wins, losses):.2f}); lines shown: median {median(r['lines'] for r in rows)}, "
          f"none for {sum(r['lines'] == 0 for r in rows)} (first answer kept)")


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "answer_alternatives_probe")
    p.add_argument("--ids", default="all", help="all, odd or even question numbers.")
    p.add_argument("--branches", type=int, default=8, help="First tokens branched on.")
    p.add_argument("--docs", type=Path, default=default_out(),
                   help="The dev documents (python -m benchmarks.realdocs.build).")
    p.add_argument("--out", type=Path, default=OUT, help="Rows are appended here (questions already there are skipped).")
    p.add_argument("--summary", action="store_true", help="Only score --out's rows (no LM).")
    p.add_argument("--reask", action="store_true", help="Ask again from the branches' lines (with --summary: score that).")
    args = p.parse_args(argv)
    if args.reask:
        (reask_summary(args.out) if args.summary else reask(args.ids, args.out, args.docs))
    elif args.summary:
        summary(args.out, args.docs)
    else:
        probe(args.ids, args.out, args.docs, args.branches)


if __name__ == "__main__":
    main()
