"""Compiling the answer step: short gold-sentence cases, F1 metric, demos installed into any program."""

from __future__ import annotations

import re

from ragnet.optimize.cases import answer_cases
from ragnet.optimize.steps import STEPS, compile_step
from ragnet.programs import BasicRAG, OneShotRAG
from tests.optimize.conftest import FakeIndex, OptimizeLM, make_records


def _gold_reader(prompt: str, n: int, request=None) -> dict:
    """Answers right for even questions only, so bootstrapping has both kinds of traces."""
    number = int(re.findall(r"fact two of q(\d+)", prompt)[-1])
    return {"answer": f"answer {number}" if number % 2 == 0 else "a long pasted sentence from the context",
            "evidence_ids": ["c1"]}


def test_answer_cases_hold_gold_sentences_and_distractors():
    cases = answer_cases(make_records(6), distractors=2, seed=1)
    assert len(cases) == 6
    for case in cases:
        blocks = case.context.split("\n\n")
        assert len(blocks) == 4  # two gold paragraphs' sentences + two distractor leads
        assert "GOLD fact one" in case.context and "GOLD fact two" in case.context
        assert "Filler sentence" not in case.context  # only the gold sentences of gold paragraphs
        assert set(case.inputs().keys()) == {"question", "context"} and case.answer == case.answers[0]


def test_compiled_answer_step_lands_in_any_program(scripted):
    records = make_records(12)
    train, val = answer_cases(records[:8]), answer_cases(records[8:])
    program = OneShotRAG(FakeIndex(records), budget=4000)
    with scripted(OptimizeLM(answer=_gold_reader)):
        result = compile_step(program, "answer", train, valset=val, optimizer="bootstrap", progress=False,
                              log=lambda m: None)
    demos = program.answer.predict.demos
    assert demos and all(d.get("answer") for d in demos)
    bootstrapped = [d for d in demos if d.get("augmented")]
    assert bootstrapped and all(re.fullmatch(r"answer \d+", d["answer"]) for d in bootstrapped)  # only F1 >= 0.8
    assert result.metric == "answer_f1" and STEPS["answer"].strategies[0] == "basic"
    basic = BasicRAG(FakeIndex(records))
    from ragnet.optimize.steps import install_step

    install_step(basic, "answer", result.step_program)
    assert basic.answer.predict.demos == demos


def test_demo_cap_keeps_the_answer_prompt_for_evidence(scripted):
    """The cap is applied before the 'after' score, and the installed step carries exactly the
    capped demos: a first-fit prefix-order subset whose tokens are what the answer prompt grows by."""
    from ragnet.optimize.demos import demo_tokens
    from ragnet.programs.packing import prompt_tokens

    records = make_records(12)
    train, val = answer_cases(records[:8]), answer_cases(records[8:])
    uncapped = OneShotRAG(FakeIndex(records), budget=4000)
    capped = OneShotRAG(FakeIndex(records), budget=4000)
    with scripted(OptimizeLM(answer=_gold_reader)):
        full = compile_step(uncapped, "answer", train, valset=val, optimizer="bootstrap", progress=False,
                            log=lambda m: None)
        before = uncapped.answer.predict.demos
        costs_before = demo_tokens(uncapped.answer.predict)
        cap = costs_before[0] + min(costs_before[1:]) - 1  # room for the first demo and no other
        cut = compile_step(capped, "answer", train, valset=val, optimizer="bootstrap", progress=False,
                           log=lambda m: None, demo_tokens=cap)
    after = capped.answer.predict.demos
    assert full.demos is None and len(before) >= 2 and after == before[:1]
    costs = demo_tokens(capped.answer.predict)
    assert cut.demos == {"predict": {"kept": 1, "dropped": len(before) - 1, "tokens": costs[0],
                                     "tokens_before": sum(costs_before)}}
    empty = {"question": "", "context": ""}
    grown = prompt_tokens(capped.answer.predict, **empty) - prompt_tokens(capped.answer.predict, demos=[], **empty)
    assert grown == costs[0]  # the reader's budget (PromptBudget) sees the demo's tokens
    assert cut.to_dict()["demo_tokens"] == cap and f"(cap {cap}," in cut.table()
    assert STEPS["answer"].demo_tokens == 300


def test_demo_cap_zero_drops_every_demo_and_bad_caps_are_refused(scripted):
    import pytest

    from ragnet.errors import InputError
    from ragnet.optimize.demos import cap_demos

    records = make_records(12)
    train, val = answer_cases(records[:8]), answer_cases(records[8:])
    program = BasicRAG(FakeIndex(records))
    with scripted(OptimizeLM(answer=_gold_reader)):
        result = compile_step(program, "answer", train, valset=val, optimizer="bootstrap", progress=False,
                              log=lambda m: None, demo_tokens=0)
        with pytest.raises(InputError, match="demo-tokens"):
            compile_step(program, "answer", train, valset=val, progress=False, log=lambda m: None, demo_tokens=-1)
    assert program.answer.predict.demos == [] and result.demos["predict"]["kept"] == 0
    with pytest.raises(InputError, match="must be an integer >= 0, got True"):
        cap_demos(program, True)


def test_a_cut_down_demo_set_keeps_the_commoner_answer_kind_first():
    """Bootstrapped demos [yes/no, span, span, span] under a cap with room for one keep a span
    demo, not the first (yes/no) one: the 0.5B reader given only a yes/no demo answered yes or no
    to 64 of 87 questions. Demos that all fit keep the optimizer's order."""
    import dspy

    from ragnet.optimize.demos import cap_demos, demo_tokens
    from ragnet.signatures import AnswerStep

    context = "[c1] Vanessa: an opera in three acts. [c2] Le roi malgré lui: an opera in three acts."
    demos = [dspy.Example(question="Do both operas have three acts?", context=context, answer="yes"),
             dspy.Example(question="Who created Oswald?", context="[c1] Ub Iwerks: created Oswald.", answer="Ub Iwerks"),
             dspy.Example(question="Who signed in 2011?", context="[c1] Wale: signed in 2011.", answer="Wale"),
             dspy.Example(question="Which award?", context="[c1] RICBA: an award.", answer="RICBA")]
    step = AnswerStep()
    step.predict.demos = list(demos)
    costs = demo_tokens(step.predict)
    report = cap_demos(step, max(costs))  # room for any one demo, not two
    assert [d.answer for d in step.predict.demos] == ["Ub Iwerks"] and report["predict"]["kept"] == 1
    step.predict.demos = list(demos)
    cap_demos(step, sum(costs))
    assert step.predict.demos == demos
