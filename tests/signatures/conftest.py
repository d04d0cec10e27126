"""Fixtures for signature tests: sample chunks, a trace, scripted LMs and a failing engine."""

from __future__ import annotations

import contextlib

import dspy
import pytest
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.utils import DummyLM

from ragnet import Chunk
from ragnet.programs.trace import Trace
from ragnet.signatures import recording


@pytest.fixture
def chunks() -> list[Chunk]:
    texts = [
        ("paris#0", "Paris", "Paris is the capital of France. It has many museums. The Seine flows through it."),
        ("lyon#0", "Lyon", "Lyon is a city in France. It is known for its cuisine."),
        ("cats#3", "Cats", "Cats sleep for most of the day."),
    ]
    return [Chunk(id=cid, doc_id=cid.split("#")[0], title=t, text=x, tokens=len(x.split())) for cid, t, x in texts]


@pytest.fixture
def trace():
    """A Trace the steps run in the test record into (as in a program call)."""
    with recording(Trace()) as t:
        yield t


@pytest.fixture
def scripted():
    """``with scripted([...answers], json_fallback=False) as lm:`` runs DSPy against a DummyLM.

    By default the ChatAdapter's JSONAdapter fallback is off, so each predictor call consumes
    exactly one scripted answer; pass ``json_fallback=True`` for DSPy's default behaviour.
    """

    @contextlib.contextmanager
    def make(answers, json_fallback: bool = False):
        lm = DummyLM(answers)
        adapter = dspy.ChatAdapter(use_json_adapter_fallback=json_fallback)
        with dspy.context(lm=lm, adapter=adapter):
            yield lm

    return make


class ScriptedEngine:
    """A DSPy 3.4 engine that raises or answers from a script (control-flow tests only).

    Each script item is an exception instance (raised) or a string (returned as the completion).
    """

    def __init__(self, script):
        self.script = list(script)
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        item = self.script.pop(0) if self.script else TimeoutError("script exhausted")
        if isinstance(item, BaseException):
            raise item
        return Response(
            id=None,
            model="scripted",
            message=Message.assistant([TextPart(item)]),
            finish_reason="stop",
            usage=Usage(input_tokens=1, output_tokens=1, total_tokens=2),
        )

    def close(self):
        pass


@pytest.fixture
def engine_lm():
    """``engine, lm = engine_lm([...])``: a dspy.LM backed by a ScriptedEngine (no cache, no LM retries)."""

    def make(script):
        engine = ScriptedEngine(script)
        return engine, dspy.LM("scripted/test", engine=engine, cache=False, num_retries=0)

    return make
