"""Metrics that optimizers compile against: answer quality, evidence recall and per-step scores.

A :class:`Metric` wraps a score function ``score(example, prediction) -> float in [0, 1]`` in the
three shapes DSPy's optimizers call it with:

* ``metric(example, pred)`` (``dspy.Evaluate``, MIPROv2 trials): the score;
* ``metric(example, pred, trace)`` while bootstrapping demos: ``score >= threshold`` (a bool,
  so only traces that really succeeded become demos);
* ``metric.for_gepa()``: GEPA's five-argument feedback metric, returning
  ``dspy.Prediction(score=..., feedback=...)`` with a textual explanation GEPA's reflection LM
  reads.

Program-level metrics (``f1``, ``em``, ``llm_match``, ``recall``) score a whole program's
Prediction against a benchmark question; step metrics (``verdict_metric``, ``crop_metric``)
score one step on the cases built by :mod:`ragnet.optimize.cases`.

Example:
    >>> import dspy
    >>> gold = dspy.Example(question="Capital of France?", answers=["Paris"]).with_inputs("question")
    >>> m = program_metric("f1")
    >>> m(gold, dspy.Prediction(answer="Paris, France")), m(gold, dspy.Prediction(answer="Paris"), trace=[])
    (0.6666666666666666, True)
    >>> crop_score(["A is 1.", " B is 2.", " C is 3."], [1], "B is 2. C is 3.")["score"]
    0.8333333333333334
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import dspy

from ragnet.errors import InputError
from ragnet.eval.metrics import AnswerJudge, exact_match, f1, gold_recall

__all__ = [
    "PROGRAM_METRICS",
    "Metric",
    "crop_metric",
    "crop_score",
    "evidence_recall",
    "program_metric",
    "verdict_metric",
]

PROGRAM_METRICS = ("f1", "em", "llm_match", "recall")


@dataclass
class Metric:
    """A score function in the shapes DSPy optimizers call (see the module docstring).

    Args:
        name: short name, shown in reports and saved in the program header.
        score: ``score(example, prediction) -> float`` in [0, 1].
        threshold: a bootstrapped trace becomes a demo only when its score is at least this.
        feedback: ``feedback(example, prediction, score) -> str`` for GEPA; a generic line when None.
    """

    name: str
    score: Callable[[Any, Any], float]
    threshold: float = 1.0
    feedback: Callable[[Any, Any, float], str] | None = None

    def __call__(self, example: Any, prediction: Any, trace: Any = None) -> float | bool:
        value = float(self.score(example, prediction))
        if trace is not None:
            return value >= self.threshold
        return value

    def explain(self, example: Any, prediction: Any, value: float) -> str:
        if self.feedback is not None:
            return self.feedback(example, prediction, value)
        return f"This output scored {value:.2f} on {self.name} (1.0 is best)."

    def for_gepa(self) -> Callable[..., dspy.Prediction]:
        """GEPA's feedback metric: ``(gold, pred, trace, pred_name, pred_trace) -> Prediction(score, feedback)``."""

        def gepa_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
            value = float(self.score(gold, pred))
            return dspy.Prediction(score=value, feedback=self.explain(gold, pred, value))

        gepa_metric.__name__ = f"{self.name}_feedback"
        return gepa_metric


# ----------------------------------------------------------------------------- program metrics


def _answers(example: Any) -> list[str]:
    return [str(a) for a in (example.get("answers") or [])]


def _answer_feedback(example: Any, pred: Any, value: float) -> str:
    return (f"The program answered {str(pred.get('answer', '') or '')!r}; the gold answer is "
            f"{' / '.join(_answers(example))!r} (score {value:.2f}). Give the shortest answer that names exactly "
            f"the entity, date, number or yes/no the question asks for.")


def evidence_recall(example: Any, pred: Any, index: Any = None) -> float:
    """Share of the example's gold documents in the prediction's final context (``pred.context``).

    The same measure as ``ragnet eval``'s gold recall (:func:`ragnet.eval.metrics.gold_recall`):
    ``gold_passage_ids`` when present in the index, else ``gold_titles`` matched against chunk
    document ids and titles. Without an index, the document part of each chunk id is matched.

    Example:
        >>> import dspy
        >>> evidence_recall(dspy.Example(gold_titles=["A", "B"]), dspy.Prediction(context=["A#0", "C#0"]))
        0.5
    """
    fraction = gold_recall(example, list(pred.get("context") or []), index)["fraction"]
    return 0.0 if fraction is None else float(fraction)


