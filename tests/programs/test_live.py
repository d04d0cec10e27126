"""End-to-end runs of every strategy on the real local model (llama.cpp, Qwen2.5-Coder 0.5B).

These assert well-formed predictions and traces, not accuracy: a 0.5B model's answers are
what they are; the demo table and `ragnet eval` report quality.
"""

from __future__ import annotations

import dspy
import pytest

from ragnet.programs.registry import build_program

pytestmark = pytest.mark.live

SETTINGS = {
    "basic": {},
    "oneshot": {"budget": 1500},
    "iterative": {"max_turns": 2},
    "reflective": {"max_reflections": 1},
    "combined": {"budget": 1500, "max_turns": 2},
}


@pytest.mark.parametrize("strategy", list(SETTINGS))
def test_strategy_end_to_end_on_local_model(strategy, yearbook_index, local_lm):
    question = "What was the population of Aldermoor in 2021?"
    program = build_program(strategy, yearbook_index, **SETTINGS[strategy])
    with dspy.context(lm=local_lm):
        pred = program(question=question)
    answer_fallbacks = [e for e in pred.trace if e["step"] == "lm_error" and e.get("failed_step") == "answer"
                        and e.get("action") == "fallback"]
    assert pred.answer.strip() or answer_fallbacks  # an empty answer only as a recorded fallback
    assert pred.context and set(pred.evidence) <= set(pred.context)
    assert all(yearbook_index.chunk(cid) for cid in pred.context)
    steps = [e["step"] for e in pred.trace if e["step"] not in ("lm_step", "lm_error")]
    assert steps[-1] == "answer" and "search" in steps
    assert steps.index("search") < steps.index("answer")
    assert pred.usage["lm_calls"] >= 1 and pred.usage["input_tokens"] > 0 and pred.usage["output_tokens"] > 0
    assert pred.usage["cached_calls"] == 0  # cache off: every call really ran the model
    for event in pred.trace:
        if event["step"] == "lm_error":  # failures are recorded with what was done about them
            assert event["action"] in {"retried", "fallback", "repaired"} and event["failed_step"]
    if strategy in ("oneshot", "combined"):
        (select,) = [e for e in pred.trace if e["step"] == "select"]
        assert select["tokens"] <= SETTINGS[strategy]["budget"]
