"""``ragnet eval laziness``: the iterative study's retrieval-laziness experiment.

Pads each question's context with irrelevant paragraphs to 3k/6k/9k/12k tokens while keeping
only part of its gold evidence, asks the agent's decision step (IterativeRAG's
AssessSufficiency, compiled or not) whether to search again, and reports the follow-up search
rate next to the study's 95/90/50/25%. See :mod:`ragnet.eval.laziness` for the design.

Example:
    ragnet eval laziness --data hotpotqa_dev_distractor --split dev -n 20 \\
        --pads 3000,6000,9000,12000 --lm local --seed 0 --out runs/laziness
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Optional

import typer

from ragnet.errors import InputError, RagnetError

# Headroom when sizing the local model's window: Qwen's tokenizer counts up to ~10% more than
# cl100k on English prose, and the answer needs room too.
_TOKENIZER_SLACK = 1.15
_ANSWER_ROOM = 256


class _NoIndex:
    """Stands in for an index: this experiment hands the decision step its contexts directly."""

    def search(self, *args: Any, **kwargs: Any):  # pragma: no cover - never called
        raise RagnetError("the laziness experiment does not search")


def _parse_pads(text: str, argument: str) -> list[int]:
    """``"3000,6000"`` -> ``[3000, 6000]``, with a clear error naming the argument."""
    items = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if argument == "full-gold-pads" and [p.casefold() for p in items] in (["none"], []):
        return []
    out = []
    for item in items:
        try:
            value = int(item.replace("_", ""))
        except ValueError:
            raise InputError(f"expected comma-separated token counts (integers), got {text!r}",
                             argument=argument) from None
        if value < 0:
            raise InputError(f"token counts cannot be negative, got {value}", argument=argument)
        out.append(value)
    if not out and argument == "pads":
        raise InputError("give at least one pad size, e.g. 3000,6000,9000,12000", argument=argument)
    return out


def decision_step(program_file: Optional[Path]) -> tuple[Any, int, dict[str, Any]]:
    """The agent's sufficiency predictor: IterativeRAG's by default, or a compiled program's.

    Returns ``(predictor, retries, description)``. A compiled file may hold any program with
    a sufficiency step (IterativeRAG, CombinedRAG, ReflectiveRAG).
    """
    from ragnet.programs import STRATEGIES, IterativeRAG

    if program_file is None:
        program = IterativeRAG(_NoIndex())
        return program.assess, program.retries, {"program": "IterativeRAG", "file": None, "sha256": None}
    from ragnet.optimize.persist import load_program, read_header

    header = read_header(program_file)
    classes = {cls.__name__: cls for cls in STRATEGIES.values()}
    cls = classes.get(str(header.get("program")))
    if cls is None:
        raise InputError(f"compiled for unknown program {header.get('program')!r}", path=program_file)
    program = cls(_NoIndex())
    if not hasattr(program, "assess"):
        with_step = ", ".join(n for n, c in classes.items() if hasattr(c(_NoIndex()), "assess"))
        raise InputError(f"compiled for {cls.__name__}, which has no sufficiency (search-again) step; "
                         f"use a program compiled for {with_step}", path=program_file)
    load_program(program, program_file)
    digest = hashlib.sha256(Path(program_file).read_bytes()).hexdigest()
    return program.assess, program.retries, {"program": cls.__name__, "file": str(program_file), "sha256": digest}


def prompt_tokens(predictor: Any, question: str, context: str) -> int:
    """cl100k tokens of the whole prompt the step sends (instructions, demos, question, context)."""
    import dspy

    from ragnet.corpus.tokens import count_tokens

    adapter = dspy.settings.adapter or dspy.ChatAdapter()
    messages = adapter.format(predictor.signature, list(predictor.demos or []), {"question": question,
                                                                              "context": context})
    return sum(count_tokens(str(m.get("content") or "")) for m in messages)


def needed_n_ctx(largest_prompt: int) -> int:
    """Local context window for a prompt of ``largest_prompt`` cl100k tokens, rounded up to 512."""
    need = math.ceil(largest_prompt * _TOKENIZER_SLACK) + _ANSWER_ROOM
    return max(8192, -(-need // 512) * 512)


def configure_lm(lm: Optional[str], *, n_ctx: Optional[int], timeout: float, largest_prompt: int):
    """Configure the LM; for the local model, size ``n_ctx`` to the largest prompt (or check the
    given one). Returns ``(lm, description)``. Tests replace this function."""
    import ragnet
    from ragnet.lm.config import parse_lm_spec

    kind, _ = parse_lm_spec(lm)
    options: dict[str, Any] = {}
    if kind == "local":
        need = needed_n_ctx(largest_prompt)
        if n_ctx is None:
            n_ctx = need
        elif n_ctx < need:
            raise InputError(
                f"{n_ctx} tokens cannot hold the largest prompt (~{largest_prompt:,} cl100k tokens, about "
                f"{need:,} with tokenizer slack and the answer); raise --n-ctx to {need} or lower --pads "
                "(Qwen2.5 models read up to 32,768 tokens)", argument="n-ctx")
        options["n_ctx"] = n_ctx
    elif n_ctx is not None:
        raise InputError("applies to the local model only", argument="n-ctx")
    built = ragnet.configure(lm=lm, timeout=timeout, **options)
    return built, {"lm": str(getattr(built, "model", lm)), "n_ctx": n_ctx, "timeout": timeout}


def _read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Results of an earlier run by case key; a torn last line (crash mid-write) is ignored."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    lines = path.read_text(encoding="utf-8").splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines):
                continue
            raise InputError("corrupt results line; move the file away or pass --overwrite", path=path,
                             line=lineno) from None
        if isinstance(rec, dict) and "key" in rec:
            done[rec["key"]] = rec
    return done


def _append(path: Path, record: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def laziness(
    data: str = typer.Option("hotpotqa_dev_distractor", help="Dataset (name under the data dir, folder or questions.jsonl); needs multi-hop questions with gold paragraphs in their context."),
    split: str = typer.Option("dev", help="Question split: dev or acceptance (padding comes from the same split)."),
    n: int = typer.Option(20, "-n", help="Questions to measure (the split's first n with at least two gold paragraphs)."),
    pads: str = typer.Option("3000,6000,9000,12000", help="Comma-separated context sizes (tokens) for the partial-evidence contexts; the study's are 3000,6000,9000,12000."),
    full_gold_pads: str = typer.Option("", help="Extra context sizes at which the full gold evidence is shown too (comma-separated)."),
    controls: bool = typer.Option(True, "--controls/--no-controls", help="Add the pad-0 controls: partial gold only, and full gold only."),
    position: str = typer.Option("early", help="Gold position: early (seeded place inside the smallest pad level; larger levels extend the same context) or random (anywhere, per level)."),
    lm: Optional[str] = typer.Option(None, help="LM: 'local' (default, llama.cpp) or any litellm model id; env RAGNET_LM."),
    program_file: Optional[Path] = typer.Option(None, "--program", help="Compiled program JSON (`ragnet optimize`) whose sufficiency step to use."),
    seed: int = typer.Option(0, help="Seed for the kept gold paragraph, the padding and the gold position."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.md, summary.json and results.jsonl here (an interrupted run resumes)."),
    data_dir: Optional[Path] = typer.Option(None, help="Benchmark data folder (default ../shared/data or $RAGNET_DATA)."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", help="Local model context window (default: sized to the largest prompt)."),
    timeout: float = typer.Option(300.0, help="Seconds per LM call (a 12k-token prompt takes about a minute on 2 CPU cores)."),
    retries: Optional[int] = typer.Option(None, help="LM retries before the step falls back (default: the program's, 1)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Discard results in --out from a run with other settings."),
) -> None:
    """Follow-up search rate of the agent as padding grows, next to the iterative study's."""
    try:
        _run(data=data, split=split, n=n, pads=pads, full_gold_pads=full_gold_pads, controls=controls,
             position=position, lm=lm, program_file=program_file, seed=seed, out=out, data_dir=data_dir,
             n_ctx=n_ctx, timeout=timeout, retries=retries, overwrite=overwrite)
    except RagnetError as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise typer.Exit(code=2)


