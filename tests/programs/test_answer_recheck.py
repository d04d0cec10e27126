"""answer_recheck: an answer that only repeats the question's own entity is asked once more."""

from __future__ import annotations

import pytest

from ragnet.programs import BasicRAG, IterativeRAG, OneShotRAG
from ragnet.signatures.answer import echoes_question
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"


def _reader(*answers: str) -> ProgramLM:
    """Answers the n-th answer call (from 1) with ``answers[n - 1]`` (the last one repeats)."""
    return ProgramLM(answer=lambda p, n: {"answer": answers[min(n - 1, len(answers) - 1)], "evidence_ids": ["c1"]})


def test_an_echoing_answer_is_asked_again_and_the_new_answer_kept(yearbook_index, run_with):
    with run_with(_reader("Aldermoor", "12,000")) as lm:
        pred = BasicRAG(yearbook_index, k=3)(question=Q)
    (first, second) = [prompt for step, prompt in lm.calls if step == "answer"]
    assert '(Not "Aldermoor"' not in first and '(Not "Aldermoor": the question itself names that.' in second
    assert pred.answer == "12,000"
    (event,) = [e for e in pred.trace if e["step"] == "answer_recheck"]
    assert event == {**event, "echoed": "Aldermoor", "answer": "12,000", "kept": True}
    assert pred.usage["lm_calls"] == 2


def test_a_second_echo_keeps_the_first_answer(yearbook_index, run_with):
    with run_with(_reader("Aldermoor", "population")) as lm:
        pred = BasicRAG(yearbook_index, k=3)(question=Q)
    assert len([1 for step, _ in lm.calls if step == "answer"]) == 2
    assert pred.answer == "Aldermoor"
    (event,) = [e for e in pred.trace if e["step"] == "answer_recheck"]
    assert event["kept"] is False and event["answer"] == "population"


def test_a_failed_recheck_keeps_the_first_answer(yearbook_index, run_with):
    answers = iter([{"answer": "Aldermoor", "evidence_ids": ["c1"]}])
    with run_with(ProgramLM(answer=lambda p, n: next(answers, {"nothing": "useful"}))):
        pred = BasicRAG(yearbook_index, k=3, retries=0)(question=Q)
    assert pred.answer == "Aldermoor"
    (event,) = [e for e in pred.trace if e["step"] == "answer_recheck"]
    assert event["kept"] is False


@pytest.mark.parametrize("answer", ["12,000", "about 12,000 people"])
def test_an_answer_that_does_not_echo_costs_one_call(yearbook_index, run_with, answer):
    with run_with(_reader(answer)) as lm:
        pred = OneShotRAG(yearbook_index, budget=900, sentences=True)(question=Q)
    assert [step for step, _ in lm.calls] == ["answer"] and pred.answer == answer
    assert not [e for e in pred.trace if e["step"] == "answer_recheck"]


def test_recheck_off_keeps_the_echo(yearbook_index, run_with):
    with run_with(_reader("Aldermoor", "12,000")) as lm:
        pred = IterativeRAG(yearbook_index, max_turns=1, answer_recheck=False)(question=Q)
    assert len([1 for step, _ in lm.calls if step == "answer"]) == 1 and pred.answer == "Aldermoor"


def test_the_upper_bound_of_lm_calls_counts_the_recheck(yearbook_index):
    assert BasicRAG(yearbook_index).max_lm_calls() == 2
    assert BasicRAG(yearbook_index, answer_recheck=False).max_lm_calls() == 1


@pytest.mark.parametrize("question, answer, echo", [
    ("What government position was held by the woman who portrayed Corliss Archer?", "Corliss Archer", True),
    ("What kind of comedian was Michael McIntyre's father?", "comedian", True),
    ("What kind of comedian was Michael McIntyre's father?", "Canadian comedian", False),
    ("Are Freakonomics and In the Realm of the Hackers both American documentaries?", "Freakonomics", False),
    ("Between Harvey Pekar and Denise Levertov who was born earlier?", "Denise Levertov", False),
    ("Which genus has more species, Bactris and Epigaea?", "Bactris", False),
    ("Who directed Kiss and Tell?", "the", False),           # filler words alone are not an entity
    ("Who directed Kiss and Tell?", "", False),
])
def test_what_counts_as_an_echo(question, answer, echo):
    assert echoes_question(question, answer) is echo
