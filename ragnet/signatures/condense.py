"""Condense: a follow-up question and the conversation before it, made one standalone question.

A chat client sends the whole conversation; ragnet answers from the documents, so a follow-up
such as "and its default?" must first name what "it" is. The step is shown the earlier turns
(questions and answers, oldest first) and the follow-up, and writes the question a reader could
answer with no conversation at all. Its validator refuses an empty rewrite, one that drops a
term the follow-up itself asked about (the thing asked for must survive the rewrite), and one that
still points back ("it", "its", "they") where the follow-up did; a refused or failed call falls
back to :func:`joined_question`, which costs no LM call: the follow-up with the previous question
beside it, so the reader still sees what it refers to.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> lm = DummyLM([{"standalone_question": "What is the long form of flex's -d option?"}])
    >>> with dspy.context(lm=lm):
    ...     out = CondenseStep()(question="And its long form?",
    ...                          history="User: What does flex's -d option do?\\nAssistant: debug mode")
    >>> out.standalone_question, out.fallback
    ("What is the long form of flex's -d option?", False)
    >>> joined_question("And its long form?", "What does flex's -d option do?")
    "And its long form? (following: What does flex's -d option do?)"
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import dspy

from ragnet.signatures.rewrite import _key, _terms
from ragnet.signatures.step import Step, StepOutputError

__all__ = ["Condense", "CondenseStep", "asked_terms", "condense_validator", "joined_question", "points_back"]

#: Words of a follow-up that point back at the conversation, never a term the rewrite must keep.
_POINTERS = frozenset("it its it's this that these those them they their there same one ones former latter "
                      "about else also too again then so what's how's and".split())


_POSSESSIVE = re.compile(r"['’]s\b")
_BACK = re.compile(r"\b(?:it|its|it['’]s|they|them|their)\b", re.I)


class Condense(dspy.Signature):
    """Rewrite the follow-up question as one standalone question.

    The conversation so far is shown, oldest turn first. The follow-up may point back at it ("it",
    "that option", "and the default?"). Write the question the user is asking now, replacing every
    such reference by the name it stands for (the program, file, option, function or setting the
    conversation is about), so that it can be answered without the conversation. Keep what the
    follow-up asks for; do not answer it, and do not ask the earlier questions again. If the
    follow-up already stands alone, repeat it.
    """

    history: str = dspy.InputField(desc="the conversation so far, oldest turn first")
    question: str = dspy.InputField(desc="the follow-up question")
    standalone_question: str = dspy.OutputField(desc="one question that needs no conversation")


def asked_terms(question: str) -> set[str]:
    """The words of ``question`` that name what it asks for (function words and words that point
    back at the conversation aside).

    Example:
        >>> sorted(asked_terms("And what is its long form?"))
        ['form', 'long']
    """
    return _terms(_POSSESSIVE.sub("", question)) - _POINTERS


def points_back(question: str) -> bool:
    """Whether ``question`` refers to something it does not name ("it", "its", "they", "them").

    Example:
        >>> points_back("And its long form?"), points_back("What is the long form of -d?")
        (True, False)
    """
    return bool(_BACK.search(question))


def joined_question(question: str, previous: str) -> str:
    """The follow-up with the previous question beside it: what the reader is asked when no
    standalone rewrite was made (the step is off or failed, or its rewrite was refused)."""
    previous = " ".join(previous.split())
    return f"{question} (following: {previous})" if previous else question


def condense_validator(question: str) -> Callable[[dspy.Prediction], tuple[dspy.Prediction, list[str]]]:
    """Refuse an empty rewrite, one that keeps under two thirds of the follow-up's own terms
    (:func:`asked_terms`: a small LM asked to rewrite often restates the earlier question and drops
    what the user asks now), and one that still points back where the follow-up did
    (:func:`points_back`: nothing was resolved)."""
    asked, pointed = asked_terms(question), points_back(question)

    def validate(pred: dspy.Prediction) -> tuple[dspy.Prediction, list[str]]:
        text = " ".join(str(pred.standalone_question or "").split()).strip("\"'` ")
        text = re.sub(r"^(?:standalone question|question)\s*:\s*", "", text, flags=re.I)
        if not text:
            raise StepOutputError("empty standalone question")
        kept = asked & set(_key(text).split())
        if asked and len(kept) * 3 < len(asked) * 2:
            raise StepOutputError(f"the rewrite drops what the follow-up asks ({', '.join(sorted(asked - kept))})")
        if pointed and points_back(text):
            raise StepOutputError("the rewrite still points back at the conversation (it, its, they)")
        pred.standalone_question = text
        return pred, []

    return validate


class CondenseStep(Step):
    """Condense; returns ``standalone_question`` and ``fallback``. The fallback (no LM answer, or a
    refused one) is :func:`joined_question` of the follow-up and the last earlier question."""

    name = "condense"
    signature = Condense
    max_tokens = 96

    def forward(self, question: str, history: str, previous_question: str = "") -> dspy.Prediction:
        default: dict[str, Any] = {"standalone_question": joined_question(question, previous_question)}
        return self.run(default=default, validate=condense_validator(question), history=history, question=question)
