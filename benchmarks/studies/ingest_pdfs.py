"""PDF ingestion: pypdf against pdfminer.six on generated multi-page PDFs of real text.

    python -m benchmarks.studies.ingest_pdfs --pdfs 100

Writes ``--pdfs`` PDFs (fpdf2, DejaVu Sans when installed so any Unicode survives, else
Helvetica) of ``--pages`` pages each, every page holding ``--paragraphs`` consecutive paragraphs
of a real corpus (default: ``2wikimultihopqa_hipporag_pooled/corpus.jsonl`` under
``$RAGNET_DATA`` or ``../shared/data``), then, for each engine, reads every file with
``ragnet.corpus.formats.pdf.read_pdf`` and chunks the documents (256/32 tokens), ``--repeats``
times. Prints, per engine, the medians: pages/s and MB/s of reading alone, of reading plus
chunking, and the quality against the text written: the share of pages with text, of source
words recovered (multiset overlap), of pages whose words come back in the same order, and of
pages whose text equals the source with whitespace collapsed. For pypdf it also times
``load_documents`` on the folder (what ``ragnet index`` runs). Needs fpdf2 and, for the second
engine, pdfminer.six.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.studies import parser
from ragnet.bench.update import FONT, corpus_paragraphs, drawable


def write_pdfs(folder: Path, n: int, pages: int, per_page: int, corpus: Path) -> list[list[str]]:
    """Write ``n`` PDFs into ``folder``; returns each file's page texts, as written."""
    from fpdf import FPDF

    paras = corpus_paragraphs(corpus, n * pages * per_page)
    unicode_font = FONT.is_file()
    if unicode_font:  # characters the font has no glyph for (CJK, Indic) would be written as blanks
        paras = drawable(paras)
    sources: list[list[str]] = []
    k = 0
    for i in range(n):
        pdf = FPDF()
        if unicode_font:
            pdf.add_font("dejavu", fname=str(FONT))
            pdf.set_font("dejavu", size=10)
        else:
            pdf.set_font("Helvetica", size=10)
        texts = []
        for _ in range(pages):
            page = paras[k : k + per_page]
            k += per_page
            if not unicode_font:
                page = [p.encode("latin-1", "replace").decode("latin-1") for p in page]
            pdf.add_page()
            for p in page:
                pdf.multi_cell(0, 5, p)
                pdf.ln(3)
            texts.append("\n\n".join(page))
        if pdf.page != pages:
            raise SystemExit(f"document {i}: its text took {pdf.page} pages, not {pages}; use fewer --paragraphs")
        pdf.set_title(f"Benchmark document {i}")
        (folder / f"doc{i:04d}.pdf").write_bytes(bytes(pdf.output()))
        sources.append(texts)
    return sources


def _quality(sources: list[list[str]], extracted: list[dict[int, str]]) -> dict[str, float]:
    pages = with_text = same_order = equal = 0
    src_words = got_words = 0
    for src_pages, got_pages in zip(sources, extracted):
        for n, src in enumerate(src_pages, start=1):
            pages += 1
            got = got_pages.get(n, "")
            a, b = src.split(), got.split()
            with_text += bool(b)
            src_words += len(a)
            got_words += sum((Counter(a) & Counter(b)).values())
            same_order += a == b
            equal += " ".join(a) == " ".join(b)
    return {"pages_with_text": with_text / pages, "words_recovered": got_words / src_words,
            "pages_same_word_order": same_order / pages, "pages_text_equal": equal / pages}


def _pages_of(extracted) -> dict[int, str]:
    """Page number -> text of one ``Extracted``, from its page positions."""
    text, pos = extracted.text, extracted.positions
    out = {}
    for j, (offset, place) in enumerate(pos):
        end = pos[j + 1][0] if j + 1 < len(pos) else len(text)
        out[place["page"]] = text[offset:end]
    return out


