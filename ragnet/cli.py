"""The ``ragnet`` command: index, search, ask, demo, eval, optimize, bench, fetch-model.

Every user error (bad file, bad argument, incompatible index) is printed as one clear line
and exits with status 2; no traceback from deep inside.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from ragnet.errors import RagnetError

# Offline by default: nothing may download model weights or price maps at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    help="ragnet: retrieval strategies that beat plain top-k RAG, as optimizable DSPy programs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
bench_app = typer.Typer(help="Benchmarks that print median timings as JSON.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
eval_app = typer.Typer(help="Measure strategies on benchmarks with gold evidence.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
from ragnet.cli_eval import register as _register_eval  # noqa: E402  (`ragnet eval [OPTIONS]`)

_register_eval(eval_app)

from ragnet import cli_laziness  # noqa: E402

cli_laziness.register(eval_app)

from ragnet import cli_optimize  # noqa: E402

cli_optimize.register(app)


def _console():
    from rich.console import Console

    return Console(stderr=False)


def _fail(err: Exception) -> None:
    typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


@app.command()
def index(
    paths: List[str] = typer.Argument(..., help="Files (.jsonl .txt .md), folders or globs to index."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write the index to: new, empty, or a ragnet index (replaced atomically; other files in it are kept)."),
    chunk_tokens: int = typer.Option(256, help="Chunk size in LM tokens (cl100k)."),
    overlap: int = typer.Option(32, help="Overlap between consecutive chunks, in tokens."),
    embedder: Optional[str] = typer.Option(None, help="sentence-transformers model name or path (default: bundled all-MiniLM-L6-v2)."),
    faiss_index: str = typer.Option("auto", help="auto | flat | hnsw | ivf"),
    gazetteer: Optional[Path] = typer.Option(None, help="File of place names, one per line, for chunk metadata."),
) -> None:
    """Load documents, chunk, embed and build the hybrid (FAISS + BM25) index."""
    try:
        from ragnet.corpus.loader import load_documents
        from ragnet.corpus.metadata import Gazetteer
        from ragnet.index import Index
        from ragnet.index.index import check_output_folder

        check_output_folder(out)  # before reading or embedding anything
        docs = load_documents(paths)
        gaz = Gazetteer.from_file(gazetteer) if gazetteer else None
        idx = Index.build(
            docs, out, chunk_tokens=chunk_tokens, overlap=overlap, embedder=embedder,
            faiss_index=faiss_index, gazetteer=gaz, show_progress=True,
        )
    except RagnetError as err:
        _fail(err)
    typer.echo(f"indexed {len(docs)} documents as {len(idx)} chunks -> {out}")
    if idx.kept_files:
        typer.echo(f"kept {len(idx.kept_files)} file(s) in {out} that are not part of the index: "
                   + ", ".join(idx.kept_files), err=True)


@app.command()
def search(
    query: str = typer.Argument(..., help="The search query."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory built by `ragnet index`."),
    k: int = typer.Option(5, "-k", help="Number of chunks to return."),
    lam: float = typer.Option(0.4, "--lam", help="Hybrid weight: lam*BM25 + (1-lam)*cosine (0 = dense only, 1 = BM25 only)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Hybrid search over an index."""
    try:
        if k < 1:
            raise RagnetError("argument 'k': must be at least 1")
        if not 0.0 <= lam <= 1.0:
            raise RagnetError("argument 'lam': must be between 0 and 1")
        from ragnet.index import Index

        hits = Index.load(index_dir).search(query, k=k, lam=lam)
    except RagnetError as err:
        _fail(err)
    if as_json:
        typer.echo(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return
    from rich.table import Table

    table = Table(title=f"top {len(hits)} for {query!r}")
    for col in ("#", "score", "cos", "bm25", "chunk", "title", "text"):
        table.add_column(col)
    for rank, h in enumerate(hits, 1):
        text = h.text if len(h.text) <= 160 else h.text[:157] + "..."
        table.add_row(
            str(rank), f"{h.score:.3f}", f"{(h.dense_score or 0):.3f}", f"{(h.bm25_score or 0):.2f}",
            h.id, h.title, text,
        )
    _console().print(table)


@app.command("fetch-model")
def fetch_model(
    name: str = typer.Argument("qwen2.5-coder-0.5b", help="Registered model name (qwen2.5-coder-0.5b | qwen2.5-coder-1.5b)."),
    dest: Optional[Path] = typer.Option(None, help="Directory to store the GGUF (default: $RAGNET_HOME/models)."),
) -> None:
    """Download the local GGUF model from PyPI chunk packages and verify its SHA-256."""
    try:
        from ragnet.lm.models import fetch_model as _fetch

        path = _fetch(name, dest=dest, progress=True)
    except RagnetError as err:
        _fail(err)
    typer.echo(str(path))


def _pin_threads(threads: int) -> None:
    """Pin BLAS/torch/FAISS threads: FAISS and BLAS both grab every core, timings swing 10x otherwise.

    The environment variables only reach libraries loaded later (numpy's BLAS is usually loaded
    by now), so the pools already running are limited through threadpoolctl as well.
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)
    except ImportError:  # pragma: no cover - a scikit-learn dependency, present with sentence-transformers
        pass
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:  # pragma: no cover
        pass
    try:
        import faiss

        faiss.omp_set_num_threads(threads)
    except ImportError:  # pragma: no cover
        pass


def _pooled_index(data: str, index_dir: Optional[Path], data_dir: Optional[Path]):
    """Load the pooled index for ``data`` or build it once (~10 min for HotpotQA on 2 cores).

    Cached by content hash under ``$RAGNET_HOME/indexes/<set>-pooled-<hash12>``
    (``ragnet.eval.index_cache``) unless ``index_dir`` is given. Sets with a ``corpus.jsonl``
    pool that corpus; distractor sets pool every question's paragraphs."""
    from ragnet.eval.datasets import load_eval_set
    from ragnet.eval.index_cache import cached_index
    from ragnet.index import Index

    ev = load_eval_set(data, data_dir=data_dir, split=None, mode="pooled")
    if index_dir is None:
        idx = cached_index(ev.documents, f"{ev.name}-pooled", log=lambda msg: typer.echo(msg, err=True))
    elif (index_dir / "manifest.json").is_file():
        idx = Index.load(index_dir)
    else:
        typer.echo(f"building pooled index for {ev.name} at {index_dir} (one-off)", err=True)
        idx = Index.build(ev.documents, index_dir, show_progress=True)
    return idx, ev.questions, ev.path


@bench_app.command("core")
def bench_core(
    repeats: int = typer.Option(50, help="Timed repeats per figure (medians reported)."),
    threads: int = typer.Option(1, help="Threads for BLAS/torch/FAISS (pinned)."),
    data: str = typer.Option("hotpotqa_dev_distractor", help="Dataset whose pooled paragraphs form the search corpus."),
    data_dir: Optional[Path] = typer.Option(None, help="Benchmark data folder (default ../shared/data or $RAGNET_DATA)."),
    index_dir: Optional[Path] = typer.Option(None, help="Cached pooled index (built there if missing)."),
    queries: int = typer.Option(200, help="Number of dev-split questions used as search queries."),
    skip_search: bool = typer.Option(False, help="Only time the numpy core."),
) -> None:
    """Median timings (ms) of knapsack, noise removal and hybrid search, as JSON."""
    _pin_threads(threads)
    try:
        from ragnet.core.bench import run_core_bench

        result = {"threads": threads, **run_core_bench(repeats=repeats)}
        if not skip_search:
            from ragnet.eval.datasets import read_split
            from ragnet.index.bench import run_search_bench

            idx, questions, qpath = _pooled_index(data, index_dir, data_dir)
            dev = read_split(qpath, "dev")
            texts = [q.question for q in questions if q.id in dev][:queries]
            result["search"] = {"corpus_chunks": len(idx), **run_search_bench(idx, texts, repeats=3)}
    except RagnetError as err:
        _fail(err)
    typer.echo(json.dumps(result, indent=2))


@bench_app.command("index")
def bench_index(
    n: int = typer.Option(2000, help="Number of pooled paragraphs to embed."),
    threads: int = typer.Option(2, help="Threads for torch (pinned)."),
    data: str = typer.Option("hotpotqa_dev_distractor", help="Dataset whose pooled paragraphs are indexed."),
    data_dir: Optional[Path] = typer.Option(None, help="Benchmark data folder."),
) -> None:
    """Indexing overhead of Index.build over raw SentenceTransformer.encode, as JSON."""
    _pin_threads(threads)
    try:
        from ragnet.eval.datasets import load_questions, pooled_documents
        from ragnet.index.bench import run_index_bench

        docs = pooled_documents(load_questions(data, data_dir=data_dir))[:n]
        result = {**run_index_bench(docs), "threads": threads, "documents": len(docs)}
    except RagnetError as err:
        _fail(err)
    typer.echo(json.dumps(result, indent=2))


@eval_app.command("retrieval")
def eval_retrieval(
    data: str = typer.Option("hotpotqa_dev_distractor", help="Dataset (name under the data dir, folder or questions.jsonl)."),
    split: str = typer.Option("dev", help="Question split: dev (tune here) or acceptance (final measurement only)."),
    n: Optional[int] = typer.Option(None, "-n", help="At most this many questions."),
    budgets: str = typer.Option("1000,2000,4000,8000", help="Comma-separated context token budgets."),
    data_dir: Optional[Path] = typer.Option(None, help="Benchmark data folder (default ../shared/data or $RAGNET_DATA)."),
    index_dir: Optional[Path] = typer.Option(None, help="Cached pooled index (built there if missing)."),
    out: Optional[Path] = typer.Option(None, help="Write report.md and summary.json here."),
    threads: int = typer.Option(2, help="Threads for torch/FAISS (pinned)."),
) -> None:
    """Gold-evidence recall of top-k, rank-order filling and Top-Kmax selections; no LM."""
    _pin_threads(threads)
    try:
        from ragnet._atomic import write_json, write_text
        from ragnet.eval.datasets import load_questions
        from ragnet.eval.retrieval import format_retrieval_report, run_retrieval_eval

        try:
            budget_list = [int(b) for b in budgets.split(",") if b.strip()]
        except ValueError:
            raise RagnetError(f"argument 'budgets': expected comma-separated integers, got {budgets!r}") from None
        idx, _, qpath = _pooled_index(data, index_dir, data_dir)
        questions = load_questions(qpath, split=split, limit=n)
        result = run_retrieval_eval(idx, questions, budgets=budget_list, show_progress=True)
        report = format_retrieval_report(result)
    except RagnetError as err:
        _fail(err)
    command = "ragnet eval retrieval " + " ".join(sys.argv[3:])
    typer.echo(report)
    if out is not None:
        write_text(out / "report.md", f"# Retrieval-only recall\n\nCommand: `{command.strip()}`\n\n{report}\n")
        write_json(out / "summary.json", result)
        typer.echo(f"wrote {out / 'report.md'} and {out / 'summary.json'}")


@app.command()
def demo(
    workdir: Path = typer.Option(Path(".ragnet-cache/demo"), help="Where the demo corpus, index and results go."),
    lm: Optional[str] = typer.Option(None, help="LM: 'local' (default, llama.cpp) or any litellm model id."),
    per_level: int = typer.Option(1, help="Questions per difficulty level (L1-L4)."),
    strategies: str = typer.Option(",".join(("basic", "oneshot", "iterative", "reflective", "combined")),
                                   help="Comma-separated strategies (presets allowed, e.g. oneshot:no-filter)."),
    budget: int = typer.Option(1500, help="Token budget of the answer prompt for oneshot/combined."),
    max_turns: int = typer.Option(2, help="Turn cap for the iterative strategies (kept small for the local LM)."),
) -> None:
    """Generate the synthetic yearbook corpus, index it, and compare every strategy on the local LM."""
    try:
        from ragnet.cli_demo import run_demo

        run_demo(workdir, lm=lm, per_level=per_level, strategies=[s for s in strategies.split(",") if s],
                 budget=budget, max_turns=max_turns)
    except RagnetError as err:
        _fail(err)


@app.command()
def ask(
    question: str = typer.Argument(..., help="The question."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory built by `ragnet index`."),
    strategy: str = typer.Option("oneshot", help="basic | oneshot | iterative | reflective | combined (presets allowed)."),
    lm: Optional[str] = typer.Option(None, help="LM: 'local' (default) or any litellm model id; env RAGNET_LM."),
    budget: Optional[int] = typer.Option(None, help="Token budget of the answer prompt (oneshot, combined)."),
    program_file: Optional[Path] = typer.Option(None, "--program", help="Compiled program JSON from `ragnet optimize`."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole prediction as JSON."),
    show_trace: bool = typer.Option(False, "--trace", help="Print the step-by-step trace."),
) -> None:
    """Answer a question over an index with one strategy."""
    try:
        import ragnet
        from ragnet.index import Index
        from ragnet.programs.registry import build_program

        index = Index.load(index_dir)
        ragnet.configure(lm=lm)
        program = build_program(strategy, index, budget=budget)
        if program_file is not None:
            from ragnet.optimize.persist import load_program

            load_program(program, program_file)
        pred = program(question=question)
    except RagnetError as err:
        _fail(err)
    if as_json:
        typer.echo(json.dumps({k: pred[k] for k in pred.keys()}, ensure_ascii=False, indent=2, default=str))
        return
    console = _console()
    console.print(f"[bold]answer:[/bold] {pred.answer}")
    console.print("[bold]evidence:[/bold]")
    for cid in pred.evidence:
        chunk = index.chunk(cid)
        console.print(f"  {cid}  [dim]{chunk.title}[/dim]")
    u = pred.usage
    console.print(
        f"[bold]usage:[/bold] {u['lm_calls']} LM calls ({u['cached_calls']} cached), "
        f"{u['input_tokens']:,} tokens in, {u['output_tokens']:,} out, {u['searches']} searches, "
        f"{len(pred.context)} chunks in context, {u['seconds']:.1f}s"
    )
    if show_trace:
        for event in pred.trace:
            console.print(json.dumps(event, ensure_ascii=False, default=str))


class TruncationNotes(logging.Filter):
    """Fold DSPy's per-call "LM response was truncated" warning into one count.

    DSPy warns on every answer that stops at ``max_tokens``; the local engine also ends a
    degenerate repetition loop that way on purpose. In long runs (demo, eval, optimize) the
    warning repeated dozens of times between progress lines; the command now prints the count
    once at the end instead. Other DSPy warnings pass through.

    Example:
        >>> notes = TruncationNotes()
        >>> notes.filter(logging.makeLogRecord({"msg": "LM response was truncated; increase max_tokens"}))
        False
        >>> notes.count
        1
    """

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.getMessage()).startswith("LM response was truncated"):
            self.count += 1
            return False
        return True

    def summary(self) -> str | None:
        if not self.count:
            return None
        return (f"note: {self.count} LM answer(s) were cut at max_tokens or by the local engine's "
                "repetition guard (each is parsed as far as it goes; failures are in the traces)")

    def print_summary(self) -> None:
        """Print :meth:`summary` to stderr when there is one (registered with ``atexit``)."""
        text = self.summary()
        if text:
            print(text, file=sys.stderr)


def main() -> None:
    """Console entry point."""
    notes = TruncationNotes()
    logging.getLogger("dspy.clients.lm").addFilter(notes)
    atexit.register(notes.print_summary)
    try:
        app()
    except RagnetError as err:  # safety net for errors raised outside a command's try-block
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
