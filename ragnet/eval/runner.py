"""The ``ragnet eval`` runner: every strategy on the same questions, resumable, in parallel.

For each (strategy, question) the runner builds the program (``ragnet.programs.registry``;
budgeted strategies once per ``--budgets`` entry, labelled ``oneshot@2000``), answers the
question, scores the prediction (``ragnet.eval.metrics.score_prediction``: EM, F1, LLM match,
gold recall, stage retention, redundancy, cost) and appends one JSON line to
``OUT/results.jsonl``, flushed and fsynced. A crash loses at most the line being written:
a truncated last line is dropped with a warning on the next run, and rows already there are
skipped. A question whose program raises becomes an error row (it counts as wrong), never a
lost question. ``report.md``, ``summary.json`` and the plots are then written from every
row of the selected questions and strategies (``ragnet.eval.report``).

Threads: ``threads > 1`` answers questions in parallel, each job in a copy of the caller's
context (so ``dspy.context`` settings reach the workers). Programs are shared between
threads (DSPy programs are, as in ``dspy.Evaluate``); the local llama.cpp engine serialises
its calls with a lock, so parallel jobs queue on it safely while retrieval, judging and
scoring overlap; hosted LMs gain the most.

Example:
    >>> from ragnet.eval.datasets import load_eval_set                         # doctest: +SKIP
    >>> ev = load_eval_set("hotpotqa_dev_distractor", split="dev", n=20)      # doctest: +SKIP
    >>> summary = run_eval(ev, ["basic", "oneshot"], out_dir="out/hotpot")    # doctest: +SKIP
    >>> summary["strategies"]["oneshot"]["llm_match"]                        # doctest: +SKIP
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.datasets import EvalSet, QARecord

__all__ = ["StrategyRun", "parse_program_args", "plan_strategies", "read_results", "run_eval"]

RESULTS = "results.jsonl"
RUN_FILE = "run.json"
#: Run settings that must match for rows in an existing results file to be reused.
_COMPAT_KEYS = ("set", "mode", "lm", "judge", "judge_lm", "programs")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class StrategyRun:
    """One column of the report: a strategy spec, at one budget, maybe with a compiled program."""

    label: str
    spec: str
    budget: int | None = None
    program: str | None = None


def _check_budget(value: Any, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"token budgets must be positive integers, got {value!r}", argument=argument)
    return value


def plan_strategies(
    strategies: Sequence[str],
    *,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    programs: dict[str, str | Path] | None = None,
) -> list[StrategyRun]:
    """Expand strategy specs into report columns.

    Budgeted strategies (``oneshot``, ``combined``) run once per entry of ``budgets`` (labels
    ``oneshot@1000`` ...), or at ``budget`` (label ``oneshot@4000``), or at their default
    (label ``oneshot``). Other strategies run once.

    Example:
        >>> [r.label for r in plan_strategies(["basic", "oneshot"], budgets=[1000, 2000])]
        ['basic', 'oneshot@1000', 'oneshot@2000']
    """
    from ragnet.programs.registry import BUDGETED, parse_spec

    if budget is not None and budgets:
        raise InputError("give either --budget or --budgets, not both", argument="budgets")
    if budget is not None:
        _check_budget(budget, "budget")
    for b in budgets or ():
        _check_budget(b, "budgets")
    specs = [s.strip() for s in strategies if s and s.strip()]
    if not specs:
        raise InputError("no strategies given", argument="strategies")
    programs = {k: str(v) for k, v in (programs or {}).items()}
    out: list[StrategyRun] = []
    for spec in dict.fromkeys(specs):
        name, _ = parse_spec(spec)
        program = programs.get(spec)
        if name in BUDGETED and budgets:
            out.extend(StrategyRun(f"{spec}@{b}", spec, b, program) for b in dict.fromkeys(budgets))
        elif name in BUDGETED and budget is not None:
            out.append(StrategyRun(f"{spec}@{budget}", spec, budget, program))
        else:
            out.append(StrategyRun(spec, spec, None, program))
    return out


def parse_program_args(values: Sequence[str] | None, strategies: Sequence[str]) -> dict[str, str]:
    """``--program`` values to ``{spec: file}``: ``spec=FILE``, or a bare ``FILE`` when exactly
    one strategy is given. The file's header must name the strategy's program class.

    Example:
        >>> parse_program_args([], ["basic"])
        {}
    """
    from ragnet.optimize.persist import read_header
    from ragnet.programs import STRATEGIES
    from ragnet.programs.registry import parse_spec

    specs = [s.strip() for s in strategies if s and s.strip()]
    out: dict[str, str] = {}
    for value in values or ():
        key, sep, file = value.partition("=")
        if not sep:
            if len(specs) != 1:
                raise InputError(f"{value!r} does not say which strategy it is for; use --program STRATEGY=FILE "
                                 f"(strategies: {', '.join(specs)})", argument="program")
            key, file = specs[0], value
        key, file = key.strip(), file.strip()
        matches = [s for s in specs if s == key] or [s for s in specs if parse_spec(s)[0] == key]
        if len(matches) != 1:
            why = "matches several strategies" if matches else "is not among --strategies"
            raise InputError(f"{key!r} {why} ({', '.join(specs)})", argument="program")
        spec = matches[0]
        header = read_header(file)
        expected = STRATEGIES[parse_spec(spec)[0]].__name__
        if header.get("program") != expected:
            raise InputError(f"compiled for {header.get('program')}, not {expected} ({spec})", path=file)
        out[spec] = file
    return out


# --------------------------------------------------------------------------- results file


def read_results(path: str | Path, log: Callable[[str], None] = _stderr) -> list[dict[str, Any]]:
    """Rows of a ``results.jsonl``; a truncated last line (a crash mid-write) is dropped with a
    warning and cut from the file, so appending continues cleanly. A bad line elsewhere is an
    :class:`InputError` naming the file and line (rows are never silently lost)."""
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    rows: list[dict[str, Any]] = []
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        is_last = number == len(lines) or (number == len(lines) - 1 and lines[-1] == b"")
        if raw.strip():
            try:
                row = json.loads(raw.decode("utf-8"))
                if not isinstance(row, dict) or "strategy" not in row or "id" not in row:
                    raise ValueError("not a result row")
            except (ValueError, UnicodeDecodeError) as exc:
                if is_last:
                    log(f"warning: {path}:{number}: ignoring an incomplete last line (an interrupted run); "
                        "it will be recomputed")
                    with open(path, "r+b") as fh:
                        fh.truncate(offset)
                    break
                raise InputError(f"corrupt result row ({exc}); remove the line or use --fresh",
                                 path=path, line=number) from None
            rows.append(row)
        offset += len(raw) + 1
    return rows


class _Writer:
    """Appends one complete JSON line per row, flushed and fsynced (called from one thread)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            with open(path, "ab") as fh:  # a complete last line without its newline
                fh.write(b"\n")
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held open for the run; see close()

    def write(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def _sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _check_run_file(out_dir: Path, config: dict[str, Any], fresh: bool) -> None:
    """Refuse to mix rows from runs with other settings (LM, judge, set, mode, programs)."""
    from ragnet._atomic import write_json

    run_file = out_dir / RUN_FILE
    results = out_dir / RESULTS
    if fresh and results.exists():
        results.unlink()
    if run_file.is_file() and results.is_file() and not fresh:
        try:
            old = json.loads(run_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise InputError("unreadable run settings; use --fresh to start over", path=run_file) from None
        diff = [k for k in _COMPAT_KEYS if old.get(k) != config.get(k)]
        if diff:
            detail = "; ".join(f"{k}: {old.get(k)!r} -> {config.get(k)!r}" for k in diff)
            raise InputError(f"{out_dir} holds results of a run with other settings ({detail}); "
                             "use another --out, or --fresh to discard them", argument="out")
    write_json(run_file, config)


# --------------------------------------------------------------------------- indexes


class _Indexes:
    """The index a question is answered over: one pooled index, or one small cached index per
    question (per-question mode; the last few stay loaded, since jobs run question by question)."""

    def __init__(self, eval_set: EvalSet, *, embedder: Any, root: Path | None, show_progress: bool,
                 log: Callable[[str], None], keep: int) -> None:
        from ragnet.eval.index_cache import cached_index, index_root

        self.eval_set = eval_set
        self._cached_index = cached_index
        self.embedder = embedder
        self.root = Path(root) if root is not None else index_root()
        self.log = log
        self.keep = max(2, keep)
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, Any] = OrderedDict()
        self.pooled = None
        if eval_set.mode == "pooled":
            self.pooled = cached_index(eval_set.documents, f"{eval_set.name}-pooled", embedder=embedder,
                                       root=self.root, show_progress=show_progress, log=log)

    @property
    def path(self) -> str:
        if self.pooled is not None:
            return str(self.pooled.path)
        return str(self.root / f"{self.eval_set.name}-per-question")

    def get(self, record: QARecord) -> Any:
        if self.pooled is not None:
            return self.pooled
        with self._lock:
            index = self._recent.get(record.id)
            if index is not None:
                self._recent.move_to_end(record.id)
                return index
        index = self._cached_index(self.eval_set.question_documents(record), record.id, embedder=self.embedder,
                                   root=self.root / f"{self.eval_set.name}-per-question", show_progress=False)
        with self._lock:
            self._recent[record.id] = index
            while len(self._recent) > self.keep:
                self._recent.popitem(last=False)
        return index


# --------------------------------------------------------------------------- running


def _lm_name(lm: Any) -> str | None:
    if lm is None:
        return None
    return str(getattr(lm, "model", None) or type(lm).__name__)


def _record_fields(record: QARecord) -> dict[str, Any]:
    return {"id": record.id, "type": record.type, "level": record.level, "question": record.question,
            "answers": list(record.answers)}


def _error_text(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message[:500]}" if message else type(exc).__name__


def run_eval(
    eval_set: EvalSet,
    strategies: Sequence[str] | Sequence[StrategyRun],
    *,
    out_dir: str | Path,
    judge: bool = True,
    judge_lm: Any = None,
    threads: int = 1,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    programs: dict[str, str | Path] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    command: str | None = None,
    fresh: bool = False,
    retry_errors: bool = False,
    store_trace: bool = True,
    plots: bool = True,
    embedder: Any = None,
    index_root: str | Path | None = None,
    show_progress: bool = True,
    log: Callable[[str], None] = _stderr,
) -> dict[str, Any]:
    """Run every strategy on every question of ``eval_set``; write results, report and plots.

    Args:
        eval_set: from ``ragnet.eval.datasets.load_eval_set``.
        strategies: specs (``"oneshot:no-filter"``) or ready :class:`StrategyRun`\\ s.
        out_dir: gets ``results.jsonl``, ``run.json``, ``report.md``, ``summary.json``, ``*.png``.
        judge: score LLM match with ``JudgeAnswer`` (an exact match needs no LM call).
        judge_lm: the judge's ``dspy.LM``; None uses the LM the programs use.
        threads: questions answered in parallel.
        budget, budgets: token budget(s) of budgeted strategies (see :func:`plan_strategies`).
        programs: ``{spec: compiled program file}`` from ``ragnet optimize``.
        overrides: extra constructor arguments per strategy name, e.g. ``{"iterative": {"max_turns": 3}}``.
        command: the command line, written at the top of the report.
        fresh: discard existing results in ``out_dir`` first.
        retry_errors: run again the questions whose earlier row is an error row.
        store_trace: keep each prediction's trace in its row.
        plots: write PNG plots (needs matplotlib; skipped with a message if missing).
        embedder: an ``Embedder`` for building/loading indexes (None: the bundled MiniLM).
        index_root: where cached indexes live (default ``$RAGNET_HOME/indexes``).
        show_progress: a progress bar over the jobs.
        log: receives one-line notices and warnings.

    Returns:
        The summary (also written to ``summary.json``); see ``ragnet.eval.report``.
    """
    import dspy

    from ragnet.eval.metrics import AnswerJudge, gold_chunks, score_prediction
    from ragnet.eval.report import build_summary, write_outputs
    from ragnet.index.embedder import Embedder
    from ragnet.optimize.persist import load_program
    from ragnet.programs.registry import build_program, parse_spec

    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InputError(f"must be a positive integer, got {threads!r}", argument="threads")
    if strategies and all(isinstance(s, StrategyRun) for s in strategies):
        plan = list(strategies)  # type: ignore[arg-type]
    else:
        plan = plan_strategies(list(strategies), budget=budget, budgets=budgets, programs=programs)  # type: ignore[arg-type]
    overrides = overrides or {}
    out_dir = Path(out_dir)
    program_lm = dspy.settings.lm
    config = {
        "set": eval_set.name,
        "data": str(eval_set.path),
        "mode": eval_set.mode,
        "lm": _lm_name(program_lm),
        "judge": bool(judge),
        "judge_lm": _lm_name(judge_lm or program_lm) if judge else None,
        "programs": {r.label: {"file": r.program, "sha256": _sha256(r.program)} for r in plan if r.program},
        "command": command,
    }
    _check_run_file(out_dir, config, fresh)
    results_path = out_dir / RESULTS
    old_rows = read_results(results_path, log)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in old_rows:
        latest[(row["strategy"], row["id"])] = row
    labels = [r.label for r in plan]
    wanted = {(r.label, q.id) for r in plan for q in eval_set.questions}
    done = {k for k, row in latest.items() if k in wanted and not (retry_errors and row.get("error"))}

    # -- indexes and programs (set-up, timed apart from the evaluation loop)
    t_setup = time.perf_counter()
    emb = embedder if isinstance(embedder, Embedder) else Embedder(embedder)
    indexes = _Indexes(eval_set, embedder=emb, root=Path(index_root) if index_root else None,
                       show_progress=show_progress, log=log, keep=2 * threads + 2)

    def make_program(run: StrategyRun, index: Any):
        kwargs = dict(overrides.get(parse_spec(run.spec)[0], {}))
        program = build_program(run.spec, index, budget=run.budget, **kwargs)
        if run.program:
            load_program(program, run.program)
        return program

    shared: dict[str, Any] = {}
    if indexes.pooled is not None:
        shared = {run.label: make_program(run, indexes.pooled) for run in plan}
        indexes.pooled.embed_query("warm-up")  # load the embedder before threads race to do it
    setup_s = time.perf_counter() - t_setup
    scorer = AnswerJudge(lm=judge_lm) if judge else None

    jobs = [(run, rec) for rec in eval_set.questions for run in plan if (run.label, rec.id) not in done]
    if done:
        log(f"resuming: {len(done)} of {len(wanted)} rows already in {results_path}; {len(jobs)} to run")

    def run_job(run: StrategyRun, record: QARecord) -> dict[str, Any]:
        started = time.perf_counter()
        base = {"strategy": run.label, "spec": run.spec, "budget": run.budget, **_record_fields(record)}
        index_s = 0.0
        try:
            t0 = time.perf_counter()
            index = indexes.get(record)
            program = shared.get(run.label)
            if program is None:
                program = make_program(run, index)
            index_s = time.perf_counter() - t0
            pred = program(question=record.question)
            row = {**base, **score_prediction(record, pred, index, scorer)}
            row["evidence"] = list(pred.evidence)
            row["context"] = list(pred.context)
            if store_trace:
                row["trace"] = list(pred.trace)
            row["error"] = None
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error row
            tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
            row = {**base, "error": _error_text(exc), "traceback": "".join(tb[-3:])[-2000:],
                   "n_gold": len(gold_chunks(record)), "em": 0.0, "f1": 0.0, "contains": 0.0,
                   "llm_match": 0.0 if judge else None, "gold_all": 0.0, "gold_fraction": 0.0}
        row["index_seconds"] = round(index_s, 4)
        row["job_seconds"] = round(time.perf_counter() - started, 4)
        return row

    # -- the evaluation loop
    from tqdm.auto import tqdm

    writer = _Writer(results_path)
    new_rows: list[dict[str, Any]] = []
    t_loop = time.perf_counter()
    try:
        with tqdm(total=len(jobs), desc="eval", unit="q", disable=not show_progress or not jobs,
                  dynamic_ncols=True) as bar:

            def record_row(row: dict[str, Any]) -> None:
                writer.write(row)
                new_rows.append(row)
                latest[(row["strategy"], row["id"])] = row
                bar.set_postfix_str(f"{row['strategy']} {'ERROR' if row.get('error') else 'ok'}", refresh=False)
                bar.update(1)
                if row.get("error"):
                    log(f"error: {row['strategy']} on {row['id']}: {row['error']}")

            if threads == 1:
                for run, rec in jobs:
                    record_row(run_job(run, rec))
            else:
                _run_threaded(jobs, run_job, record_row, threads, log)
    finally:
        writer.close()
    loop_s = time.perf_counter() - t_loop

    # -- summary, report, plots
    t_report = time.perf_counter()
    rows = [latest[(label, q.id)] for label in labels for q in eval_set.questions if (label, q.id) in latest]
    meta = {
        **config,
        "split": eval_set.split,
        "questions": len(eval_set.questions),
        "strategies": [asdict(r) for r in plan],
        "budgets": list(budgets) if budgets else ([budget] if budget is not None else None),
        "threads": threads,
        "index": indexes.path,
        "results": str(results_path),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    timing = {"setup_s": setup_s, "loop_s": loop_s, "threads": threads, "new_rows": new_rows}
    summary = build_summary(rows, meta, timing)
    write_outputs(out_dir, summary, rows, plots=plots, log=log, started=t_report)
    return summary


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


def iter_rows(out_dir: str | Path) -> Iterable[dict[str, Any]]:
    """Rows of ``OUT/results.jsonl`` (for custom analyses)."""
    return iter(read_results(Path(out_dir) / RESULTS))
