"""Stop an LM call once the request it answers is over.

A server gives each question a deadline (``ragnet serve --timeout``) and frees its slot when the
deadline passes or the client goes away. DSPy's callbacks stop a program before its next step or
LM call, but a call already under way would hold the model until llama.cpp finished it: the whole
prompt read, then the whole answer generated. :func:`stop_when` marks the calls made inside it
(in this thread, and in the threads the local engine starts for it) with a test of whether their
request is over; the local engine (:mod:`ragnet.lm.local`) checks it when it gets the model,
between the slices of the prompt it reads, and before each token, and raises
:class:`~ragnet.lm.deadline.LMCallStopped`; a served model's call (:class:`ragnet.lm.deadline.DeadlineLM`)
is abandoned as at its deadline, its HTTP request ending on its own.

Example:
    >>> over = False
    >>> with stop_when(lambda: over):
    ...     before = requested()
    ...     over = True
    ...     after = requested()
    >>> before, after, requested()
    (False, True, False)
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

__all__ = ["active", "requested", "stop_when"]

_OVER: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("ragnet_lm_stop", default=None)


@contextlib.contextmanager
def stop_when(over: Callable[[], bool]) -> Iterator[None]:
    """Within this block, LM calls stop as soon as ``over()`` is true (see the module docstring);
    ``over`` must be cheap and safe to call from any thread."""
    token = _OVER.set(over)
    try:
        yield
    finally:
        _OVER.reset(token)


def requested() -> bool:
    """Whether the request of the current LM call is over (False outside :func:`stop_when`)."""
    over = _OVER.get()
    return over is not None and bool(over())


def active() -> bool:
    """Whether the current LM call runs inside :func:`stop_when` (it then reads its prompt in
    slices, checking between them, even with no time limit of its own)."""
    return _OVER.get() is not None
