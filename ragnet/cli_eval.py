"""``ragnet eval``: measure strategies side by side on a benchmark with gold evidence.

``register(eval_app)`` installs the command as the callback of the ``eval`` group
(``invoke_without_command=True``), so ``ragnet eval --data ... --strategies ...`` runs it while
``ragnet eval retrieval ...`` (and other subcommands) keep working.

Example:
    ragnet eval --data hotpotqa_dev_distractor --split dev -n 50 \\
        --strategies basic,oneshot,iterative --budgets 1000,2000,4000 --threads 2
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List, Optional

import typer

from ragnet.errors import InputError, RagnetError

HELP = ("Measure strategies side by side on a benchmark (EM, F1, LLM match, gold recall, stage retention, cost); "
        "resumable. Subcommands: see below.")


def _parse_budgets(budgets: Optional[str]) -> Optional[list[int]]:
    if budgets is None:
        return None
    try:
        values = [int(b) for b in budgets.split(",") if b.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {budgets!r}", argument="budgets") from None
    if not values:
        raise InputError("no budgets given", argument="budgets")
    return values


def _command_line(ctx: typer.Context) -> str:
    """The command as typed (options the user set, in declaration order), for the report."""
    parts = ["ragnet", "eval"]
    for param in ctx.command.params:  # typer vendors click: duck-typed, no isinstance checks
        if getattr(param, "param_type_name", "") != "option" or not param.name or not param.opts:
            continue
        source = ctx.get_parameter_source(param.name)
        if source is None or source.name != "COMMANDLINE":
            continue
        value = ctx.params.get(param.name)
        flag = max(param.opts, key=len)
        if getattr(param, "is_flag", False):
            if value:
                parts.append(flag)
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            parts += [flag, shlex.quote(str(v))]
    return " ".join(parts)


def eval_command(
    ctx: typer.Context,
    data: str = typer.Option("hotpotqa_dev_distractor", help="Set name under the data dir, a set folder, or your own questions.jsonl."),
    data_dir: Optional[Path] = typer.Option(None, help="Benchmark data folder (default ../shared/data or $RAGNET_DATA)."),
    split: str = typer.Option("dev", help="dev (develop/tune here) | acceptance (final measurement only) | all."),
    n: Optional[int] = typer.Option(None, "-n", help="At most this many questions (file order)."),
    ids: Optional[str] = typer.Option(None, help="Question ids: comma list or @file."),
    strategies: str = typer.Option("basic,oneshot", help="Comma-separated strategies; presets allowed (oneshot:no-filter)."),
    lm: Optional[str] = typer.Option(None, help="LM for the programs: 'local' (default) or any litellm id; env RAGNET_LM."),
    judge_lm: Optional[str] = typer.Option(None, help="LM for the LLM-match judge (default: the same as --lm)."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Skip the LLM judge (EM/F1 only)."),
    threads: int = typer.Option(1, help="Questions answered in parallel."),
    budget: Optional[int] = typer.Option(None, help="Token budget of the answer prompt for oneshot/combined."),
    budgets: Optional[str] = typer.Option(None, help="Comma-separated budgets: budgeted strategies run at each (oneshot@2000)."),
    mode: str = typer.Option("pooled", help="pooled (all questions' paragraphs / corpus.jsonl) | per-question."),
    program: Optional[List[str]] = typer.Option(None, "--program", help="Compiled program from `ragnet optimize`: STRATEGY=FILE, or FILE with one strategy. Repeatable."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default .ragnet-cache/eval/<set>-<split>[-per-question])."),
    fresh: bool = typer.Option(False, "--fresh", help="Discard earlier results in --out instead of resuming."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Re-run questions whose earlier row is an error."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Do not write PNG plots."),
) -> None:
    """Run strategies on benchmark questions; write results.jsonl, report.md, summary.json and plots."""
    if ctx.invoked_subcommand is not None:
        return
    from ragnet.cli import _fail, _pin_threads

    try:
        import os

        if threads < 1:
            raise InputError(f"must be at least 1, got {threads}", argument="threads")
        if split not in ("dev", "acceptance", "all"):
            raise InputError(f"unknown split {split!r}; choose dev, acceptance or all", argument="split")
        if split == "acceptance":
            typer.secho("warning: --split acceptance is for final measurement only; never tune prompts, "
                        "thresholds or rules on it", fg=typer.colors.YELLOW, err=True)
        _pin_threads(max(1, (os.cpu_count() or 2) // threads))
        from ragnet.eval.datasets import load_eval_set
        from ragnet.eval.runner import parse_program_args, plan_strategies, run_eval
        from ragnet.lm.config import configure, make_lm

        spec_list = [s.strip() for s in strategies.split(",") if s.strip()]
        budget_list = _parse_budgets(budgets)
        programs = parse_program_args(program, spec_list)
        plan = plan_strategies(spec_list, budget=budget, budgets=budget_list, programs=programs)
        ev = load_eval_set(data, data_dir=data_dir, split=None if split == "all" else split, n=n, ids=ids, mode=mode)
        program_lm = configure(lm=lm)
        judge = None
        if not no_judge and judge_lm is not None and judge_lm != lm:
            judge = make_lm(judge_lm)
        target = out or Path(".ragnet-cache") / "eval" / (
            f"{ev.name}-{split}" + ("" if mode == "pooled" else f"-{mode}"))
        typer.echo(f"{ev.name}: {len(ev.questions)} questions ({split}, {mode}); strategies "
                   f"{', '.join(r.label for r in plan)}; LM {getattr(program_lm, 'model', program_lm)} -> {target}",
                   err=True)
        summary = run_eval(
            ev, plan, out_dir=target, judge=not no_judge, judge_lm=judge, threads=threads,
            command=_command_line(ctx), fresh=fresh, retry_errors=retry_errors, plots=not no_plots,
            log=lambda msg: typer.echo(msg, err=True),
        )
    except RagnetError as err:
        _fail(err)
    _print_table(summary)
    typer.echo(f"wrote {target / 'report.md'}, {target / 'summary.json'} and {target / 'results.jsonl'}")


def _short_verdict(summary: dict, label: str) -> str:
    if label == summary["baseline"]:
        return "baseline"
    cmp = summary["vs_baseline"].get(label)
    if cmp is None:
        return ""
    if cmp["beats_baseline"]:
        return f"beats (p={cmp['p_value']:.2g})"
    return "no (worse)" if cmp["delta"] < 0 else ("no (=)" if cmp["delta"] == 0 else f"no (p={cmp['p_value']:.2g})")


def _print_table(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # logs and pipes: do not squeeze the table into 80 columns
        console = Console(width=140)
    primary = summary["primary_metric"]
    table = Table(title=f"{summary['meta']['set']} ({summary['meta']['questions']} questions)")
    for col in ("strategy", "EM", "F1", "LLM", "gold", "tok in", "LM calls", "p50 s", "err", "vs basic"):
        table.add_column(col, justify="left" if col in ("strategy", "vs basic") else "right")

    def pct(x):
        return "–" if x is None else f"{100 * x:.1f}"

    for label, a in summary["strategies"].items():
        table.add_row(label, pct(a["em"]), pct(a["f1"]), pct(a["llm_match"]), pct(a["gold_all"]),
                      "–" if a["input_tokens"] is None else f"{a['input_tokens']:,.0f}",
                      "–" if a["lm_calls"] is None else f"{a['lm_calls']:.1f}",
                      "–" if a["latency_p50"] is None else f"{a['latency_p50']:.1f}", str(a["errors"]),
                      _short_verdict(summary, label))
    console.print(table)
    ov = summary.get("overhead") or {}
    if ov.get("ratio") is not None:
        typer.echo(f"evaluation overhead: {100 * ov['loop_ratio']:.2f}% of program time "
                   f"({100 * ov['ratio']:.2f}% with report and plots); primary metric: {primary}")


def register(eval_app: typer.Typer) -> None:
    """Make ``ragnet eval [OPTIONS]`` run :func:`eval_command` (subcommands keep working)."""
    eval_app.callback(invoke_without_command=True, help=HELP)(eval_command)
