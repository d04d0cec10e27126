"""What other code asks of a program is asked of the program: its LM steps by name and its
maximum LM calls per question (no attribute names or isinstance chains elsewhere)."""

from __future__ import annotations

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.optimize.compile import lm_calls_per_example
from ragnet.programs import BasicRAG, CombinedRAG, IterativeRAG, LMSteps, Loop, OneShotRAG, Reflection, ReflectiveRAG
from ragnet.signatures import Step


@pytest.mark.parametrize("cls, steps", [
    (BasicRAG, {"answer"}),
    (OneShotRAG, {"filter", "crop", "contextualize", "answer"}),
    (IterativeRAG, {"rewrite", "contextualize", "delete", "sufficiency", "answer"}),
    (CombinedRAG, {"rewrite", "contextualize", "sufficiency", "answer"}),
    (ReflectiveRAG, {"sufficiency", "rewrite", "answer"}),
])
def test_steps_name_every_predictor_the_program_runs(cls, steps):
    program = cls(NoIndex())
    assert set(program.steps()) == steps
    for name, step in program.steps().items():
        # one word: the step's name, the attribute that holds it and its trace name agree
        assert isinstance(step, Step) and getattr(program, name) is step and step.name == name
    assert {id(s.predict) for s in program.steps().values()} == {id(p) for p in program.predictors()}
    assert {name for name, _ in program.named_predictors()} == {f"{s}.predict" for s in steps}


def test_set_step_installs_the_compiled_predictor_and_keeps_the_switch():
    program = IterativeRAG(NoIndex(), lm_steps=LMSteps(sufficiency=False), retries=2)
    compiled = program.steps()["sufficiency"].deepcopy()
    compiled.predict.demos = [dspy.Example(question="q", context="c", verdict="Sufficient")]
    program.set_step("sufficiency", compiled)
    step = program.sufficiency
    assert step.predict.demos == compiled.predict.demos and step.predict is not compiled.predict
    assert step.enabled is False and step.retries == 2
    with pytest.raises(InputError, match="has no crop step"):
        program.set_step("crop", compiled)


def test_the_filter_switch_is_named_like_its_step():
    program = OneShotRAG(NoIndex(), lm_steps=LMSteps(filter=True))
    assert program.filter.enabled is True and OneShotRAG(NoIndex()).filter.enabled is False
    with pytest.raises(TypeError, match="llm_filter"):  # one name per switch
        LMSteps(llm_filter=True)


def test_max_lm_calls_follows_the_switches():
    assert BasicRAG(NoIndex()).max_lm_calls() == 1
    assert OneShotRAG(NoIndex()).max_lm_calls() == 1
    assert OneShotRAG(NoIndex(), lm_steps=LMSteps(filter=True, crop=True, max_crops=4)).max_lm_calls() == 6
    assert OneShotRAG(NoIndex(), lm_steps=LMSteps(contextualize=True)).max_lm_calls() == 2
    assert IterativeRAG(NoIndex(), loop=Loop(max_turns=3)).max_lm_calls() == 3 * 4 + 1
    assert IterativeRAG(NoIndex(), loop=Loop(max_turns=3), lm_steps=LMSteps(delete=False)).max_lm_calls() == 3 * 3 + 1
    assert CombinedRAG(NoIndex(), loop=Loop(max_turns=2)).max_lm_calls() == 2 * 3 + 1
    assert ReflectiveRAG(NoIndex(), reflection=Reflection(max_reflections=2)).max_lm_calls() == 3 + 2 + 1
    assert lm_calls_per_example(CombinedRAG(NoIndex(), loop=Loop(max_turns=2))) == 7


def test_retries_reach_every_step_and_are_checked():
    program = IterativeRAG(NoIndex(), retries=2)
    assert {s.retries for s in program.steps().values()} == {2}
    program.retries = 0
    assert {s.retries for s in program.steps().values()} == {0}
    with pytest.raises(InputError, match="retries"):
        program.retries = -1
