"""AnswerStep(question_at=...): the answer prompt shows the question before the context, after it, both, or
chosen per question ("auto")."""

from __future__ import annotations

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.programs import BasicRAG, OneShotRAG
from ragnet.programs.packing import PromptBudget
from ragnet.programs.persist import load_program, save_program
from ragnet.programs.registry import answer_layout, build_program
from ragnet.signatures import AnswerStep
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"
OPTIONS_Q = "Which had more people in 2021, Aldermoor or Brindle?"


def test_the_step_places_the_question_and_keeps_everything_else():
    plain, last, both = AnswerStep(), AnswerStep(question_at="last"), AnswerStep(question_at="both")
    assert list(plain.predict.signature.input_fields) == ["question", "context"] and plain.question_at == "first"
    assert list(last.predict.signature.input_fields) == ["context", "question"] and last.question_at == "last"
    assert list(both.predict.signature.input_fields) == ["question_preview", "context", "question"]
    assert both.question_at == "both"
    for step in (last, both):
        assert step.predict.signature.output_fields.keys() == plain.predict.signature.output_fields.keys()
        assert step.predict.signature.instructions == plain.predict.signature.instructions
    reasoning = AnswerStep(question_at="both", reasoning=True)
    assert reasoning.question_at == "both" and reasoning.reasoning


def test_an_unknown_layout_is_refused_naming_the_argument():
    with pytest.raises(InputError, match="first, last, both, auto") as err:
        AnswerStep(question_at="middle")
    assert err.value.argument == "question_at"


def _fields_of_last_user_message(prompt: str) -> str:
    return prompt[prompt.rindex("[[ ## context ## ]]") - 400:]


@pytest.mark.parametrize("where", ["first", "last", "both"])
def test_the_prompt_puts_the_question_where_asked_and_the_trace_says_so(yearbook_index, run_with, where):
    with run_with(ProgramLM()) as lm:
        pred = BasicRAG(yearbook_index, k=3, answer=AnswerStep(question_at=where))(question=Q)
    ((step, prompt),) = lm.calls
    user = _fields_of_last_user_message(prompt)
    q_at, c_at = user.rindex("[[ ## question ## ]]"), user.rindex("[[ ## context ## ]]")
    assert (q_at > c_at) is (where != "first")
    assert user[q_at:].split("\n", 2)[1] == Q
    preview = user.rfind("[[ ## question_preview ## ]]")
    assert (preview != -1) is (where == "both")
    if where == "both":  # the preview shows the same question, before the context
        assert preview < c_at and user[preview:].split("\n", 2)[1] == Q
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event.get("question_at", "first") == where


def test_moving_the_question_costs_no_evidence_and_repeating_it_costs_the_question(yearbook_index):
    plain = PromptBudget(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="first")).answer.predict, Q, 900)
    last = PromptBudget(OneShotRAG(yearbook_index).answer.predict, Q, 900)
    both = PromptBudget(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="both")).answer.predict, Q, 900)
    assert last.overhead == plain.overhead
    # the second copy of the question and its field header come out of the evidence's share
    assert plain.overhead + 10 < both.overhead < plain.overhead + 60
    chunks = yearbook_index.search(Q, k=2)
    assert both.total(chunks) - last.total(chunks) == both.overhead - last.overhead  # the question, counted twice


def test_the_budgeted_strategies_choose_the_layout_per_question_by_default_and_the_others_put_it_first(yearbook_index):
    """The one-shot and the agents (budgeted, or reading a long context) choose per question; basic puts it first."""
    layouts = {spec: build_program(spec, yearbook_index).answer.question_at
               for spec in ("basic", "oneshot", "oneshot:sentences", "combined", "combined:sentences",
                            "iterative", "reflective", "oneshot:qlast", "combined:qlast")}
    assert layouts == {"basic": "first", "oneshot": "auto", "oneshot:sentences": "auto", "combined": "auto",
                       "combined:sentences": "auto", "iterative": "auto", "reflective": "auto",
                       "oneshot:qlast": "last", "combined:qlast": "last"}


