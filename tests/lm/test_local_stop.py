"""A local LM call stops once the request it answers is over (``ragnet.lm.stop``): before it reads
its prompt, between the slices of the prompt, or at the next token, freeing the model; outside a
stop scope nothing changes. On the stand-in for ``llama_cpp.Llama`` of ``test_local_stream``."""

from __future__ import annotations

import asyncio

import pytest

from ragnet.lm.deadline import LMCallTimeoutError
from ragnet.lm.local import AsyncLlamaCppEngine, _MODELS
from ragnet.lm.deadline import LMCallStopped
from ragnet.lm.stop import stop_when
from tests.lm.test_local_stream import fake, request  # noqa: F401 - the fixture is used by name

pytest.importorskip("llama_cpp")

LONG = " ".join(f"word{i}" for i in range(40))  # 40 prompt tokens: 10 slices of the stand-in's n_batch


def _free(engine) -> bool:
    lock = _MODELS[engine._key()].lock
    if lock.acquire(blocking=False):
        lock.release()
        return True
    return False


def test_a_call_whose_request_is_already_over_reads_nothing(fake):
    engine, llm = fake([" Seine"])
    with stop_when(lambda: True), pytest.raises(LMCallStopped) as err:
        engine.complete(request(LONG))
    assert llm.n_tokens == 0 and llm.generated == 0 and _free(engine)
    assert isinstance(err.value, LMCallTimeoutError) and "request it answered is over" in str(err.value)


def test_the_prompt_stops_between_slices_when_the_request_ends(fake):
    engine, llm = fake([" Seine"])  # no time limit of its own (timeout=None): the scope alone slices it
    with stop_when(lambda: llm.n_tokens >= 8), pytest.raises(LMCallStopped, match="while reading the prompt"):
        engine.complete(request(LONG))
    assert llm.n_tokens == 8 and llm.generated == 0 and _free(engine)  # two slices of 4 read, then stopped


def test_generation_stops_at_the_next_token_when_the_request_ends(fake):
    engine, llm = fake([f" w{i}" for i in range(50)])
    with stop_when(lambda: llm.generated >= 3), pytest.raises(LMCallStopped, match="after generating"):
        engine.complete(request())
    assert llm.generated == 3 and _free(engine)
    with stop_when(lambda: llm.generated >= 5):  # a stream: the text so far, then the stop
        events, stream = [], engine.stream(request())
        with pytest.raises(LMCallStopped):
            for event in stream:
                events.append(event)
    assert [e.type for e in events].count("delta") == 2 and _free(engine)  # 3 + 2 tokens generated in all


def test_outside_a_stop_scope_or_while_the_request_lasts_the_call_is_unchanged(fake):
    engine, llm = fake(["The", " Seine"])
    assert engine.complete(request(LONG)).message.text == "The Seine"
    with stop_when(lambda: False):
        assert engine.complete(request(LONG)).message.text == "The Seine"


def test_the_async_engine_carries_the_scope_into_its_worker_thread(fake):
    engine, llm = fake([f" w{i}" for i in range(50)])

    async def ask():
        with stop_when(lambda: llm.generated >= 2):
            return await AsyncLlamaCppEngine(engine).complete(request())

    with pytest.raises(LMCallStopped):
        asyncio.run(ask())
    assert llm.generated == 2 and _free(engine)
