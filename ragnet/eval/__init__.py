"""Evaluation: benchmark loaders, metrics, and one framework every ``ragnet eval`` command runs on.

The framework:

* :mod:`ragnet.eval.evaluator`: :class:`Evaluator`, the interface (call it with an output
  folder, get the summary back; ``primary_metric``; :meth:`Evaluator.metrics`);
* :mod:`ragnet.eval.run_folder`: :class:`RunFolder`, the output folder (resumable
  ``results.jsonl``, the ``run.json`` settings check, atomic ``report.md`` + ``summary.json``);
* :mod:`ragnet.eval.runner`: :class:`QAEvaluator` / :func:`run_eval`, strategies answering
  questions (``ragnet eval``);
* :mod:`ragnet.eval.retrieval`: :class:`RetrievalEvaluator`, gold recall of context
  selections with no LM (``ragnet eval retrieval``);
* :mod:`ragnet.eval.indexes`: :func:`pooled_index` (the one pooled-index builder),
  :class:`EvalIndexes`, :class:`NoIndex`; :mod:`ragnet.eval.index_cache` caches by content hash;
* :mod:`ragnet.eval.report`, :mod:`ragnet.eval.tables`, :mod:`ragnet.eval.plots`: reports.

Data: :mod:`ragnet.eval.datasets` (``load_eval_set``, ``to_examples`` for ``dspy.Evaluate``).

Metrics (all re-exported by :mod:`ragnet.eval.metrics`): :mod:`~ragnet.eval.answers`,
:mod:`~ragnet.eval.evidence`, :mod:`~ragnet.eval.judge`, :mod:`~ragnet.eval.scoring` (one row),
:mod:`~ragnet.eval.stats`, and the DSPy metrics of :mod:`~ragnet.eval.program_metrics`
(:class:`Metric`, :func:`program_metric`), which ``ragnet.optimize`` compiles against too.

Names below load their module on first use.

Example:
    >>> from ragnet.eval import program_metric
    >>> program_metric("em")({"answers": ["Paris"]}, {"answer": "paris!"})
    1.0
"""

from __future__ import annotations

from ragnet._lazy import lazy_getattr

_LAZY = {
    "Evaluator": "ragnet.eval.evaluator",
    "RunFolder": "ragnet.eval.run_folder",
    "QAEvaluator": "ragnet.eval.runner",
    "StrategyRun": "ragnet.eval.runner",
    "run_eval": "ragnet.eval.runner",
    "RetrievalEvaluator": "ragnet.eval.retrieval",
    "run_retrieval_eval": "ragnet.eval.retrieval",
    "EvalIndexes": "ragnet.eval.indexes",
    "NoIndex": "ragnet.eval.indexes",
    "load_pooled": "ragnet.eval.indexes",
    "pooled_index": "ragnet.eval.indexes",
    "EvalSet": "ragnet.eval.datasets",
    "QARecord": "ragnet.eval.datasets",
    "load_eval_set": "ragnet.eval.datasets",
    "to_examples": "ragnet.eval.datasets",
    "Metric": "ragnet.eval.program_metrics",
    "program_metric": "ragnet.eval.program_metrics",
    "AnswerJudge": "ragnet.eval.judge",
    "score_prediction": "ragnet.eval.scoring",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(globals(), _LAZY)
