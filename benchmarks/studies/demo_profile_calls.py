"""Profile the LM calls of one demo strategy: prompt tokens, prefix reused from llama.cpp's KV
cache, output tokens and seconds per call (figures in the README's demo section).

    RAGNET_CACHE_DIR=$(mktemp -d) python -m benchmarks.studies.demo_profile_calls iterative

(docs/results/demo-profile/iterative-fresh-cache.txt was taken on 2026-11-22; its last two
questions shared the CPU with another run, so use its token counts rather than its seconds.)
The engine's prefill and complete are wrapped for the run only, and restored afterwards.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import ragnet
from benchmarks.studies import parser
from ragnet.demo.corpus import choice_correct, demo_questions
from ragnet.demo.run import build_demo_index, build_demo_program
from ragnet.lm import local as L


@contextlib.contextmanager
def profiled_engine(log: list[dict]) -> Iterator[None]:
    """Record each LM call of the llama.cpp engine into ``log`` while the block runs."""
    orig_prefill, orig_complete = L.LlamaCppEngine._prefill, L.LlamaCppEngine.complete

    def prefill(self, llm, prompt, call):
        L._restore_longest_prefix(llm, prompt)
        common = L._common_prefix(llm.input_ids[: llm.n_tokens], prompt)
        t = time.monotonic()
        ok = orig_prefill(self, llm, prompt, call)
        log.append({"prompt": len(prompt), "reused": common, "read_s": time.monotonic() - t})
        return ok

    def complete(self, request):
        t = time.monotonic()
        r = orig_complete(self, request)
        log[-1].update(out=r.usage.output_tokens, total_s=time.monotonic() - t)
        return r

    L.LlamaCppEngine._prefill, L.LlamaCppEngine.complete = prefill, complete
    try:
        yield
    finally:
        L.LlamaCppEngine._prefill, L.LlamaCppEngine.complete = orig_prefill, orig_complete


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "demo_profile_calls")
    p.add_argument("strategy", help="A demo strategy (as `ragnet demo` runs it), e.g. iterative.")
    p.add_argument("--index", type=Path, default=Path(".ragnet-cache/demo"), help="The demo index folder.")
    args = p.parse_args(argv)
    log: list[dict] = []
    with profiled_engine(log):
        index, _ = build_demo_index(args.index, show_progress=False)
        ragnet.configure(lm=None)
        program = build_demo_program(args.strategy, index)  # the settings `ragnet demo` runs with
        T = time.monotonic()
        for q in demo_questions(n_per_level=1):
            n0 = len(log)
            pred = program(question=q.question)
            print(f"L{q.level} ok={choice_correct(pred.answer, q)} s={pred.usage['seconds']:.1f} calls={pred.usage['lm_calls']} ans={pred.answer[:50]!r}")
            for e in log[n0:]:
                print("   ", e)
    tot = {k: sum(e.get(k, 0) for e in log) for k in ("prompt", "reused", "out", "read_s", "total_s")}
    print("TOTAL", {k: round(v, 1) for k, v in tot.items()}, "wall", round(time.monotonic() - T, 1))


if __name__ == "__main__":
    main()