def test_presets_and_every_strategy_take_the_option(yearbook_index):
    assert build_program("basic:qlast", yearbook_index).answer.question_at == "last"
    assert build_program("basic:qboth", yearbook_index).answer.question_at == "both"
    oneshot = build_program("oneshot:sentences+qlast", yearbook_index, budget=1000)
    assert oneshot.answer.question_at == "last" and oneshot.pack.sentences is True
    assert build_program("combined:sentences+qlast", yearbook_index, budget=1000).answer.question_at == "last"
    for spec in ("oneshot:qfirst", "oneshot:sentences+qfirst", "combined:qfirst", "combined:sentences+qfirst",
                 "oneshot:qboth", "oneshot:sentences+qboth", "combined:qboth", "combined:sentences+qboth",
                 "combined:qfirst+sentences", "iterative:no-delete+sentences+qboth", "reflective:qfirst"):
        program = build_program(spec, yearbook_index, budget=1000)
        assert program.answer.question_at == ("first" if "qfirst" in spec else "both"), spec
        assert program.pack.sentences is ("sentences" in spec), spec
    for spec in ("iterative", "reflective"):
        assert build_program(spec, yearbook_index, answer=AnswerStep(question_at="both")).answer.question_at == "both"


def test_compiled_state_loads_only_into_the_same_layout(yearbook_index, tmp_path):
    first = save_program(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="first")), tmp_path / "first.json")
    assert load_program(build_program("oneshot:qfirst", yearbook_index), first).answer.question_at == "first"
    # demos and instructions were made for the other layout: the error says which preset loads it
    first_hint = r"question before the context .*AnswerStep\(question_at='first'\) \(the qfirst preset, e.g. oneshot:sentences\+qfirst\)"
    with pytest.raises(InputError, match=first_hint) as err:
        load_program(OneShotRAG(yearbook_index), first)
    assert err.value.path == str(first)
    last = save_program(BasicRAG(yearbook_index, answer=AnswerStep(question_at="last")), tmp_path / "last.json")
    with pytest.raises(InputError, match=r"question after the context .*AnswerStep\(question_at='last'\) or question_at='auto' \(the qlast preset, e.g. basic"):
        load_program(BasicRAG(yearbook_index), last)
    both = save_program(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="both")), tmp_path / "both.json")
    assert load_program(build_program("oneshot:qboth", yearbook_index), both).answer.question_at == "both"
    with pytest.raises(InputError, match=r"before and after the context .*this program puts it after.*'both'\) \(the qboth preset"):
        load_program(OneShotRAG(yearbook_index), both)
    with pytest.raises(InputError, match=r"question after the context .*this program puts it before and after"):
        load_program(build_program("basic:qboth", yearbook_index), last)


def test_demos_without_the_preview_are_shown_with_it(yearbook_index, run_with):
    """A reader compiled from labeled cases (question and context only) still shows complete demos."""
    program = OneShotRAG(yearbook_index, answer=AnswerStep(question_at="both"))
    program.answer.predict.demos = [dspy.Example(question="Who founded Brindle?", context="[c1] Brindle: founded by Ada.",
                                                 answer="Ada", evidence_ids=["c1"])]
    overhead = PromptBudget(program.answer.predict, Q, 900).overhead  # counted as the prompt will show them
    with run_with(ProgramLM()) as lm:
        program(question=Q)
    prompt = lm.calls[-1][1]
    assert PromptBudget(program.answer.predict, Q, 900).overhead == overhead
    assert "Not supplied" not in prompt
    assert prompt.count("Who founded Brindle?") == 2
    assert program.answer.predict.demos[0].question_preview == "Who founded Brindle?"


def _answer_event(pred):
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    return event


