"""Running an evaluation: the questions, the indexes they are answered over, the strategies
answering them, and the output folder every ``ragnet eval`` command writes.

* :mod:`~ragnet.eval.run.evaluator`: :class:`~ragnet.eval.run.evaluator.Evaluator`, the interface
  (call it with an output folder, get the summary back);
* :mod:`~ragnet.eval.run.run_folder`: the output folder (the ``run.json`` settings check, the
  marker, ``ids.txt``, atomic ``report.md`` + ``summary.json``), and
  :mod:`~ragnet.eval.run.results_file`: its ``results.jsonl``, the one place rows are written and read;
* :mod:`~ragnet.eval.run.qa_evaluator`: strategies answering questions (``ragnet eval``), with
  :mod:`~ragnet.eval.run.eval_settings` (how a run answers, scores and reports) and
  :mod:`~ragnet.eval.run.strategy_plan` (the report's columns); :mod:`~ragnet.eval.run.oracle`:
  the reader given only the gold evidence;
* :mod:`~ragnet.eval.run.datasets` (benchmark sets, ``dspy.Evaluate`` examples),
  :mod:`~ragnet.eval.run.doc_questions` (``--docs`` questions and where each answer is stated),
  :mod:`~ragnet.eval.run.records` (a field read the same way from any record);
* :mod:`~ragnet.eval.run.eval_indexes` (the pooled index of a set, or one per question) and
  :mod:`~ragnet.eval.run.index_cache` (indexes cached by content hash).
"""
