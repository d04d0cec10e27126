"""The answer as the reader writes it: a program run through ``dspy.streamify``, with a
``StreamListener`` on its answer step's ``answer`` field.

Only the answer step streams (DSPy sends the other steps' calls whole). Its LM's engine yields
tokens (:meth:`ragnet.lm.local.LlamaCppEngine.stream`; litellm models stream through DSPy), and
the listener picks the ``answer`` field out of them. Two things DSPy's listener leaves to its
user, done by :class:`AnswerListener`:

* it finds the field by the markers of the adapter in the settings of whoever reads the stream,
  while the answer step's reader may have an adapter of its own (JSON for a local model, chat
  for the steps' served LM): the listener is pinned to the answer step's;
* with the JSONAdapter it hands on the raw JSON of the value: its quotes and escapes, and at
  times the start of the next key. The listener decodes the string written so far.

Its :meth:`~AnswerListener.text` is the answer so far as the answer step will read it
(whitespace collapsed as the step does), so the pieces handed on add up to the answer itself
unless the step retries a reply it could not read.

Example:
    >>> _json_string_prefix('"The \\\\"Seine\\\\", Paris", "evidence_ids": ["c')
    'The "Seine", Paris'
    >>> _json_string_prefix('"caf\\\\u00e9 au l'), _json_string_prefix('"cut in an escape \\\\u00')
    ('café au l', 'cut in an escape ')
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from typing import Any, Callable, Sequence

import dspy
from dspy.streaming import StreamListener, StreamResponse

__all__ = ["AnswerListener", "stream_answer", "streams"]


def _json_string_prefix(raw: str) -> str:
    """The text of the JSON string that ``raw`` starts with, as far as it is written ("" when
    ``raw`` starts with something else)."""
    raw = raw.lstrip()
    if not raw.startswith('"'):
        return ""
    end = 1
    while end < len(raw) and raw[end] != '"':
        end += 2 if raw[end] == "\\" else 1
    if end < len(raw):  # the string is closed: what follows it is the next key
        raw = raw[:end]
    for cut in range(len(raw), max(0, len(raw) - 12), -1):  # an escape cut short waits until it is whole
        try:
            text = json.loads(raw[:cut] + '"')
        except ValueError:
            continue
        return text[:-1] if text and "\ud800" <= text[-1] <= "\udbff" else text  # so does half a surrogate pair
    return ""


def streams(lm: Any) -> bool:
    """Whether DSPy streams the replies of ``lm``: a ``dspy.LM`` on a model DSPy reaches itself
    (litellm, its own providers) or on a custom engine with a ``stream`` method. Other LMs
    (``DummyLM``, a ``BaseLM`` of one's own) answer whole.

    Example:
        >>> from dspy.utils import DummyLM
        >>> streams(dspy.LM("openai/gpt-4o-mini", api_key="sk-test")), streams(DummyLM([]))
        (True, False)
    """
    if not isinstance(lm, dspy.LM):
        return False
    engine = lm.engine
    return isinstance(engine, str) or callable(getattr(engine, "stream", None))


class AnswerListener(StreamListener):
    """DSPy's listener on the ``answer`` field of ``step`` (a :class:`ragnet.signatures.AnswerStep`),
    read with the step's adapter and decoded to plain text (see the module docs)."""

    def __init__(self, step: Any) -> None:
        super().__init__("answer", predict=step.predict, predict_name="answer")
        with step.settings():
            self.adapter = dspy.settings.adapter
        self._raw = ""

    def receive(self, chunk: Any) -> StreamResponse | None:
        with dspy.context(adapter=self.adapter):
            return self._kept(super().receive(chunk))

    def finalize(self) -> StreamResponse | None:
        with dspy.context(adapter=self.adapter):
            return self._kept(super().finalize())

    def _kept(self, response: StreamResponse | None) -> StreamResponse | None:
        if response is not None:
            self._raw += response.chunk or ""
        return response

    def text(self) -> str:
        """The answer written so far, as the answer step will read it."""
        value = _json_string_prefix(self._raw) if isinstance(self.adapter, dspy.JSONAdapter) else self._raw
        return " ".join(value.split())


class _InThread:
    """``program`` as ``dspy.streamify`` runs an async program: in an AnyIO worker thread (from
    which DSPy's synchronous LM calls send their chunks), and one that a cancelled stream waits
    for, so that the program has stopped, and its model is free, once the stream has."""

    def __init__(self, program: Any) -> None:
        self.program = program

    def named_predictors(self) -> list[tuple[str, Any]]:
        return self.program.named_predictors()

    async def acall(self, **kwargs: Any) -> Any:
        import anyio

        return await anyio.to_thread.run_sync(functools.partial(self.program, **kwargs))


def stream_answer(program: Any, question: str, emit: Callable[[str], None], stop: threading.Event,
                  poll: float = 0.05, history: Sequence[Any] = ()) -> Any:
    """Run ``program`` on ``question`` in this thread (one with no event loop running), calling
    ``emit`` with each new piece of the answer as the reader writes it. With ``history`` (earlier
    turns), ``program`` is a :class:`ragnet.programs.conversation.FollowUp` and is asked with it.

    An answer step whose LM does not stream (:func:`streams`) answers whole, emitting nothing.
    Returns the program's prediction, or None when ``stop`` was set first: then the stream is
    closed, the reader's generation stops at its next token (its chunk can no longer be sent) and
    the program at its next step, and this returns once it has.
    """
    with program.answer.settings():
        reader = dspy.settings.lm
    inputs = {"question": question, **({"history": history} if history else {})}
    if not streams(reader):
        return program(**inputs)
    listener = AnswerListener(program.answer)
    run = dspy.streamify(_InThread(program), stream_listeners=[listener], is_async_program=True)

    async def consume() -> Any:
        sent, prediction = "", None
        async for value in run(**inputs):  # read to its end, which comes right after the prediction
            if isinstance(value, dspy.Prediction):
                prediction = value
            elif isinstance(value, StreamResponse):
                text = listener.text()
                if len(text) > len(sent) and text.startswith(sent):
                    emit(text[len(sent):])
                    sent = text
        return prediction

    async def watched() -> Any:
        task = asyncio.ensure_future(consume())
        while not task.done():
            if stop.is_set():
                task.cancel()
                await asyncio.wait({task})
                if not task.cancelled():
                    task.exception()  # retrieved: a program stopped after its request ended is not an error
                return None
            await asyncio.wait({task}, timeout=poll)
        return task.result()

    return asyncio.run(watched())
