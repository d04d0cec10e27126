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
