"""Metrics: every evaluation metric under one import (each lives in its own module).

* :mod:`ragnet.eval.metrics.answer_match`: normalisation, exact match, token F1, contains;
* :mod:`ragnet.eval.metrics.gold_evidence`: gold chunks, gold recall, stage retention, redundancy,
  gold supporting sentences;
* :mod:`ragnet.eval.metrics.llm_judge`: the LLM judge;
* :mod:`ragnet.eval.metrics.row_scores`: one row of ``results.jsonl`` (:func:`score_prediction`);
* :mod:`ragnet.eval.metrics.stats`: percentiles, aggregates, paired comparisons, sign test, bootstrap;
* :mod:`ragnet.eval.metrics.program_metrics`: the DSPy metrics (:class:`Metric`, :func:`program_metric`),
  shared with ``ragnet.optimize``.

Example:
    >>> exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
    >>> round(f1("Paris, France", ["Paris"]), 3)
    0.667
"""

from __future__ import annotations

from ragnet.eval.metrics.answer_match import contains_match, exact_match, f1, normalize_answer
from ragnet.eval.metrics.gold_evidence import (
    STAGES,
    context_redundancy,
    gold_chunk_ids,
    gold_chunks,
    gold_present,
    gold_recall,
    stage_retention,
)
from ragnet.eval.metrics.llm_judge import AnswerJudge, JudgeResult
from ragnet.eval.metrics.program_metrics import METRIC_NAMES, PROGRAM_METRICS, Metric, evidence_recall, program_metric
from ragnet.eval.metrics.row_scores import COST_KEYS, error_scores, score_prediction
from ragnet.eval.metrics.stats import aggregate, paired_comparison, percentile, sign_test, wilson_interval

__all__ = [
    "COST_KEYS",
    "METRIC_NAMES",
    "PROGRAM_METRICS",
    "STAGES",
    "AnswerJudge",
    "JudgeResult",
    "Metric",
    "aggregate",
    "contains_match",
    "context_redundancy",
    "error_scores",
    "evidence_recall",
    "exact_match",
    "f1",
    "gold_chunk_ids",
    "gold_chunks",
    "gold_present",
    "gold_recall",
    "normalize_answer",
    "paired_comparison",
    "percentile",
    "program_metric",
    "score_prediction",
    "sign_test",
    "stage_retention",
    "wilson_interval",
]