def program_metric(name: str, *, index: Any = None, judge_lm: Any = None,
                   threshold: float | None = None) -> Metric:
    """A program-level metric by name: ``f1``, ``em``, ``llm_match`` or ``recall``.

    Args:
        name: ``f1`` (token F1 of the answer), ``em`` (exact match), ``llm_match`` (an LM judges
            whether the answer means a gold answer; exact matches skip the LM call) or ``recall``
            (gold-evidence recall of the final context).
        index: the index the program searches; required for ``recall`` (gold titles are
            matched against its chunks, see :func:`evidence_recall`).
        judge_lm: LM for ``llm_match`` (the configured LM when None).
        threshold: bootstrapping acceptance threshold (default: 0.8 for ``f1``, else 1.0).

    Raises:
        InputError: an unknown name, or ``recall`` without ``index``.
    """
    if name == "f1":
        return Metric("f1", lambda ex, pred: f1(str(pred.get("answer", "") or ""), _answers(ex)),
                      threshold=0.8 if threshold is None else threshold, feedback=_answer_feedback)
    if name == "em":
        return Metric("em", lambda ex, pred: exact_match(str(pred.get("answer", "") or ""), _answers(ex)),
                      threshold=1.0 if threshold is None else threshold, feedback=_answer_feedback)
    if name == "llm_match":
        return Metric("llm_match", _llm_match(judge_lm), threshold=1.0 if threshold is None else threshold,
                      feedback=_answer_feedback)
    if name == "recall":
        if index is None:
            raise InputError("the recall metric needs the index the program searches", argument="metric")

        def feedback(ex: Any, pred: Any, value: float) -> str:
            gold = [str(t) for t in ex.get("gold_titles") or []]
            return (f"The final context held {value:.0%} of the gold paragraphs ({', '.join(gold)}). Search for "
                    f"every entity the question depends on, including the bridge entity of a two-step question.")

        return Metric("recall", lambda ex, pred: evidence_recall(ex, pred, index),
                      threshold=1.0 if threshold is None else threshold, feedback=feedback)
    raise InputError(f"unknown metric {name!r}; choose from {', '.join(PROGRAM_METRICS)}", argument="metric")


def _llm_match(judge_lm: Any) -> Callable[[Any, Any], float]:
    """LLM match through ``ragnet eval``'s judge (exact matches skip the LM call)."""
    judge = AnswerJudge(lm=judge_lm)
    return lambda example, pred: judge(example, pred)


# ----------------------------------------------------------------------------- step metrics


def _verdict_feedback(example: Any, pred: Any, value: float) -> str:
    gold, said = example.get("verdict"), pred.get("verdict")
    present = ", ".join(example.get("present_titles") or []) or "none"
    if gold == "Sufficient":
        why = (f"every paragraph the question needs is in the context (gold paragraphs: {present}), so the "
               f"answer can be stated from the context alone")
    else:
        missing = ", ".join(example.get("missing_titles") or []) or "one gold paragraph"
        why = (f"the paragraph about {missing} is not in the context, so one step of the question cannot be "
               f"answered from it; related paragraphs about other entities do not count")
    verdict = "correct" if value >= 1.0 else "wrong"
    return f"The verdict {said!r} is {verdict}: the right verdict is {gold!r} because {why}."


def verdict_metric() -> Metric:
    """Sufficiency step: 1.0 when the predicted verdict equals the case's gold ``verdict``.

    Example:
        >>> import dspy
        >>> verdict_metric()(dspy.Example(verdict="Refine"), dspy.Prediction(verdict="Refine"))
        1.0
    """
    return Metric("verdict_accuracy", lambda ex, pred: float(pred.get("verdict") == ex.get("verdict")),
                  threshold=1.0, feedback=_verdict_feedback)


def _norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def crop_score(sentences: Sequence[str], gold_idx: Sequence[int], output: str, *, beta: float = 2.0) -> dict[str, float]:
    """Crop quality against gold sentences: recall, precision and their F-beta (recall-weighted).

    A source sentence counts as kept when its (whitespace-normalised, case-folded) text occurs
    in ``output``. ``recall`` = kept gold / gold; ``precision`` = kept gold / kept, so keeping
    the whole chunk is penalised by the share of non-gold sentences; ``score`` is F-beta with
    beta = 2 (losing evidence costs more than keeping a spare sentence), 0 when no gold sentence
    is kept.

    Example:
        >>> s = ["A is 1.", " B is 2.", " C is 3.", " D is 4."]
        >>> crop_score(s, [1], "A is 1. B is 2. C is 3. D is 4.")   # kept everything
        {'recall': 1.0, 'precision': 0.25, 'score': 0.625}
    """
    out = _norm(output)
    kept = {i for i, s in enumerate(sentences) if _norm(s) and _norm(s) in out}
    gold = {int(i) for i in gold_idx if 0 <= int(i) < len(sentences)}
    hit = len(kept & gold)
    recall = hit / len(gold) if gold else 0.0
    precision = hit / len(kept) if kept else 0.0
    b2 = beta * beta
    score = (1 + b2) * precision * recall / (b2 * precision + recall) if hit else 0.0
    return {"recall": recall, "precision": precision, "score": score}


def _crop_feedback(example: Any, pred: Any, value: float) -> str:
    detail = crop_score(example.sentences, example.gold_idx, str(pred.get("relevant_text", "") or ""))
    gold = " ".join(example.sentences[i].strip() for i in example.gold_idx)
    return (f"Score {value:.2f} (recall {detail['recall']:.2f}, precision {detail['precision']:.2f}). The sentences "
            f"that answer the question are: {gold!r}. Copy those verbatim and leave out the rest.")


def crop_metric() -> Metric:
    """Crop step: :func:`crop_score` of ``pred.relevant_text`` against the case's gold sentences."""
    return Metric(
        "crop_f2",
        lambda ex, pred: crop_score(ex.sentences, ex.gold_idx, str(pred.get("relevant_text", "") or ""))["score"],
        threshold=0.8,
        feedback=_crop_feedback,
    )
