"""The interface every ragnet evaluation implements, in the spirit of sentence-transformers'
``SentenceEvaluator``: configure once, call to evaluate, get metrics back, find the files in
the output folder.

``evaluator(output_path=None, fresh=False)`` runs the evaluation and returns its summary (a
JSON-ready dict, also written to ``summary.json``). With an ``output_path`` it uses a
:class:`~ragnet.eval.run.run_folder.RunFolder`: a resumable evaluation (``row_key`` set) checks
``run.json`` against :meth:`Evaluator.settings` and appends its rows to ``results.jsonl`` as
they are computed; every evaluation then writes ``report.md`` (:meth:`Evaluator.format_report`)
and ``summary.json``, then any further views of them (:meth:`Evaluator.write_views`). :meth:`Evaluator.metrics` flattens a summary into ``{name: value}``, and
``primary_metric`` names the figure that decides.

Implementations:

* :class:`ragnet.eval.run.qa_evaluator.QAEvaluator`: strategies answering benchmark questions
  (``ragnet eval``; also the demo's questions over its own index, with its own scoring hook);
* :class:`ragnet.eval.recall.retrieval_recall.RetrievalEvaluator`: gold recall of context selections, no LM
  (``ragnet eval retrieval``);
* :class:`benchmarks.laziness_evaluator.LazinessEvaluator`: the retrieval-laziness
  study (``python -m benchmarks.laziness``), in a clone's ``benchmarks/``, outside the package.

Example:
    >>> import tempfile
    >>> class Parity(Evaluator):
    ...     name, primary_metric, row_key = "parity", "accuracy", ("id",)
    ...     def __init__(self, numbers):
    ...         super().__init__()
    ...         self.numbers = numbers
    ...     def settings(self):
    ...         return {"numbers": len(self.numbers)}
    ...     def evaluate(self, folder):
    ...         rows = [{"id": str(n), "ok": n % 2 == 0} for n in self.numbers]
    ...         if folder is not None:
    ...             with folder.writer() as write:
    ...                 for row in rows:
    ...                     write(row)
    ...         return {"accuracy": sum(r["ok"] for r in rows) / len(rows)}
    ...     def format_report(self, summary):
    ...         return f"accuracy {summary['accuracy']:.0%}\\n"
    >>> out = tempfile.mkdtemp()
    >>> Parity([2, 3, 4, 6])(out)
    {'accuracy': 0.75}
    >>> open(f"{out}/report.md").read()
    'accuracy 75%\\n'
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from ragnet.eval.run.run_folder import RunFolder

__all__ = ["Evaluator"]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Evaluator:
    """Base class of ragnet's evaluations (see the module docstring).

    Subclasses implement :meth:`evaluate` and :meth:`format_report`, and usually
    :meth:`settings` and :meth:`metrics`.

    Attributes:
        name: short name, the prefix of :meth:`metrics`' keys where several evaluators meet.
        primary_metric: the metric that decides (a key of the per-item figures).
        greater_is_better: whether a higher ``primary_metric`` is better.
        row_key: fields identifying a row of ``results.jsonl``; None for an evaluation that
            keeps no rows (it is cheap to recompute, so it is not resumed).
        compare: the settings that must match to resume (None: all of :meth:`settings`).

    Args:
        log: receives one-line notices and warnings (default: stderr).
    """

    name: str = "evaluation"
    primary_metric: str = ""
    greater_is_better: bool = True
    row_key: tuple[str, ...] | None = None
    compare: tuple[str, ...] | None = None

    def __init__(self, *, log: Callable[[str], None] | None = None) -> None:
        self.log = log or _stderr

    def __call__(self, output_path: str | Path | None = None, *, fresh: bool = False) -> dict[str, Any]:
        """Evaluate; write ``results.jsonl``/``run.json`` (if resumable), ``report.md`` and
        ``summary.json`` into ``output_path`` when given; return the summary.

        The folder is locked for the whole run and claimed first (:meth:`RunFolder.claim`):
        a folder holding files ragnet eval did not write is refused before any work.

        Args:
            output_path: the output folder (None: nothing is written, nothing is resumed).
            fresh: discard rows already in the folder instead of resuming from them.

        Raises:
            InputError: ``output_path`` holds files of someone else's, or another run is
                writing it right now.
        """
        if output_path is None:
            self.prepare()
            return self.evaluate(None)
        folder = RunFolder(output_path, key=self.row_key or (), log=self.log)
        with folder.locked():
            folder.claim()  # before any work: a folder that is not ragnet's is refused untouched
            self.prepare()
            if self.row_key is not None:
                folder.start(self.settings(), compare=self.compare, fresh=fresh)
            summary = self.evaluate(folder)
            report = self.format_report(summary)
            folder.write_outputs(report, summary)
            self.write_views(folder, summary, report)
        return summary

    def prepare(self) -> None:
        """Work needed before the folder is checked (e.g. the LM whose name goes into ``run.json``)."""

    def write_views(self, folder: RunFolder, summary: dict[str, Any], report: str) -> None:
        """Write further views of the outputs beside ``report.md`` (none by default; ``ragnet eval``'s
        own evaluator writes ``report.html``), each time ``report.md`` is written."""

    def settings(self) -> dict[str, Any]:
        """The run's settings, JSON-ready (``run.json``)."""
        return {}

    def evaluate(self, folder: RunFolder | None) -> dict[str, Any]:
        """Run the evaluation, appending rows to ``folder`` (when given) as they are computed;
        return the summary."""
        raise NotImplementedError

    def format_report(self, summary: dict[str, Any]) -> str:
        """``report.md`` for ``summary``."""
        raise NotImplementedError

    def metrics(self, summary: dict[str, Any]) -> dict[str, float]:
        """The summary's figures as a flat ``{name: value}`` dict."""
        raise NotImplementedError
