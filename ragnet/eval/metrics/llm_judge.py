"""The LLM judge: does a predicted answer mean the same as a gold answer?

:class:`AnswerJudge` asks ``JudgeAnswer`` (``ragnet.signatures.judge``) only when it has to:
an exact match (:func:`ragnet.eval.metrics.answer_match.exact_match`) is a match without an LM call, and an
empty prediction is not. Each decision comes back as a :class:`JudgeResult` with its cost.

Example:
    >>> judge = AnswerJudge()
    >>> judge.judge("Capital of France?", ["Paris"], "paris").to_dict()["called"]
    False
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragnet.eval.metrics.answer_match import exact_match
from ragnet.eval.run.records import get_field, gold_answers

__all__ = ["AnswerJudge", "JudgeResult"]


@dataclass
class JudgeResult:
    """One judge decision: ``match`` (0/1), whether the LM was ``called``, its ``seconds``,
    LM calls and tokens, and whether the judge fell back to "no match" after failures."""

    match: float
    called: bool
    seconds: float = 0.0
    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rationale: str = ""
    fallback: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class AnswerJudge:
    """LLM match through ``JudgeAnswer``; an exact match is a match without an LM call.

    Usable as a DSPy metric: ``AnswerJudge()(example, pred) -> 1.0 | 0.0`` (the family of
    DSPy metrics has it as ``program_metric("llm_match")``).

    Args:
        lm: the judge's ``dspy.LM`` (None: the configured LM).
        retries: retries of an off-format judge answer before it counts as "no match".

    Example:
        >>> AnswerJudge()({"question": "?", "answers": ["Paris"]}, {"answer": "paris"})
        1.0
    """

    def __init__(self, lm: Any = None, retries: int = 1) -> None:
        from ragnet.signatures.judge import JudgeStep

        self.lm = lm
        self.retries = retries
        self.step = JudgeStep(retries=retries)

    def judge(self, question: str, answers: Sequence[str], prediction: str) -> JudgeResult:
        """Decide one answer; see the class docstring."""
        if exact_match(prediction, answers):
            return JudgeResult(match=1.0, called=False, rationale="exact match")
        if not str(prediction or "").strip():
            return JudgeResult(match=0.0, called=False, rationale="empty prediction")
        import contextlib

        import dspy

        from ragnet.lm.usage import track_usage
        from ragnet.signatures.step import recording

        started = time.perf_counter()
        ctx = dspy.context(lm=self.lm) if self.lm is not None else contextlib.nullcontext()
        with ctx, recording(None), track_usage() as meter:  # the judge's failures are its result, not a trace's
            out = self.step(question=question, gold_answers=list(answers), prediction=str(prediction))
        usage = meter.to_dict()
        return JudgeResult(
            match=float(bool(out.match)), called=True, seconds=round(time.perf_counter() - started, 4),
            lm_calls=usage["lm_calls"], input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
            rationale=str(getattr(out, "rationale", "") or ""), fallback=bool(getattr(out, "fallback", False)),
        )

    def __call__(self, example: Any, pred: Any, trace: Any = None) -> float:
        return self.judge(str(get_field(example, "question", "")), gold_answers(example),
                          str(get_field(pred, "answer", ""))).match
