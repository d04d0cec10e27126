"""track_usage(): per-block counts of LM calls, tokens, cache hits and time."""

from __future__ import annotations

import threading

import dspy
import pytest
from dspy.utils import DummyLM

from ragnet.lm.deadline import LMCallTimeoutError
from ragnet.lm.usage import track_usage
from tests.lm.conftest import ScriptedEngine


def scripted_lm(engine=None, **kwargs):
    return dspy.LM("scripted/model", engine=engine or ScriptedEngine(), num_retries=0, **kwargs)


def test_counts_dummy_lm_calls_inside_block_only():
    lm = DummyLM([{"answer": str(i)} for i in range(5)])
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=lm):
        predict(question="before")
        with track_usage() as usage:
            predict(question="a")
            predict(question="b")
        predict(question="after")
    assert usage.lm_calls == 2
    assert usage.cached_calls == 0 and usage.failed_calls == 0
    assert usage.seconds > 0 and usage.lm_seconds > 0
    d = usage.to_dict()
    assert d["lm_calls"] == 2 and d["by_model"]["dummy"]["calls"] == 2


def test_engine_usage_and_cache_hits(dspy_state):
    engine = ScriptedEngine(input_tokens=20, output_tokens=5)
    lm = scripted_lm(engine, cache=True)
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=lm), track_usage() as usage:
        first = predict(question="same")
        second = predict(question="same")
        predict(question="different")
    assert first.answer == second.answer == "42"
    assert engine.calls == 2  # the repeated question was served from DSPy's cache
    assert usage.lm_calls == 3 and usage.cached_calls == 1 and usage.fresh_calls == 2
    assert (usage.input_tokens, usage.output_tokens) == (40, 10)
    assert usage.to_dict()["total_tokens"] == 50


def test_nested_meters():
    lm = scripted_lm(cache=False)
    with dspy.context(lm=lm), track_usage() as outer:
        lm("one")
        with track_usage() as inner:
            lm("two")
    assert inner.lm_calls == 1 and inner.input_tokens == 11
    assert outer.lm_calls == 2 and outer.input_tokens == 22 and outer.cached_calls == 0


def test_dspy_track_usage_inside_meter_rolls_up():
    lm = scripted_lm(cache=False)
    with dspy.context(lm=lm), track_usage() as usage:
        with dspy.track_usage() as tracker:
            lm("hello")
    assert tracker.get_total_tokens()["scripted/model"]["prompt_tokens"] == 11
    assert usage.input_tokens == 11 and usage.output_tokens == 3


def test_concurrent_threads_each_see_their_own_calls():
    lm = scripted_lm(ScriptedEngine(delay=0.01), cache=False)
    results = {}
    barrier = threading.Barrier(3)

    def worker(name, n):
        with dspy.context(lm=lm), track_usage() as usage:
            barrier.wait()
            for i in range(n):
                lm(f"{name}-{i}")
        results[name] = usage

    threads = [threading.Thread(target=worker, args=(f"t{n}", n)) for n in (2, 3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {k: v.lm_calls for k, v in results.items()} == {"t2": 2, "t3": 3, "t5": 5}
    assert {k: v.input_tokens for k, v in results.items()} == {"t2": 22, "t3": 33, "t5": 55}


def test_parallel_workers_report_into_the_block():
    lm = scripted_lm(ScriptedEngine(delay=0.005), cache=False)
    predict = dspy.Predict("question -> answer")
    examples = [dspy.Example(question=f"q{i}").with_inputs("question") for i in range(6)]
    with dspy.context(lm=lm), track_usage() as usage:
        outputs = dspy.Parallel(num_threads=3, disable_progress_bar=True)([(predict, ex) for ex in examples])
    assert len(outputs) == 6
    assert usage.lm_calls == 6 and usage.input_tokens == 66


def test_failed_and_timed_out_calls():
    boom = scripted_lm(ScriptedEngine(error=RuntimeError("engine bug")), cache=False)
    slow = scripted_lm(ScriptedEngine(error=LMCallTimeoutError("too slow", timeout=1.0, prompt_tokens=100,
                                                         completion_tokens=7)), cache=False)
    with track_usage() as usage:
        with pytest.raises(dspy.utils.exceptions.LMError):
            boom("x")
        with pytest.raises(LMCallTimeoutError):
            slow("y")
    assert usage.lm_calls == 2 and usage.failed_calls == 2 and usage.timeouts == 1
    assert usage.cached_calls == 0
    assert (usage.input_tokens, usage.output_tokens) == (100, 7)


def test_meter_is_frozen_after_block():
    lm = scripted_lm(cache=False)
    with dspy.context(lm=lm), track_usage() as usage:
        lm("x")
    seconds = usage.seconds
    lm("not counted")
    assert usage.lm_calls == 1 and usage.seconds == seconds


def test_each_call_is_listed_with_its_request_key_seconds_and_cache_hit(dspy_state):
    lm = scripted_lm(ScriptedEngine(delay=0.01), cache=True)
    predict = dspy.Predict("question -> answer")
    with dspy.context(lm=lm), track_usage() as usage:
        predict(question="same")
        predict(question="same")
        predict(question="different")
    calls = usage.to_dict()["calls"]
    assert [c["cached"] for c in calls] == [False, True, False]
    assert calls[0]["key"] == calls[1]["key"] != calls[2]["key"]
    assert calls[0]["seconds"] >= 0.01 > calls[1]["seconds"]
