"""The DSPy metrics of ragnet: one :class:`Metric` type, built by name with :func:`program_metric`.

A :class:`Metric` wraps a score function ``score(example, prediction) -> float`` in the three
shapes DSPy calls metrics with:

* ``metric(example, pred)`` (``dspy.Evaluate``, MIPROv2 trials): the score;
* ``metric(example, pred, trace)`` while bootstrapping demos: whether the score reaches the
  threshold (a bool, so only traces that really succeeded become demos);
* ``metric.for_gepa()``: GEPA's five-argument feedback metric, returning
  ``dspy.Prediction(score=..., feedback=...)`` with a textual explanation GEPA's reflection LM
  reads.

Names (a program's Prediction scored against a benchmark question, see
``ragnet.eval.run.datasets.to_examples``):

* answers: ``f1``, ``em``, ``contains`` (a gold answer is a whole-word span of the answer),
  ``llm_match`` (an LM judges; exact matches skip the call);
* evidence, against the index the program searches: ``recall`` (share of gold documents in
  the final context), ``gold_all`` (every gold document there), ``recall@STAGE`` (share still
  present after a pipeline stage of the trace, e.g. ``recall@retrieved``, ``recall@delete``),
  ``redundancy`` (mean pairwise cosine of the context; lower is better);
* cost, from ``pred.usage`` (lower is better): ``searches``, ``turns``, ``lm_calls``,
  ``input_tokens``, ``seconds``, ... (``ragnet.eval.metrics.row_scores.COST_KEYS``).

``ragnet eval`` computes the same figures per row (``ragnet.eval.metrics.row_scores``); ``ragnet optimize``
compiles against these metrics, and its step metrics (``ragnet.optimize.step_metrics``) are
:class:`Metric`\\ s too.

Example:
    >>> import dspy
    >>> gold = dspy.Example(question="Capital of France?", answers=["Paris"]).with_inputs("question")
    >>> m = program_metric("f1")
    >>> m(gold, dspy.Prediction(answer="Paris, France")), m(gold, dspy.Prediction(answer="Paris"), trace=[])
    (0.6666666666666666, True)
    >>> program_metric("lm_calls")(gold, dspy.Prediction(usage={"lm_calls": 3}))
    3.0
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.metrics.answer_match import contains_match, exact_match, f1, strict_contains_match
from ragnet.eval.metrics.gold_evidence import STAGES, context_redundancy, gold_chunks, gold_recall, stage_retention
from ragnet.eval.metrics.row_scores import COST_KEYS
from ragnet.eval.run.records import get_field, gold_answers

__all__ = ["METRIC_NAMES", "PROGRAM_METRICS", "Metric", "evidence_recall", "program_metric"]

#: Metrics worth compiling a whole program against (``ragnet optimize --metric``).
PROGRAM_METRICS = ("f1", "em", "strict", "llm_match", "recall")
#: Every name :func:`program_metric` knows, besides ``recall@STAGE``.
METRIC_NAMES = (*PROGRAM_METRICS, "contains", "gold_all", "redundancy", *COST_KEYS)


@dataclass
class Metric:
    """A score function in the shapes DSPy optimizers call (see the module docstring).

    Args:
        name: short name, shown in reports and saved in the program header.
        score: ``score(example, prediction) -> float``.
        threshold: a bootstrapped trace becomes a demo only when its score reaches this
            (at least it, or at most it when ``greater_is_better`` is False).
        feedback: ``feedback(example, prediction, score) -> str`` for GEPA; a generic line when None.
        greater_is_better: False for costs and redundancy.

    Example:
        >>> m = Metric("short", lambda ex, pred: len(pred["answer"]), threshold=5, greater_is_better=False)
        >>> m({}, {"answer": "Paris"}), m({}, {"answer": "Paris"}, trace=[])
        (5.0, True)
    """

    name: str
    score: Callable[[Any, Any], float]
    threshold: float = 1.0
    feedback: Callable[[Any, Any, float], str] | None = None
    greater_is_better: bool = True

    def __call__(self, example: Any, prediction: Any, trace: Any = None) -> float | bool:
        value = float(self.score(example, prediction))
        if trace is not None:
            return value >= self.threshold if self.greater_is_better else value <= self.threshold
        return value

    def explain(self, example: Any, prediction: Any, value: float) -> str:
        """The feedback text for one scored prediction."""
        if self.feedback is not None:
            return self.feedback(example, prediction, value)
        best = "1.0 is best" if self.greater_is_better else "lower is better"
        return f"This output scored {value:.2f} on {self.name} ({best})."

    def for_gepa(self) -> Callable[..., Any]:
        """GEPA's feedback metric: ``(gold, pred, trace, pred_name, pred_trace) -> Prediction(score, feedback)``."""
        import dspy

        def gepa_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
            value = float(self.score(gold, pred))
            return dspy.Prediction(score=value, feedback=self.explain(gold, pred, value))

        gepa_metric.__name__ = f"{self.name}_feedback"
        return gepa_metric


# ----------------------------------------------------------------------------- answers


def _answer(pred: Any) -> str:
    return str(get_field(pred, "answer", "") or "")


def _answer_feedback(example: Any, pred: Any, value: float) -> str:
    return (f"The program answered {_answer(pred)!r}; the gold answer is "
            f"{' / '.join(gold_answers(example))!r} (score {value:.2f}). Give the shortest answer that names exactly "
            f"the entity, date, number or yes/no the question asks for.")


def _llm_match(judge_lm: Any) -> Callable[[Any, Any], float]:
    """LLM match through ``ragnet eval``'s judge (exact matches skip the LM call)."""
    from ragnet.eval.metrics.llm_judge import AnswerJudge

    judge = AnswerJudge(lm=judge_lm)
    return lambda example, pred: judge(example, pred)


