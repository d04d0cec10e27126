"""The ``ragnet eval`` runner: every strategy on the same questions, resumable, in parallel.

:class:`QAEvaluator` (an :class:`~ragnet.eval.run.evaluator.Evaluator`) builds, for each strategy,
the program (``ragnet.programs.registry``; budgeted strategies once per ``budgets`` entry,
labelled ``oneshot@2000``), answers each question, scores the prediction
(``ragnet.eval.metrics.row_scores.score_prediction``: EM, F1, LLM match, gold recall, stage retention,
redundancy, cost, plus any scoring hooks) and appends one row per (strategy, question) to
``OUT/results.jsonl`` (:class:`~ragnet.eval.run.run_folder.RunFolder`: a crash loses at most the
line being written, and rows already there are skipped). A question whose program raises
becomes an error row (it counts as wrong), never a lost question. Each row keeps the passages
the reader saw and the question's gold labels, for ``report.html``. ``report.md``, ``report.html``,
``summary.json`` and the plots are then written from every row of the selected questions and
strategies (``ragnet.eval.report``). :func:`run_eval` is the same as a function.

The ``oracle`` strategy (``ragnet.eval.run.oracle``: the reader given only each question's gold
evidence, a ceiling) is built here with the questions being evaluated; every other spec goes to
``ragnet.programs.registry``. Prediction fields a program names in ``row_fields`` (the oracle's
``oracle``: what its context was built from) are copied into its rows.

Questions come from an ``EvalSet`` (``ragnet.eval.run.datasets.load_eval_set``; its pooled index,
or one index per question, see ``ragnet.eval.run.eval_indexes``) or are any records with ``id``,
``question`` and ``answers`` answered over an index the caller built.

Threads: ``threads > 1`` answers questions in parallel, each job in a copy of the caller's
context (so ``dspy.context`` settings reach the workers). Programs are shared between
threads (DSPy programs are, as in ``dspy.Evaluate``); the local llama.cpp engine serialises
its calls with a lock, so parallel jobs queue on it safely while retrieval, judging and
scoring overlap; hosted LMs gain the most.

Example:
    >>> import tempfile, dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet import Document, Index
    >>> from ragnet.eval.run.datasets import QARecord
    >>> docs = [Document(id="Paris", title="Paris", text="Paris is the capital of France."),
    ...         Document(id="Rome", title="Rome", text="Rome is the capital of Italy.")]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
    >>> questions = [QARecord(id="q1", question="Capital of France?", answers=["Paris"], gold_titles=["Paris"])]
    >>> settings = EvalSettings(judge=False, plots=False, show_progress=False)
    >>> evaluator = QAEvaluator(questions, ["basic"], index=index, settings=settings)
    >>> with dspy.context(lm=DummyLM([{"answer": "Paris", "evidence_ids": ["c1"]}])):
    ...     summary = evaluator(tempfile.mkdtemp())
    >>> summary["strategies"]["basic"]["em"], summary["strategies"]["basic"]["gold_all"]
    (1.0, 1.0)
    >>> evaluator.metrics(summary)["basic/em"], evaluator.primary_metric
    (1.0, 'em')
"""

from __future__ import annotations

import contextvars
import functools
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragnet.errors import InputError, LMUnavailableError, describe
from ragnet.eval.run.datasets import EvalSet
from ragnet.eval.run.eval_settings import EvalSettings
from ragnet.eval.run.evaluator import Evaluator
from ragnet.eval.run.records import get_field
from ragnet.eval.run.results_file import RESULTS, ROW_KEY, read_rows
from ragnet.eval.run.run_folder import RunFolder
from ragnet.eval.run.strategy_plan import StrategyRun, plan_strategies, strategy_name, trained_questions

__all__ = ["OutageGuard", "QAEvaluator", "iter_rows", "read_results", "row_answer_prompt", "run_eval"]

#: Run settings that must match for rows in an existing results file to be reused.
_COMPAT_KEYS = ("set", "mode", "lm", "answer_lm", "judge", "judge_lm", "programs")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- results file


