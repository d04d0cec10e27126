"""Timing (2026-12-06): on a small machine, is one local reader on all cores as fast as one reader
per core? It decides whether ``ragnet eval`` over the local model needs a pool of models (one per
core, questions in parallel) or one model on every core, questions in turn.

Reads the same ~2,000-token prompt (the real-document dev questions' text, a new first character
each time so that no KV state is reused) with the 1.5B reader three ways: one ``Llama`` on 2
threads; one on 1 thread pinned to core 0; and two 1-thread ``Llama``s side by side in one
process, each in its own Python thread pinned to its own core (llama.cpp releases the GIL). Prints
the median seconds per prompt read, and per read for the pair (its wall time over its reads).
Run it on an otherwise idle machine with 2 free cores:

    python -m benchmarks.studies.reader_threads_timing --reads 3
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Sequence

from benchmarks.realdocs.check import QUESTIONS
from benchmarks.studies import parser


def _prompt(llm, salt: int, tokens: int = 2000) -> list[int]:
    text = QUESTIONS.read_text(encoding="utf-8")
    return llm.tokenize((chr(ord("A") + salt % 26) + text).encode("utf-8"))[:tokens]


def _read(llm, salt: int) -> float:
    """Seconds to read a fresh prompt into an empty KV cache."""
    prompt = _prompt(llm, salt)
    llm.reset()
    began = time.monotonic()
    llm.eval(prompt)
    return time.monotonic() - began


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__, "reader_threads_timing")
    cli.add_argument("--reads", type=int, default=3, help="prompt reads per setting")
    args = cli.parse_args(argv)
    import llama_cpp

    from ragnet.lm.config import DEFAULT_READER
    from ragnet.lm.models import default_model_path

    path = str(default_model_path(DEFAULT_READER))

    def load(threads: int):
        return llama_cpp.Llama(model_path=path, n_ctx=4096, n_threads=threads, n_threads_batch=threads, verbose=False)

    both = load(2)
    two_threads = [_read(both, i) for i in range(args.reads)]
    del both
    one = load(1)
    os.sched_setaffinity(0, {0})
    one_thread = [_read(one, i) for i in range(args.reads)]
    os.sched_setaffinity(0, set(range(os.cpu_count() or 2)))
    pair = [one, load(1)]

    def worker(k: int) -> None:
        os.sched_setaffinity(0, {k})  # this thread only
        for i in range(args.reads):
            _read(pair[k], 100 * k + i)

    workers = [threading.Thread(target=worker, args=(k,)) for k in (0, 1)]
    began = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    per_read_pair = (time.monotonic() - began) / (2 * args.reads)
    median_two = statistics.median(two_threads)
    print(f"one Llama, 2 threads: {median_two:.1f} s a read (median of {args.reads})")
    print(f"one Llama, 1 thread: {statistics.median(one_thread):.1f} s a read")
    print(f"two 1-thread Llamas side by side: {per_read_pair:.1f} s a read (wall / reads); "
          f"{per_read_pair / median_two:.2f}x the 2-thread model's")


if __name__ == "__main__":
    main()
