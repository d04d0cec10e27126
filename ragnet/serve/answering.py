"""Questions answered one slot at a time, queued, each with a deadline.

A server's questions go to a small pool of worker threads (``concurrency``, 1 for a local model:
llama.cpp runs one call at a time, so more workers would only interleave the calls and slow every
answer; the engine's own lock keeps them apart anyway). At most ``queue`` more wait; one more
gets :class:`Busy` at once (HTTP 503). A question whose deadline passes gets :class:`TimedOut`
(504), and its program stops at its next LM call or step (:class:`Cancelled`, raised by a DSPy
callback); a local LM call under way stops too, between two slices of the prompt it reads or at
its next token (:mod:`ragnet.lm.stop`), so the slot is free again within one slice of the prompt,
and a served model's call is abandoned at once (it ends on its own, as at its timeout). A
streamed question (:meth:`Answerer.stream`) holds its slot the same way, and a client that goes
away mid-stream frees it as a deadline does.

Example:
    >>> import asyncio, dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet.serve.state import IndexHolder
    >>> dspy.configure(lm=DummyLM([{"answer": "Paris", "evidence_ids": ["c1"]}] * 2))
    >>> answerer = Answerer(IndexHolder(index.path), timeout=30)
    >>> result = asyncio.run(answerer.answer("Capital of France?", "basic"))
    >>> result.prediction.answer, result.spec
    ('Paris', 'basic')
    >>> answerer.close()
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Sequence

import dspy
from dspy.utils.callback import BaseCallback

from ragnet.errors import RagnetError
from ragnet.lm.stop import stop_when

__all__ = ["Answer", "Answerer", "Busy", "Cancelled", "SCOPES_KEPT", "TimedOut"]

#: Scoped views of the served index (``only``) kept for reuse.
SCOPES_KEPT = 16


class Cancelled(BaseException):
    """Raised inside a program whose request is over (deadline passed, client gone).

    A ``BaseException``, like ``KeyboardInterrupt``: DSPy and ragnet's steps catch ``Exception``
    to retry or fall back, and this must get through them and end the program.
    """


class Busy(RagnetError):
    """Every slot is answering and the queue is full."""


class TimedOut(RagnetError):
    """The question was not answered within the server's timeout."""


class _Stop(BaseCallback):
    """Ends a program at its next module, LM call or adapter step once its request is over."""

    def __init__(self, job: "_Job") -> None:
        self.job = job

    def _check(self, *args: Any, **kwargs: Any) -> None:
        if self.job.over():
            self.job.stop.set()
            raise Cancelled()

    on_module_start = on_lm_start = on_adapter_format_start = on_tool_start = _check


@dataclass
class Answer:
    """A program's prediction for one question, with what answered it."""

    prediction: Any
    spec: str
    budget: int | None
    generation: int
    seconds: float
    queued_s: float


_END = object()  # a stream's last piece has been handed on


class _Job:
    """One admitted question: its program's future, the event that stops it, its deadline."""

    def __init__(self, stop: threading.Event, deadline: float) -> None:
        self.stop, self.deadline = stop, deadline
        self.future: Any = None

    def left(self) -> float:
        """Seconds to the deadline (0 past it)."""
        return max(0.0, self.deadline - time.monotonic())

    def over(self) -> bool:
        """Whether its request is over: stopped (timed out, client gone) or past its deadline."""
        return self.stop.is_set() or time.monotonic() > self.deadline


