"""Benchmark (2026-12-06): how soon a local LM call stops once its request is over (``ragnet.lm.stop``).

``ragnet serve`` stops a question at its deadline; a call of the local reader already under way
used to hold the model until llama.cpp had read the whole prompt and generated the answer. This
times one 1.5B call on a prompt of about 2,700 tokens (every prompt starts differently, so no KV
prefix is reused), asked to stop ``--after`` seconds in, and the same kind of prompt read whole.

    python -m benchmarks.studies.request_stop_timing --after 1 3 6
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from benchmarks.studies import parser


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__, "request_stop_timing")
    cli.add_argument("--after", type=float, nargs="+", default=[1.0, 3.0, 6.0])
    cli.add_argument("--threads", type=int, default=2)
    args = cli.parse_args(argv)
    from dspy.lm15 import Config, Message, Request

    from ragnet.lm.deadline import LMCallStopped
    from ragnet.lm.local import LlamaCppEngine
    from ragnet.lm.models import default_model_path
    from ragnet.lm.stop import stop_when

    engine = LlamaCppEngine(default_model_path("qwen2.5-coder-1.5b"), timeout=None, n_threads=args.threads)
    lines = " ".join(f"Line {i}: the default value of option number {i} is {i * 7}." for i in range(130))

    def request(head: str) -> Request:
        return Request(model="llamacpp/reader", config=Config(max_tokens=32),
                       messages=(Message.user(f"{head} {lines} Which option has the default 91?"),))

    engine.complete(request("Warm up."))
    for after in args.after:
        asked = threading.Event()
        started = time.monotonic()
        threading.Timer(after, asked.set).start()
        try:
            with stop_when(asked.is_set):
                engine.complete(request(f"Run {after}."))
            how = "finished before the stop"
        except LMCallStopped as exc:
            how = str(exc).split(" stopped ", 1)[1].split(":")[0]
        ended = time.monotonic() - started
        print(f"stop asked at {after:.1f} s: the call ended at {ended:.2f} s ({ended - after:.2f} s later), {how}")
    started = time.monotonic()
    usage = engine.complete(request("Whole.")).usage
    print(f"the same prompt read whole and answered: {time.monotonic() - started:.2f} s "
          f"({usage.input_tokens} prompt tokens, {usage.output_tokens} generated)")


if __name__ == "__main__":
    main()
