"""``ragnet eval`` (strategies side by side), ``eval retrieval`` (no LM), ``eval hops`` and ``eval report``
(report.html of a finished run, rebuilt from its files). The retrieval-laziness experiment is a
study of a clone: ``python -m benchmarks.laziness``.

Example:
    ragnet eval --data hotpotqa_dev_distractor --split dev -n 50 \\
        --strategies basic,oneshot,iterative --budgets 1000,2000,4000 --threads 2
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from ragnet.cli.common import (
    ONLY_HELP,
    command_line,
    console,
    data_dir_option,
    data_option,
    index_dir_option,
    new_app,
    parse_ints,
    say,
    split_option,
    with_lm_options,
)
from ragnet.errors import InputError

if TYPE_CHECKING:
    from ragnet.lm.config import LMOptions

HELP = ("Measure strategies side by side on a benchmark (EM, F1, LLM match, gold recall, stage retention, cost); "
        "resumable. Subcommands: see below.")


def _out_option(*short: str) -> Any:
    """``--out`` of the eval subcommands that resume (a new, empty or earlier ragnet eval folder)."""
    return typer.Option(None, "--out", *short, help="Write report.md, summary.json and results.jsonl here (a new, "
                        "empty or earlier ragnet eval folder; an interrupted run resumes).")


def _fresh_option() -> Any:
    return typer.Option(False, "--fresh", help="Discard results in --out from an earlier run instead of resuming.")


def _wrote(out: Optional[Path], *names: str) -> None:
    if out is not None:
        typer.echo(f"wrote {', '.join(str(out / n) for n in names[:-1])} and {out / names[-1]}")


def _check_split(split: str, allowed: tuple[str, ...] = ("dev", "acceptance")) -> None:
    if split not in allowed:
        raise InputError(f"unknown split {split!r}; choose {', '.join(allowed)}", argument="split")
    if split == "acceptance":
        typer.secho("warning: --split acceptance is for final measurement only; never tune prompts, "
                    "thresholds or rules on it", fg=typer.colors.YELLOW, err=True)


@with_lm_options()
def evaluate(
    ctx: typer.Context,
    data: str = data_option(),
    data_dir: Optional[Path] = data_dir_option(),
    docs: Optional[Path] = typer.Option(None, "--docs", help="A folder of your own documents to answer over "
                                        "(indexed once, cached by content); --data is then a questions file with "
                                        "gold places (file, page or section): right answers, gold page in context "
                                        "and cited are reported."),
    split: str = typer.Option("dev", help="dev (develop/tune here) | acceptance (final measurement only) | all. "
                              "With --docs: tune (choose changes here) | check (accept them here) | all, or a file "
                              "of question ids; a question's split is a hash of its id."),
    n: Optional[int] = typer.Option(None, "-n", help="At most this many questions (file order)."),
    ids: Optional[str] = typer.Option(None, help="Question ids: comma list or @file."),
    strategies: str = typer.Option("basic,oneshot", help="Comma-separated strategies; presets compose with '+' (oneshot:no-filter, oneshot:sentences+qlast). auto: what `ragnet ask` runs for the reader (at its budget unless --budget is given). oracle: the reader given only each question's gold sentences (else its gold documents), the ceiling beside the others."),
    judge_lm: Optional[str] = typer.Option(None, help="LM for the LLM-match judge (default: the same as --lm)."),
    no_judge: bool = typer.Option(False, "--no-judge", help="Skip the LLM judge (EM/F1 only)."),
    threads: int = typer.Option(1, help="Questions answered in parallel."),
    budget: Optional[int] = typer.Option(None, help="Token budget of the answer prompt for oneshot, combined, oracle and iterative (which reads everything it kept without one)."),
    budgets: Optional[str] = typer.Option(None, help="Comma-separated budgets: budgeted strategies run at each (oneshot@2000)."),
    mode: str = typer.Option("pooled", help="pooled (all questions' paragraphs / corpus.jsonl) | per-question."),
    program: Optional[List[str]] = typer.Option(None, "--program", help="Compiled program from `ragnet optimize`: STRATEGY=FILE, or FILE with one strategy. Repeatable."),
    out: Optional[Path] = typer.Option(None, help="Output folder: new, empty or an earlier ragnet eval's (default .ragnet-cache/eval/<set>-<split>[-per-question])."),
    fresh: bool = typer.Option(False, "--fresh", help="Discard earlier results in --out instead of resuming."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Re-run questions whose earlier row is an error."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Do not write PNG plots."),
    baseline: Optional[str] = typer.Option(None, help="Strategy the others are compared with, by label or spec (default: basic when it runs)."),
    only: Optional[List[str]] = typer.Option(None, "--only", help="With --docs: " + ONLY_HELP),
    *,
    lms: LMOptions,
) -> None:
    """Run strategies on benchmark questions; write results.jsonl, report.md, summary.json and plots."""
    if ctx.invoked_subcommand is not None:
        return
    from ragnet._threads import pin_threads
    from ragnet.eval.report.summary import choose_baseline
    from ragnet.eval.run.datasets import load_eval_set
    from ragnet.eval.run.qa_evaluator import run_eval
    from ragnet.eval.run.run_folder import claim_folder
    from ragnet.eval.run.strategy_plan import parse_program_args, plan_strategies
    from ragnet.programs.registry import recommended_strategy

    if threads < 1:
        raise InputError(f"must be at least 1, got {threads}", argument="threads")
    if docs is None:
        _check_split(split, ("dev", "acceptance", "all"))
    spec_list = [s.strip() for s in strategies.split(",") if s.strip()]
    programs = parse_program_args(program, spec_list)
    def plan_for(index: Any = None) -> list:  # auto's budget follows the collection (resolve_strategy)
        recommended = recommended_strategy(lms.reader() or lms.lm, index)
        return plan_strategies(spec_list, budget=budget, budgets=parse_ints(budgets, "budgets") if budgets else None,
                               programs=programs, recommended=recommended)

    plan = plan_for()
    if baseline is not None and baseline.strip().casefold() == "auto":
        baseline = recommended_strategy(lms.reader() or lms.lm)[0]  # the spec auto ran as
    choose_baseline([r.label for r in plan], baseline)  # a --baseline that names no strategy fails now, not after the run
    if only and docs is None:
        raise InputError("asks some files of a folder of documents: give --docs too", argument="only")
    if docs is not None:
        _evaluate_docs(ctx, docs, data, plan_for, n=n, ids=ids, split=split, out=out, fresh=fresh,
                       retry_errors=retry_errors, no_judge=no_judge, judge_lm=judge_lm, threads=threads,
                       no_plots=no_plots, baseline=baseline, lms=lms, only=only)
        return
    ev = load_eval_set(data, data_dir=data_dir, split=None if split == "all" else split, n=n, ids=ids, mode=mode)
    target = out or Path(".ragnet-cache") / "eval" / (f"{ev.name}-{split}" + ("" if mode == "pooled" else f"-{mode}"))
    claim_folder(target)  # before any index or LM work
    pin_threads(max(1, (os.cpu_count() or 2) // threads))
    judge, reader = _eval_lms(lms, judge_lm, no_judge, f"{ev.name}: {len(ev.questions)} questions ({split}, {mode})",
                              plan, target)
    summary = run_eval(ev, plan, out_dir=target, judge=not no_judge, judge_lm=judge, answer_lm=reader, threads=threads,
                       command=command_line(ctx), fresh=fresh, retry_errors=retry_errors, plots=not no_plots,
                       baseline=baseline, log=say)
    _print_table(summary)
    typer.echo(f"wrote {target / 'report.md'}, {target / 'report.html'}, {target / 'summary.json'} and "
               f"{target / 'results.jsonl'}")


def _eval_lms(lms: LMOptions, judge_lm: Optional[str], no_judge: bool, what: str, plan: list,
              target: Path) -> tuple[Any, Any]:
    """Configure the run's LMs and say what runs: the judge's LM (None: the programs' own) and the reader."""
    program_lm = lms.configure()
    judge = lms.make(judge_lm) if not no_judge and judge_lm is not None and judge_lm != lms.lm else None
    reader = lms.reader_lm()
    say(f"{what}; strategies {', '.join(r.label for r in plan)}; LM {getattr(program_lm, 'model', program_lm)}"
        + (f", answers {reader.name}" if reader is not None else "") + f" -> {target}")
    return judge, reader


def _evaluate_docs(ctx: typer.Context, docs: Path, data: str, plan_for: Any, *, n: Optional[int], ids: Optional[str],
                   split: str, out: Optional[Path], fresh: bool, retry_errors: bool, no_judge: bool,
                   judge_lm: Optional[str], threads: int, no_plots: bool, baseline: Optional[str], lms: LMOptions,
                   only: Optional[List[str]] = None) -> None:
    """``ragnet eval --docs FOLDER --data FILE``: the strategies over a folder of documents, scored
    on right answers (primary) and where the evidence and the citations point. ``plan_for(index)``
    plans the strategies once the index is built: ``auto``'s budget depends on the documents."""
    from ragnet._threads import pin_threads
    from ragnet.eval.run.datasets import parse_ids
    from ragnet.eval.run.doc_questions import PLACE_METRICS, load_doc_questions, place_scores
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.eval.run.qa_evaluator import run_eval
    from ragnet.eval.run.run_folder import claim_folder

    split = "all" if split == "dev" else split  # dev is the flag's default for the benchmark sets
    if split == "acceptance":
        raise InputError("a questions file over documents splits into tune, check or all (or give a file of "
                         "question ids)", argument="split")
    questions = load_doc_questions(Path(data), ids=parse_ids(ids), limit=n, split=split)
    name = f"{Path(docs).name}-{Path(data).stem}" + ("" if split == "all" else f"-{Path(split).stem}")
    target = out or Path(".ragnet-cache") / "eval" / name
    claim_folder(target)  # before any index or LM work
    pin_threads(max(1, (os.cpu_count() or 2) // threads))
    index = docs_index(docs, log=say)
    _check_places(index, questions, data)
    if only:  # every strategy searches the chosen files alone (Index.scoped)
        index = index.scoped(*only)
        say(f"asking {len(index.files)} of the folder's files: {', '.join(index.files[:5])}"
            + (" …" if len(index.files) > 5 else ""))
    plan = plan_for(index)
    judge, reader = _eval_lms(lms, judge_lm, no_judge, f"{name}: {len(questions)} questions over {docs} "
                              f"({len(index):,} chunks)", plan, target)
    summary = run_eval(questions, plan, out_dir=target, index=index, name=name, judge=not no_judge, judge_lm=judge,
                       answer_lm=reader, threads=threads, command=command_line(ctx), fresh=fresh,
                       retry_errors=retry_errors, plots=not no_plots, baseline=baseline, log=say,
                       scorers=[place_scores], extra_metrics=PLACE_METRICS, primary_metric="contains")
    _print_table(summary)
    typer.echo(f"wrote {target / 'report.md'}, {target / 'report.html'}, {target / 'summary.json'} and "
               f"{target / 'results.jsonl'}")


def _check_places(index: Any, questions: list, data: str) -> None:
    """Refuse gold places the folder does not have, and say which quotes its text lacks, before
    any LM time is spent (:func:`ragnet.eval.run.doc_questions.check_places`)."""
    from ragnet.eval.run.doc_questions import check_places, place_warning_lines

    for line in place_warning_lines(check_places(index, questions, data), data):
        say(line)


def _short_verdict(summary: dict, label: str) -> str:
    if label == summary["baseline"]:
        return "baseline"
    cmp = summary["vs_baseline"].get(label)
    if cmp is None:
        return ""
    if cmp["beats_baseline"]:
        return f"beats (p={cmp['p_value']:.2g})"
    return "no (worse)" if cmp["delta"] < 0 else ("no (=)" if cmp["delta"] == 0 else f"no (p={cmp['p_value']:.2g})")


def _p50(agg: dict) -> str:
    """p50 seconds, with cache hits priced where the run paid for them live (report: Cost)."""
    priced = agg.get("priced_latency") or {}
    p50 = priced["p50"] if priced.get("rows") else agg["latency_p50"]
    return "–" if p50 is None else f"{p50:.1f}"


def _print_table(summary: dict) -> None:
    from rich.table import Table

    from ragnet.eval.report.markdown_tables import percent

    table = Table(title=f"{summary['meta']['set']} ({summary['meta']['questions']} questions)")
    against = f"vs {summary['baseline'] or 'basic'}"
    for col in ("strategy", "EM", "F1", "LLM", "gold", "tok in", "LM calls", "p50 s", "err", "LM fail", against):
        table.add_column(col, justify="left" if col in ("strategy", against) else "right")
    for label, a in summary["strategies"].items():
        table.add_row(label, percent(a["em"]), percent(a["f1"]), percent(a["llm_match"]), percent(a["gold_all"]),
                      "–" if a["input_tokens"] is None else f"{a['input_tokens']:,.0f}",
                      "–" if a["lm_calls"] is None else f"{a['lm_calls']:.1f}",
                      _p50(a),
                      str(a["errors"] - a.get("lm_failures", 0)), str(a.get("lm_failures", 0)),
                      _short_verdict(summary, label))
    console().print(table)
    ov = summary.get("overhead") or {}
    if ov.get("ratio") is not None:
        typer.echo(f"evaluation overhead: {100 * ov['loop_ratio']:.2f}% of program time "
                   f"({100 * ov['ratio']:.2f}% with report and plots); primary metric: {summary['primary_metric']}")


def retrieval(
    ctx: typer.Context,
    data: str = data_option(),
    split: str = split_option(),
    n: Optional[int] = typer.Option(None, "-n", help="At most this many questions."),
    budgets: str = typer.Option("1000,2000,4000,8000", help="Comma-separated context token budgets."),
    data_dir: Optional[Path] = data_dir_option(),
    index_dir: Optional[Path] = index_dir_option(),
    sentence_budgets: str = typer.Option("512,1000,2000,4000", help="Context budgets of the sentence-level evidence table (sets with gold supporting sentences); 'none' to skip it."),
    out: Optional[Path] = typer.Option(None, help="Write report.md and summary.json here (a new, empty or earlier ragnet eval folder)."),
    threads: int = typer.Option(2, help="Threads for torch/FAISS (pinned)."),
) -> None:
    """Gold-evidence recall of top-k, rank-order filling, Top-Kmax and sentence selections; no LM."""
    from ragnet._threads import pin_threads
    from ragnet.eval.recall.retrieval_recall import RetrievalEvaluator
    from ragnet.eval.run.datasets import load_questions
    from ragnet.eval.run.eval_indexes import load_pooled
    from ragnet.eval.run.run_folder import claim_folder

    _check_split(split)
    budget_list = parse_ints(budgets, "budgets")
    if out is not None:
        claim_folder(out)
    pin_threads(threads)
    idx, ev = load_pooled(data, data_dir=data_dir, path=index_dir, log=say)
    questions = load_questions(ev.path, split=split, limit=n)
    sentence_list = None if sentence_budgets.strip().casefold() == "none" else parse_ints(sentence_budgets,
                                                                                         "sentence-budgets")
    evaluator = RetrievalEvaluator(idx, questions, budgets=budget_list, sentence_budgets=sentence_list,
                                   command=command_line(ctx), show_progress=True)
    typer.echo(evaluator.format_report(evaluator(out)))
    _wrote(out, "report.md", "summary.json")


@with_lm_options(answer_lm=False)
def hops(
    ctx: typer.Context,
    data: str = data_option(),
    split: str = split_option(),
    n: Optional[int] = typer.Option(None, "-n", help="At most this many questions."),
    policies: str = typer.Option("bridge", help="Comma-separated follow-up policies: bridge (no LM) | rewrite | rewrite+bridge | next | next+bridge (next: the one-query step)."),
    budget: int = typer.Option(1000, help="Token budget of the first context (oneshot:sentences)."),
    searches: int = typer.Option(3, help="Follow-up searches per question and policy."),
    k: int = typer.Option(5, "-k", help="Chunks per follow-up search."),
    n_queries: int = typer.Option(5, "--n-queries", help="Queries the rewrite step is asked for."),
    program: Optional[Path] = typer.Option(None, "--program", help="A compiled program (ragnet optimize --step rewrite): its rewrite step serves the LM policies of its form."),
    data_dir: Optional[Path] = data_dir_option(),
    index_dir: Optional[Path] = index_dir_option(),
    docs: Optional[Path] = typer.Option(None, "--docs", help="A folder of your own documents; --data is then a "
                                        "questions file with gold places (see `ragnet eval --docs`): a place the "
                                        "first context misses is the hop's target."),
    kind: Optional[str] = typer.Option(None, "--kind", help="Only questions of this kind (type), e.g. two-part."),
    out: Optional[Path] = _out_option(),
    fresh: bool = _fresh_option(),
    *,
    lms: LMOptions,
) -> None:
    """Hop recall: how often follow-up searches find the gold document the first context missed; no answer call."""
    from ragnet.eval.recall.hop_recall import HopEvaluator, parse_policies
    from ragnet.eval.run.datasets import load_questions
    from ragnet.eval.run.doc_questions import load_doc_questions
    from ragnet.eval.run.eval_indexes import docs_index, load_pooled
    from ragnet.eval.run.run_folder import claim_folder

    _check_split(split)
    chosen = parse_policies(policies)  # before the index is built or loaded
    if out is not None:
        claim_folder(out)
    step = _rewrite_step(program) if program is not None else None  # before the index, too
    if docs is not None:
        questions = load_doc_questions(Path(data))
        idx = docs_index(docs, log=say)
        _check_places(idx, questions, data)
    else:
        idx, ev = load_pooled(data, data_dir=data_dir, path=index_dir, log=say)
        questions = load_questions(ev.path, split=split)
    if kind is not None:
        questions = [q for q in questions if q.type == kind]
        if not questions:
            raise InputError(f"no questions of kind {kind!r}", argument="kind")
    evaluator = HopEvaluator(idx, questions[:n] if n else questions,
                             policies=chosen, budget=budget, searches=searches, k=k, n_queries=n_queries,
                             rewrite_step=step, program=str(program) if program else None,
                             command=command_line(ctx), log=say)
    if evaluator.needs_lm():
        lms.configure()
    typer.echo(evaluator.format_report(evaluator(out, fresh=fresh)))
    _wrote(out, "report.md", "summary.json", "results.jsonl")


def _rewrite_step(path: Path) -> Any:
    """The rewrite step of the compiled program saved at ``path``."""
    from ragnet.eval.run.eval_indexes import NoIndex
    from ragnet.programs.persist import load_program, read_header
    from ragnet.programs.registry import build_program

    spec = read_header(path).get("spec")
    if not spec:
        raise InputError(f"{path}: the file names no strategy spec; recompile it with `ragnet optimize`",
                         argument="program")
    step = load_program(build_program(spec, NoIndex()), path).steps().get("rewrite")
    if step is None:
        raise InputError(f"{path}: the program has no rewrite step", argument="program")
    return step


def report(
    out: Path = typer.Option(..., "--out", help="The folder of a finished `ragnet eval` run (summary.json and results.jsonl or results.jsonl.gz)."),
    data: Optional[str] = typer.Option(None, help="Question file with the gold labels, for rows that do not carry them (default: the run's own, when it is still there)."),
    data_dir: Optional[Path] = data_dir_option(),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the page here instead of OUT/report.html."),
) -> None:
    """(Re)build report.html of a finished run from its files; runs nothing (no index search, no LM)."""
    from ragnet.eval.report.html_report import rebuild_html

    typer.echo(f"wrote {rebuild_html(out, data=data, data_dir=data_dir, output=html, log=say)}")


def register(app: typer.Typer) -> None:
    """The ``ragnet eval`` group: the group itself runs :func:`evaluate`; subcommands below it."""
    group = new_app("Measure strategies on benchmarks with gold evidence.")
    group.callback(invoke_without_command=True, help=HELP)(evaluate)
    group.command("retrieval")(retrieval)
    group.command("hops")(hops)
    group.command("report")(report)
    app.add_typer(group, name="eval")