def read_results(path: str | Path, log: Callable[[str], None] = _stderr) -> list[dict[str, Any]]:
    """Rows of a ``results.jsonl`` of ``ragnet eval`` (:func:`ragnet.eval.run.results_file.read_rows`):
    a truncated last line (a crash mid-write) is dropped with a warning and cut from the file, so
    appending continues cleanly; a bad line elsewhere is an :class:`InputError` naming the file
    and line (rows are never silently lost)."""
    return read_rows(path, key=ROW_KEY, log=log)


def iter_rows(out_dir: str | Path) -> Iterable[dict[str, Any]]:
    """Rows of ``OUT/results.jsonl`` (for custom analyses)."""
    return iter(read_results(Path(out_dir) / RESULTS))


# --------------------------------------------------------------------------- the evaluator


def _lm_name(lm: Any) -> str | None:
    if lm is None:
        return None
    return str(getattr(lm, "model", None) or type(lm).__name__)


def _record_fields(record: Any) -> dict[str, Any]:
    from ragnet.eval.report.html_report import row_gold

    # the gold labels go with each row so report.html can show what evidence the reader missed
    return {"id": str(record.id), "type": get_field(record, "type"), "level": get_field(record, "level"),
            "split": get_field(record, "split"), "question": record.question,
            "answers": list(get_field(record, "answers", [])), "gold": row_gold(record)}


def _describe_layout(layout: dict[str, Any]) -> str:
    from ragnet.signatures.answer import describe_question_at

    order = {"nearest": ", best chunk last", "auto": ", a manual's best chunk last"}.get(layout.get("evidence_order"), "")
    return (f"question {describe_question_at(layout['question_at'])}" + (", reasoning first" if layout["reasoning"] else "")
            + (", the answer's line quoted first" if layout.get("quote") else "") + order)


def row_answer_prompt(row: dict[str, Any]) -> dict[str, Any] | None:
    """The answer-prompt layout a row was answered with (see
    :func:`ragnet.programs.registry.answer_layout`), from its ``answer_prompt`` field; None for a
    row without one. A row written before the evidence order was recorded was answered in rank order.

    Example:
        >>> row_answer_prompt({"answer_prompt": {"question_at": "last", "reasoning": True}})
        {'question_at': 'last', 'reasoning': True, 'evidence_order': 'rank'}
        >>> row_answer_prompt({"strategy": "basic"}) is None
        True
    """
    saved = row.get("answer_prompt")
    if not isinstance(saved, dict):
        return None
    layout = {"question_at": str(saved.get("question_at")), "reasoning": bool(saved.get("reasoning")),
              "evidence_order": str(saved.get("evidence_order") or "rank")}
    return {**layout, "quote": True} if saved.get("quote") else layout


#: ``program_factory(run, index) -> program``.
ProgramFactory = Callable[[StrategyRun, Any], Any]