def test_auto_shows_the_preview_only_for_a_question_that_names_two_options(yearbook_index, run_with):
    program = build_program("oneshot:sentences+qauto", yearbook_index, budget=900)
    step = program.answer
    assert step.question_at == "auto" and answer_layout("oneshot:sentences+qauto")["question_at"] == "auto"
    assert list(step.predict.signature.input_fields) == ["context", "question"]  # a question-last reader's state
    for question, where in ((Q, "last"), (OPTIONS_Q, "both")):
        assert step.layout_for(question) == where
        with run_with(ProgramLM()) as lm:
            pred = program(question=question)
        user = _fields_of_last_user_message(lm.calls[-1][1])
        assert ("[[ ## question_preview ## ]]" in user) is (where == "both")
        assert user[user.rindex("[[ ## question ## ]]"):].split("\n", 2)[1] == question
        assert _answer_event(pred)["question_at"] == where and _answer_event(pred)["question_at_rule"] == "auto"
        # the per-question signature never sticks to the predictor (its compiled state stays question-last)
        assert list(step.predict.signature.input_fields) == ["context", "question"]


def test_auto_budgets_each_question_as_the_layout_it_sends(yearbook_index):
    auto = OneShotRAG(yearbook_index, answer=AnswerStep(question_at="auto")).answer
    fixed = {where: OneShotRAG(yearbook_index, answer=AnswerStep(question_at=where)).answer.predict for where in ("last", "both")}
    for question, where in ((Q, "last"), (OPTIONS_Q, "both")):
        chosen = PromptBudget(auto.predict, question, 900, signature=auto.signature_for(question))
        same = PromptBudget(fixed[where], question, 900)
        chunks = yearbook_index.search(question, k=2)
        assert (chosen.overhead, chosen.total(chunks)) == (same.overhead, same.total(chunks))


def test_auto_fills_the_preview_into_compiled_demos_only_where_it_shows_one(yearbook_index, run_with):
    program = OneShotRAG(yearbook_index, answer=AnswerStep(question_at="auto"))
    demo = dspy.Example(question="Who founded Brindle?", context="[c1] Brindle: founded by Ada.",
                        answer="Ada", evidence_ids=["c1"])
    program.answer.predict.demos = [demo]
    for question, copies in ((Q, 1), (OPTIONS_Q, 2)):
        with run_with(ProgramLM()) as lm:
            program(question=question)
        prompt = lm.calls[-1][1]
        assert "Not supplied" not in prompt and prompt.count("Who founded Brindle?") == copies
    assert program.answer.predict.demos == [demo]  # the compiled demos are not rewritten


def test_an_auto_reader_is_a_question_last_reader_when_saved_and_loaded(yearbook_index, tmp_path):
    auto = save_program(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="auto")), tmp_path / "auto.json")
    assert load_program(build_program("oneshot:qlast", yearbook_index), auto).answer.question_at == "last"
    last = save_program(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="last")), tmp_path / "last.json")
    assert load_program(build_program("oneshot:qauto", yearbook_index), last).answer.question_at == "auto"
    both = save_program(OneShotRAG(yearbook_index, answer=AnswerStep(question_at="both")), tmp_path / "both.json")
    with pytest.raises(InputError, match=r"AnswerStep\(question_at='both'\) \(the qboth preset"):
        load_program(build_program("oneshot:qauto", yearbook_index), both)


def test_a_loaded_compiled_reader_shows_its_demos_with_the_preview(yearbook_index, run_with, tmp_path):
    """Demos loaded from a compiled program's JSON are plain dicts; a question that names two
    options (the preview layout) must still show them, not fail (found on the real-document dev set)."""
    from ragnet.programs.persist import load_program, save_program

    compiled = build_program("oneshot:sentences+qauto", yearbook_index, budget=900)
    compiled.answer.predict.demos = [dspy.Example(question="Who founded Brindle?", context="[c1] Brindle: founded by Ada.",
                                                  answer="Ada", evidence_ids=["c1"])]
    path = save_program(compiled, tmp_path / "reader.json")
    program = load_program(build_program("oneshot:sentences+qauto", yearbook_index, budget=900), path)
    assert all(isinstance(d, dict) for d in program.answer.predict.demos)  # what DSPy's load gives
    with run_with(ProgramLM()) as lm:
        pred = program(question=OPTIONS_Q)
    assert not pred.trace or not [e for e in pred.trace if e.get("error")]
    user = _fields_of_last_user_message(lm.calls[-1][1])
    assert "[[ ## question_preview ## ]]" in user
    assert lm.calls[-1][1].count("Who founded Brindle?") == 2 and "Not supplied" not in lm.calls[-1][1]