class Answerer:
    """Answers questions over the index of ``holder`` (:class:`ragnet.serve.state.IndexHolder`).

    Args:
        holder: the index.
        reader: the answer step's LM (an LM spec, a ``dspy.BaseLM`` or a ``LazyLM``); None: the
            step LM answers too.
        step_lm: the LM of the other steps, set for each question; None: the configured DSPy LM.
        strategy: the strategy when a request names none.
        concurrency: questions answered at once.
        queue: questions that may wait for a slot.
        timeout: seconds a question may take, from its arrival.
        auto_for: the LM (or spec) that ``"auto"`` and the local footing are settled for
            (:func:`ragnet.programs.registry.resolve_strategy`); default ``reader``, else ``step_lm``.
    """

    def __init__(self, holder: Any, *, reader: Any = None, step_lm: Any = None, strategy: str = "auto",
                 concurrency: int = 1, queue: int = 32, timeout: float = 120.0, auto_for: Any = None) -> None:
        self.holder = holder
        self.reader = reader
        self.step_lm = step_lm
        self.auto_for = auto_for if auto_for is not None else (reader if reader is not None else step_lm)
        self.strategy = strategy
        self.concurrency, self.queue, self.timeout = concurrency, queue, timeout
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="ragnet-answer")
        self._lock = threading.Lock()
        self._pending = 0  # admitted and not finished (running or waiting for a slot)
        self.answered = 0
        self.timed_out = 0
        self._scopes: dict[tuple[int, tuple[str, ...]], Any] = {}  # (index generation, patterns) -> view

    def scope(self, snap: Any, only: Sequence[str] | None) -> Any:
        """The index of ``snap`` (a served generation) searched over the files ``only`` names
        (:meth:`ragnet.index.Index.scoped`; ``InputError`` when none matches), or the whole index.
        Views are kept for the current generation, the last :data:`SCOPES_KEPT` scopes asked."""
        if not only:
            return snap.index
        key = (snap.generation, tuple(only))
        with self._lock:
            view = self._scopes.get(key)
        if view is None:
            view = snap.index.scoped(*only)
            with self._lock:
                self._scopes = {k: v for k, v in self._scopes.items() if k[0] == snap.generation}
                while len(self._scopes) >= SCOPES_KEPT:
                    self._scopes.pop(next(iter(self._scopes)))
                self._scopes[key] = view
        return view

    def resolve(self, strategy: str | None, budget: int | None) -> tuple[str, int | None]:
        """The spec and budget a request runs (``InputError`` for a bad spec or budget)."""
        from ragnet.errors import InputError
        from ragnet.programs.registry import parse_spec, resolve_strategy

        strategy = (strategy or self.strategy).strip()
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
            raise InputError(f"must be a positive number of tokens, got {budget!r}", argument="budget")
        index = getattr(getattr(self.holder, "current", None), "index", None)  # auto's budget follows it
        spec, budget = resolve_strategy(strategy, budget, self.auto_for, index)
        parse_spec(spec)
        return spec, budget

    def status(self) -> dict[str, int]:
        """Slots, questions admitted and not finished, and the counts so far."""
        return {"concurrency": self.concurrency, "queue": self.queue, "pending": self._pending,
                "answered": self.answered, "timed_out": self.timed_out}

    async def answer(self, question: str, strategy: str | None = None, budget: int | None = None,
                     only: Sequence[str] | None = None, history: Sequence[Any] = ()) -> Answer:
        """Answer ``question`` (over the files ``only`` names, when given; a follow-up of the
        earlier turns ``history``, :class:`ragnet.programs.conversation.FollowUp`); waits for a slot.

        Raises:
            Busy: no slot and the queue is full (nothing was started).
            TimedOut: the deadline passed (the program stops at its next step, a local LM call
                under way at its next prompt slice or token).
            InputError: a bad strategy or budget, or ``only`` names no file of the index.
        """
        await self.check_scope(only)
        job = self._submit(question, strategy, budget, only=only, history=history)
        try:
            return await asyncio.wait_for(asyncio.shield(job.future), job.left())
        except (asyncio.TimeoutError, Cancelled):
            raise self._timed_out(job) from None
        except asyncio.CancelledError:  # the client went away
            job.stop.set()
            raise

    async def check_scope(self, only: Sequence[str] | None) -> None:
        """Refuse (``InputError``) a scope ``only`` that names no file of the current index, its
        patterns compiled in a worker thread (a hostile pattern takes time; the event loop
        serves every other request meanwhile). The view is kept for the question's run."""
        if only:
            await asyncio.to_thread(self.scope, self.holder.current, tuple(only))

    def stream(self, question: str, strategy: str | None = None, budget: int | None = None, *,
               heartbeat: float = 10.0, only: Sequence[str] | None = None,
               history: Sequence[Any] = ()) -> AsyncIterator[str | None | Answer]:
        """Answer ``question`` as the reader writes it: an async iterator of the answer's text, in
        pieces as they are generated (:mod:`ragnet.serve.streaming`), then the :class:`Answer`.
        ``None`` comes after each ``heartbeat`` seconds without text. The question takes a slot
        as :meth:`answer` does, and gives it back when the iterator is closed early (a client
        gone) as at its deadline: the program stops at its next token, LM call or step.

        Raises:
            Busy: here, before the first item (nothing was started); InputError for a bad spec
                too (await :meth:`check_scope` first for ``only``).
            TimedOut: while iterating.
        """
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue = asyncio.Queue()
        job = self._submit(question, strategy, budget,
                           emit=lambda text: loop.call_soon_threadsafe(pieces.put_nowait, text), only=only,
                           history=history)
        job.future.add_done_callback(lambda _: pieces.put_nowait(_END))  # after every piece it emitted
        return self._pieces(job, pieces, heartbeat)

    async def _pieces(self, job: "_Job", pieces: asyncio.Queue, heartbeat: float) -> AsyncIterator[Any]:
        try:
            while True:
                try:
                    item = await asyncio.wait_for(pieces.get(), min(heartbeat, job.left()))
                except asyncio.TimeoutError:
                    if job.left() <= 0:
                        raise self._timed_out(job) from None
                    yield None
                    continue
                if item is _END:
                    break
                yield item
            try:
                result = job.future.result()
            except Cancelled:
                raise self._timed_out(job) from None
            yield result
        finally:
            job.stop.set()  # a no-op once answered; else its program stops at its next token or step

    def _submit(self, question: str, strategy: str | None, budget: int | None,
                emit: Callable[[str], None] | None = None, only: Sequence[str] | None = None,
                history: Sequence[Any] = ()) -> "_Job":
        """Admit the question and queue its program (Busy, InputError: nothing was started; its
        scope was checked by :meth:`check_scope`, off the event loop)."""
        from ragnet.programs.conversation import as_turns

        spec, budget = self.resolve(strategy, budget)
        only, turns = tuple(only or ()), tuple(as_turns(history))  # a bad turn: InputError, nothing started
        with self._lock:
            if self._pending >= self.concurrency + self.queue:
                raise Busy(f"{self._pending} questions are being answered or waiting (at most "
                           f"{self.concurrency + self.queue}); try again shortly")
            self._pending += 1
        arrived = time.monotonic()
        job = _Job(threading.Event(), arrived + self.timeout)
        try:
            job.future = asyncio.get_running_loop().run_in_executor(
                self._pool, self._run, question, spec, budget, job, arrived, emit, only, turns)
        except BaseException:
            self._finished()
            raise
        job.future.add_done_callback(self._done)
        return job

    def _timed_out(self, job: "_Job") -> TimedOut:
        job.stop.set()
        self.timed_out += 1
        return TimedOut(f"no answer within the server's {self.timeout:g}s timeout (ragnet serve --timeout); "
                        "the question was stopped")

    def _done(self, future: Any) -> None:
        self._finished()
        if not future.cancelled():
            future.exception()  # retrieved: a question stopped after its request ended is not an error

    def _finished(self) -> None:
        with self._lock:
            self._pending -= 1

    def _run(self, question: str, spec: str, budget: int | None, job: "_Job", arrived: float,
             emit: Callable[[str], None] | None, only: tuple[str, ...] = (), turns: tuple[Any, ...] = ()) -> Answer:
        from ragnet.programs.conversation import FollowUp
        from ragnet.programs.registry import build_program
        from ragnet.serve.streaming import stream_answer

        started = time.monotonic()
        if job.over():  # its time ran out in the queue
            job.stop.set()
            raise Cancelled()
        snap = self.holder.current  # one index for the whole question
        program = FollowUp(build_program(spec, self.scope(snap, only), budget=budget, reader=self.reader))
        callbacks = [*(dspy.settings.get("callbacks", None) or []), _Stop(job)]
        settings: dict[str, Any] = {"callbacks": callbacks}
        if self.step_lm is not None:
            settings["lm"] = self.step_lm
        with dspy.context(**settings), stop_when(job.over):  # an LM call under way stops too (ragnet.lm.stop)
            if emit is None:
                prediction = program(question=question, history=turns)
            else:
                prediction = stream_answer(program, question, emit, job.stop, history=turns)
                if prediction is None:
                    raise Cancelled()
        self.answered += 1
        return Answer(prediction, spec, budget, snap.generation, time.monotonic() - started, started - arrived)

    def close(self) -> None:
        """Stop taking questions; running ones finish."""
        self._pool.shutdown(wait=False, cancel_futures=True)
