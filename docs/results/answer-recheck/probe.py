"""Probe (2026-11-26): does the 1.5B reader change an answer that only echoes the question when
asked again? Re-asks the first N echo cases of `docs/results/hotpotqa-dev-reader/` (1.5B reader,
oneshot:sentences @ 1,000 tokens) with two wordings of a note rejecting the echo, one at
temperature 0.7. Output: probe.jsonl. Needs the commit dd9f648 for `echoes_question`
(`git show dd9f648:ragnet/signatures/answer.py`); it was reverted after this probe.

    RAGNET_CACHE_DIR=$(mktemp -d) python docs/results/answer-recheck/probe.py 12
"""
import json, sys, time
import dspy, ragnet
from ragnet.eval.indexes import load_pooled
from ragnet.programs.registry import build_program
from ragnet.signatures.answer import echoes_question
from ragnet.signatures.formatting import format_context

rows = [json.loads(l) for l in open('docs/results/hotpotqa-dev-reader/results.jsonl')]
cases = [r for r in rows if r['strategy'] == 'oneshot:sentences@1000' and echoes_question(r['question'], r['answer'])]
limit = int(sys.argv[1]) if len(sys.argv) > 1 else 12
ragnet.configure(lm="local")
index, _ = load_pooled("hotpotqa_dev_distractor", show_progress=False)
prog = build_program("oneshot:sentences", index, budget=1000, answer_lm="local:qwen2.5-coder-1.5b")
def variants(q, a):
    return {
        "hint_t07": (f'{q} (Not "{a}": the question itself names that. Answer with what the context says the question asks for.)', {"temperature": 0.7, "rollout_id": 7}),
        "bridge": (f'{q}\n(Note: "{a}" is named in the question, so it is not the answer. First find what the context says about {a}; the answer is the entity or value that fact leads to.)', {}),
    }
for r in cases[:limit]:
    chunks = prog.retrieve(r['question'])
    text, _ = format_context(chunks, "")
    out = {}
    with prog.answer_settings():
        for name, (q, cfg) in variants(r['question'], r['answer']).items():
            t = time.time()
            try:
                p = prog.answer.predict(question=q, context=text, **({"config": cfg} if cfg else {}))
                out[name] = p.answer
            except Exception as e:
                out[name] = f"ERR {type(e).__name__}"
    print(json.dumps({"q": r['question'][:80], "gold": r['answers'][0], "first": r['answer'], **out}), flush=True)