class QAEvaluator(Evaluator):
    """Strategies answering questions, side by side (see the module docstring).

    Args:
        data: an ``EvalSet`` (from ``ragnet.eval.run.datasets.load_eval_set``), or records with
            ``id``, ``question`` and ``answers`` (gold fields optional) answered over ``index``.
        strategies: specs (``"oneshot:no-filter"``) or ready
            :class:`~ragnet.eval.run.strategy_plan.StrategyRun`\\ s.
        index: the index every question is answered over; required with plain records, and
            replaces an ``EvalSet``'s own index.
        name: the set's name in reports when ``data`` is plain records (default ``"questions"``).
        settings: how the run answers, scores and reports
            (:class:`~ragnet.eval.run.eval_settings.EvalSettings`).
        program_factory: ``factory(run, index) -> program`` replacing the default
            (``build_program`` with the settings' ``overrides``, then the compiled ``run.program`` loaded).
        on_row: called with each new row once it is recorded (e.g. to print it).
        log: receives one-line notices and warnings.
    """

    name = "qa"
    row_key = ROW_KEY
    compare = _COMPAT_KEYS

    def __init__(
        self,
        data: EvalSet | Sequence[Any],
        strategies: Sequence[str] | Sequence[StrategyRun],
        *,
        index: Any = None,
        name: str | None = None,
        settings: EvalSettings = EvalSettings(),
        program_factory: ProgramFactory | None = None,
        on_row: Callable[[dict[str, Any]], None] | None = None,
        log: Callable[[str], None] = _stderr,
    ) -> None:
        super().__init__(log=log)
        threads = settings.threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise InputError(f"must be a positive integer, got {threads!r}", argument="threads")
        if strategies and all(isinstance(s, StrategyRun) for s in strategies):
            self.plan = list(strategies)  # type: ignore[arg-type]
        else:
            self.plan = plan_strategies(list(strategies), budget=settings.budget,  # type: ignore[arg-type]
                                        budgets=settings.budgets, programs=settings.programs)
        if isinstance(data, EvalSet):
            self.eval_set, self.questions = data, list(data.questions)
        else:
            if index is None:
                raise InputError("questions without an EvalSet need the index to answer them over", argument="index")
            self.eval_set, self.questions = None, list(data)
        # A compiled program's training questions would flatter it: every strategy skips them,
        # so the columns stay paired on the same questions.
        trained = trained_questions(self.plan)
        kept = [q for q in self.questions if str(q.id) not in trained]
        #: Questions left out because a compiled program in the plan was trained on them.
        self.left_out = len(self.questions) - len(kept)
        if self.left_out:
            log(f"left out {self.left_out} of {len(self.questions)} questions that a compiled program (--program) "
                f"was trained on; {len(kept)} remain")
        self.questions = kept
        self.index = index
        self.set_name = data.name if isinstance(data, EvalSet) else (name or "questions")
        from ragnet.lm.config import LazyLM

        st = self.eval_settings = settings
        self.judge, self.judge_lm, self.threads = bool(st.judge), st.judge_lm, threads
        self.answer_lm = None if st.answer_lm is None else (st.answer_lm if isinstance(st.answer_lm, LazyLM)
                                                            else LazyLM(st.answer_lm))
        self.budget, self.budgets = st.budget, st.budgets
        self.overrides = st.overrides or {}
        self.program_factory = program_factory or self._build_program
        self.scorers = list(st.scorers)
        self.extra_metrics = tuple(st.extra_metrics)
        self.primary_metric = st.primary
        self.command, self.retry_errors, self.store_trace, self.plots = (st.command, st.retry_errors, st.store_trace,
                                                                         st.plots)
        self.baseline = st.baseline
        self.embedder, self.index_root, self.show_progress, self.on_row = (st.embedder, st.index_root,
                                                                          st.show_progress, on_row)
        #: The rows of the last call (latest per strategy and question), in report order.
        self.rows: list[dict[str, Any]] = []

    # -- settings and report

    def settings(self) -> dict[str, Any]:
        """``run.json``: set, data file, corpus mode, LMs, judge and compiled programs (with their SHA-256)."""
        import dspy

        from ragnet._hashing import sha256_file

        program_lm = dspy.settings.lm
        ev = self.eval_set
        return {
            "set": self.set_name,
            "data": str(ev.path) if ev is not None else None,
            "mode": ev.mode if ev is not None else "pooled",
            "lm": _lm_name(program_lm),
            "answer_lm": self.answer_lm.name if self.answer_lm is not None else None,
            "judge": self.judge,
            "judge_lm": _lm_name(self.judge_lm or program_lm) if self.judge else None,
            "programs": {r.label: {"file": r.program, "sha256": sha256_file(r.program)} for r in self.plan
                         if r.program},
            "left_out_trained": self.left_out,
            "command": self.command,
        }

    def format_report(self, summary: dict[str, Any]) -> str:
        from ragnet.eval.report.markdown_report import format_report

        return format_report(summary)

    def write_views(self, folder: RunFolder, summary: dict[str, Any], report: str) -> None:
        """``report.html`` beside ``report.md`` (``ragnet.eval.report.html_report``): a page that fails to
        render is a warning, never a lost run (``ragnet eval report --out`` builds it again)."""
        from ragnet.errors import DiskFullError
        from ragnet.eval.report.html_report import REPORT_HTML, row_gold, write_html

        gold = {str(q.id): g for q in self.questions if (g := row_gold(q)) is not None}
        try:
            write_html(folder.path, summary, self.rows, report_md=report, gold=gold,
                       order=[str(q.id) for q in self.questions])
        except DiskFullError:
            raise
        except Exception as exc:  # noqa: BLE001 - the rows, report.md and summary.json are written already
            self.log(f"warning: {folder.path / REPORT_HTML} not written ({describe(exc, 300)}); "
                     f"`ragnet eval report --out {folder.path}` builds it again")

    def metrics(self, summary: dict[str, Any]) -> dict[str, float]:
        """``{"<strategy>/<metric>": value}`` for the accuracy and gold-recall figures (and
        ``extra_metrics``) that are defined."""
        keys = ("em", "f1", "contains", "llm_match", "gold_all", "gold_fraction", *self.extra_metrics)
        return {f"{label}/{key}": agg[key] for label, agg in summary["strategies"].items() for key in keys
                if agg.get(key) is not None}

    # -- running

    def _build_program(self, run: StrategyRun, index: Any) -> Any:
        from ragnet.eval.run.oracle import build_oracle, is_oracle
        from ragnet.programs.persist import load_program
        from ragnet.programs.registry import build_program

        kwargs = dict(self.overrides.get(strategy_name(run.spec), {}))
        if is_oracle(run.spec):  # the gold labels of the questions evaluated come with it
            program = build_oracle(run.spec, index, self.questions, budget=run.budget, reader=self.answer_lm, **kwargs)
        else:
            program = build_program(run.spec, index, budget=run.budget, reader=self.answer_lm, **kwargs)
        if run.program:
            load_program(program, run.program)
        return program

    def evaluate(self, folder: RunFolder | None) -> dict[str, Any]:
        """Answer every (strategy, question) not yet in ``folder``; return the summary."""
        config = self.settings()
        results_path = folder.results_path if folder is not None else None
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in folder.rows() if folder is not None else []:
            latest[(row["strategy"], row["id"])] = row
        layouts = self._answer_layouts()
        wanted = {(r.label, str(q.id)) for r in self.plan for q in self.questions}
        done = self._rows_kept(latest, wanted, layouts, results_path)
        indexes, programs, setup_s = self._set_up()
        jobs = [(run, rec) for rec in self.questions for run in self.plan if (run.label, str(rec.id)) not in done]
        if done:
            self.log(f"resuming: {len(done)} of {len(wanted)} rows already in {results_path}; {len(jobs)} to run")
        scorer = None
        if self.judge:
            from ragnet.eval.metrics.llm_judge import AnswerJudge

            scorer = AnswerJudge(lm=self.judge_lm)
        run_job = functools.partial(self._answer, indexes=indexes, programs=programs, layouts=layouts, scorer=scorer)
        t_loop = time.perf_counter()
        new_rows = self._run_jobs(jobs, run_job, folder, latest)
        timing = {"setup_s": setup_s, "loop_s": time.perf_counter() - t_loop, "threads": self.threads,
                  "new_rows": new_rows}
        return self._summary(config, latest, folder, indexes.path, timing)

    def _answer_layouts(self) -> dict[str, dict[str, Any]]:
        """The answer-prompt layout each column answers with (:func:`row_answer_prompt` of its rows)."""
        from ragnet.eval.run.oracle import is_oracle, oracle_layout
        from ragnet.programs.registry import answer_layout

        return {r.label: (oracle_layout if is_oracle(r.spec) else answer_layout)(
            r.spec, **self.overrides.get(strategy_name(r.spec), {})) for r in self.plan}

    def _rows_kept(self, latest: dict[tuple[str, str], dict[str, Any]], wanted: set[tuple[str, str]],
                   layouts: dict[str, dict[str, Any]], results_path: Path | None) -> set[tuple[str, str]]:
        """The ``wanted`` (strategy, question) rows of an earlier run that this run reuses instead of
        answering them again."""
        # Rows of an LM outage are always run again (the outage may be over); rows whose program
        # raised only with retry_errors.
        done = {k for k, row in latest.items() if k in wanted and row.get("error_kind") != "lm"
                and not (self.retry_errors and row.get("error"))}
        # A row answered with another answer-prompt layout than this run's (a changed default,
        # such as where the question goes) is answered again, so one column never mixes both.
        stale = {k for k in done if row_answer_prompt(latest[k]) not in (None, layouts[k[0]])}
        for label in sorted({label for label, _ in stale}):
            count = sum(1 for k in stale if k[0] == label)
            theirs = sorted({_describe_layout(row_answer_prompt(latest[k])) for k in stale if k[0] == label})
            self.log(f"{count} {label} row{'s' if count != 1 else ''} in {results_path} "
                     f"{'were' if count != 1 else 'was'} answered with another answer prompt ({'; '.join(theirs)}) "
                     f"than this run's ({_describe_layout(layouts[label])}); answering again")
        return done - stale

    def _set_up(self) -> tuple[Any, dict[str, Any], float]:
        """The indexes questions are answered over, the programs shared by every question of a
        pooled index, and the seconds that took (timed apart from the evaluation loop)."""
        from ragnet.eval.run.eval_indexes import EvalIndexes
        from ragnet.index.embedder import build_embedder

        started = time.perf_counter()
        emb = build_embedder(self.embedder)  # a name: built (and queried) through its fp32 ONNX export
        indexes = EvalIndexes(self.eval_set, index=self.index, embedder=emb, root=self.index_root,
                              show_progress=self.show_progress, log=self.log, keep=2 * self.threads + 2)
        programs: dict[str, Any] = {}
        if indexes.pooled is not None:
            programs = {run.label: self.program_factory(run, indexes.pooled) for run in self.plan}
            indexes.pooled.embed_query("warm-up")  # load the embedder before threads race to do it
        return indexes, programs, time.perf_counter() - started

    def _answer(self, run: StrategyRun, record: Any, *, indexes: Any, programs: dict[str, Any],
                layouts: dict[str, dict[str, Any]], scorer: Any) -> dict[str, Any]:
        """One job: ``run``'s program answers ``record``; its scored row (an error row if it raised)."""
        from ragnet.eval.metrics.row_scores import error_scores, score_prediction
        from ragnet.eval.report.html_report import row_passages
        from ragnet.lm.failures import answer_failure

        started = time.perf_counter()
        base = {"strategy": run.label, "spec": run.spec, "budget": run.budget, **_record_fields(record),
                "answer_prompt": layouts[run.label]}
        index_s = 0.0
        try:
            t0 = time.perf_counter()
            index = indexes.get(record)
            program = programs.get(run.label)
            if program is None:
                program = self.program_factory(run, index)
            index_s = time.perf_counter() - t0
            pred = program(question=record.question)
            row = {**base, **score_prediction(record, pred, index, scorer)}
            for extra in self.scorers:
                row.update(extra(record, pred, index))
            for key in getattr(program, "row_fields", ()):
                row[key] = pred.get(key)
            row["confidence"] = pred.get("confidence")  # the reader's, where its LM reports logprobs
            row["evidence"] = list(pred.evidence)
            row["context"] = list(pred.context)
            # the context as the reader saw it (report.html shows it with the gold sentences marked)
            row["passages"] = row_passages(pred.get("passages"))
            if self.store_trace:
                row["trace"] = list(pred.trace)
            failure = answer_failure(pred.trace)
            row["error"] = f"LM failure: {failure}" if failure else None
            row["error_kind"] = "lm" if failure else None
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error row
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
            row = {**base, "error": describe(exc, 500), "error_kind": "program",
                   "traceback": "".join(tb[-3:])[-2000:], **error_scores(record, judged=self.judge)}
        row["index_seconds"] = round(index_s, 4)
        row["job_seconds"] = round(time.perf_counter() - started, 4)
        return row

    def _run_jobs(self, jobs: list[tuple[StrategyRun, Any]], run_job: Callable[[StrategyRun, Any], dict[str, Any]],
                  folder: RunFolder | None, latest: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
        """The evaluation loop: each job's row appended to ``results.jsonl`` and ``latest`` as it
        finishes; returns the new rows. Stops on an LM outage (:class:`OutageGuard`)."""
        from tqdm.auto import tqdm

        writer = folder.writer() if folder is not None else None
        new_rows: list[dict[str, Any]] = []
        outages = OutageGuard()
        try:
            with tqdm(total=len(jobs), desc="eval", unit="q", disable=not self.show_progress or not jobs,
                      dynamic_ncols=True) as bar:

                def record_row(row: dict[str, Any]) -> None:
                    if writer is not None:
                        writer.write(row)
                    new_rows.append(row)
                    latest[(row["strategy"], row["id"])] = row
                    status = {"lm": "LM FAILED", "program": "ERROR"}.get(row.get("error_kind") or "", "ok")
                    bar.set_postfix_str(f"{row['strategy']} {status}", refresh=False)
                    bar.update(1)
                    if row.get("error"):
                        self.log(f"error: {row['strategy']} on {row['id']}: {row['error']}")
                    if self.on_row is not None:
                        self.on_row(row)
                    outages.record(row)

                if self.threads == 1:
                    for run, rec in jobs:
                        record_row(run_job(run, rec))
                else:
                    _run_threaded(jobs, run_job, record_row, self.threads, self.log)
        finally:
            if writer is not None:
                writer.close()
        return new_rows

    def _summary(self, config: dict[str, Any], latest: dict[tuple[str, str], dict[str, Any]],
                 folder: RunFolder | None, index_path: Any, timing: dict[str, Any]) -> dict[str, Any]:
        """The summary of every row of this run's questions and strategies (``report.md`` and
        ``summary.json`` are written from it by :meth:`Evaluator.__call__`), with the plots."""
        from ragnet.eval.report.summary import build_summary, finish_summary

        started = time.perf_counter()
        rows = [latest[(r.label, str(q.id))] for r in self.plan for q in self.questions
                if (r.label, str(q.id)) in latest]
        # the question set, kept beside the rows: `--ids @OUT/ids.txt` asks exactly these again
        ids_file = folder.write_ids([str(q.id) for q in self.questions]) if folder is not None else None
        meta = {
            **config,
            "split": self.eval_set.split if self.eval_set is not None else None,
            "questions": len(self.questions),
            "strategies": [asdict(r) for r in self.plan],
            "budgets": list(self.budgets) if self.budgets else ([self.budget] if self.budget is not None else None),
            "threads": self.threads,
            "baseline": self.baseline,
            "index": index_path,
            "results": str(folder.results_path if folder is not None else None),
            "ids_file": str(ids_file) if ids_file is not None else None,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        summary = build_summary(rows, meta, timing, extra=self.extra_metrics, primary=self.primary_metric)
        self.rows = rows
        return finish_summary(summary, folder, plots=self.plots, log=self.log, started=started)


class OutageGuard:
    """Stops an evaluation whose LM is down instead of recording an outage as hundreds of rows.

    After each row: when ``window`` rows have run and at least ``share`` of the last ``window``
    are LM failures, :class:`LMUnavailableError` is raised naming the most common cause. Rows
    already written stay (they are run again when the run resumes).

    Example:
        >>> guard = OutageGuard(window=3, share=0.6)
        >>> for _ in range(2):
        ...     guard.record({"error_kind": "lm", "error": "LM failure: the LM did not answer in time (timeout): x"})
        >>> guard.record({"error_kind": "lm", "error": "LM failure: the LM did not answer in time (timeout): x"})
        Traceback (most recent call last):
        ...
        ragnet.errors.LMUnavailableError: stopped: 3 of the last 3 answers failed because the LM failed: the LM did not answer in time (timeout): x; check the LM (--lm, --api-base, --api-key, --timeout) and run the same command again to resume
    """

    def __init__(self, window: int = 8, share: float = 0.75) -> None:
        self.window, self.share = window, share
        self.recent: list[str | None] = []

    def record(self, row: dict[str, Any]) -> None:
        error = row.get("error") if row.get("error_kind") == "lm" else None
        self.recent = (self.recent + [error])[-self.window:]
        failed = [e for e in self.recent if e]
        if len(self.recent) >= self.window and len(failed) >= self.share * self.window:
            cause = max(set(failed), key=failed.count).removeprefix("LM failure: ")
            raise LMUnavailableError(
                f"stopped: {len(failed)} of the last {len(self.recent)} answers failed because the LM failed: "
                f"{cause}; check the LM (--lm, --api-base, --api-key, --timeout) and run the same command again "
                "to resume")


def run_eval(
    eval_set: EvalSet,
    strategies: Sequence[str] | Sequence[StrategyRun],
    *,
    out_dir: str | Path,
    fresh: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Run every strategy on every question of ``eval_set``; write results, report and plots.

    ``QAEvaluator(eval_set, strategies, settings=EvalSettings(**options), ...)(out_dir, fresh=fresh)``:
    ``options`` are :class:`EvalSettings` fields (``judge``, ``threads``, ``budget``, ...) and the
    evaluator's own ``index``, ``name``, ``program_factory``, ``on_row`` and ``log``.

    Args:
        eval_set: from ``ragnet.eval.run.datasets.load_eval_set``.
        strategies: specs (``"oneshot:no-filter"``) or ready :class:`StrategyRun`\\ s.
        out_dir: gets ``results.jsonl``, ``run.json``, ``report.md``, ``summary.json``, ``*.png``.
        fresh: discard existing results in ``out_dir`` first.

    Returns:
        The summary (also written to ``summary.json``); see ``ragnet.eval.report.summary``.
    """
    hooks = {k: options.pop(k) for k in ("index", "name", "program_factory", "on_row", "log") if k in options}
    return QAEvaluator(eval_set, strategies, settings=EvalSettings(**options), **hooks)(out_dir, fresh=fresh)


def _run_threaded(jobs: list, run_job: Callable, record_row: Callable[[dict[str, Any]], None], threads: int,
                  log: Callable[[str], None]) -> None:
    """Run ``jobs`` on ``threads`` workers, recording each row as it finishes.

    On Ctrl-C the questions not started are cancelled and those already running are waited for
    and recorded, so no answer that was paid for is lost (a second Ctrl-C abandons them).
    """
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ragnet-eval")
    futures = [pool.submit(contextvars.copy_context().run, run_job, run, rec) for run, rec in jobs]
    recorded: set[Any] = set()
    wait_for_running = True
    try:
        for future in as_completed(futures):
            recorded.add(future)
            record_row(future.result())
    except KeyboardInterrupt:
        # cancel() is False for futures already running or finished: those are the ones to keep
        left = [f for f in futures if f not in recorded and not f.cancel()]
        if left:
            log(f"interrupted: waiting for {len(left)} question(s) already running so their rows are kept "
                "(Ctrl-C again to drop them)")
        try:
            for future in as_completed(left):
                if future.exception() is None:  # a job's own KeyboardInterrupt is not a row
                    record_row(future.result())
        except KeyboardInterrupt:
            wait_for_running = False
            log("interrupted again: rows of the questions still running are dropped")
        raise
    finally:
        pool.shutdown(wait=wait_for_running, cancel_futures=True)

