"""``ragnet bench``: benchmarks that print figures (medians) as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ragnet.cli.common import data_dir_option, data_option, index_dir_option, new_app, say


def core(
    repeats: int = typer.Option(50, help="Timed repeats per figure (medians reported)."),
    threads: int = typer.Option(1, help="Threads for BLAS/torch/FAISS (pinned)."),
    data: str = data_option(),
    data_dir: Optional[Path] = data_dir_option(),
    index_dir: Optional[Path] = index_dir_option(),
    queries: int = typer.Option(200, help="Number of dev-split questions used as search queries."),
    skip_search: bool = typer.Option(False, help="Only time the numpy core."),
) -> None:
    """Median timings (ms) of knapsack, noise removal and hybrid search, as JSON."""
    from ragnet._threads import pin_threads
    from ragnet.core.bench import run_core_bench

    pin_threads(threads)
    result = {"threads": threads, **run_core_bench(repeats=repeats)}
    if not skip_search:
        from ragnet.eval.datasets import read_split
        from ragnet.eval.indexes import load_pooled
        from ragnet.index.bench import run_search_bench

        idx, ev = load_pooled(data, data_dir=data_dir, path=index_dir, log=say)
        dev = read_split(ev.path, "dev")
        texts = [q.question for q in ev.questions if q.id in dev][:queries]
        result["search"] = {"corpus_chunks": len(idx), **run_search_bench(idx, texts, repeats=3)}
    typer.echo(json.dumps(result, indent=2))


def index(
    n: int = typer.Option(2000, help="Number of pooled paragraphs to embed."),
    threads: int = typer.Option(2, help="Threads for torch (pinned)."),
    data: str = data_option(),
    data_dir: Optional[Path] = data_dir_option(),
) -> None:
    """Indexing overhead of Index.build over raw SentenceTransformer.encode, as JSON."""
    from ragnet._threads import pin_threads
    from ragnet.eval.datasets import load_questions, pooled_documents
    from ragnet.index.bench import run_index_bench

    pin_threads(threads)
    docs = pooled_documents(load_questions(data, data_dir=data_dir))[:n]
    typer.echo(json.dumps({**run_index_bench(docs), "threads": threads, "documents": len(docs)}, indent=2))


def register(app: typer.Typer) -> None:
    """The ``ragnet bench`` group."""
    group = new_app("Benchmarks that print median timings as JSON.")
    group.command("core")(core)
    group.command("index")(index)
    app.add_typer(group, name="bench")
