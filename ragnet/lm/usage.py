"""Count LM calls, tokens, cache hits and time for the code inside a ``with`` block.

``track_usage()`` hooks into DSPy at two documented points, for the current context
only (``dspy.context``, which is a ``contextvars`` override):

* a DSPy callback (``on_lm_start`` / ``on_lm_end``) sees every LM call, cached or
  not, with its duration and its exception;
* DSPy's usage tracker slot (``settings.usage_tracker``) receives the token usage of
  every call that really ran (DSPy skips it for cache hits). The usage is matched
  to its call through DSPy's active call id, so a call that got no usage was a
  cache hit.

Each call that returned is also listed under ``calls`` with a key of its request (model,
messages and settings: the same request gives the same key) and its seconds, so a report can
price a cache hit at the live time the same call took elsewhere
(``ragnet.eval.metrics.stats.priced_latency``).

Nothing reads the global LM history, so meters in concurrent threads each see only
their own calls. ``dspy.Parallel`` / ``Evaluate`` worker threads inherit the meter of
the block that started them and report into it (DSPy deep-copies usage trackers
for its workers; the meter hands out itself, guarded by a lock). Nested meters
each count the calls inside them.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet.lm.usage import track_usage
    >>> lm = DummyLM([{"answer": "4"}])
    >>> with dspy.context(lm=lm), track_usage() as usage:
    ...     _ = dspy.Predict("question -> answer")(question="2+2?")
    >>> usage.lm_calls
    1
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections import defaultdict
from typing import Any, Iterator

import dspy
from dspy.utils.callback import ACTIVE_CALL_ID, BaseCallback

__all__ = ["UsageMeter", "call_key", "track_usage"]


def _tokens(usage: dict[str, Any] | None) -> tuple[int, int]:
    usage = usage or {}
    prompt = usage.get("prompt_tokens", usage.get("input_tokens")) or 0
    completion = usage.get("completion_tokens", usage.get("output_tokens")) or 0
    return int(prompt), int(completion)


def call_key(instance: Any, inputs: dict[str, Any]) -> str:
    """A short key of one LM request: its model, its arguments and the LM's own settings.

    Two calls that send the same request get the same key, and DSPy's cache answers the second
    from the first; a different ``rollout_id`` or temperature gives a new key.

    Example:
        >>> class LM: model, kwargs = "m", {"temperature": 0.0}
        >>> hi = {"messages": [{"role": "user", "content": "hi"}]}
        >>> call_key(LM(), hi) == call_key(LM(), dict(hi)), call_key(LM(), hi) == call_key(LM(), {"prompt": "hi"})
        (True, False)
    """
    request = {"model": str(getattr(instance, "model", "?")), "inputs": inputs,
               "settings": getattr(instance, "kwargs", None)}
    text = json.dumps(request, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class _Rollup(defaultdict):
    """``usage_data`` compatible with ``dspy.track_usage`` nested inside a meter.

    DSPy's tracker rolls its entries up with ``parent.usage_data[lm].extend(...)``
    on exit; here that adds their tokens to the meter.
    """

    def __init__(self, meter: "UsageMeter") -> None:
        super().__init__(list)
        self._meter = meter

    def __missing__(self, key):
        meter = self._meter

        class _Sink(list):
            def extend(self, entries) -> None:  # type: ignore[override]
                for entry in entries:
                    meter.add_usage(key, entry)

            def append(self, entry) -> None:  # type: ignore[override]
                meter.add_usage(key, entry)

        sink = _Sink()
        self[key] = sink
        return sink


class UsageMeter(BaseCallback):
    """Totals for the LM calls made inside one :func:`track_usage` block.

    Attributes:
        lm_calls: LM calls that finished (cached, fresh or failed).
        cached_calls: calls answered from DSPy's cache (no tokens spent).
        failed_calls: calls that raised (timeouts included).
        timeouts: calls that raised a timeout error.
        input_tokens: prompt tokens of calls that ran (a timed-out local call
            counts the tokens it read and generated before it was stopped).
        output_tokens: completion tokens of calls that ran.
        lm_seconds: summed duration of the LM calls (can exceed ``seconds``
            when calls run in parallel threads).
        seconds: wall-clock time of the block (so far, while still inside it).
        by_model: per model string, ``{"calls", "input_tokens", "output_tokens"}``.
        calls: per call that returned, in order, ``{"key", "seconds", "cached"}``
            (:func:`call_key`; a failed call is counted above, not listed).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list] = {}
        self.lm_calls = 0
        self.cached_calls = 0
        self.failed_calls = 0
        self.timeouts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.lm_seconds = 0.0
        self.by_model: dict[str, dict[str, int]] = {}
        self.calls: list[dict[str, Any]] = []
        self._started = time.perf_counter()
        self._stopped: float | None = None
        self._parent: Any = None
        self.usage_data = _Rollup(self)

    # DSPy's ParallelExecutor deep-copies ``settings.usage_tracker`` per worker thread;
    # sharing the (locked) meter is what makes worker usage count.
    def __deepcopy__(self, memo) -> "UsageMeter":
        return self

    def __copy__(self) -> "UsageMeter":
        return self

    def __bool__(self) -> bool:  # DSPy tests ``if settings.usage_tracker:``
        return True

    @property
    def seconds(self) -> float:
        end = self._stopped if self._stopped is not None else time.perf_counter()
        return end - self._started

    @property
    def fresh_calls(self) -> int:
        """Calls that ran on the model (not cached, not failed)."""
        return self.lm_calls - self.cached_calls - self.failed_calls

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    # ---------------------------------------------------------------- DSPy hooks
    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        """DSPy's usage-tracker hook: token usage of one call that really ran."""
        prompt, completion = _tokens(usage_entry)
        call_id = ACTIVE_CALL_ID.get()
        with self._lock:
            self.input_tokens += prompt
            self.output_tokens += completion
            model = self.by_model.setdefault(str(lm), {"calls": 0, "input_tokens": 0, "output_tokens": 0})
            model["input_tokens"] += prompt
            model["output_tokens"] += completion
            if call_id in self._pending:
                self._pending[call_id][1] = True
        parent = self._parent
        if parent is not None:
            parent.add_usage(lm, usage_entry)

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            self._pending[call_id] = [time.perf_counter(), False, str(getattr(instance, "model", "?")),
                                      call_key(instance, inputs)]

    def on_lm_end(self, call_id: str, outputs: Any, exception: BaseException | None = None) -> None:
        now = time.perf_counter()
        with self._lock:
            started, fresh, model, key = self._pending.pop(call_id, (now, False, "?", None))
            self.lm_calls += 1
            self.lm_seconds += now - started
            self.by_model.setdefault(model, {"calls": 0, "input_tokens": 0, "output_tokens": 0})["calls"] += 1
            if exception is not None:
                self.failed_calls += 1
                if _is_timeout(exception):
                    self.timeouts += 1
                if not fresh:  # DSPy had no response to take usage from; the error may know
                    prompt, completion = _error_tokens(exception)
                    self.input_tokens += prompt
                    self.output_tokens += completion
                    entry = self.by_model[model]
                    entry["input_tokens"] += prompt
                    entry["output_tokens"] += completion
            else:
                if not fresh:
                    self.cached_calls += 1
                if key is not None:
                    self.calls.append({"key": key, "seconds": round(now - started, 4), "cached": not fresh})

    # ---------------------------------------------------------------- reporting
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready totals, e.g. for ``Prediction.usage`` or a report."""
        with self._lock:
            return {
                "lm_calls": self.lm_calls,
                "cached_calls": self.cached_calls,
                "failed_calls": self.failed_calls,
                "timeouts": self.timeouts,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "total_tokens": self.input_tokens + self.output_tokens,
                "lm_seconds": round(self.lm_seconds, 4),
                "seconds": round(self.seconds, 4),
                "by_model": {k: dict(v) for k, v in self.by_model.items()},
                "calls": [dict(c) for c in self.calls],
            }

    def __repr__(self) -> str:
        return (f"UsageMeter(lm_calls={self.lm_calls}, cached_calls={self.cached_calls}, "
                f"input_tokens={self.input_tokens}, output_tokens={self.output_tokens}, "
                f"seconds={self.seconds:.2f})")


def _error_tokens(exc: BaseException | None) -> tuple[int, int]:
    """Tokens spent by a failed call, when its error carries them (LMCallTimeoutError does)."""
    seen = 0
    while exc is not None and seen < 5:
        prompt, completion = getattr(exc, "prompt_tokens", None), getattr(exc, "completion_tokens", None)
        if isinstance(prompt, int) or isinstance(completion, int):
            return int(prompt or 0), int(completion or 0)
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return 0, 0


def _is_timeout(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, TimeoutError) or getattr(exc, "code", None) == "timeout":
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


@contextlib.contextmanager
def track_usage() -> Iterator[UsageMeter]:
    """Meter the LM calls made inside the block, in this context only.

    Usage reported inside the block also reaches an enclosing meter or
    ``dspy.track_usage()`` tracker. As with any ``dspy.context``, call
    ``dspy.configure`` outside the block, not inside it.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"answer": "a"}] * 3)), track_usage() as u:
        ...     for _ in range(3):
        ...         _ = dspy.Predict("question -> answer")(question="q")
        >>> u.to_dict()["lm_calls"]
        3
    """
    meter = UsageMeter()
    meter._parent = dspy.settings.usage_tracker
    callbacks = list(dspy.settings.get("callbacks", None) or [])
    try:
        with dspy.context(usage_tracker=meter, callbacks=[*callbacks, meter]):
            yield meter
    finally:
        meter._stopped = time.perf_counter()
