"""Specs compose presets with "+": strategy presets per strategy, answer presets for every strategy;
unknown parts and presets that disagree are refused naming the argument; ``build_program`` composes
the answer step (``reader`` is its LM)."""

from __future__ import annotations

import pytest
from dspy.utils import DummyLM

from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.programs import STRATEGIES
from ragnet.programs.registry import ANSWER_PRESETS, PRESETS, answer_layout, build_program, parse_spec, spec_options
from ragnet.signatures import AnswerStep


def test_a_spec_is_a_strategy_and_its_presets_joined_by_plus():
    assert parse_spec("oneshot") == ("oneshot", ())
    assert parse_spec(" oneshot:sentences+qlast ") == ("oneshot", ("sentences", "qlast"))
    assert spec_options("iterative:no-delete+sentences+cot") == (
        "iterative", {"lm_steps.delete": False, "pack.sentences": True}, {"reasoning": True})


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_answer_presets_apply_to_every_strategy(strategy):
    program = build_program(f"{strategy}:cot+qboth", NoIndex())
    assert program.answer.reasoning is True and program.answer.question_at == "both"


def test_strategy_presets_and_answer_presets_never_share_a_name_and_no_cross_product_is_spelled():
    for strategy, presets in PRESETS.items():
        assert not set(presets) & set(ANSWER_PRESETS), strategy
        assert not [p for p in presets if any(p.endswith(f"-{a}") for a in ANSWER_PRESETS)], strategy
    for gone in ("oneshot:sentences-qlast", "oneshot:sentences-cot", "combined:sentences-qauto",
                 "iterative:no-delete-sentences"):
        with pytest.raises(InputError):
            parse_spec(gone)


@pytest.mark.parametrize("spec, words", [
    ("nope", "unknown strategy 'nope'"),
    ("oneshot:nope", "unknown preset 'nope' in 'oneshot:nope'; presets for oneshot: no-filter"),
    ("oneshot:sentences+", "unknown preset ''"),
    ("basic:sentences", "presets for basic: k3, k10; for every strategy: cot, qfirst, qlast, qboth, qauto"),
    ("oneshot:qlast+qfirst", "presets 'qlast' and 'qfirst' of 'oneshot:qlast+qfirst' set question_at to 'last' and 'first'"),
    ("basic:k3+k10", "set k to 3 and 10"),
])
def test_unknown_parts_and_disagreeing_presets_are_refused_naming_the_argument(spec, words):
    with pytest.raises(InputError) as err:
        build_program(spec, NoIndex())
    assert words in str(err.value) and err.value.argument == "strategy"


def test_presets_that_disagree_are_refused_before_anything_is_built():
    from ragnet.eval.run.strategy_plan import plan_strategies

    with pytest.raises(InputError, match="set question_at") as err:
        plan_strategies(["basic", "oneshot:qlast+qfirst"])
    assert err.value.argument == "strategy"
    assert [r.label for r in plan_strategies(["oneshot:sentences+qlast"], budget=1000)] == ["oneshot:sentences+qlast@1000"]


def test_presets_that_agree_compose():
    program = build_program("iterative:plain+no-delete", NoIndex())
    assert program.delete.enabled is False and program.loop.fallback is False


def test_the_reader_becomes_the_answer_steps_lm_and_overrides_win_over_presets():
    reader = DummyLM([])
    program = build_program("oneshot:sentences+qlast", NoIndex(), budget=1000, reader=reader, sentences=False)
    assert program.answer.lm.lm is reader and program.answer.question_at == "last"
    assert program.pack.sentences is False and program.budget == 1000
    assert build_program("basic", NoIndex(), budget=1000).answer.lm is None  # no budget on basic, no reader


def test_an_answer_step_given_replaces_the_composed_one_and_may_not_be_set_twice():
    program = build_program("oneshot", NoIndex(), answer=AnswerStep(question_at="first"))
    assert program.answer.question_at == "first"
    assert answer_layout("oneshot", answer=AnswerStep(question_at="first")) == {"question_at": "first", "reasoning": False, "evidence_order": "auto"}
    assert answer_layout("oneshot", answer=AnswerStep(reasoning=True)) == {"question_at": "auto", "reasoning": True, "evidence_order": "auto"}
    for spec, reader in (("oneshot:qlast", None), ("oneshot", DummyLM([]))):
        with pytest.raises(InputError, match="set them in one place") as err:
            build_program(spec, NoIndex(), reader=reader, answer=AnswerStep())
        assert err.value.argument == "answer"


def test_an_override_the_strategy_does_not_take_is_refused():
    with pytest.raises(InputError, match="basic") as err:
        build_program("basic", NoIndex(), budget_tokens=3)
    assert err.value.argument == "strategy"


def test_eval_runs_auto_as_ask_does_for_the_reader():
    """``ragnet eval --strategies basic,auto``: auto is the reader's recommended spec at its
    budget, a budget given wins, a sweep runs it at each; without a reader it cannot be planned."""
    from ragnet.eval.run.strategy_plan import plan_strategies
    from ragnet.programs.registry import recommended_strategy

    local, other = recommended_strategy("local"), recommended_strategy("openai/gpt-4o-mini")
    assert [(r.label, r.budget) for r in plan_strategies(["auto", "basic"], recommended=local)] == [
        ("oneshot:sentences+hops@1000", 1000), ("basic", None)]
    assert [r.label for r in plan_strategies(["AUTO"], recommended=other)] == ["oneshot@4000"]
    assert [r.label for r in plan_strategies(["auto", "oneshot"], budget=2000, recommended=local)] == [
        "oneshot:sentences+hops@2000", "oneshot@2000"]
    assert [r.label for r in plan_strategies(["auto"], budgets=[500, 1000], recommended=local)] == [
        "oneshot:sentences+hops@500", "oneshot:sentences+hops@1000"]
    with pytest.raises(InputError, match="reader") as err:
        plan_strategies(["auto"])
    assert err.value.argument == "strategies"
