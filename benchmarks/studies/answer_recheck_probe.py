"""Probe (2026-11-26): does the 1.5B reader change an answer that only echoes the question when
asked again? Re-asks the first N echo cases of `docs/results/hotpotqa-dev-reader/` (1.5B reader,
oneshot:sentences @ 1,000 tokens) with two wordings of a note rejecting the echo, one at
temperature 0.7. Output (stdout): probe.jsonl rows. `echoes_question` comes from commit dd9f648
(reverted after this probe) and lives here now.

    RAGNET_CACHE_DIR=$(mktemp -d) python -m benchmarks.studies.answer_recheck_probe 12 \\
        > docs/results/answer-recheck/probe.jsonl
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import ragnet
from benchmarks.studies import parser, result_rows
from ragnet.eval.run.eval_indexes import load_pooled
from ragnet.programs.registry import build_program
from ragnet.signatures.formatting import format_context

# A question whose answer may be a phrase of the question itself: yes/no questions (opening with
# an auxiliary verb), choices ("A or B", "between A and B") and comparisons ("which ... first").
_AUXILIARIES = frozenset("is are was were am do does did has have had can could will would should shall may might "
                         "must".split())
_CHOICE_WORDS = frozenset("or between either more most less least fewer first last earlier earliest later latest "
                          "older oldest younger youngest longer longest shorter shortest larger largest bigger "
                          "biggest smaller smallest higher highest lower lowest closer farther further".split())
_FILLER = frozenset("a an the of in on at to for and by with from as".split())


def _words(text: str) -> list[str]:
    return "".join(ch if ch.isalnum() else " " for ch in str(text).lower()).split()


def echoes_question(question: str, answer: str) -> bool:
    """Whether ``answer`` only repeats a phrase of ``question`` that cannot be its answer.

    Yes/no, choice and comparison questions are exempt: their answer is often a phrase of the question.

    Example:
        >>> echoes_question("Which brother of Eddie Murphy starred in Twisted Fortune?", "Eddie Murphy")
        True
        >>> echoes_question("Who was born first, Al-Karaji or Ikeda?", "Al-Karaji")   # a choice
        False
    """
    q, a = _words(question), _words(answer)
    if not q or not a or all(w in _FILLER for w in a):
        return False
    if q[0] in _AUXILIARIES or _CHOICE_WORDS.intersection(q):
        return False
    n = len(a)
    return any(q[i:i + n] == a for i in range(len(q) - n + 1))


def variants(q: str, a: str) -> dict[str, tuple[str, dict]]:
    """The two re-asked wordings of question ``q`` after the echo ``a``, with their LM settings."""
    return {
        "hint_t07": (f'{q} (Not "{a}": the question itself names that. Answer with what the context says the question asks for.)', {"temperature": 0.7, "rollout_id": 7}),
        "bridge": (f'{q}\n(Note: "{a}" is named in the question, so it is not the answer. First find what the context says about {a}; the answer is the entity or value that fact leads to.)', {}),
    }


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "answer_recheck_probe")
    p.add_argument("limit", type=int, nargs="?", default=12, help="Echo cases to re-ask (the first N).")
    args = p.parse_args(argv)
    rows = result_rows("hotpotqa-dev-reader")
    cases = [r for r in rows if r['strategy'] == 'oneshot:sentences@1000' and echoes_question(r['question'], r['answer'])]
    ragnet.configure(lm="local")
    index, _ = load_pooled("hotpotqa_dev_distractor", show_progress=False)
    prog = build_program("oneshot:sentences", index, budget=1000, reader="local:qwen2.5-coder-1.5b")
    for r in cases[:args.limit]:
        chunks = prog.retrieve(r['question'])
        text, _ = format_context(chunks, "")
        out = {}
        with prog.answer_settings():
            for name, (q, cfg) in variants(r['question'], r['answer']).items():
                try:
                    pred = prog.answer.predict(question=q, context=text, **({"config": cfg} if cfg else {}))
                    out[name] = pred.answer
                except Exception as e:
                    out[name] = f"ERR {type(e).__name__}"
        print(json.dumps({"q": r['question'][:80], "gold": r['answers'][0], "first": r['answer'], **out}), flush=True)


if __name__ == "__main__":
    main()
