"""Evaluation: benchmark loaders, metrics, and one framework every ``ragnet eval`` command runs on.

Four sub-packages, one job each:

* :mod:`ragnet.eval.run`: running an evaluation. The interface (:class:`Evaluator`), the output
  folder (:class:`RunFolder`; its ``results.jsonl`` is written and read by
  :mod:`~ragnet.eval.run.results_file`), the questions (:mod:`~ragnet.eval.run.datasets`,
  ``--docs`` questions in :mod:`~ragnet.eval.run.doc_questions`), the indexes they are answered
  over (:mod:`~ragnet.eval.run.eval_indexes`, cached by :mod:`~ragnet.eval.run.index_cache`), and
  the strategies answering them (:class:`QAEvaluator` / :func:`run_eval`, with
  :class:`EvalSettings` and the report's columns, :class:`StrategyRun`; the ``oracle`` strategy);
* :mod:`ragnet.eval.metrics`: answer metrics, gold-evidence metrics, the LLM judge, one row's
  scores (:func:`score_prediction`), statistics, and the DSPy metrics (:class:`Metric`,
  :func:`program_metric`) that ``ragnet.optimize`` compiles against too;
* :mod:`ragnet.eval.report`: ``summary.json``, ``report.md``, ``report.html`` and the plots;
* :mod:`ragnet.eval.recall`: the studies that measure whether gold evidence reaches a context,
  with no answer call: context selections (:class:`RetrievalEvaluator`, ``ragnet eval
  retrieval``), supporting sentences, and follow-up searches (``ragnet eval hops``).

Names below load their module on first use.

Example:
    >>> from ragnet.eval import program_metric
    >>> program_metric("em")({"answers": ["Paris"]}, {"answer": "paris!"})
    1.0
"""

from __future__ import annotations

from ragnet._lazy import lazy_getattr

_LAZY = {
    "Evaluator": "ragnet.eval.run.evaluator",
    "RunFolder": "ragnet.eval.run.run_folder",
    "QAEvaluator": "ragnet.eval.run.qa_evaluator",
    "run_eval": "ragnet.eval.run.qa_evaluator",
    "EvalSettings": "ragnet.eval.run.eval_settings",
    "StrategyRun": "ragnet.eval.run.strategy_plan",
    "RetrievalEvaluator": "ragnet.eval.recall.retrieval_recall",
    "run_retrieval_eval": "ragnet.eval.recall.retrieval_recall",
    "EvalIndexes": "ragnet.eval.run.eval_indexes",
    "NoIndex": "ragnet.eval.run.eval_indexes",
    "load_pooled": "ragnet.eval.run.eval_indexes",
    "pooled_index": "ragnet.eval.run.eval_indexes",
    "EvalSet": "ragnet.eval.run.datasets",
    "QARecord": "ragnet.eval.run.datasets",
    "load_eval_set": "ragnet.eval.run.datasets",
    "to_examples": "ragnet.eval.run.datasets",
    "Metric": "ragnet.eval.metrics.program_metrics",
    "program_metric": "ragnet.eval.metrics.program_metrics",
    "AnswerJudge": "ragnet.eval.metrics.llm_judge",
    "score_prediction": "ragnet.eval.metrics.row_scores",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(globals(), _LAZY)
