"""ragnet.core.answer_check: answers that name a place instead of what it says are ruled out without an LM."""

from __future__ import annotations

import pytest

from ragnet.core.answer_check import heading_name, rejection

HEADINGS = ["2 Invoking", "2.7 Core options", "2.7.3. Error-related Options", "Appendix A Licence"]
Q = "Which option makes the tool stop at the first error?"


@pytest.mark.parametrize("answer, why", [
    ("2.7.3", "a section number"),
    ("2.7.3.", "a section number"),
    ("Error-related Options", "a heading"),
    ("2.7.3. Error-related Options", "a heading"),
    ("Core options › Error-related Options", "a heading"),
    ("the first error", "the question's own words"),
    ("Tool manual", "a document title"),
])
def test_a_place_a_title_or_the_questions_words_are_never_the_answer(answer, why):
    assert rejection(answer, Q, headings=HEADINGS, titles=["Tool manual"], body="Use --fatal to stop.") == why


@pytest.mark.parametrize("answer, question, body", [
    ("--fatal", Q, "Use --fatal to stop."),
    ("2", "How many passes does it make?", ""),  # a plain integer may be a value, even where chapter 2 exists
    ("1.5", "Which version added it?", "Added in 1.5."),  # a dotted number no heading has
    ("2.7", "In which section are core options described?", ""),  # the question asks for a place
    ("Licence", "What does the tool print with --version?", "It prints its Licence and exits."),  # also content
    ("yes", "Does the first error stop the tool?", ""),
    ("Jaws", "Which came out first, Jaws or Alien?", ""),
])
def test_answers_the_text_states_or_the_question_asks_for_are_kept(answer, question, body):
    assert rejection(answer, question, headings=HEADINGS, titles=["Tool manual"], body=body) is None


def test_a_heading_loses_only_its_number():
    assert [heading_name(h) for h in HEADINGS] == ["Invoking", "Core options", "Error-related Options", "Licence"]
    assert heading_name("42") == "42"  # a heading that is only a number keeps it
