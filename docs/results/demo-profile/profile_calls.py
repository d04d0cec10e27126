"""Profile the LM calls of one demo strategy: prompt tokens, prefix reused from llama.cpp's KV
cache, output tokens and seconds per call (figures in the README's demo section).

usage: RAGNET_CACHE_DIR=$(mktemp -d) python profile_calls.py iterative
(iterative-fresh-cache.txt was taken on 2026-11-22; its last two questions shared the CPU with
another run, so use its token counts rather than its seconds.)
"""
import sys, time
from pathlib import Path
import ragnet
from ragnet.lm import local as L
from ragnet.demo.run import build_demo_index, build_demo_program
from ragnet.demo.corpus import demo_questions, choice_correct

log = []
orig_prefill = L.LlamaCppEngine._prefill
def prefill(self, llm, prompt, deadline):
    L._restore_longest_prefix(llm, prompt)
    common = L._common_prefix(llm.input_ids[: llm.n_tokens], prompt)
    t = time.monotonic()
    ok = orig_prefill(self, llm, prompt, deadline)
    log.append({"prompt": len(prompt), "reused": common, "read_s": time.monotonic() - t})
    return ok
L.LlamaCppEngine._prefill = prefill
orig_complete = L.LlamaCppEngine.complete
def complete(self, request):
    t = time.monotonic()
    r = orig_complete(self, request)
    log[-1].update(out=r.usage.output_tokens, total_s=time.monotonic() - t)
    return r
L.LlamaCppEngine.complete = complete

strategy = sys.argv[1]
index, _ = build_demo_index(Path(".ragnet-cache/demo"), show_progress=False)
ragnet.configure(lm=None)
program = build_demo_program(strategy, index)  # the settings `ragnet demo` runs with
T = time.monotonic()
for q in demo_questions(n_per_level=1):
    n0 = len(log)
    pred = program(question=q.question)
    print(f"L{q.level} ok={choice_correct(pred.answer, q)} s={pred.usage['seconds']:.1f} calls={pred.usage['lm_calls']} ans={pred.answer[:50]!r}")
    for e in log[n0:]:
        print("   ", e)
tot = {k: sum(e.get(k, 0) for e in log) for k in ("prompt", "reused", "out", "read_s", "total_s")}
print("TOTAL", {k: round(v, 1) for k, v in tot.items()}, "wall", round(time.monotonic() - T, 1))
