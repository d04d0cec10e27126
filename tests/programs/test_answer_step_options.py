"""A program's answer options live on the AnswerStep it is given: what the step leaves open (where
the question goes, its retries) the program fills in, and the step's LM is shared, never saved."""

from __future__ import annotations

import copy

import pytest
from dspy.utils import DummyLM

from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.programs import STRATEGIES, BasicRAG, CombinedRAG, IterativeRAG, OneShotRAG, ReflectiveRAG
from ragnet.signatures import AnswerStep


@pytest.mark.parametrize("cls, where", [(BasicRAG, "first"), (OneShotRAG, "auto"), (IterativeRAG, "auto"),
                                        (ReflectiveRAG, "auto"), (CombinedRAG, "auto")])
def test_a_step_that_leaves_the_question_open_gets_the_programs_default(cls, where):
    assert cls.default_question_at == where
    assert cls(NoIndex()).answer.question_at == where
    assert cls(NoIndex(), answer=AnswerStep()).answer.question_at == where
    assert cls(NoIndex(), answer=AnswerStep(question_at="both")).answer.question_at == "both"


def test_the_step_given_is_not_changed_and_a_copy_shares_its_lm():
    reader = DummyLM([])
    step = AnswerStep(lm=reader, reasoning=True)
    program = OneShotRAG(NoIndex(), answer=step)
    assert step.question_at == "first" and program.answer.question_at == "auto"  # a copy placed it
    assert program.answer.lm is step.lm and program.answer.lm.lm is reader and program.answer.reasoning
    chosen = AnswerStep(question_at="last", retries=1)
    assert OneShotRAG(NoIndex(), answer=chosen).answer is chosen  # nothing left open: held as given
    assert copy.deepcopy(program).answer.lm is step.lm


def test_a_step_moved_to_another_program_is_laid_out_again():
    moved = BasicRAG(NoIndex(), answer=OneShotRAG(NoIndex()).answer).answer
    assert moved.question_at == "first" and list(moved.predict.signature.input_fields) == ["question", "context"]


def test_retries_left_open_are_the_programs_and_retries_given_are_kept():
    assert IterativeRAG(NoIndex(), retries=3).answer.retries == 3
    program = IterativeRAG(NoIndex(), retries=3, answer=AnswerStep(retries=0))
    assert program.answer.retries == 0 and program.sufficiency.retries == 3
    program.retries = 2  # setting the program's retries later sets every step's
    assert {s.retries for s in program.steps().values()} == {2}


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_the_answer_keywords_are_gone_and_anything_but_a_step_is_refused(name):
    cls = STRATEGIES[name]
    for keyword in ("answer_lm", "answer_reasoning", "answer_question_at"):
        with pytest.raises(TypeError, match=keyword):
            cls(NoIndex(), **{keyword: None})
    with pytest.raises(InputError, match="AnswerStep") as err:
        cls(NoIndex(), answer="local")
    assert err.value.argument == "answer"


def test_answer_settings_are_the_steps():
    import dspy

    reader = DummyLM([])
    program = BasicRAG(NoIndex(), answer=AnswerStep(lm=reader))
    with program.answer_settings():
        assert dspy.settings.lm is reader
    with BasicRAG(NoIndex()).answer_settings():
        assert dspy.settings.lm is not reader