def run_engine(engine: str, files: list[Path], sources: list[list[str]], repeats: int) -> dict:
    from ragnet.corpus.chunking import chunk_documents
    from ragnet.corpus.formats.pdf import read_pdf
    from ragnet.corpus.types import Document

    read_s, total_s, chunks = [], [], 0
    extracted: list[dict[int, str]] = []
    for rep in range(repeats):
        t0 = time.perf_counter()
        got = [read_pdf(f.read_bytes(), f.name, engine=engine) for f in files]
        t1 = time.perf_counter()
        docs = [Document(id=f.name, title=g.title, text=g.text, positions=g.positions, location={"file": f.name})
                for f, g in zip(files, got)]
        chunks = len(chunk_documents(docs, 256, 32))
        t2 = time.perf_counter()
        read_s.append(t1 - t0)
        total_s.append(t2 - t0)
        if rep == 0:
            extracted = [_pages_of(g) for g in got]
    return {"read_s": statistics.median(read_s), "read_chunk_s": statistics.median(total_s), "chunks": chunks,
            **_quality(sources, extracted)}


def main(argv: Sequence[str] | None = None) -> None:
    p = parser(__doc__, "ingest_pdfs")
    p.add_argument("--pdfs", type=int, default=100, help="PDFs to write (default 100).")
    p.add_argument("--pages", type=int, default=8, help="Pages per PDF (default 8).")
    p.add_argument("--paragraphs", type=int, default=3, help="Corpus paragraphs per page (default 3).")
    p.add_argument("--repeats", type=int, default=3, help="Timed repeats; medians are printed (default 3).")
    p.add_argument("--corpus", type=Path, default=None, help="JSONL corpus with a 'text' per line.")
    p.add_argument("--engines", default="pypdf,pdfminer", help="Comma-separated: pypdf, pdfminer.")
    p.add_argument("--keep", type=Path, default=None, help="Write the PDFs here and keep them (default: a temp folder).")
    args = p.parse_args(argv)
    from ragnet._threads import pin_threads

    pin_threads(1)
    from ragnet.corpus.chunking import chunk_documents
    from ragnet.corpus.loader import load_documents
    from ragnet.eval.run.datasets import default_data_dir

    corpus = args.corpus or default_data_dir() / "2wikimultihopqa_hipporag_pooled" / "corpus.jsonl"
    folder = args.keep or Path(tempfile.mkdtemp(prefix="ragnet-pdfs-"))
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    sources = write_pdfs(folder, args.pdfs, args.pages, args.paragraphs, corpus)
    files = sorted(folder.glob("doc*.pdf"))
    size_mb = sum(f.stat().st_size for f in files) / 1e6
    n_pages = sum(len(s) for s in sources)
    print(f"wrote {len(files)} PDFs, {n_pages} pages, {size_mb:.1f} MB in {time.perf_counter() - t:.1f} s "
          f"({'DejaVu Sans' if FONT.is_file() else 'Helvetica'}; text from {corpus.name}) -> {folder}", flush=True)
    print(f"{'engine':10s} {'pages/s':>8s} {'MB/s':>6s} {'+chunk p/s':>10s} {'chunks':>7s} {'w/ text':>8s} "
          f"{'words':>7s} {'order':>7s} {'equal':>7s}")
    for engine in [e.strip() for e in args.engines.split(",") if e.strip()]:
        r = run_engine(engine, files, sources, args.repeats)
        print(f"{engine:10s} {n_pages / r['read_s']:8.1f} {size_mb / r['read_s']:6.2f} "
              f"{n_pages / r['read_chunk_s']:10.1f} {r['chunks']:7d} {r['pages_with_text']:8.1%} "
              f"{r['words_recovered']:7.2%} {r['pages_same_word_order']:7.1%} {r['pages_text_equal']:7.1%}", flush=True)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        docs = load_documents(folder, glob="doc*.pdf")
        chunk_documents(docs, 256, 32)
        times.append(time.perf_counter() - t0)
    m = statistics.median(times)
    print(f"load_documents + chunk_documents (pypdf): {n_pages / m:.1f} pages/s, {size_mb / m:.2f} MB/s, "
          f"median of {args.repeats}; pages in chunk metadata: "
          f"{sorted({c.metadata['location']['page'] for c in chunk_documents(docs[:1], 256, 32)})[:3]}...")
    if args.keep is None:
        for f in files:
            os.remove(f)
        os.rmdir(folder)


if __name__ == "__main__":
    main()
