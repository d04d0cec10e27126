"""AnswerStep(quote=True): the reader copies the line that states the answer before it answers."""

from __future__ import annotations

import pytest

from ragnet.errors import InputError
from ragnet.eval.run.oracle import oracle_layout
from ragnet.eval.run.qa_evaluator import row_answer_prompt
from ragnet.programs import BasicRAG, OneShotRAG
from ragnet.programs.persist import load_program, save_program
from ragnet.programs.registry import answer_layout, build_program
from ragnet.signatures import AnswerStep
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"
LINE = "In 2021 Aldermoor had 12,000 inhabitants."


def _quoting_reader():
    return ProgramLM(answer=lambda p, n: {"quote": LINE, "answer": "12,000", "evidence_ids": ["c1"]})


def test_the_step_gains_a_quote_output_before_the_answer_and_keeps_one_predictor():
    quoting = AnswerStep(quote=True)
    assert list(quoting.predict.signature.output_fields) == ["quote", "answer", "evidence_ids"]
    assert [name for name, _ in quoting.named_predictors()] == ["predict"]
    assert quoting.quote is True and AnswerStep().quote is False
    assert quoting.predict.config["max_tokens"] > AnswerStep().predict.config["max_tokens"]  # room for the line
    both = AnswerStep(quote=True, reasoning=True)
    assert list(both.predict.signature.output_fields) == ["reasoning", "quote", "answer", "evidence_ids"]


def test_the_reader_is_asked_for_the_line_and_the_trace_keeps_it(yearbook_index, run_with):
    with run_with(_quoting_reader()) as lm:
        pred = BasicRAG(yearbook_index, k=3, answer=AnswerStep(quote=True))(question=Q)
    ((step, prompt),) = lm.calls
    assert step == "answer" and "`quote`" in prompt and "word for word" in prompt
    assert pred.answer == "12,000"
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event["quote"] == LINE


def test_without_the_preset_the_prompt_and_trace_have_no_quote(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        pred = BasicRAG(yearbook_index, k=3)(question=Q)
    ((_, prompt),) = lm.calls
    assert "`quote`" not in prompt
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert "quote" not in event


def test_the_preset_switches_it_on_and_the_layout_records_it_only_when_on(yearbook_index):
    oneshot = build_program("oneshot:sentences+hops+quote", yearbook_index, budget=1000)
    assert oneshot.answer.quote is True and oneshot.pack.sentences is True
    assert answer_layout("oneshot:sentences+quote") == {"question_at": "auto", "reasoning": False,
                                                        "evidence_order": "auto", "quote": True}
    assert "quote" not in answer_layout("oneshot:sentences")  # rows written before the preset still match
    assert oracle_layout("oracle:quote")["quote"] is True
    assert row_answer_prompt({"answer_prompt": answer_layout("oneshot:sentences+quote")})["quote"] is True
    assert row_answer_prompt({"answer_prompt": answer_layout("oneshot:sentences")}) == answer_layout("oneshot:sentences")


def test_compiled_state_loads_only_into_a_program_that_quotes_too(yearbook_index, tmp_path):
    quoting = OneShotRAG(yearbook_index, answer=AnswerStep(quote=True))
    path = save_program(quoting, tmp_path / "quote.json")
    assert load_program(OneShotRAG(yearbook_index, answer=AnswerStep(quote=True)), path).answer.quote is True
    with pytest.raises(InputError, match="answer"):
        load_program(OneShotRAG(yearbook_index), path)
