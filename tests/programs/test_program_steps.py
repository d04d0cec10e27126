"""What other code asks of a program is asked of the program: its LM steps by name and its
maximum LM calls per question (no attribute names or isinstance chains elsewhere)."""

from __future__ import annotations

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.eval.indexes import NoIndex
from ragnet.optimize.compile import lm_calls_per_example
from ragnet.programs import BasicRAG, CombinedRAG, IterativeRAG, OneShotRAG, ReflectiveRAG


@pytest.mark.parametrize("cls, steps", [
    (BasicRAG, {"answer"}),
    (OneShotRAG, {"filter", "crop", "answer"}),
    (IterativeRAG, {"rewrite", "contextualize", "delete", "sufficiency", "answer"}),
    (CombinedRAG, {"rewrite", "contextualize", "sufficiency", "answer"}),
    (ReflectiveRAG, {"sufficiency", "rewrite", "answer"}),
])
def test_steps_name_every_predictor_the_program_runs(cls, steps):
    program = cls(NoIndex())
    assert set(program.steps()) == steps
    assert all(isinstance(p, dspy.Predict) for p in program.steps().values())
    assert {id(p) for p in program.steps().values()} <= {id(p) for p in program.predictors()}


def test_set_step_replaces_the_predictor_the_program_calls():
    program = IterativeRAG(NoIndex())
    compiled = program.steps()["sufficiency"].deepcopy()
    compiled.demos = [dspy.Example(question="q", context="c", verdict="Sufficient")]
    program.set_step("sufficiency", compiled)
    assert program.steps()["sufficiency"] is compiled and program.assess is compiled
    with pytest.raises(InputError, match="has no crop step"):
        program.set_step("crop", compiled)


def test_max_lm_calls_follows_the_switches():
    assert BasicRAG(NoIndex()).max_lm_calls() == 1
    assert OneShotRAG(NoIndex()).max_lm_calls() == 1
    assert OneShotRAG(NoIndex(), llm_filter=True, crop=True, max_crops=4).max_lm_calls() == 6
    assert IterativeRAG(NoIndex(), max_turns=3).max_lm_calls() == 3 * 4 + 1
    assert IterativeRAG(NoIndex(), max_turns=3, delete=False).max_lm_calls() == 3 * 3 + 1
    assert CombinedRAG(NoIndex(), max_turns=2).max_lm_calls() == 2 * 3 + 1
    assert ReflectiveRAG(NoIndex(), max_reflections=2).max_lm_calls() == 3 + 2 + 1
    assert lm_calls_per_example(CombinedRAG(NoIndex(), max_turns=2)) == 7
