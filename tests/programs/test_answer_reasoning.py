"""AnswerStep(reasoning=True): the answer step reasons (chain of thought) before it answers."""

from __future__ import annotations

import pytest

from ragnet.errors import InputError
from ragnet.programs import BasicRAG, OneShotRAG, Pack
from ragnet.programs.packing import PromptBudget
from ragnet.programs.persist import load_program, save_program
from ragnet.programs.registry import build_program
from ragnet.signatures import AnswerStep
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"


def _reasoning_reader():
    return ProgramLM(answer=lambda p, n: {"reasoning": "c1 gives the 2021 figure.", "answer": "12,000",
                                          "evidence_ids": ["c1"]})


def test_the_step_gains_a_reasoning_output_before_the_answer_and_keeps_one_predictor():
    plain, reasoned = AnswerStep(), AnswerStep(reasoning=True)
    assert list(plain.predict.signature.output_fields) == ["answer", "evidence_ids"]
    assert list(reasoned.predict.signature.output_fields) == ["reasoning", "answer", "evidence_ids"]
    assert [name for name, _ in reasoned.named_predictors()] == ["predict"]  # the state path stays answer.predict
    assert reasoned.predict.config["max_tokens"] > plain.predict.config["max_tokens"]  # room to think
    assert AnswerStep(reasoning=True, max_tokens=64).predict.config["max_tokens"] == 64


def test_the_reader_is_asked_to_reason_and_the_trace_keeps_what_it_wrote(yearbook_index, run_with):
    with run_with(_reasoning_reader()) as lm:
        pred = BasicRAG(yearbook_index, k=3, answer=AnswerStep(reasoning=True))(question=Q)
    ((step, prompt),) = lm.calls
    assert step == "answer" and "reasoning" in prompt
    assert pred.answer == "12,000"
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event["reasoning"] == "c1 gives the 2021 figure."


def test_without_reasoning_the_prompt_and_trace_have_none(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        pred = BasicRAG(yearbook_index, k=3)(question=Q)
    ((_, prompt),) = lm.calls
    assert "reasoning" not in prompt
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert "reasoning" not in event


def test_a_failed_reasoning_answer_falls_back_and_records_empty_reasoning(yearbook_index, run_with):
    with run_with(ProgramLM(answer=lambda p, n: {"reasoning": "no idea"})):  # never gives an answer field
        pred = BasicRAG(yearbook_index, k=3, answer=AnswerStep(reasoning=True))(question=Q)
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event["fallback"] is True and event["reasoning"] == "" and pred.answer == ""


def test_the_prompt_budget_pays_for_the_reasoning_instructions(yearbook_index, run_with):
    """The reasoning field's instructions are part of the prompt: the budget must count them, so the
    evidence share shrinks by exactly that much and the whole prompt still fits."""
    from ragnet.corpus.tokens import count_tokens

    plain = PromptBudget(OneShotRAG(yearbook_index).answer.predict, Q, 900)
    reasoned = PromptBudget(OneShotRAG(yearbook_index, answer=AnswerStep(reasoning=True)).answer.predict, Q, 900)
    assert reasoned.overhead > plain.overhead and reasoned.context_budget < plain.context_budget
    with run_with(_reasoning_reader()) as lm:
        pred = OneShotRAG(yearbook_index, 900, pack=Pack(sentences=True), answer=AnswerStep(reasoning=True))(question=Q)
    ((_, prompt),) = lm.calls
    assert count_tokens(prompt) <= 900 and pred.answer == "12,000"


def test_presets_switch_reasoning_on(yearbook_index):
    assert build_program("basic:cot", yearbook_index).answer.reasoning is True
    oneshot = build_program("oneshot:sentences+cot", yearbook_index, budget=1000)
    assert oneshot.answer.reasoning is True and oneshot.pack.sentences is True
    assert build_program("oneshot:sentences", yearbook_index).answer.reasoning is False


def test_compiled_state_loads_only_into_a_program_that_reasons_too(yearbook_index, tmp_path):
    reasoned = OneShotRAG(yearbook_index, answer=AnswerStep(reasoning=True))
    reasoned.answer.predict.signature = reasoned.answer.predict.signature.with_instructions("Think, then answer.")
    path = save_program(reasoned, tmp_path / "cot.json")
    loaded = load_program(OneShotRAG(yearbook_index, answer=AnswerStep(reasoning=True)), path)
    assert loaded.answer.predict.signature.instructions == "Think, then answer."
    with pytest.raises(InputError, match="answer"):  # a reader compiled to reason is not silently used without
        load_program(OneShotRAG(yearbook_index), path)
