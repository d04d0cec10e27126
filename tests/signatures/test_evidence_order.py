"""Where the answer prompt puts the best chunk: next to the question for manuals, rank order otherwise."""

import dspy
import pytest
from dspy.utils import DummyLM

from ragnet import Chunk
from ragnet.errors import InputError
from ragnet.signatures import AnswerStep


def _chunks(sectioned: bool) -> list[Chunk]:
    meta = {"location": {"file": "m.pdf", "headings": ["2 Options"]}} if sectioned else {}
    return [Chunk(id=f"d#{i}", doc_id="d", title=f"T{i}", text=f"Passage {name}.", tokens=3, metadata=meta)
            for i, name in enumerate(["best", "second", "third"])]


def _shown(step: AnswerStep, question: str, chunks: list[Chunk]) -> tuple[list[str], object]:
    lm = DummyLM([{"answer": "x", "evidence_ids": ["c3"]}])
    with dspy.context(lm=lm):
        out = step(question=question, context=chunks)
    prompt = lm.history[-1]["messages"][-1]["content"]
    return sorted(("best", "second", "third"), key=lambda n: prompt.index(f"Passage {n}")), out


def test_a_manual_is_shown_best_last_when_the_question_follows_the_context():
    order, out = _shown(AnswerStep(question_at="last"), "Which default?", _chunks(sectioned=True))
    assert order == ["third", "second", "best"]
    assert out.evidence_ids == ["d#0"]  # [c3] is the best chunk now: ids still name the right chunk


def test_prose_and_a_question_first_keep_rank_order():
    assert _shown(AnswerStep(question_at="last"), "Who?", _chunks(sectioned=False))[0] == ["best", "second", "third"]
    assert _shown(AnswerStep(question_at="first"), "Which?", _chunks(sectioned=True))[0] == ["best", "second", "third"]


def test_the_order_can_be_chosen():
    assert _shown(AnswerStep(question_at="last", evidence_order="rank"), "Which?",
                  _chunks(sectioned=True))[0] == ["best", "second", "third"]
    assert _shown(AnswerStep(question_at="last", evidence_order="nearest"), "Who?",
                  _chunks(sectioned=False))[0] == ["third", "second", "best"]
    with pytest.raises(InputError, match="evidence_order"):
        AnswerStep(evidence_order="best")
