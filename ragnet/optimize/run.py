"""Compile a program's prompts, or one step's, on a benchmark's dev questions: ``run_optimize``.

The dev questions (never the acceptance split) are sampled and split, seeded, into a training
part the optimizer learns from and a validation part it never sees; the program is scored on
the validation part before and after compiling, in the same run. The compiled program is
saved as DSPy JSON (never pickle) with a ``metadata.ragnet`` header recording the run:
optimizer, effort, metric, seed, train/validation ids, scores, LM calls and seconds. Load it
with ``ragnet ask --program FILE`` or :func:`ragnet.programs.persist.load_program`.

The options come in two groups, :class:`DevQuestions` (which questions) and
:class:`CompileSettings` (how to compile), beside the LMs (:class:`ragnet.lm.config.LMOptions`).

Example:
    >>> run_optimize("basic", questions=DevQuestions("hotpotqa_dev_distractor", split="acceptance"),
    ...              out="basic.json")
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: argument 'split': the acceptance split is for final measurement only; compile on the dev split
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from ragnet.errors import InputError
from ragnet.lm.config import LMOptions

__all__ = ["CompileSettings", "DevQuestions", "run_optimize"]


@dataclass(frozen=True)
class DevQuestions:
    """The benchmark questions a compile run learns from and is scored on.

    Attributes:
        data: the benchmark (a name under the data folder, or a ``questions.jsonl`` path); with
            ``docs``, a plain questions file as ``ragnet eval --docs`` reads it.
        split: the question split; ``"acceptance"`` is refused (it is for final measurement).
        n: use a seeded sample of this many questions (None: all of the split).
        val_fraction: the share held out for the before/after scores.
        data_dir: the data folder (default: ragnet's).
        index_dir: pooled index for whole-program compiles (default: the cached one).
        docs: a folder of documents the questions are about (``ragnet optimize --docs``): whole
            programs compile over its index, and step cases are built from the gold quotes
            (:func:`ragnet.optimize.cases.quote_records`).

    Example:
        >>> DevQuestions("hotpotqa_dev_distractor", n=60).val_fraction
        0.3
    """

    data: str
    split: str = "dev"
    n: Optional[int] = None
    val_fraction: float = 0.3
    data_dir: Optional[Path] = None
    index_dir: Optional[Path] = None
    docs: Optional[Path] = None

    def records(self) -> tuple[list, str]:
        """The questions of the split, and the data's name for the run's header."""
        from ragnet.eval.run.datasets import load_questions, resolve_dataset

        if self.docs is not None:
            from ragnet.eval.run.doc_questions import load_doc_questions

            return load_doc_questions(Path(self.data)), Path(self.data).name
        path = resolve_dataset(self.data, self.data_dir)
        records = load_questions(path, split=self.split)
        if not records:
            raise InputError(f"no {self.split} questions in {path}", argument="split")
        return records, path.parent.name

    def index(self, log: Callable[[str], None]):
        """The index whole programs (and the rewrite step's cases) search."""
        if self.docs is not None:
            from ragnet.eval.run.eval_indexes import docs_index

            return docs_index(self.docs, log=log)
        from ragnet.eval.run.eval_indexes import load_pooled

        return load_pooled(self.data, data_dir=self.data_dir, path=self.index_dir, log=log)[0]


@dataclass(frozen=True)
class CompileSettings:
    """How a run compiles: the optimizer, its effort, what it optimizes and how step cases look.

    Attributes:
        optimizer: ``bootstrap`` | ``mipro`` | ``gepa``.
        effort: ``light`` | ``medium`` | ``heavy`` (how much search the optimizer does).
        metric: ``f1`` | ``em`` | ``llm_match`` | ``recall`` for whole programs (None: f1);
            with ``step``, the step's own metric (leave None).
        step: compile one step only (``sufficiency``, ``crop``, ``answer``, ``rewrite``, ``condense``: its
            ``data`` a follow-ups file); None: the program.
        demo_tokens: cap on each compiled predictor's demo prompt tokens (None: the step's own
            default; no cap for whole programs).
        paragraphs: paragraphs per sufficiency case (gold + distractors).
        max_words: longest paragraph used in step cases, in words (None: the step's default).
        seed: seeds the question sample, the split, the cases and the optimizer.
        threads: parallel program calls.

    Example:
        >>> CompileSettings(step="answer").effort
        'light'
    """

    optimizer: str = "bootstrap"
    effort: str = "light"
    metric: Optional[str] = None
    step: Optional[str] = None
    demo_tokens: Optional[int] = None
    paragraphs: int = 4
    max_words: Optional[int] = None
    seed: int = 0
    threads: int = 1


def _followups(q: DevQuestions) -> tuple[list, str]:
    """The conversations ``--step condense`` compiles on (``q.data``: a follow-ups file)."""
    from ragnet.optimize.cases import load_followups

    return load_followups(q.data), Path(q.data).name


def _select_questions(records: list, n: Optional[int], val_fraction: float, seed: int) -> tuple[list, list]:
    from ragnet.optimize.split import seeded_order, train_val_split

    by_id = {r.id: r for r in records}
    ids = seeded_order(by_id, seed)
    if n is not None:
        if n < 2:
            raise InputError(f"must be at least 2 (a training and a validation question), got {n}", argument="n")
        ids = ids[:n]
    train_ids, val_ids = train_val_split(ids, val_fraction, seed)
    return [by_id[i] for i in train_ids], [by_id[i] for i in val_ids]


def run_optimize(
    program_spec: str,
    *,
    questions: DevQuestions,
    out: str | Path,
    settings: CompileSettings = CompileSettings(),
    lms: LMOptions = LMOptions(),
    teacher_lm: Any = None,
    context_budget: Optional[int] = None,
    progress: bool = True,
    command: Optional[str] = None,
    log: Optional[Callable[[str], None]] = None,
) -> Any:
    """Compile a program (or one of its steps) on a benchmark's dev questions and save it.

    What ``ragnet optimize`` runs. The dev questions are sampled and split with the seed; the
    program is scored on the held-out part before and after compiling, and saved to ``out``
    (DSPy JSON with a ragnet header recording the run).

    Args:
        program_spec: strategy spec (``"iterative"``, ``"oneshot:crop"``, ...).
        questions: the benchmark questions (:class:`DevQuestions`).
        out: the ``.json`` file to write.
        settings: optimizer, effort, metric, step and seed (:class:`CompileSettings`).
        lms: the program's LM and the connection every LM of the run uses.
        teacher_lm: the LM that bootstraps, proposes, reflects and judges (None: the program's LM).
        context_budget: token budget of the answer prompt (oneshot, combined, iterative).
        progress: progress bars.
        command: the command line recorded in the file's header.
        log: receives notices (default: stderr).

    Returns:
        The :class:`ragnet.optimize.compile.CompileResult` (``record`` holds the header saved).
    """
    from ragnet.programs.persist import save_program

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    q, c = questions, settings
    # validate everything cheap before loading data, models or indexes
    out, spec, demo_tokens = _check_run(program_spec, q, c, out)
    records, data_name = _followups(q) if c.step == "condense" else q.records()
    train_q, val_q = _select_questions(records, q.n, q.val_fraction, c.seed)
    main_lm = lms.configure()
    teacher = lms.make(teacher_lm) if teacher_lm is not None else None

    started = time.perf_counter()
    options = {"teacher": teacher, "demo_tokens": demo_tokens, "context_budget": context_budget,
               "progress": progress, "log": say}
    if spec is not None:
        result = _compile_one_step(program_spec, spec, q, c, train_q, val_q, **options)
        label = spec.label
    else:
        result = _compile_whole_program(program_spec, q, c, train_q, val_q, judge=teacher or main_lm, **options)
        label = None

    record = {
        **result.to_dict(),
        "program_spec": program_spec,
        "data": data_name,
        "docs": None if q.docs is None else str(q.docs),
        "split": q.split,
        "val_fraction": q.val_fraction,
        "n_questions": len(train_q) + len(val_q),
        "train_questions": [r.id for r in train_q],
        "val_questions": [r.id for r in val_q],
        "lm": getattr(main_lm, "model", str(lms.lm)),
        "teacher_lm": getattr(teacher, "model", None),
        "paragraphs": c.paragraphs if c.step == "sufficiency" else None,
        "max_words": c.max_words,
        "breakdown": result.breakdown(label) if label else None,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "command": command,
    }
    save_program(result.program, out, spec=program_spec, optimization=record)
    result.record = record
    result.label = label
    # whether the saved program runs the compiled step (a preset may switch it off)
    result.step_enabled = c.step is None or getattr(result.program, c.step, True) is not False
    return result


def _check_run(program_spec: str, q: DevQuestions, c: CompileSettings, out: str | Path
               ) -> tuple[Path, Any, Optional[int]]:
    """The output path, the step's :class:`~ragnet.optimize.steps.StepSpec` (None: the whole
    program) and the demo cap of a run, checked before anything is loaded.

    Raises:
        InputError: the acceptance split, an unknown optimizer, effort, step or metric, an
            output that is not a writable ``.json``, or a step or metric ``--docs`` cannot give.
    """
    from ragnet._atomic import check_writable_parent
    from ragnet.eval.metrics.program_metrics import PROGRAM_METRICS
    from ragnet.optimize.compile import EFFORTS, OPTIMIZERS
    from ragnet.optimize.steps import STEPS
    from ragnet.programs.options import check_positive_int
    from ragnet.programs.registry import parse_spec

    optimizer, effort, metric, step = c.optimizer, c.effort, c.metric, c.step
    if q.split == "acceptance":
        raise InputError("the acceptance split is for final measurement only; compile on the dev split",
                         argument="split")
    if optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {optimizer!r}; choose from {', '.join(OPTIMIZERS)}", argument="optimizer")
    if effort not in EFFORTS:
        raise InputError(f"unknown effort {effort!r}; choose from {', '.join(EFFORTS)}", argument="effort")
    out = Path(out)
    if out.suffix != ".json":
        raise InputError("compiled programs are saved as JSON; use a path ending in .json", argument="out")
    check_writable_parent(out, argument="out")
    name, _ = parse_spec(program_spec)
    spec = None
    if step is not None:
        if step not in STEPS:
            raise InputError(f"unknown step {step!r}; choose from {', '.join(STEPS)}", argument="step")
        spec = STEPS[step]
        if name not in spec.strategies:
            raise InputError(f"{name} has no {step} step; programs with it: {', '.join(spec.strategies)}",
                             argument="step")
        if metric is not None and metric != spec.metric().name:
            raise InputError(f"with --step {step} the metric is the step's own ({spec.metric().name}); "
                             f"leave out --metric", argument="metric")
    elif (metric or "f1") not in PROGRAM_METRICS:
        raise InputError(f"unknown metric {metric!r}; choose from {', '.join(PROGRAM_METRICS)}", argument="metric")
    if q.docs is not None and not Path(q.docs).is_dir():
        raise InputError("not a folder of documents", path=Path(q.docs), argument="docs")
    if q.docs is not None and (step == "rewrite" or (step is None and metric == "recall")):
        raise InputError("over --docs a question's gold is a place, not a document title: compile the answer, "
                         "sufficiency or crop step, or the whole program on f1, em or llm_match",
                         argument="step" if step else "metric")
    demo_tokens = c.demo_tokens
    if demo_tokens is None and spec is not None:
        demo_tokens = spec.demo_tokens
    if demo_tokens is not None:
        check_positive_int(demo_tokens, "demo-tokens", minimum=0)
    return out, spec, demo_tokens


def _compile_one_step(program_spec: str, spec: Any, q: DevQuestions, c: CompileSettings, train_q: list, val_q: list,
                      *, teacher: Any, demo_tokens: Optional[int], context_budget: Optional[int], progress: bool,
                      log: Callable[[str], None]) -> Any:
    """Compile the step ``spec`` of ``program_spec`` on cases built from the questions."""
    from ragnet.eval.run.eval_indexes import NoIndex
    from ragnet.optimize.cases import quote_records
    from ragnet.optimize.steps import compile_step
    from ragnet.programs.registry import build_program

    step, seed = c.step, c.seed
    options: dict[str, Any] = ({"paragraphs": c.paragraphs, "seed": seed} if step == "sufficiency"
                               else {"seed": seed} if step == "answer" else {})
    if c.max_words is not None:
        options["max_words"] = c.max_words
    index, step_metric = NoIndex(), spec.metric()
    if spec.needs_index:  # cases and metric search the pooled index (the rewrite step's hop recall)
        index = q.index(log)
        options = {"index": index, "seed": seed, **({"budget": context_budget} if context_budget else {})}
        step_metric = spec.metric(index=index)
    if q.docs is not None:  # the gold quotes stand for a benchmark's gold sentences
        train_q, val_q = quote_records(train_q, seed=seed), quote_records(val_q, seed=seed)
    train, val = spec.cases(train_q, **options), spec.cases(val_q, **options)
    if not train or not val:
        raise InputError(f"{len(train)} training and {len(val)} validation {step} cases from {len(train_q)} + "
                         f"{len(val_q)} questions; use more questions (-n)", argument="n")
    log(f"{step} cases: {len(train)} training (from {len(train_q)} questions), {len(val)} validation "
        f"(from {len(val_q)} questions)")
    program = build_program(program_spec, index, budget=context_budget)
    if step == "condense":  # the step runs before the program, in the follow-up wrapper that is saved
        from ragnet.programs.conversation import FollowUp

        program = FollowUp(program)
    return compile_step(program, step, train, metric=step_metric, valset=val, optimizer=c.optimizer, effort=c.effort,
                        teacher_lm=teacher, seed=seed, threads=c.threads, progress=progress, log=log,
                        demo_tokens=demo_tokens)


def _compile_whole_program(program_spec: str, q: DevQuestions, c: CompileSettings, train_q: list, val_q: list, *,
                           judge: Any, teacher: Any, demo_tokens: Optional[int], context_budget: Optional[int],
                           progress: bool, log: Callable[[str], None]) -> Any:
    """Compile every predictor of ``program_spec`` against a program metric over its index."""
    from ragnet.eval.metrics.program_metrics import program_metric
    from ragnet.optimize.cases import qa_examples
    from ragnet.optimize.compile import compile as compile_program
    from ragnet.programs.registry import build_program

    index = q.index(log)
    if q.docs is not None:  # a recall metric reads the gold places: refuse those the folder lacks
        from ragnet.eval.run.doc_questions import check_places, place_warning_lines

        for line in place_warning_lines(check_places(index, [*train_q, *val_q], q.data), q.data):
            log(line)
    program = build_program(program_spec, index, budget=context_budget)
    metric = program_metric(c.metric or "f1", index=index, judge_lm=judge)
    return compile_program(program, qa_examples(train_q), metric, optimizer=c.optimizer, valset=qa_examples(val_q),
                           effort=c.effort, teacher_lm=teacher, seed=c.seed, threads=c.threads, progress=progress,
                           log=log, demo_tokens=demo_tokens)
