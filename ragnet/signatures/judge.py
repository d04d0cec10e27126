"""JudgeAnswer: does a predicted answer mean the same as one of the gold answers? (evaluation)

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> with dspy.context(lm=DummyLM([{"rationale": "same city", "match": True}])):
    ...     out = JudgeStep()(question="Capital of France?", gold_answers=["Paris"], prediction="paris, France")
    >>> out.match
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dspy

from ragnet.signatures.step import Step

__all__ = ["JudgeAnswer", "JudgeStep", "judge_default"]


class JudgeAnswer(dspy.Signature):
    """Decide whether the predicted answer means the same as any of the gold answers.

    Count it as a match if it names the same entity, date, number or yes/no value as at least one
    gold answer, even when worded differently: extra or missing articles, titles, middle names,
    units, abbreviations, date formats or surrounding words are fine. It is not a match if it
    names a different entity or value, is missing the key part, or hedges between several
    answers. Judge meaning only, not whether the gold answer is right.
    """

    question: str = dspy.InputField(desc="the question that was asked")
    gold_answers: list[str] = dspy.InputField(desc="acceptable reference answers")
    prediction: str = dspy.InputField(desc="the answer to judge")
    rationale: str = dspy.OutputField(default="", desc="one short sentence explaining the decision")
    match: bool = dspy.OutputField(desc="True if the prediction matches a gold answer, else False")


def judge_default() -> dict[str, Any]:
    """Fallback: no match."""
    return {"rationale": "judge failed", "match": False}


class JudgeStep(Step):
    """JudgeAnswer; returns ``match`` (bool), ``rationale`` and ``fallback`` (the default is no match).

    An empty prediction is judged False without an LM call.
    """

    name = "judge"
    signature = JudgeAnswer
    max_tokens = 160

    def forward(self, question: str, gold_answers: Sequence[str], prediction: str) -> dspy.Prediction:
        if not str(prediction or "").strip():
            return dspy.Prediction(rationale="empty prediction", match=False, fallback=False)
        return self.run(default=judge_default(), question=question,
                        gold_answers=[str(g) for g in gold_answers], prediction=str(prediction))
