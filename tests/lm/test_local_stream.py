"""The llama.cpp engine's stream, on a stand-in for ``llama_cpp.Llama`` (no model): the text as it is
generated and the usage :meth:`complete` reports, the lock freed by a stream closed early, the
deadline and the loop guard mid-stream, and the async engine's stream."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest
from dspy.lm15 import Config, Message, Request

from ragnet.lm.deadline import LMCallTimeoutError
from ragnet.lm.local import AsyncLlamaCppEngine, LlamaCppEngine, _Loaded, _MODELS

pytest.importorskip("llama_cpp")


class FakeLlama:
    """What the engine uses of ``llama_cpp.Llama``: one token per word of the prompt, and a reply of
    ``pieces`` (one token each, ``delay`` seconds apart), ended by an end-of-generation token, with
    llama.cpp's bookkeeping: ``n_tokens`` counts the tokens in the KV cache (all but the last one
    sampled), and the stopping criteria see the tokens so far before each new one."""

    n_batch = 4
    cache = None

    def __init__(self, pieces, delay=0.0):
        self.pieces, self.delay = list(pieces), delay
        self.input_ids, self.n_tokens, self.generated = [], 0, 0

    def tokenize(self, text, add_bos=True, special=True):
        return [hash(word) % 1000 for word in text.decode().split()]

    def eval(self, tokens):
        self.input_ids = self.input_ids[:self.n_tokens] + list(tokens)
        self.n_tokens = len(self.input_ids)

    def _generate(self, prompt, max_tokens, stopping_criteria):
        ids, self.finish, self.count = list(prompt), "stop", 0
        for piece in [*self.pieces, None]:  # None: the end-of-generation token
            self.input_ids, self.n_tokens = list(ids), len(ids)  # the last token sampled is read now
            if self.delay:
                time.sleep(self.delay)
            if stopping_criteria(ids, None):
                break
            self.generated += 1
            if piece is None:
                break
            ids.append(1000 + self.pieces.index(piece))
            self.count += 1
            yield piece
            if self.count == max_tokens:  # kept, and not read
                self.finish = "length"
                break

    def create_completion(self, prompt, max_tokens, stopping_criteria, stream=False, **options):
        tokens = self._generate(prompt, max_tokens, stopping_criteria)
        if not stream:
            text = "".join(tokens)
            return {"id": "cmpl-1", "choices": [{"text": text, "finish_reason": self.finish}],
                    "usage": {"prompt_tokens": len(prompt), "completion_tokens": self.count}}

        def chunks():
            for piece in tokens:
                yield {"choices": [{"text": piece, "finish_reason": None}]}
            yield {"choices": [{"text": "", "finish_reason": self.finish}]}
        return chunks()


def formatter(messages):
    return SimpleNamespace(prompt=" ".join(m["content"] for m in messages), added_special=False, stop=None,
                           stopping_criteria=None)


@pytest.fixture
def fake(tmp_path):
    """``make(pieces, delay=0, **engine_options)``: an engine whose model is a :class:`FakeLlama`."""
    made = []

    def make(pieces, delay=0.0, **options):
        gguf = tmp_path / f"m{len(made)}.gguf"
        gguf.write_bytes(b"")
        engine = LlamaCppEngine(gguf, **{"timeout": None, **options})
        llm = FakeLlama(pieces, delay)
        _MODELS[engine._key()] = _Loaded(llm, formatter)
        made.append(engine._key())
        return engine, llm

    yield make
    for key in made:
        _MODELS.pop(key, None)


def request(text="Which river runs through Paris?", max_tokens=64):
    return Request(model="llamacpp/m", messages=(Message.user(text),), config=Config(max_tokens=max_tokens))


def test_stream_yields_the_tokens_and_the_usage_complete_reports(fake):
    engine, _ = fake(["The", " Seine", " river"])
    events = list(engine.stream(request()))
    assert [e.type for e in events] == ["start", "delta", "delta", "delta", "end"]
    assert "".join(e.delta.text for e in events if e.type == "delta") == "The Seine river"
    whole = engine.complete(request())
    end = events[-1]
    assert whole.message.text == "The Seine river" and end.finish_reason == whole.finish_reason == "stop"
    assert (end.usage.input_tokens, end.usage.output_tokens) == (whole.usage.input_tokens, whole.usage.output_tokens)
    assert end.usage.output_tokens == 3
    cut = list(engine.stream(request(max_tokens=2)))  # cut at max_tokens: the last token counts too
    assert cut[-1].finish_reason == "length" and cut[-1].usage.output_tokens == 2


def test_a_stream_closed_early_frees_the_model(fake):
    engine, llm = fake([f" w{i}" for i in range(50)])
    stream = engine.stream(request())
    assert [next(stream).type for _ in range(3)] == ["start", "delta", "delta"]
    loaded = _MODELS[engine._key()]
    assert not loaded.lock.acquire(blocking=False)  # held while the stream is open
    stream.close()
    assert loaded.lock.acquire(blocking=False)  # free at once
    loaded.lock.release()
    assert llm.generated == 2


def test_a_stream_past_its_deadline_raises_after_its_text(fake):
    engine, llm = fake([f" w{i}" for i in range(50)], delay=0.05, timeout=0.3)
    texts = []
    with pytest.raises(LMCallTimeoutError, match="after generating"):
        for event in engine.stream(request()):
            texts.append(getattr(getattr(event, "delta", None), "text", ""))
    assert 2 <= len([t for t in texts if t]) < 10 and llm.generated < 10


def test_a_looping_stream_is_cut_like_a_max_tokens_cut(fake):
    engine, _ = fake([" a", " b", " c", " d"] * 10)
    events = list(engine.stream(request()))
    text = "".join(e.delta.text for e in events if e.type == "delta")
    assert events[-1].finish_reason == "length" and events[-1].provider_data["stopped_loop"] is True
    assert len(text.split()) < 20


def test_the_async_engine_streams_the_same_events_and_frees_the_model_when_closed(fake):
    engine, llm = fake([f" w{i}" for i in range(30)], delay=0.01)
    async_engine = AsyncLlamaCppEngine(engine)

    async def read(limit=None):
        got = []
        stream = async_engine.stream(request())
        async for event in stream:
            got.append(event)
            if limit is not None and len(got) == limit:
                await stream.aclose()
                break
        return got

    events = asyncio.run(read())
    assert [e.type for e in events] == ["start", *["delta"] * 30, "end"]
    llm.generated = 0
    assert len(asyncio.run(read(limit=3))) == 3
    loaded = _MODELS[engine._key()]
    assert loaded.lock.acquire(blocking=False)  # the worker thread let go of the model
    loaded.lock.release()
    assert llm.generated < 10
