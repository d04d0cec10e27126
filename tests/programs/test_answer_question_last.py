"""answer_question_last: the answer prompt shows the question after the context."""

from __future__ import annotations

import pytest

from ragnet.errors import InputError
from ragnet.programs import BasicRAG, OneShotRAG
from ragnet.programs.packing import PromptBudget
from ragnet.programs.persist import load_program, save_program
from ragnet.programs.registry import build_program
from ragnet.signatures import AnswerStep
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"


def test_the_step_moves_the_question_after_the_context_and_keeps_everything_else():
    plain, last = AnswerStep(), AnswerStep(question_last=True)
    assert list(plain.predict.signature.input_fields) == ["question", "context"] and not plain.question_last
    assert list(last.predict.signature.input_fields) == ["context", "question"] and last.question_last
    assert last.predict.signature.output_fields.keys() == plain.predict.signature.output_fields.keys()
    assert last.predict.signature.instructions == plain.predict.signature.instructions
    both = AnswerStep(question_last=True, reasoning=True)
    assert list(both.predict.signature.input_fields) == ["context", "question"] and both.reasoning


@pytest.mark.parametrize("question_last", [False, True])
def test_the_prompt_puts_the_question_where_asked_and_the_trace_says_so(yearbook_index, run_with, question_last):
    with run_with(ProgramLM()) as lm:
        pred = BasicRAG(yearbook_index, k=3, answer_question_last=question_last)(question=Q)
    ((step, prompt),) = lm.calls
    user = prompt[prompt.rindex("[[ ## context ## ]]") - 400:]  # the last user message's fields
    q_at, c_at = user.rindex("[[ ## question ## ]]"), user.rindex("[[ ## context ## ]]")
    assert (q_at > c_at) is question_last
    assert user[q_at:].split("\n", 2)[1] == Q
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event.get("question_last", False) is question_last


def test_moving_the_question_costs_no_evidence(yearbook_index):
    plain = PromptBudget(OneShotRAG(yearbook_index).answer.predict, Q, 900)
    last = PromptBudget(OneShotRAG(yearbook_index, answer_question_last=True).answer.predict, Q, 900)
    assert last.overhead == plain.overhead


def test_presets_and_every_strategy_take_the_option(yearbook_index):
    assert build_program("basic:qlast", yearbook_index).answer.question_last is True
    oneshot = build_program("oneshot:sentences-qlast", yearbook_index, budget=1000)
    assert oneshot.answer.question_last is True and oneshot.sentences is True
    assert build_program("combined:sentences-qlast", yearbook_index, budget=1000).answer.question_last is True
    assert build_program("oneshot:sentences", yearbook_index).answer.question_last is False
    for spec in ("iterative", "reflective"):
        assert build_program(spec, yearbook_index, answer_question_last=True).answer.question_last is True


def test_compiled_state_loads_only_into_the_same_layout(yearbook_index, tmp_path):
    path = save_program(OneShotRAG(yearbook_index, answer_question_last=True), tmp_path / "last.json")
    assert load_program(OneShotRAG(yearbook_index, answer_question_last=True), path).answer.question_last
    with pytest.raises(InputError, match="answer"):  # demos and instructions were made for the other layout
        load_program(OneShotRAG(yearbook_index), path)
