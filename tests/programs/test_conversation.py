"""Follow-up questions (:mod:`ragnet.programs.conversation`): the condense step's rewrite reaches
the reader, a refused rewrite falls back to the joined question, the conversation's terms and the
previous answer's chunks reach the search, and without history nothing changes."""

from __future__ import annotations

import pytest

from ragnet.errors import InputError
from ragnet.programs import BasicRAG, OneShotRAG
from ragnet.programs.conversation import FollowUp, Turn, as_turns, history_text, signals_search
from ragnet.signatures.condense import asked_terms, joined_question, points_back
from tests.programs.scripted import ProgramLM

EARLIER = [{"question": "What was the population of Aldermoor in 2021?", "answer": "437,000\n\nSources:\n[1] x"}]


def _question_in(prompt: str) -> str:
    return prompt.rsplit("[[ ## question ## ]]", 1)[1].split("[[ ##", 1)[0].strip()


def test_the_standalone_question_is_what_the_program_searches_and_the_reader_reads(yearbook_index, run_with):
    engine = ProgramLM(condense=lambda p, n: {"standalone_question": "How many births did Brightwater record in 2021?"})
    with run_with(engine):
        pred = FollowUp(BasicRAG(yearbook_index, k=3))(question="And births in Brightwater?", history=EARLIER)
    assert engine.steps() == ["condense", "answer"]
    condense_prompt, answer_prompt = engine.calls[0][1], engine.calls[1][1]
    assert "User: What was the population of Aldermoor in 2021?" in condense_prompt
    assert "Assistant: 437,000" in condense_prompt and "Sources:" not in condense_prompt.split("## history ## ]]")[-1]
    assert _question_in(answer_prompt) == "How many births did Brightwater record in 2021?"
    assert pred.standalone_question == "How many births did Brightwater record in 2021?"
    follow = next(e for e in pred.trace if e["step"] == "follow_up")
    assert follow["question"] == "And births in Brightwater?" and "population" in follow["terms"].split()
    search = next(e for e in pred.trace if e["step"] == "search")
    assert search["query"] == "How many births did Brightwater record in 2021?"  # the reader's question is kept
    assert set(follow["carried"]) & set(search["retrieved"])  # the previous question's best chunk joined


@pytest.mark.parametrize("rewrite", [
    "What was the population of Aldermoor in 2021?",  # restates the earlier question: births, Brightwater gone
    "And births in Brightwater in its year?",  # still points back
])
def test_a_refused_rewrite_falls_back_to_the_joined_question(yearbook_index, run_with, rewrite):
    engine = ProgramLM(condense=lambda p, n: {"standalone_question": rewrite})
    question = "And births in Brightwater in its year?" if "its" in rewrite else "And births in Brightwater?"
    with run_with(engine):
        pred = FollowUp(BasicRAG(yearbook_index, k=3))(question=question, history=EARLIER)
    assert engine.steps() == ["condense", "condense", "answer"]  # refused, retried once, then the fallback
    expected = joined_question(question, EARLIER[0]["question"])
    assert pred.standalone_question == expected and _question_in(engine.calls[-1][1]) == expected
    assert any(e["step"] == "lm_step" and e["name"] == "condense" and e["outcome"] == "fallback" for e in pred.trace)


def test_without_history_a_follow_up_program_is_the_program(yearbook_index, run_with):
    question = "How many births did Brightwater record in 2021?"
    with run_with(ProgramLM()) as plain:
        alone = BasicRAG(yearbook_index, k=3)(question=question)
    with run_with(ProgramLM()) as wrapped:
        followed = FollowUp(BasicRAG(yearbook_index, k=3))(question=question, history=[])
    assert wrapped.steps() == ["answer"] and wrapped.calls[0][1] == plain.calls[0][1]
    assert followed.context == alone.context and "standalone_question" not in followed


def test_condense_off_asks_the_joined_question_with_no_lm_call(yearbook_index, run_with):
    with run_with(ProgramLM()) as engine:
        pred = FollowUp(OneShotRAG(yearbook_index), condense=False)(question="And in 2022?", history=EARLIER)
    assert "condense" not in engine.steps()
    assert pred.standalone_question == "And in 2022? (following: What was the population of Aldermoor in 2021?)"
    hits = [e["retrieved"] for e in pred.trace if e["step"] == "search"][0]
    assert any("Aldermoor" in yearbook_index.chunk(h).title and "2022" in yearbook_index.chunk(h).title for h in hits)


def test_a_follow_up_alone_is_searched_with_the_earlier_questions_terms(yearbook_index):
    from ragnet.programs.conversation import _SIGNALS, FollowUpSignals

    token = _SIGNALS.set(FollowUpSignals("aldermoor population", ()))
    try:
        hits = signals_search(yearbook_index, "And in 2022?", k=3)
    finally:
        _SIGNALS.reset(token)
    assert hits[0].id in {h.id for h in yearbook_index.search("And in 2022? aldermoor population", k=3)}
    assert any("Aldermoor" in h.title for h in hits)


def test_cited_chunks_of_the_previous_answer_join_the_candidates(yearbook_index, run_with):
    cited = yearbook_index.search("Corvale tourism 2020 hotel nights", k=1)[0].id
    history = [{"question": "Which city?", "answer": "Corvale", "citations": [{"id": cited, "title": "t"}]}]
    with run_with(ProgramLM(condense=lambda p, n: {"standalone_question": "How many births in Aldermoor in 2021?"})):
        pred = FollowUp(BasicRAG(yearbook_index, k=5))(question="births in Aldermoor in 2021?", history=history)
    search = next(e for e in pred.trace if e["step"] == "search")
    assert search["retrieved"][-1] == cited and len(search["retrieved"]) == 5


def test_signals_search_outside_a_follow_up_is_the_index_search(yearbook_index):
    hits = signals_search(yearbook_index, "births in Aldermoor", k=4)
    assert [h.id for h in hits] == [h.id for h in yearbook_index.search("births in Aldermoor", k=4)]


def test_turns_and_the_history_the_condense_step_reads():
    turns = as_turns(["First?", {"question": "Second?", "answer": "B", "citations": ["d#1", {"id": "d#2"}]}, {"question": " "}])
    assert turns == [Turn("First?"), Turn("Second?", "B", ("d#1", "d#2"))]
    long = [Turn(f"Question {i}?", "x" * 500) for i in range(5)]
    text = history_text(long)
    assert text.startswith("User: Question 2?") and text.count("User:") == 3 and "x" * 301 not in text
    with pytest.raises(InputError, match="history"):
        as_turns([42])
    with pytest.raises(InputError, match="more than"):
        as_turns(["q?"] * 51)
    assert asked_terms("What about its default value?") == {"default", "value"}
    assert points_back("What did they say?") and not points_back("What is the default?")
