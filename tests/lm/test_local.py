"""The llama.cpp engine: request mapping (no model) and live calls (marker ``live``)."""

from __future__ import annotations

import time

import dspy
import pytest
from dspy.lm15 import Message, Request, TextPart, UnsupportedFeatureError
from dspy.utils.exceptions import ContextWindowExceededError, LMError, is_retryable_lm_error

from ragnet.errors import RagnetError
from ragnet.lm.deadline import LMCallTimeoutError
from ragnet.lm.local import LlamaCppEngine
from ragnet.lm.usage import track_usage


def test_messages_from_request():
    request = Request(
        model="llamacpp/x",
        system="Be brief.",
        messages=(Message.user("Hi"), Message.assistant([TextPart("Hello")]), Message.developer("Rule"),
                  Message.user("Bye")),
    )
    assert LlamaCppEngine._messages(request) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "system", "content": "Rule"},
        {"role": "user", "content": "Bye"},
    ]


def test_tools_are_refused():
    from dspy.lm15 import FunctionTool

    tool = FunctionTool(name="search", description="d", parameters={"type": "object", "properties": {}})
    request = Request(model="llamacpp/x", messages=(Message.user("Hi"),), tools=(tool,))
    with pytest.raises(UnsupportedFeatureError, match="tools"):
        LlamaCppEngine._messages(request)


def test_timeout_error_is_ragnet_and_dspy_but_not_retried():
    err = LMCallTimeoutError("slow", timeout=2.0, elapsed=2.1, prompt_tokens=10, completion_tokens=3, model="m")
    assert isinstance(err, RagnetError) and isinstance(err, LMError)
    assert not is_retryable_lm_error(err)
    assert err.code == "timeout" and err.completion_tokens == 3
    assert "slow" in str(err)
    # its own name, not DSPy's LMTimeoutError; the name alone still reads as a timeout in a trace
    from ragnet.lm.failures import failure_kind

    assert type(err).__name__ == "LMCallTimeoutError"
    assert failure_kind({"error_type": type(err).__name__, "error": "slow"}) == "timeout"


def test_engine_validates_arguments(tmp_path):
    from ragnet.errors import InputError

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    with pytest.raises(InputError, match="timeout"):
        LlamaCppEngine(gguf, timeout=0)
    with pytest.raises(InputError, match="n_ctx"):
        LlamaCppEngine(gguf, n_ctx=16)


