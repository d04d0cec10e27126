"""``ragnet optimize``: compile a program's prompts (or one step's) on dev questions.

Example:
    $ ragnet optimize --program iterative --step sufficiency --data hotpotqa_dev_distractor \\
          --optimizer bootstrap --effort light --lm local -n 64 --val-fraction 0.625 --out suff.json
    $ ragnet optimize --program basic --metric f1 -n 60 --out basic.json
    $ ragnet optimize --docs ~/manuals --data questions.jsonl --program oneshot:sentences+hops --step answer \\
          --lm local:qwen2.5-coder-1.5b --out answer.json
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ragnet.cli.common import command_line, data_dir_option, data_option, index_dir_option, with_lm_options

if TYPE_CHECKING:
    from ragnet.lm.config import LMOptions


@with_lm_options(answer_lm=False)
def optimize(
    ctx: typer.Context,
    program: str = typer.Option("basic", "--program", help="basic | oneshot | iterative | reflective | combined (presets allowed, e.g. oneshot:crop)."),
    data: str = data_option(),
    docs: Optional[Path] = typer.Option(None, "--docs", help="A folder of your documents; --data is then a questions "
                                        "file as `ragnet eval --docs` reads it (id, question, answers, gold places with "
                                        "quotes). Step cases come from the gold quotes; whole programs search the folder's index."),
    split: str = typer.Option("dev", help="Question split to compile on (dev; acceptance is refused)."),
    metric: Optional[str] = typer.Option(None, help="f1 | em | strict | llm_match | recall (default f1; "
                                         "strict: the answer with its signs and an option's dashes); "
                                         "with --step, the step's own."),
    optimizer: str = typer.Option("bootstrap", help="bootstrap | mipro | gepa"),
    effort: str = typer.Option("light", "--effort", help="light | medium | heavy: how much the optimizer searches."),
    teacher_lm: Optional[str] = typer.Option(None, "--teacher-lm", help="LM that bootstraps demos, proposes instructions (mipro), reflects (gepa), judges (llm_match)."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to save the compiled program (.json)."),
    step: Optional[str] = typer.Option(None, help="Compile one step only: answer (every program) | sufficiency (iterative, reflective, combined) | crop (oneshot) | rewrite (iterative, reflective, combined; scored by hop recall on the pooled index) | condense (any program; --data a follow-ups file such as benchmarks/realdocs/followups.jsonl; saves the FollowUp program)."),
    n: Optional[int] = typer.Option(None, "-n", help="Use this many dev questions (a seeded sample)."),
    val_fraction: float = typer.Option(0.3, "--val-fraction", help="Share of the questions held out for the before/after scores."),
    seed: int = typer.Option(0, help="Seed of the question sample, the split, the cases and the optimizer."),
    data_dir: Optional[Path] = data_dir_option(),
    index_dir: Optional[Path] = index_dir_option(),
    context_budget: Optional[int] = typer.Option(None, "--context-budget", help="Token budget of the answer prompt (oneshot, combined, iterative)."),
    paragraphs: int = typer.Option(4, help="Paragraphs per sufficiency case (gold + distractors)."),
    max_words: Optional[int] = typer.Option(None, "--max-words", help="Longest paragraph used in step cases, in words (default 200 for sufficiency, 250 for crop, 60 words of gold sentences for answer)."),
    demo_tokens: Optional[int] = typer.Option(None, "--demo-tokens", help="Cap on each compiled predictor's few-shot demos, in prompt tokens (default 300 with --step answer, whose demos share the reader's budget; otherwise no cap). 0 keeps no demos."),
    threads: int = typer.Option(1, help="Parallel program calls (the local model runs one at a time)."),
    *,
    lms: LMOptions,
) -> None:
    """Compile prompts against dev questions; print before/after scores; save the program as JSON."""
    from ragnet.optimize.run import CompileSettings, DevQuestions, run_optimize

    questions = DevQuestions(data, split=split, n=n, val_fraction=val_fraction, data_dir=data_dir,
                             index_dir=index_dir, docs=docs)
    settings = CompileSettings(optimizer=optimizer, effort=effort, metric=metric, step=step, demo_tokens=demo_tokens,
                               paragraphs=paragraphs, max_words=max_words, seed=seed, threads=threads)
    # Progress (DSPy's bars and messages write to stdout) goes to stderr; stdout gets the table.
    with contextlib.redirect_stdout(sys.stderr):
        result = run_optimize(program, questions=questions, out=out, settings=settings, lms=lms,
                              teacher_lm=teacher_lm, context_budget=context_budget, command=command_line(ctx))
    typer.echo(result.table(result.label))
    if step == "condense":
        typer.echo(f"saved {out} ({type(result.program).__name__}); load it with "
                   f"`load_program(FollowUp(build_program({program!r}, index)), {str(out)!r})`")
    else:
        typer.echo(f"saved {out} ({type(result.program).__name__}); use it with "
                   f"`ragnet ask --strategy {program} --program {out} ...`")
    if step is not None and not result.step_enabled:
        typer.echo(f"note: {program} runs with the {step} step switched off; pick a strategy preset that runs "
                   f"it (e.g. oneshot:crop) when loading this file")


def register(app: typer.Typer) -> None:
    """``ragnet optimize``."""
    app.command("optimize")(optimize)
