"""``ragnet demo``: the synthetic yearbook corpus, indexed and answered by every strategy.

Runs offline on the local LM: generate the corpus (``ragnet.corpus.synthetic``), index it with
the city gazetteer (so the metadata rules can tell cities apart), answer the L1–L4 questions
with each strategy, and print a side-by-side table. Answers are cached by DSPy, so a second
run is fast.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ragnet.errors import InputError

DEFAULT_STRATEGIES = ("basic", "oneshot", "iterative", "reflective", "combined")
# Yearbook sections are ~70-token paragraphs; 128-token chunks hold one or two sections, which
# keeps prompts (and a 0.5B model's CPU time) small.
DEMO_CHUNK_TOKENS, DEMO_OVERLAP = 128, 16


@dataclass
class StrategyRow:
    """Aggregates of one strategy over the demo questions."""

    strategy: str
    correct: list[float] = field(default_factory=list)
    by_level: dict[int, list[float]] = field(default_factory=dict)
    gold_recall: list[float] = field(default_factory=list)
    chunks: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    lm_calls: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    errors: int = 0


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def build_demo_index(workdir: Path, *, show_progress: bool = True):
    """Write the corpus and (re)build its index when the corpus changed; returns (index, corpus path)."""
    from ragnet.corpus.loader import load_documents
    from ragnet.corpus.metadata import Gazetteer
    from ragnet.corpus.synthetic import GAZETTEER, write_demo_corpus
    from ragnet.index import Index

    corpus = write_demo_corpus(workdir / "corpus")
    digest = hashlib.sha256(corpus.read_bytes() + f"{DEMO_CHUNK_TOKENS}/{DEMO_OVERLAP}".encode()).hexdigest()[:16]
    index_dir = workdir / f"index-{digest}"
    if (index_dir / "manifest.json").is_file():
        index = Index.load(index_dir)
        if index.gazetteer is not None:  # indexes from before the gazetteer was persisted are rebuilt
            return index, corpus
    docs = load_documents(corpus)
    index = Index.build(docs, index_dir, chunk_tokens=DEMO_CHUNK_TOKENS, overlap=DEMO_OVERLAP,
                        gazetteer=Gazetteer(GAZETTEER), show_progress=show_progress)
    return index, corpus


def build_demo_program(spec: str, index, *, budget: int = 1500, max_turns: int = 2):
    """The program ``ragnet demo`` runs for ``spec``: the strategy with the demo's lean settings."""
    from ragnet.programs.registry import build_program

    # Lean settings so the demo finishes in minutes on 2 CPU cores with a 0.5B model: fewer turns
    # and 3 sampled sub-queries instead of 5 (generation, not reading, dominates the cost).
    overrides = {
        "iterative": {"max_turns": max_turns, "n_queries": 3, "k": 3},
        "combined": {"max_turns": max_turns, "n_queries": 3, "k": 3},
        "reflective": {"max_reflections": max(0, max_turns - 1), "n_subqueries": 3, "k": 3},
    }
    return build_program(spec, index, budget=budget, **overrides.get(spec.partition(":")[0], {}))


def run_demo(
    workdir: Path,
    *,
    lm: str | None = None,
    per_level: int = 1,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    budget: int = 1500,
    max_turns: int = 2,
    out_json: Path | None = None,
) -> list[StrategyRow]:
    """Index the demo corpus and answer its questions with each strategy; print the table."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    import ragnet
    from ragnet.corpus.synthetic import choice_correct, demo_questions
    from ragnet.programs.registry import parse_spec

    if per_level < 1:
        raise InputError("must be at least 1", argument="per-level")
    for spec in strategies:
        parse_spec(spec)
    console = Console()
    if not console.is_terminal:  # logs/CI: rich would squeeze the table into 80 columns
        console = Console(width=150)
    workdir = Path(workdir)
    started = time.perf_counter()
    index, corpus = build_demo_index(workdir)
    console.print(f"[bold]corpus[/bold] {corpus} -> {len(index)} chunks ({time.perf_counter() - started:.1f}s)")
    ragnet.configure(lm=lm)
    questions = demo_questions(n_per_level=per_level)
    rows: list[StrategyRow] = []
    records: list[dict[str, Any]] = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console) as progress:
        task = progress.add_task("answering", total=len(strategies) * len(questions))
        for spec in strategies:
            program = build_demo_program(spec, index, budget=budget, max_turns=max_turns)
            row = StrategyRow(spec)
            for q in questions:
                progress.update(task, description=f"{spec:<12} L{q.level} {q.id}")
                pred = program(question=q.question)
                ok = choice_correct(pred.answer, q)
                docs = {index.chunk(cid).doc_id for cid in pred.context}
                recall = _mean([float(d in docs) for d in q.gold_doc_ids])
                row.correct.append(ok)
                row.by_level.setdefault(q.level, []).append(ok)
                row.gold_recall.append(recall)
                row.chunks.append(len(pred.context))
                row.tokens.append(pred.usage["input_tokens"] + pred.usage["output_tokens"])
                row.lm_calls.append(pred.usage["lm_calls"])
                row.seconds.append(pred.usage["seconds"])
                row.errors += pred.usage["lm_errors"]
                records.append({"strategy": spec, "id": q.id, "level": q.level, "question": q.question,
                                "gold": q.answers, "answer": pred.answer, "correct": ok, "gold_doc_recall": recall,
                                "context": pred.context, "usage": pred.usage})
                progress.advance(task)
                if not console.is_terminal:  # logs and CI get one line per answer instead of a live bar
                    console.print(f"{spec:<12} L{q.level} {'ok ' if ok else 'no '} {pred.usage['seconds']:6.1f}s "
                                  f"{pred.usage['lm_calls']:2d} LM calls  {q.question} -> {pred.answer[:60]!r}")
            rows.append(row)

    levels = sorted({q.level for q in questions})
    table = Table(title=f"ragnet demo: {len(questions)} questions, budget {budget} tokens, local LM")
    for col in ["strategy", "accuracy", *[f"L{lv}" for lv in levels], "gold docs", "chunks", "tokens", "LM calls",
                "s/question", "LM errors"]:
        table.add_column(col, justify="right" if col != "strategy" else "left")
    for row in rows:
        table.add_row(
            row.strategy, f"{_mean(row.correct):.0%}", *[f"{_mean(row.by_level.get(lv, [])):.0%}" for lv in levels],
            f"{_mean(row.gold_recall):.0%}", f"{_mean(row.chunks):.1f}", f"{_mean(row.tokens):,.0f}",
            f"{_mean(row.lm_calls):.1f}", f"{_mean(row.seconds):.1f}", str(row.errors),
        )
    console.print(table)
    calls = sum(r["usage"]["lm_calls"] for r in records)
    cached = sum(r["usage"].get("cached_calls", 0) for r in records)
    if cached:  # a cached call reports no tokens and ~0 s: the table is then not a timing
        from ragnet.lm.config import cache_dir

        console.print(f"{cached} of {calls} LM calls were answered from the DSPy cache ({cache_dir()}); tokens "
                      "and seconds count the live calls only. For a timing, set RAGNET_CACHE_DIR to an empty folder.")
    console.print(f"total {time.perf_counter() - started:.0f}s; per-question answers in "
                  f"{out_json or workdir / 'demo_results.json'}")
    target = out_json or workdir / "demo_results.json"
    from ragnet._atomic import write_json

    write_json(target, records)
    return rows