def test_logprobs_are_offered_only_without_a_grammar(tmp_path):
    """DSPy asks an engine only for what it lists; a grammar reshapes the logits the logprobs are
    read from, so an engine with one does not list them (and the answer step does not ask)."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    assert {"logprobs", "top_logprobs"} <= LlamaCppEngine(gguf).supported_params
    assert not {"logprobs", "top_logprobs"} & LlamaCppEngine(gguf, grammar=True).supported_params


# ----------------------------------------------------------------------------- live
@pytest.fixture(scope="module")
def engine(live_model_path):
    eng = LlamaCppEngine(live_model_path, n_ctx=4096, max_tokens=64, timeout=120)
    eng.load()
    return eng


@pytest.fixture
def live_lm(engine, dspy_state):
    return dspy.LM(engine.model_name, engine=engine, temperature=0.0, max_tokens=64, num_retries=0, cache=True)


@pytest.mark.live
def test_live_predict_parses_answer_and_counts_tokens(live_lm):
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=live_lm), track_usage() as usage:
        started = time.perf_counter()
        first = predict(question="What is the capital of France? Answer with the city name.")
        fresh_seconds = time.perf_counter() - started
        again = predict(question="What is the capital of France? Answer with the city name.")
    assert "paris" in first.answer.lower()
    assert again.answer == first.answer
    assert usage.lm_calls == 2 and usage.cached_calls == 1
    assert usage.input_tokens > 50 and 0 < usage.output_tokens <= 64
    assert fresh_seconds > 0


@pytest.mark.live
def test_live_json_adapter_uses_grammar_when_asked(live_model_path, dspy_state):
    constrained = LlamaCppEngine(live_model_path, n_ctx=4096, max_tokens=32, timeout=120, grammar=True)
    lm = dspy.LM(constrained.model_name, engine=constrained, temperature=0.0, max_tokens=32, num_retries=0,
                 cache=False)
    predict = dspy.Predict("question -> answer: int")
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        result = predict(question="What is 2 + 2?")
    assert result.answer == 4
    assert len(constrained._grammars) == 1  # the schema became a (cached) grammar
    assert "logprobs" not in constrained.supported_params  # the grammar reshapes the logits: none reported


@pytest.mark.live
def test_live_json_adapter_without_grammar_parses(live_lm):
    predict = dspy.Predict("question -> answer: int")
    with dspy.context(lm=live_lm, adapter=dspy.JSONAdapter()):
        result = predict(question="What is 2 + 2?")
    assert result.answer == 4


@pytest.mark.live
def test_live_logprobs_are_the_greedy_tokens_with_their_alternatives(live_lm):
    """Asked for logprobs (DSPy's request option), the engine reports each generated token's logprob
    and its top alternatives without llama.cpp's logits_all: the tokens spell the reply, each chosen
    token is its step's most likely one, and the same reply comes back as without them."""
    import math

    predict = dspy.Predict("question -> answer")
    question = "What is the capital of Italy? Answer with the city name."
    with dspy.context(lm=live_lm, adapter=dspy.JSONAdapter()):
        plain = predict(question=question)
        scored = predict(question=question, config={"logprobs": True, "top_logprobs": 3})
    assert scored.answer == plain.answer and "rome" in scored.answer.lower()
    tokens = scored.logprobs["content"]
    assert "".join(t["token"] for t in tokens).count(scored.answer) == 1
    for t in tokens:
        assert t["logprob"] <= 0 and len(t["top_logprobs"]) == 3
        assert all(alt["logprob"] <= t["logprob"] + 1e-9 for alt in t["top_logprobs"])
    assert 0 < sum(math.exp(t["logprob"]) for t in tokens) / len(tokens) <= 1


@pytest.mark.live
def test_live_a_streamed_reply_reports_the_logprobs_a_whole_one_does(engine, dspy_state):
    """Streamed (``dspy.streamify``, as ``ragnet serve`` streams), each fragment carries the tokens
    recorded since the last one, so the reply's logprobs, and the answer's confidence, match the
    whole reply's."""
    import asyncio

    from ragnet.signatures.answer_confidence import field_probability

    lm = dspy.LM(engine.model_name, engine=engine, temperature=0.0, max_tokens=64, num_retries=0, cache=False)
    predict = dspy.Predict("question -> answer")
    question = "What is the capital of Spain? Answer with the city name."
    stream = dspy.streamify(predict, stream_listeners=[dspy.streaming.StreamListener(signature_field_name="answer")])

    async def streamed():
        final = None
        async for item in stream(question=question, config={"logprobs": True}):
            final = item if isinstance(item, dspy.Prediction) else final
        return final

    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        whole = predict(question=question, config={"logprobs": True})
        parts = asyncio.run(streamed())
    assert parts.answer == whole.answer and "madrid" in whole.answer.lower()
    tokens = [t["token"] for t in whole.logprobs["content"]]
    assert [t["token"] for t in parts.logprobs["content"]] == tokens[:len(parts.logprobs["content"])]
    assert field_probability(parts.logprobs) == pytest.approx(field_probability(whole.logprobs), rel=1e-6)


@pytest.mark.live
def test_live_logprobs_are_refused_when_sampling(live_lm):
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=live_lm), pytest.raises(Exception, match="greedy decoding"):
        predict(question="Name a colour.", config={"logprobs": True, "temperature": 0.7})


@pytest.mark.live
def test_live_tiny_timeout_raises(live_model_path, engine, dspy_state):
    quick = LlamaCppEngine(live_model_path, n_ctx=4096, max_tokens=200, timeout=0.01)
    lm = dspy.LM(quick.model_name, engine=quick, num_retries=0, cache=False)
    with dspy.context(lm=lm), track_usage() as usage:
        with pytest.raises(LMCallTimeoutError, match="timeout") as info:
            dspy.Predict("topic -> essay")(topic="rivers of Europe, in great detail")
    assert info.value.timeout == 0.01
    assert usage.timeouts == 1 and usage.failed_calls == 1


