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
    from ragnet.bench.core import run_core_bench

    pin_threads(threads)
    result = {"threads": threads, **run_core_bench(repeats=repeats)}
    if not skip_search:
        from ragnet.bench.index_timings import run_search_bench
        from ragnet.bench.questions import dev_questions
        from ragnet.eval.run.eval_indexes import load_pooled

        idx, ev = load_pooled(data, data_dir=data_dir, path=index_dir, log=say)
        texts = [q.question for q in dev_questions(ev.questions, ev.path, queries)]
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
    from ragnet.bench.index_timings import run_index_bench
    from ragnet.bench.questions import benchmark_inputs

    pin_threads(threads)
    docs, _ = benchmark_inputs(data, data_dir, documents=n)
    typer.echo(json.dumps({**run_index_bench(docs), "threads": threads, "documents": len(docs)}, indent=2))


def embed(
    n: int = typer.Option(1000, help="Pooled HotpotQA paragraphs to embed per pass."),
    backends: str = typer.Option("torch@64,torch,onnx,onnx-int8", help="Comma-separated Embedder backends, each "
                                 "at its default batch size or pinned with @N (torch@64: torch's former default). "
                                 "Plain torch is always measured: the reference."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", min=1, help="Texts per forward pass for every "
                                             "backend not pinned with @N (default: each backend's own)."),
    repeats: int = typer.Option(3, help="Timed passes per backend (medians reported)."),
    queries: int = typer.Option(100, help="Dev questions timed one by one (encode_query)."),
    threads: int = typer.Option(2, help="Threads for torch / ONNX Runtime (pinned)."),
    recall: Optional[str] = typer.Option(None, help="Also embed the pooled index with this backend and "
                                         "compare OneShotRAG's all-gold recall at 4k with torch's."),
    workdir: Path = typer.Option(Path("scale-bench"), help="Where --recall writes its index."),
    data_dir: Optional[Path] = data_dir_option(),
) -> None:
    """Embedding throughput of each backend on the same texts (ratio to torch, cosine to torch's
    vectors), query latency, and optionally recall with a backend-embedded index, as JSON."""
    from ragnet._threads import pin_threads
    from ragnet.bench.index_timings import run_embed_bench
    from ragnet.bench.questions import benchmark_inputs, passage_texts

    pin_threads(threads)
    docs, qs = benchmark_inputs(data_dir=data_dir, documents=n, questions=queries)
    texts = passage_texts(docs)
    names = [b.strip() for b in backends.split(",") if b.strip()]
    result = run_embed_bench(texts, backends=names, repeats=repeats, threads=threads, queries=qs, batch_size=batch_size)
    if recall:
        from ragnet.bench.scale import run_backend_recall

        result["recall"] = run_backend_recall(recall, workdir, data_dir=data_dir, threads=threads, log=say)
    typer.echo(json.dumps(result, indent=2))


def ray(
    n: int = typer.Option(2000, help="Pooled HotpotQA paragraphs to index."),
    workers: str = typer.Option("1,2", help="Comma-separated worker counts (a local cluster each)."),
    queries: int = typer.Option(50, help="Dev questions whose top-5 must equal the one-process build's."),
    data_dir: Optional[Path] = data_dir_option(),
) -> None:
    """One-process build against Ray Data builds on a local cluster: seconds, chunks/s, speed-up
    and equality (ids, vectors, top-5), as JSON. Needs ragnet[scale]."""
    from ragnet.bench.index_timings import run_ray_bench
    from ragnet.bench.questions import benchmark_inputs

    docs, qs = benchmark_inputs(data_dir=data_dir, documents=n, questions=queries)
    counts = [int(w) for w in workers.split(",") if w.strip()]
    typer.echo(json.dumps(run_ray_bench(docs, workers=counts, queries=qs), indent=2))


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
    query_backends: str = typer.Option("torch", help="Comma-separated query embedder backends to measure search with."),
    data_dir: Optional[Path] = data_dir_option(),
) -> None:
    """Build an index of N passages (real + distractors; see ragnet.bench.scale) and print build
    throughput, peak RSS, size on disk, search latency and recall against exact search, as JSON."""
    from ragnet.index.ivfpq import IVFPQParams
    from ragnet.bench.scale import run_scale_bench

    params = IVFPQParams(nlist=nlist, m=m, nprobe=nprobe, opq=opq)
    result = run_scale_bench(passages, workdir, data_dir=data_dir, questions=questions, faiss_index=faiss_index,
                             ivfpq=params, validate=validate, exact=exact, threads=threads, log=say,
                             query_backends=[b.strip() for b in query_backends.split(",") if b.strip()])
    typer.echo(json.dumps(result, indent=2))


def update(
    pdfs: int = typer.Option(115, help="Generated PDFs in the folder (about 17 chunks each: ~2,000 chunks)."),
    pages: int = typer.Option(10, help="Pages per PDF; one PDF gets one page rewritten."),
    paragraphs: int = typer.Option(4, help="Corpus paragraphs per page."),
    threads: int = typer.Option(1, help="Threads for torch / ONNX Runtime / FAISS (pinned)."),
    check: bool = typer.Option(False, help="Also build the changed folder anew and compare the top-10 of 50 queries."),
    workdir: Path = typer.Option(Path("update-bench"), help="Where the PDFs and indexes are written."),
) -> None:
    """An index of generated PDFs built, then updated after one PDF changed: seconds of each, the
    update's share of the full build, what it embedded and reused, as JSON. Needs fpdf2."""
    from ragnet._threads import pin_threads
    from ragnet.bench.update import run_update_bench

    pin_threads(threads)
    result = run_update_bench(workdir, pdfs=pdfs, pages=pages, paragraphs=paragraphs, check=check, log=say)
    typer.echo(json.dumps({"threads": threads, **result}, indent=2))


def serve(
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory built by `ragnet index`."),
    clients: int = typer.Option(8, help="Concurrent clients."),
    questions: int = typer.Option(25, help="Questions each client asks, one after another."),
    warm: int = typer.Option(3, help="Questions asked alone first: the warm time per question."),
    ask_runs: int = typer.Option(2, help="Cold `ragnet ask` processes timed on the same questions."),
    questions_file: Optional[Path] = typer.Option(None, help="Questions, one a line (default: made from document titles)."),
    timeout: float = typer.Option(3600.0, help="The server's --timeout (a question's queue wait counts)."),
) -> None:
    """8 clients x 25 questions against `ragnet serve` on the local models: answered, failed and lost
    requests, p50/p95 latency, throughput, and the warm time per question against `ragnet ask`, as JSON.
    Pin it to the cores it may use (taskset) and set RAGNET_LM_THREADS to match."""
    from ragnet.bench.serve_load import run_serve_bench

    listed = None
    if questions_file is not None:
        listed = [line.strip() for line in questions_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    result = run_serve_bench(index_dir, clients=clients, questions=questions, warm=warm, ask_runs=ask_runs,
                             timeout=timeout, questions_list=listed, log=say)
    typer.echo(json.dumps(result, indent=2))


def register(app: typer.Typer) -> None:
    """The ``ragnet bench`` group."""
    group = new_app("Benchmarks that print median timings as JSON.")
    group.command("core")(core)
    group.command("index")(index)
    group.command("embed")(embed)
    group.command("ray")(ray)
    group.command("scale")(scale)
    group.command("update")(update)
    group.command("serve")(serve)
    app.add_typer(group, name="bench")
