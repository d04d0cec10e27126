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
    plain = PromptBudget(OneShotRAG(yearbook_index, answer_question_last=False).answer.predict, Q, 900)
    last = PromptBudget(OneShotRAG(yearbook_index).answer.predict, Q, 900)
    assert last.overhead == plain.overhead


def test_the_budgeted_strategies_put_the_question_last_by_default_and_the_others_first(yearbook_index):
    layouts = {spec: build_program(spec, yearbook_index).answer.question_last
               for spec in ("basic", "oneshot", "oneshot:sentences", "combined", "combined:sentences",
                            "iterative", "reflective")}
    assert layouts == {"basic": False, "oneshot": True, "oneshot:sentences": True, "combined": True,
                       "combined:sentences": True, "iterative": False, "reflective": False}


def test_presets_and_every_strategy_take_the_option(yearbook_index):
    assert build_program("basic:qlast", yearbook_index).answer.question_last is True
    oneshot = build_program("oneshot:sentences-qlast", yearbook_index, budget=1000)
    assert oneshot.answer.question_last is True and oneshot.sentences is True
    assert build_program("combined:sentences-qlast", yearbook_index, budget=1000).answer.question_last is True
    for spec in ("oneshot:qfirst", "oneshot:sentences-qfirst", "combined:qfirst", "combined:sentences-qfirst"):
        program = build_program(spec, yearbook_index, budget=1000)
        assert program.answer.question_last is False and program.sentences is ("sentences" in spec), spec
    for spec in ("iterative", "reflective"):
        assert build_program(spec, yearbook_index, answer_question_last=True).answer.question_last is True


def test_compiled_state_loads_only_into_the_same_layout(yearbook_index, tmp_path):
    first = save_program(OneShotRAG(yearbook_index, answer_question_last=False), tmp_path / "first.json")
    assert not load_program(build_program("oneshot:qfirst", yearbook_index), first).answer.question_last
    # demos and instructions were made for the other layout: the error says which preset loads it
    first_hint = r"question before the context .*answer_question_last=False \(the qfirst presets, e.g. oneshot:sentences-qfirst\)"
    with pytest.raises(InputError, match=first_hint) as err:
        load_program(OneShotRAG(yearbook_index), first)
    assert err.value.path == str(first)
    last = save_program(BasicRAG(yearbook_index, answer_question_last=True), tmp_path / "last.json")
    with pytest.raises(InputError, match=r"question after the context .*answer_question_last=True \(the qlast presets, e.g. basic"):
        load_program(BasicRAG(yearbook_index), last)
