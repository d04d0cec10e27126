"""A wall-clock deadline over each whole LM call: ``timeout`` seconds from its start to the
reply's last byte, whatever the server does.

DSPy's HTTP engine (lm15) bounds each operation on its own: connecting, sending, and the wait
for the *next* byte. A server that sends a byte now and then never trips that, so a call made
with ``timeout=5`` could run for minutes. :class:`DeadlineLM` is the ``dspy.LM`` ragnet builds
for served models (:func:`ragnet.lm.config.make_lm`): its calls end at the deadline and raise
:class:`LMCallTimeoutError`, which ragnet's steps record in the trace like any LM failure and
``ragnet ask`` reports in one line naming ``--timeout``.

A call inside a stop scope (:mod:`ragnet.lm.stop`, what ``ragnet serve`` sets around each
question) is abandoned the same way as soon as its request is over, raising
:class:`LMCallStopped`.

How: a synchronous call runs in a worker thread and the caller stops waiting at the deadline;
the abandoned request ends on its own (the server finishes or stalls past lm15's per-read
timeout) in a daemon thread that never delays the process's exit. An async call is cancelled
at the deadline, which closes its connection. DSPy's callbacks (and so ragnet's usage meter)
run in the caller, so a call cut at the deadline counts as a failed, timed-out call.

Example:
    >>> lm = DeadlineLM("openai/gpt-4o-mini", api_key="sk-test", timeout=30)
    >>> lm.model, call_limit(lm, {}), call_limit(lm, {"timeout": 5})
    ('openai/gpt-4o-mini', 30.0, 5.0)
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any, Callable

import dspy
from dspy.utils.callback import with_callbacks
from dspy.utils.exceptions import LMError

from ragnet.errors import RagnetError
from ragnet.lm.usage import _is_timeout

__all__ = ["DeadlineLM", "LMCallStopped", "LMCallTimeoutError", "call_limit"]


class LMCallTimeoutError(RagnetError, LMError):
    """An LM call ran past its wall-clock ``timeout``: a local generation stopped at the deadline,
    or a served call whose whole reply had not arrived by then.

    It is a :class:`ragnet.errors.RagnetError` and a DSPy ``LMError`` (so DSPy passes
    it through unchanged), but *not* DSPy's retryable ``LMTimeoutError``, whose name it
    therefore does not take: the same prompt would most likely take just as long again.

    Attributes:
        timeout: the limit in seconds.
        elapsed: seconds the call ran before it was stopped.
        prompt_tokens: tokens in the prompt (local model only).
        completion_tokens: tokens generated before the stop (local model only).
    """

    default_code = "timeout"

    def __init__(self, message: str = "", *, timeout: float | None = None, elapsed: float | None = None,
                 prompt_tokens: int | None = None, completion_tokens: int | None = None,
                 model: str | None = None, provider: str | None = "llama.cpp") -> None:
        super().__init__(message, model=model, provider=provider)
        self.timeout = timeout
        self.elapsed = elapsed
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class LMCallStopped(LMCallTimeoutError):
    """An LM call stopped because the request it answered was over (its deadline passed or its
    client went away; :mod:`ragnet.lm.stop`). A kind of :class:`LMCallTimeoutError`, so ragnet's
    steps record it as any timed-out call, and DSPy does not retry it."""

    default_code = "stopped"


def call_limit(lm: dspy.BaseLM, call_kwargs: dict[str, Any]) -> float | None:
    """The deadline of one call in seconds: its own ``timeout`` keyword, else the LM's; None when
    neither is a number (an ``httpx.Timeout`` keeps DSPy's per-operation limits only)."""
    value = call_kwargs.get("timeout", lm.kwargs.get("timeout"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _late(lm: dspy.BaseLM, limit: float, elapsed: float) -> LMCallTimeoutError:
    return LMCallTimeoutError(
        f"no complete reply within the {limit:g}s timeout ({elapsed:.1f}s: the server had not answered "
        "or was still sending); raise --timeout (timeout= in ragnet.configure) if the model needs longer",
        timeout=limit, elapsed=elapsed, model=lm.model, provider=None)


def _stopped(lm: dspy.BaseLM, limit: float | None, elapsed: float) -> LMCallStopped:
    return LMCallStopped(f"the call to {lm.model} was abandoned after {elapsed:.1f}s: the request it answered "
                         "is over (its deadline passed or its client went away)",
                         timeout=limit, elapsed=elapsed, model=lm.model, provider=None)


#: How often a served call inside a stop scope (:mod:`ragnet.lm.stop`) checks whether its request is over.
STOP_POLL_S = 0.1


def _next_wait(limit: float | None, started: float, scoped: bool) -> float | None:
    """Seconds to wait for a call's reply before checking again: to its deadline, and no longer
    than :data:`STOP_POLL_S` inside a stop scope (None: no limit at all)."""
    left = None if limit is None else max(0.0, limit - (time.monotonic() - started))
    if not scoped:
        return left
    return STOP_POLL_S if left is None else min(left, STOP_POLL_S)


def _raise_if_over(lm: dspy.BaseLM, limit: float | None, started: float, scoped: bool) -> None:
    """Raise when a call still unanswered is past its deadline, or its request is over."""
    from ragnet.lm import stop

    elapsed = time.monotonic() - started
    if limit is not None and elapsed >= limit:
        raise _late(lm, limit, elapsed)
    if scoped and stop.requested():  # the abandoned call ends on its own, as at a deadline
        raise _stopped(lm, limit, elapsed)


def _within(lm: dspy.BaseLM, limit: float | None, call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread (with the caller's context variables: DSPy settings, the
    active call id), waited on for at most ``limit`` seconds, and, inside a stop scope
    (:mod:`ragnet.lm.stop`), until its request is over."""
    from ragnet.lm import stop

    scoped = stop.active()
    if limit is None and not scoped:
        return call()
    started = time.monotonic()
    context = contextvars.copy_context()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = context.run(call)
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="ragnet-lm-call", daemon=True).start()
    while not done.wait(_next_wait(limit, started, scoped)):
        _raise_if_over(lm, limit, started, scoped)
    error = outcome.get("error")
    if error is None:
        return outcome["value"]
    if _is_timeout(error):  # DSPy's own per-read timeout fired first: one message either way
        raise _late(lm, limit, time.monotonic() - started) from error
    raise error


# The undecorated bodies of DSPy's call entry points; DeadlineLM wraps them in its own callbacks.
_CALL = dspy.BaseLM.__call__.__wrapped__
_ACALL = dspy.BaseLM.acall.__wrapped__


class DeadlineLM(dspy.LM):
    """A ``dspy.LM`` whose every call, sync or async, ends by its ``timeout`` (see the module docs).

    Takes exactly ``dspy.LM``'s arguments; ``timeout`` (seconds) is both DSPy's per-operation
    limit and the deadline of the whole call. A call's own ``timeout=`` keyword overrides it.
    A synchronous call that streams (``dspy.streamify``) keeps DSPy's per-operation limits only.

    Example:
        >>> DeadlineLM("openai/gpt-4o-mini", api_key="sk-test", timeout=10).copy(timeout=20).kwargs["timeout"]
        20
    """

    @with_callbacks
    def __call__(self, prompt=None, *, messages=None, **kwargs):
        # A streaming call (dspy.streamify) sends its chunks from the calling thread (an anyio
        # worker), so it runs there, bounded by DSPy's per-operation limits only.
        if dspy.settings.send_stream is not None:
            return _CALL(self, prompt, messages=messages, **kwargs)
        return _within(self, call_limit(self, kwargs), lambda: _CALL(self, prompt, messages=messages, **kwargs))

    @with_callbacks
    async def acall(self, prompt=None, *, messages=None, **kwargs):
        from ragnet.lm import stop

        limit, scoped = call_limit(self, kwargs), stop.active()
        reply = _ACALL(self, prompt, messages=messages, **kwargs)
        if limit is None and not scoped:
            return await reply
        started = time.monotonic()
        task = asyncio.ensure_future(reply)
        try:
            while True:
                finished, _ = await asyncio.wait({task}, timeout=_next_wait(limit, started, scoped))
                if finished:
                    return task.result()
                _raise_if_over(self, limit, started, scoped)
        except Exception as exc:
            if _is_timeout(exc) and not isinstance(exc, LMCallTimeoutError):
                raise _late(self, limit, time.monotonic() - started) from exc
            raise
        finally:
            task.cancel()  # a no-op once it finished; else its connection closes
