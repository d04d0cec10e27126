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


def scale(
    passages: int = typer.Option(1_000_000, help="Corpus size: the real HotpotQA paragraphs plus distractors."),
    workdir: Path = typer.Option(Path("scale-bench"), help="Where the indexes are written (a few GB at 1M)."),
    questions: int = typer.Option(200, help="HotpotQA dev questions for latency and recall."),
    faiss_index: str = typer.Option("ivfpq", help="Dense kind of the large index: ivfpq | hnsw | flat | ivf."),
    nlist: Optional[int] = typer.Option(None, help="IVF-PQ coarse lists (default ~2*sqrt(N))."),
    m: Optional[int] = typer.Option(None, help="IVF-PQ bytes per vector (default dimension/8)."),
    nprobe: int = typer.Option(32, help="IVF-PQ lists scanned per query."),
    opq: bool = typer.Option(False, help="Learn an OPQ rotation before product quantization."),
    validate: bool = typer.Option(False, help="Also compare an all-real corpus with a mixed one of equal size."),
    exact: bool = typer.Option(True, help="Also measure recall with exact dense search on the same corpus."),
    threads: int = typer.Option(2, help="Threads for the search processes (pinned)."),
    data_dir: Optional[Path] = data_dir_option(),
) -> None:
    """Build an index of N passages (real + distractors; see ragnet.index.scale) and print build
    throughput, peak RSS, size on disk, search latency and recall against exact search, as JSON."""
    from ragnet.index.ivfpq import IVFPQParams
    from ragnet.index.scale import run_scale_bench

    params = IVFPQParams(nlist=nlist, m=m, nprobe=nprobe, opq=opq)
    result = run_scale_bench(passages, workdir, data_dir=data_dir, questions=questions, faiss_index=faiss_index,
                             ivfpq=params, validate=validate, exact=exact, threads=threads, log=say)
    typer.echo(json.dumps(result, indent=2))


def register(app: typer.Typer) -> None:
    """The ``ragnet bench`` group."""
    group = new_app("Benchmarks that print median timings as JSON.")
    group.command("core")(core)
    group.command("index")(index)
    group.command("scale")(scale)
    app.add_typer(group, name="bench")
