"""How a ``ragnet eval`` run answers, scores and reports: :class:`EvalSettings`, the option object
:class:`~ragnet.eval.run.qa_evaluator.QAEvaluator` takes (and :func:`~ragnet.eval.run.qa_evaluator.run_eval`
builds from its keywords).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EvalSettings", "Scorer"]

#: ``scorer(record, prediction, index) -> {field: value}``, merged into the row.
Scorer = Callable[[Any, Any, Any], dict[str, Any]]


@dataclass(frozen=True)
class EvalSettings:
    """How a :class:`~ragnet.eval.run.qa_evaluator.QAEvaluator` run answers, scores and reports: everything but the questions,
    the strategies, the index and the hooks.

    Attributes:
        judge: score LLM match with ``JudgeAnswer`` (an exact match needs no LM call).
        judge_lm: the judge's ``dspy.LM``; None uses the LM the programs use.
        answer_lm: the LM every program answers with (a spec or ``dspy.BaseLM``; see
            ``ragnet.AnswerStep``); None answers with the programs' LM.
        threads: questions answered in parallel.
        budget, budgets: token budget(s) of budgeted strategies (see :func:`~ragnet.eval.run.strategy_plan.plan_strategies`).
        programs: ``{spec: compiled program file}`` from ``ragnet optimize``.
        overrides: extra constructor arguments per strategy name, e.g. ``{"iterative": {"max_turns": 3}}``.
        scorers: per-row hooks ``scorer(record, prediction, index) -> {field: value}``, merged
            into each row that ran (e.g. a task's own correctness).
        extra_metrics: row fields from ``scorers`` aggregated like accuracy (mean over every
            row; an error row counts 0; None when no row has the field), per strategy, type and level.
        primary_metric: the metric that decides (default ``llm_match`` with a judge, else ``em``).
        command: the command line, written at the top of the report.
        retry_errors: run again the questions whose earlier row is an error row.
        store_trace: keep each prediction's trace in its row.
        plots: write PNG plots (needs matplotlib; skipped with a message if missing).
        baseline: the strategy label (or spec) the others are compared with in the report
            (default: ``basic`` when it runs).
        embedder: an ``Embedder`` for building/loading indexes (None: the bundled MiniLM).
        index_root: where cached indexes live (default ``$RAGNET_HOME/indexes``).
        show_progress: a progress bar over the jobs.

    Example:
        >>> EvalSettings(judge=False).primary
        'em'
    """

    judge: bool = True
    judge_lm: Any = None
    answer_lm: Any = None
    threads: int = 1
    budget: int | None = None
    budgets: Sequence[int] | None = None
    programs: dict[str, str | Path] | None = None
    overrides: dict[str, dict[str, Any]] | None = None
    scorers: Sequence[Scorer] = ()
    extra_metrics: Sequence[str] = ()
    primary_metric: str | None = None
    command: str | None = None
    retry_errors: bool = False
    store_trace: bool = True
    plots: bool = True
    baseline: str | None = None
    embedder: Any = None
    index_root: str | Path | None = None
    show_progress: bool = True

    @property
    def primary(self) -> str:
        """The metric that decides: the one given, else ``llm_match`` with a judge, else ``em``."""
        return self.primary_metric or ("llm_match" if self.judge else "em")

