"""How long one local LM call may take: a fixed ``timeout``, none, or ``"auto"`` (the default).

A fixed deadline fits one machine. 120 s covers a 2,000-token prompt on a fast CPU with all its
threads, but one thread of a slower CPU needs about two minutes just to read that prompt, and a
deadline long enough for the slowest machine lets a contended one (llama.cpp slows many times over
when another process shares its cores) run for many minutes unnoticed. With ``timeout="auto"`` a
call may take :data:`AUTO_FACTOR` times what this model was measured to need on this machine for
the prompt tokens it has to read and the answer tokens it may write, and never less than
:data:`AUTO_FLOOR_S`:

    allowance = max(AUTO_FLOOR_S, AUTO_FACTOR x (read tokens / read rate + max_tokens / generation rate))

:class:`Speed` keeps the best read and generation rates one loaded model has shown in this
process. The first call measures them itself (its first prompt slice, its first tokens), so a
check uses what is known: the whole call's allowance once both rates are measured, before that the
prompt read's own share. Served models have nothing to measure here: ``"auto"`` is
:data:`AUTO_FLOOR_S` for them.

Example:
    >>> speed = Speed()
    >>> speed.saw_read(512, 25.6); speed.saw_generation(40, 8.0)   # 20 tokens/s read, 5 generated
    >>> limit = CallLimit.auto(speed, read_tokens=2000, max_tokens=100)
    >>> round(limit.allowance(), 1)   # 4 x (100 s + 20 s)
    480.0
    >>> limit.over(479.0), limit.over(481.0)
    (False, True)
    >>> CallLimit.fixed(30.0).over(31.0), CallLimit.fixed(None).over(1e9)
    (True, False)
"""

from __future__ import annotations

import threading
from typing import Any

from ragnet.errors import InputError

__all__ = ["AUTO", "AUTO_FACTOR", "AUTO_FLOOR_S", "CallLimit", "Speed", "check_timeout"]

#: The ``timeout`` value that derives each local call's limit from the measured speed.
AUTO = "auto"
#: How many times its expected duration an ``"auto"`` call may run: loose enough for the noise of a
#: shared machine, tight enough to stop a call slowed many times over by a competing process.
AUTO_FACTOR = 4.0
#: The least an ``"auto"`` call is given (the earlier fixed default), and what ``"auto"`` means for
#: a served model.
AUTO_FLOOR_S = 120.0
# Rates from shorter slices are dominated by per-call overhead, not by the machine's speed.
_MIN_READ_TOKENS = 32
_MIN_GENERATED_TOKENS = 8


def check_timeout(timeout: Any) -> float | str | None:
    """``timeout`` as ragnet uses it: ``"auto"``, seconds (a positive number) or None (no limit).

    Raises:
        InputError: anything else, naming the ``timeout`` argument.

    Example:
        >>> check_timeout("auto"), check_timeout("30"), check_timeout(None)
        ('auto', 30.0, None)
    """
    if timeout is None:
        return None
    if isinstance(timeout, str) and timeout.strip().lower() == AUTO:
        return AUTO
    try:
        value = float(timeout)
    except (TypeError, ValueError):
        raise InputError(f"must be a number of seconds or 'auto', got {timeout!r}", argument="timeout") from None
    if not value > 0:
        raise InputError(f"must be more than 0 seconds, got {timeout!r}", argument="timeout")
    return value


def served_timeout(timeout: float | str | None) -> float | None:
    """The fixed limit a served model's call gets for ``timeout`` (``"auto"`` is the floor)."""
    return AUTO_FLOOR_S if timeout == AUTO else timeout


class Speed:
    """The best prompt-read and generation rates (tokens per second) one loaded model has shown.

    The best, not the latest: the limit is a multiple of what this machine can do, so a call
    slowed by a competing process does not lower the bar for the next one.
    """

    def __init__(self) -> None:
        self.read_rate: float | None = None
        self.generation_rate: float | None = None
        self._lock = threading.Lock()

    def saw_read(self, tokens: int, seconds: float) -> None:
        """Record a prompt slice of ``tokens`` read in ``seconds``."""
        if tokens >= _MIN_READ_TOKENS and seconds > 0:
            with self._lock:
                self.read_rate = max(self.read_rate or 0.0, tokens / seconds)

    def saw_generation(self, tokens: int, seconds: float) -> None:
        """Record ``tokens`` generated in ``seconds`` (after the first token)."""
        if tokens >= _MIN_GENERATED_TOKENS and seconds > 0:
            with self._lock:
                self.generation_rate = max(self.generation_rate or 0.0, tokens / seconds)

    def expected(self, read_tokens: int, max_tokens: int) -> tuple[float | None, float | None]:
        """Seconds this machine needs to read ``read_tokens`` and to write ``max_tokens``; None
        for a rate not yet measured."""
        read = read_tokens / self.read_rate if self.read_rate else (0.0 if read_tokens <= 0 else None)
        write = max_tokens / self.generation_rate if self.generation_rate else None
        return read, write


class CallLimit:
    """When one call is over its time: a fixed number of seconds, none, or ``"auto"``.

    Build it with :meth:`fixed` or :meth:`auto`; :meth:`over` takes the seconds since the call
    started (the model's lock held) and says whether it must stop.
    """

    def __init__(self, seconds: float | None, speed: Speed | None = None, read_tokens: int = 0,
                 max_tokens: int = 0) -> None:
        self.seconds, self.speed = seconds, speed
        self.read_tokens, self.max_tokens = int(read_tokens), int(max_tokens)

    @classmethod
    def fixed(cls, seconds: float | None) -> "CallLimit":
        return cls(seconds)

    @classmethod
    def auto(cls, speed: Speed, *, read_tokens: int, max_tokens: int) -> "CallLimit":
        return cls(None, speed, read_tokens, max_tokens)

    @property
    def is_auto(self) -> bool:
        return self.speed is not None

    @property
    def bounded(self) -> bool:
        return self.is_auto or self.seconds is not None

    def allowance(self) -> float | None:
        """Seconds the call may take from what is known now; None while nothing bounds it."""
        if not self.is_auto:
            return self.seconds
        read, write = self.speed.expected(self.read_tokens, self.max_tokens)
        if read is None:
            return None  # the first slice of the first call measures it
        return max(AUTO_FLOOR_S, AUTO_FACTOR * (read + (write or 0.0)))

    def over(self, elapsed: float, *, generating: bool = False) -> bool:
        """True when ``elapsed`` seconds are past the allowance. While generating, an ``"auto"``
        limit waits for the generation rate (the call's first tokens measure it)."""
        if self.is_auto and generating and self.speed.generation_rate is None:
            return False
        allowance = self.allowance()
        return allowance is not None and elapsed > allowance

    def describe(self) -> str:
        """The limit in words, for an error message."""
        allowance = self.allowance()
        if not self.is_auto:
            return f"its {allowance:g}s timeout"
        read, write = self.speed.expected(self.read_tokens, self.max_tokens)
        need = (read or 0.0) + (write or 0.0)
        return (f"its automatic {allowance:.0f}s timeout ({AUTO_FACTOR:g}x the {need:.0f}s this machine was measured "
                f"to need for {self.read_tokens} prompt tokens and up to {self.max_tokens} answer tokens, "
                f"at least {AUTO_FLOOR_S:g}s; the machine may be busy)")
