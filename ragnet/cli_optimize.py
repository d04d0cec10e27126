"""``ragnet optimize``: compile a program's prompts (or one step's) on a benchmark's dev questions.

The dev questions (never the acceptance split) are split, seeded, into a training part the
optimizer learns from and a validation part it never sees; the program is scored on the
validation part before and after compiling, in the same run. The compiled program is saved
as DSPy JSON (never pickle) with a ``metadata.ragnet`` header recording the run: optimizer,
budget, metric, seed, train/validation ids, scores, LM calls and seconds. Load it with
``ragnet ask --program FILE``.

Example:
    $ ragnet optimize --program iterative --step sufficiency --data hotpotqa_dev_distractor \\
          --optimizer bootstrap --budget light --lm local -n 64 --val-fraction 0.625 --out suff.json
    $ ragnet optimize --program basic --metric f1 -n 60 --out basic.json
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any, Optional

import typer

from ragnet.errors import InputError, RagnetError

__all__ = ["register", "run_optimize"]


class _NoIndex:
    """Stands in for an index when one step is compiled alone: the step's cases carry their own
    paragraphs, and saving a program stores prompts and demos, never the index."""

    def search(self, *args: Any, **kwargs: Any):
        raise RagnetError("this program was built to compile one step and has no index; load the saved file "
                          "into a program built on a real index (`ragnet ask --program FILE`)")

    def __len__(self) -> int:
        return 0


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
    *,
    program_spec: str,
    data: str,
    split: str,
    metric: Optional[str],
    optimizer: str,
    budget: str,
    lm: Any,
    teacher_lm: Any,
    out: Path,
    step: Optional[str] = None,
    n: Optional[int] = None,
    val_fraction: float = 0.3,
    seed: int = 0,
    data_dir: Optional[Path] = None,
    index_dir: Optional[Path] = None,
    context_budget: Optional[int] = None,
    paragraphs: int = 4,
    max_words: Optional[int] = None,
    threads: int = 1,
    progress: bool = True,
    log=None,
) -> Any:
    """What ``ragnet optimize`` does, callable from Python; returns the CompileResult."""
    import ragnet
    from ragnet.eval.datasets import load_questions, resolve_dataset
    from ragnet.lm.config import make_lm
    from ragnet.optimize.cases import qa_examples
    from ragnet.optimize.compile import BUDGETS, OPTIMIZERS, compile as compile_program
    from ragnet.optimize.metrics import PROGRAM_METRICS, program_metric
    from ragnet.optimize.persist import save_program
    from ragnet.optimize.steps import STEPS, compile_step
    from ragnet.programs.registry import build_program, parse_spec

    say = log or (lambda msg: typer.echo(msg, err=True))
    # -- validate everything cheap before loading data, models or indexes -------------------
    if split == "acceptance":
        raise InputError("the acceptance split is for final measurement only; compile on the dev split",
                         argument="split")
    if optimizer not in OPTIMIZERS:
        raise InputError(f"unknown optimizer {optimizer!r}; choose from {', '.join(OPTIMIZERS)}", argument="optimizer")
    if budget not in BUDGETS:
        raise InputError(f"unknown budget {budget!r}; choose from {', '.join(BUDGETS)}", argument="budget")
    if out.suffix != ".json":
        raise InputError("compiled programs are saved as JSON; use a path ending in .json", argument="out")
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

    # -- data: seeded question split, then examples ------------------------------------------
    qpath = resolve_dataset(data, data_dir)
    records = load_questions(qpath, split=split)
    if not records:
        raise InputError(f"no {split} questions in {qpath}", argument="split")
    train_q, val_q = _select_questions(records, n, val_fraction, seed)

    # -- LMs ---------------------------------------------------------------------------------
    main_lm = ragnet.configure(lm=lm)
    teacher = make_lm(teacher_lm) if teacher_lm is not None else None

    started = time.perf_counter()
    if spec is not None:
        options: dict[str, Any] = {"paragraphs": paragraphs, "seed": seed} if step == "sufficiency" else {}
        if max_words is not None:
            options["max_words"] = max_words
        train, val = spec.cases(train_q, **options), spec.cases(val_q, **options)
        if not train or not val:
            raise InputError(f"{len(train)} training and {len(val)} validation {step} cases from {len(train_q)} + "
                             f"{len(val_q)} questions; use more questions (-n)", argument="n")
        say(f"{step} cases: {len(train)} training (from {len(train_q)} questions), {len(val)} validation "
            f"(from {len(val_q)} questions)")
        program = build_program(program_spec, _NoIndex(), budget=context_budget)
        result = compile_step(program, step, train, valset=val, optimizer=optimizer, budget=budget,
                              teacher_lm=teacher, seed=seed, threads=threads, progress=progress, log=say)
        label = spec.label
    else:
        from ragnet.cli import _pooled_index

        index, _, _ = _pooled_index(data, index_dir, data_dir)
        program = build_program(program_spec, index, budget=context_budget)
        judge = teacher or main_lm
        metric_obj = program_metric(metric or "f1", index=index, judge_lm=judge)
        result = compile_program(program, qa_examples(train_q), metric_obj, optimizer=optimizer,
                                 valset=qa_examples(val_q), budget=budget, teacher_lm=teacher, seed=seed,
                                 threads=threads, progress=progress, log=say)
        label = None

    record = {
        **result.to_dict(),
        "program_spec": program_spec,
        "data": qpath.parent.name,
        "split": split,
        "val_fraction": val_fraction,
        "n_questions": len(train_q) + len(val_q),
        "train_questions": [r.id for r in train_q],
        "val_questions": [r.id for r in val_q],
        "lm": getattr(main_lm, "model", str(lm)),
        "teacher_lm": getattr(teacher, "model", None),
        "paragraphs": paragraphs if step == "sufficiency" else None,
        "max_words": max_words,
        "breakdown": result.breakdown(label) if label else None,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "command": "ragnet " + " ".join(sys.argv[1:]) if sys.argv and "ragnet" in Path(sys.argv[0]).name else None,
    }
    save_program(result.program, out, spec=program_spec, optimization=record)
    result.record = record
    result.label = label
    return result


def register(app: typer.Typer) -> None:
    """Add ``ragnet optimize`` to the ``ragnet`` command."""

    @app.command()
    def optimize(
        program: str = typer.Option("basic", "--program", help="basic | oneshot | iterative | reflective | combined (presets allowed, e.g. oneshot:crop)."),
        data: str = typer.Option("hotpotqa_dev_distractor", help="Dataset (set name under the data dir, folder or questions.jsonl)."),
        split: str = typer.Option("dev", help="Question split to compile on (dev; acceptance is refused)."),
        metric: Optional[str] = typer.Option(None, help="f1 | em | llm_match | recall (default f1); with --step, the step's own."),
        optimizer: str = typer.Option("bootstrap", help="bootstrap | mipro | gepa"),
        budget: str = typer.Option("light", help="light | medium | heavy"),
        lm: Optional[str] = typer.Option(None, help="LM: 'local' (default) or any litellm model id; env RAGNET_LM."),
        teacher_lm: Optional[str] = typer.Option(None, "--teacher-lm", help="LM that bootstraps demos, proposes instructions (mipro), reflects (gepa), judges (llm_match)."),
        out: Path = typer.Option(..., "--out", "-o", help="Where to save the compiled program (.json)."),
        step: Optional[str] = typer.Option(None, help="Compile one step only: sufficiency (iterative, reflective, combined) | crop (oneshot)."),
        n: Optional[int] = typer.Option(None, "-n", help="Use this many dev questions (a seeded sample)."),
        val_fraction: float = typer.Option(0.3, "--val-fraction", help="Share of the questions held out for the before/after scores."),
        seed: int = typer.Option(0, help="Seed of the question sample, the split, the cases and the optimizer."),
        data_dir: Optional[Path] = typer.Option(None, help="Benchmark data folder (default ../shared/data or $RAGNET_DATA)."),
        index_dir: Optional[Path] = typer.Option(None, "--index", help="Pooled index for whole-program compiles (default: the cached one, built once)."),
        context_budget: Optional[int] = typer.Option(None, "--context-budget", help="Token budget of the answer prompt (oneshot, combined)."),
        paragraphs: int = typer.Option(4, help="Paragraphs per sufficiency case (gold + distractors)."),
        max_words: Optional[int] = typer.Option(None, "--max-words", help="Longest paragraph used in step cases, in words (default 200 for sufficiency, 250 for crop)."),
        threads: int = typer.Option(1, help="Parallel program calls (the local model runs one at a time)."),
    ) -> None:
        """Compile prompts against dev questions; print before/after scores; save the program as JSON."""
        try:
            # Progress (DSPy's bars and messages write to stdout) goes to stderr; stdout gets the table.
            with contextlib.redirect_stdout(sys.stderr):
                result = run_optimize(
                    program_spec=program, data=data, split=split, metric=metric, optimizer=optimizer,
                    budget=budget, lm=lm, teacher_lm=teacher_lm, out=out, step=step, n=n, val_fraction=val_fraction,
                    seed=seed, data_dir=data_dir, index_dir=index_dir, context_budget=context_budget,
                    paragraphs=paragraphs, max_words=max_words, threads=threads,
                )
        except RagnetError as err:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
            raise typer.Exit(code=2)
        typer.echo(result.table(result.label))
        typer.echo(f"saved {out} ({type(result.program).__name__}); use it with "
                   f"`ragnet ask --strategy {program} --program {out} ...`")
        if step is not None and getattr(result.program, step, True) is False:
            typer.echo(f"note: {program} runs with the {step} step switched off; pick a strategy preset that runs "
                       f"it (e.g. oneshot:crop) when loading this file")