def _run(*, data: str, split: str, n: int, pads: str, full_gold_pads: str, controls: bool, position: str,
         lm: Optional[str], program_file: Optional[Path], seed: int, out: Optional[Path],
         data_dir: Optional[Path], n_ctx: Optional[int], timeout: float, retries: Optional[int],
         overwrite: bool) -> None:
    import dspy

    from ragnet._atomic import write_json, write_text
    from ragnet.eval.datasets import load_questions, resolve_dataset
    from ragnet.eval.laziness import (
        POSITIONS, build_cases, evidence_dependence, format_laziness_report, gold_paragraphs, padding_trend,
        run_laziness, summarize_laziness,
    )

    started = time.perf_counter()
    if n < 1:
        raise InputError(f"must be at least 1, got {n}", argument="n")
    if position not in POSITIONS:
        raise InputError(f"must be one of {', '.join(POSITIONS)}, got {position!r}", argument="position")
    if timeout <= 0:
        raise InputError(f"must be positive seconds, got {timeout}", argument="timeout")
    if retries is not None and retries < 0:
        raise InputError(f"must be 0 or more, got {retries}", argument="retries")
    pad_list = _parse_pads(pads, "pads")
    full_list = _parse_pads(full_gold_pads, "full-gold-pads")
    if out is not None and out.exists() and not out.is_dir():
        raise InputError("is a file; give a directory", argument="out")

    qpath = resolve_dataset(data, data_dir)
    split_questions = load_questions(qpath, split=split)
    eligible = [q for q in split_questions if len(gold_paragraphs(q)) >= 2]
    if not eligible:
        raise InputError(f"no question of {qpath.parent.name} ({split}) has two gold paragraphs in its context; "
                         "the experiment needs multi-hop questions with distractor-style contexts", argument="data")
    questions = eligible[:n]
    cases, skipped = build_cases(questions, pads=pad_list, full_gold_pads=full_list, controls=controls,
                                 pool_records=split_questions, seed=seed, position=position)
    predictor, program_retries, program_info = decision_step(program_file)
    retries = program_retries if retries is None else retries
    biggest = max(cases, key=lambda c: c.context_tokens)
    largest_prompt = prompt_tokens(predictor, biggest.question, biggest.context_text())
    lm_obj, lm_info = configure_lm(lm, n_ctx=n_ctx, timeout=timeout, largest_prompt=largest_prompt)

    config = {
        "data": qpath.parent.name, "split": split, "pads": sorted(set(pad_list)), "full_gold_pads": sorted(set(full_list)),
        "controls": controls, "position": position, "seed": seed, "lm": lm_info["lm"],
        "program": program_info["program"], "program_sha256": program_info["sha256"], "retries": retries,
    }
    command = (f"ragnet eval laziness --data {data} --split {split} -n {n} --pads {','.join(map(str, pad_list))}"
               + (f" --full-gold-pads {','.join(map(str, full_list))}" if full_list else "")
               + ("" if controls else " --no-controls") + (f" --position {position}" if position != "early" else "")
               + (f" --lm {lm}" if lm else "") + (f" --program {program_file}" if program_file else "")
               + f" --seed {seed}" + (f" --out {out}" if out else ""))

    done: dict[str, dict[str, Any]] = {}
    results_path = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        results_path, run_path = out / "results.jsonl", out / "run.json"
        if results_path.exists() and not overwrite:
            previous = json.loads(run_path.read_text(encoding="utf-8")) if run_path.is_file() else None
            if previous != config:
                raise InputError(
                    "holds results.jsonl from a run with other settings "
                    f"({'no run.json' if previous is None else _diff(previous, config)}); "
                    "use another --out or pass --overwrite", argument="out")
            done = _read_results(results_path)
        elif results_path.exists():
            results_path.unlink()
        write_json(run_path, config)
        reused = sum(1 for c in cases if c.key in done)
        if reused:
            typer.echo(f"resuming: {reused} of {len(cases)} decisions already in {results_path}", err=True)

    typer.echo(f"{len(questions)} questions x {len(cases) // max(len(questions), 1)} contexts "
               f"(largest prompt ~{largest_prompt:,} tokens) on {lm_info['lm']}", err=True)
    with dspy.context(lm=lm_obj):
        results = run_laziness(predictor, cases, retries=retries, done=done,
                               on_result=(lambda r: _append(results_path, r)) if results_path else None)
    rows = summarize_laziness(results)
    summary = {
        "command": command,
        "config": {**config, "keep": "1 of 2" if all(len(c.kept_titles) == 1 for c in cases) else "half (rounded down)",
                   "n": len(questions)},
        "lm": lm_info,
        "program": program_info,
        "questions": len(questions),
        "skipped_in_split": len(split_questions) - len(eligible),
        "skipped": skipped,
        "conditions": rows,
        "evidence_dependence": evidence_dependence(rows),
        "padding_trend": padding_trend(rows),
        "lm_calls": sum(r.get("lm_calls", 0) for r in results),
        "prompt_tokens": sum(r.get("prompt_tokens", 0) for r in results),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "decision_seconds": round(sum(r.get("seconds", 0.0) for r in results), 1),
        "resumed": sum(1 for c in cases if c.key in done),
    }
    report = format_laziness_report(summary)
    typer.echo(report)
    if out is not None:
        header = (f"# Retrieval laziness: follow-up search rate vs context size\n\nCommand: `{command}`\n\n"
                  f"LM: `{lm_info['lm']}`; decision step: {program_info['program']}.assess"
                  + (f" from `{program_info['file']}`" if program_info["file"] else " (uncompiled)")
                  + f"; {len(questions)} questions of {config['data']} ({split}); wall time "
                  f"{summary['wall_seconds']:.0f} s; decisions took {summary['decision_seconds']:.0f} s in all"
                  + (f" ({summary['resumed']} resumed from results.jsonl)" if summary["resumed"] else "")
                  + ".\n\n")
        write_text(out / "report.md", header + report + "\n")
        write_json(out / "summary.json", summary)
        typer.echo(f"wrote {out / 'report.md'}, {out / 'summary.json'} and {results_path}")


def _diff(previous: dict[str, Any], current: dict[str, Any]) -> str:
    keys = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
    return ", ".join(f"{k}: {previous.get(k)!r} -> {current.get(k)!r}" for k in keys)


def register(eval_app: typer.Typer) -> None:
    """Add ``laziness`` to the ``ragnet eval`` command group."""
    eval_app.command("laziness")(laziness)