# ----------------------------------------------------------------------------- evidence


def _context(pred: Any) -> list[str]:
    return [str(c) for c in get_field(pred, "context", []) or []]


def evidence_recall(example: Any, pred: Any, index: Any = None) -> float:
    """Share of the example's gold documents in the prediction's final context (``pred.context``).

    The same measure as ``ragnet eval``'s gold fraction (``ragnet.eval.metrics.gold_evidence.gold_recall``):
    ``gold_passage_ids`` when present in the index, else ``gold_titles`` matched against chunk
    document ids and titles. Without an index, the document part of each chunk id is matched.

    Example:
        >>> import dspy
        >>> evidence_recall(dspy.Example(gold_titles=["A", "B"]), dspy.Prediction(context=["A#0", "C#0"]))
        0.5
    """
    fraction = gold_recall(example, _context(pred), index)["fraction"]
    return 0.0 if fraction is None else float(fraction)


def _recall_feedback(example: Any, pred: Any, value: float) -> str:
    gold = [str(t) for t in get_field(example, "gold_titles", None) or []]
    return (f"The final context held {value:.0%} of the gold paragraphs ({', '.join(gold)}). Search for "
            f"every entity the question depends on, including the bridge entity of a two-step question.")


def _stage_score(stage: str, index: Any) -> Callable[[Any, Any], float]:
    def score(example: Any, pred: Any) -> float:
        gold = gold_chunks(example, index)
        if not gold:
            return 0.0
        stages = stage_retention(list(get_field(pred, "trace", []) or []), _context(pred), gold)
        cell = stages.get(stage)
        return cell["gold"] / len(gold) if cell else 0.0

    return score


# ----------------------------------------------------------------------------- by name


def program_metric(name: str, *, index: Any = None, judge_lm: Any = None,
                   threshold: float | None = None) -> Metric:
    """A metric of the family by name (see the module docstring for every name).

    Args:
        name: ``f1``, ``em``, ``contains``, ``llm_match``, ``recall``, ``gold_all``,
            ``recall@STAGE`` (a stage of ``ragnet.eval.metrics.gold_evidence.STAGES``), ``redundancy``, or a
            cost figure of ``pred.usage`` (``lm_calls``, ``seconds``, ...).
        index: the index the program searches; required by the evidence metrics (gold titles
            are matched against its chunks, see :func:`evidence_recall`).
        judge_lm: LM for ``llm_match`` (the configured LM when None).
        threshold: bootstrapping acceptance threshold (default: 0.8 for ``f1``, 1.0 for the
            other accuracy and recall metrics; no limit for costs and redundancy).

    Raises:
        InputError: an unknown name or stage, or an evidence metric without ``index``.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> index = NS(chunks=[NS(id="c1", doc_id="A", title="A"), NS(id="c2", doc_id="B", title="B")])
        >>> pred = NS(context=["c2"], trace=[{"step": "search", "retrieved": ["c1", "c2"]}])
        >>> ex = {"gold_titles": ["A", "B"]}
        >>> [program_metric(n, index=index)(ex, pred) for n in ("recall", "gold_all", "recall@retrieved")]
        [0.5, 0.0, 1.0]
    """
    def limit(default: float) -> float:
        return default if threshold is None else threshold

    if name == "f1":
        return Metric("f1", lambda ex, pred: f1(_answer(pred), gold_answers(ex)), threshold=limit(0.8),
                      feedback=_answer_feedback)
    if name == "em":
        return Metric("em", lambda ex, pred: exact_match(_answer(pred), gold_answers(ex)), threshold=limit(1.0),
                      feedback=_answer_feedback)
    if name == "contains":
        return Metric("contains", lambda ex, pred: contains_match(_answer(pred), gold_answers(ex)),
                      threshold=limit(1.0), feedback=_answer_feedback)
    if name == "strict":  # a manual's answers: an option's dashes and a number's sign count
        return Metric("strict", lambda ex, pred: strict_contains_match(_answer(pred), gold_answers(ex)),
                      threshold=limit(1.0), feedback=_answer_feedback)
    if name == "llm_match":
        return Metric("llm_match", _llm_match(judge_lm), threshold=limit(1.0), feedback=_answer_feedback)
    if name in COST_KEYS:
        return Metric(name, lambda ex, pred: float((get_field(pred, "usage", {}) or {}).get(name, 0) or 0),
                      threshold=limit(math.inf), greater_is_better=False)
    evidence = name in ("recall", "gold_all", "redundancy") or name.startswith("recall@")
    if not evidence:
        raise InputError(f"unknown metric {name!r}; choose from {', '.join(METRIC_NAMES)}, or recall@STAGE "
                         f"({', '.join(STAGES)})", argument="metric")
    stage = name.partition("@")[2]
    if name.startswith("recall@") and stage not in STAGES:
        raise InputError(f"unknown stage {stage!r} in metric {name!r}; choose from {', '.join(STAGES)}",
                         argument="metric")
    if index is None:
        raise InputError(f"the {name} metric needs the index the program searches", argument="metric")
    if name == "recall":
        return Metric("recall", lambda ex, pred: evidence_recall(ex, pred, index), threshold=limit(1.0),
                      feedback=_recall_feedback)
    if name == "gold_all":
        return Metric("gold_all", lambda ex, pred: float(gold_recall(ex, _context(pred), index)["all"] or 0.0),
                      threshold=limit(1.0), feedback=_recall_feedback)
    if name == "redundancy":
        return Metric("redundancy", lambda ex, pred: float(context_redundancy(index, _context(pred)) or 0.0),
                      threshold=limit(math.inf), greater_is_better=False)
    return Metric(name, _stage_score(stage, index), threshold=limit(1.0))