@pytest.mark.live
def test_live_auto_timeout_measures_the_machine_then_holds_calls_to_it(live_model_path, dspy_state, monkeypatch):
    from ragnet.lm import call_time
    from ragnet.lm.call_time import Speed

    auto = LlamaCppEngine(live_model_path, n_ctx=2048, max_tokens=24)  # its own loaded model and speed
    assert auto.timeout == "auto"
    lm = dspy.LM(auto.model_name, engine=auto, num_retries=0, cache=False)
    loaded = auto._loaded()
    loaded.speed = Speed()
    lm("Write two sentences about rivers. " * 20)
    # the call measured this machine: its prompt slices and its tokens after the first
    assert loaded.speed.read_rate > 10 and loaded.speed.generation_rate > 1
    # a machine that once read and wrote a billion tokens a second, and a floor of a millisecond:
    # the same kind of call is now far over its allowance and stops while reading the prompt
    loaded.speed.read_rate = loaded.speed.generation_rate = 1e9
    monkeypatch.setattr(call_time, "AUTO_FLOOR_S", 0.001)
    with track_usage() as usage, pytest.raises(LMCallTimeoutError, match="automatic") as info:
        lm("Describe the mountains of Asia at length. " * 100)
    assert "while reading the prompt" in str(info.value) and "give a fixed --timeout" in str(info.value)
    assert info.value.timeout == pytest.approx(0.001) and usage.timeouts == 1


@pytest.mark.live
def test_live_prompt_longer_than_context(live_model_path, dspy_state):
    small = LlamaCppEngine(live_model_path, n_ctx=256, max_tokens=16)
    lm = dspy.LM(small.model_name, engine=small, num_retries=0, cache=False)
    with pytest.raises(ContextWindowExceededError, match="n_ctx=256"):
        lm("word " * 400)


@pytest.mark.live
def test_live_configure_local_async_and_threads(live_model_path, dspy_state, monkeypatch, tmp_path):
    import asyncio

    from ragnet.lm.config import configure

    monkeypatch.setenv("RAGNET_GGUF", str(live_model_path))
    lm = configure("local", cache_dir=tmp_path / "cache", max_tokens=32)
    assert lm.model.startswith("llamacpp/")
    predict = dspy.Predict("question -> answer")
    questions = ["What is the capital of Italy?", "What is the capital of Spain?"]
    with track_usage() as usage:
        results = dspy.Parallel(num_threads=2, disable_progress_bar=True)(
            [(predict, dspy.Example(question=q).with_inputs("question")) for q in questions])
        answer = asyncio.run(predict.acall(question="What is the capital of Germany?")).answer
    assert "rome" in results[0].answer.lower() and "madrid" in results[1].answer.lower()
    assert "berlin" in answer.lower()
    assert usage.lm_calls == 3 and usage.input_tokens > 100


@pytest.mark.live
def test_live_lm_state_roundtrip(engine):
    lm = dspy.LM(engine.model_name, engine=engine, num_retries=0)
    state = lm.dump_state()
    assert state["engine"]["state"]["model_path"] == str(engine.model_path)
    loaded = dspy.LM.load_state(state, allow_custom_lm_class=True)
    assert isinstance(loaded.engine, LlamaCppEngine) and loaded.engine.n_ctx == engine.n_ctx


def test_loop_detector_flags_only_repeated_blocks():
    from ragnet.lm.local import _is_looping

    line = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 198]  # one note line and its newline
    assert _is_looping([1, 2, 3] + line * 3)
    assert not _is_looping([1, 2, 3] + line * 2)  # twice is not yet a loop
    assert not _is_looping(list(range(200)))
    # similar lines that differ in one token (c1, c2, c3 ...) are not a loop
    assert not _is_looping([t for i in range(6) for t in (5, 6, 7, 100 + i, 8)])
    assert not _is_looping([7, 7, 7])  # shorter than the shortest period x 3
