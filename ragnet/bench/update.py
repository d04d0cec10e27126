"""``ragnet bench update``: updating an index after one changed PDF, against building it anew.

Writes a folder of generated PDFs (fpdf2; the text of real corpus paragraphs, as a clone's PDF
ingestion study ``python -m benchmarks.studies.ingest_pdfs`` writes them), builds the index
(what ``ragnet index`` does the first time: read, chunk, embed chunks and sentences), then
rewrites one 10-page PDF with one page's paragraphs replaced, and times the update (what
``ragnet index`` does the second time), a no-op update (nothing changed: every file hashed,
none read), and, with ``check``, a full build of the changed folder to compare the top-10 of
50 queries with (the opening words of chunks spread over the corpus).

    ragnet bench update --pdfs 115 --pages 10 --threads 1 --workdir update-bench   # ~2,000 chunks

Example:
    >>> _changed_page([["a", "b"], ["c", "d"]], 1, ["x", "y"])     # paragraphs per page
    [['a', 'b'], ['x', 'y']]
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ragnet.errors import InputError, require

_SPEC = "bench-spec.json"

#: The font the generated PDFs are written in when installed (any Unicode it has survives), else Helvetica.
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
_MAX_PARAGRAPH = 1200  # characters


def corpus_paragraphs(corpus: Path, needed: int) -> list[str]:
    """The first ``needed`` paragraphs of at least 8 words of a ``corpus.jsonl``, whitespace
    collapsed, cut at a word before 1,200 characters (so a page's paragraphs fit on it); a small
    corpus is cycled."""
    out: list[str] = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                text = " ".join(str(json.loads(line).get("text", "")).split())
                if len(text) > _MAX_PARAGRAPH:  # so a page's paragraphs fit on it: pages stay comparable
                    text = text[: text.rfind(" ", 0, _MAX_PARAGRAPH)]
                if len(text.split()) >= 8:
                    out.append(text)
            if len(out) >= needed:
                break
    if not out:
        raise InputError("no paragraphs of at least 8 words to write the PDFs' text from", path=corpus)
    while len(out) < needed:  # a small corpus is cycled
        out.extend(out[: needed - len(out)])
    return out


def _changed_page(pages: list[list[str]], page: int, new: list[str]) -> list[list[str]]:
    """``pages`` (paragraphs per page) with page ``page`` (0-based) replaced by ``new``."""
    out = [list(p) for p in pages]
    out[page] = list(new)
    return out


def _write_pdf(path: Path, pages: list[list[str]], title: str) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    if FONT.is_file():
        pdf.add_font("dejavu", fname=str(FONT))
        pdf.set_font("dejavu", size=10)
    else:
        pdf.set_font("Helvetica", size=10)
    for page in pages:
        if not FONT.is_file():
            page = [p.encode("latin-1", "replace").decode("latin-1") for p in page]
        pdf.add_page()
        for p in page:
            pdf.multi_cell(0, 5, p)
            pdf.ln(3)
    pdf.set_title(title)
    path.write_bytes(bytes(pdf.output()))


def drawable(paragraphs: list[str]) -> list[str]:
    """``paragraphs`` with each character :data:`FONT` has no glyph for (CJK, Indic) written ``?``."""
    if not FONT.is_file():
        return paragraphs
    from fontTools.ttLib import TTFont

    cmap = TTFont(str(FONT)).getBestCmap()
    return ["".join(c if ord(c) in cmap or c.isspace() else "?" for c in p) for p in paragraphs]


def run_update_bench(workdir: Path, *, pdfs: int = 115, pages: int = 10, paragraphs: int = 4,
                     corpus: Path | None = None, check: bool = False, questions: list[str] | None = None,
                     log: Callable[[str], None] = print) -> dict[str, Any]:
    """Full build of ``pdfs`` generated PDFs, then an update after one PDF changed; figures as a dict."""
    require("fpdf", extra="test", purpose="writing the benchmark's PDFs")
    from ragnet.eval.run.datasets import default_data_dir
    from ragnet.index import Index

    corpus = corpus or default_data_dir() / "2wikimultihopqa_hipporag_pooled" / "corpus.jsonl"
    if not Path(corpus).is_file():
        raise InputError("no corpus to write the PDFs' text from; set $RAGNET_DATA to the benchmark data folder "
                         "(../shared/data from a clone)", path=corpus)
    folder, idx_path = workdir / "pdfs", workdir / "index"
    need = pdfs * pages * paragraphs
    paras = drawable(corpus_paragraphs(corpus, need + paragraphs))
    spec = {"pdfs": pdfs, "pages": pages, "paragraphs": paragraphs, "corpus": str(corpus)}
    layout = [[paras[(d * pages + p) * paragraphs:(d * pages + p + 1) * paragraphs] for p in range(pages)]
              for d in range(pdfs)]
    t0 = time.perf_counter()
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for d, doc in enumerate(layout):
        _write_pdf(folder / f"doc{d:04d}.pdf", doc, f"Benchmark document {d}")
    (workdir / _SPEC).write_text(json.dumps(spec) + "\n")
    log(f"wrote {pdfs} PDFs of {pages} pages in {time.perf_counter() - t0:.1f}s -> {folder}")

    shutil.rmtree(idx_path, ignore_errors=True)
    t0 = time.perf_counter()
    index, full = Index.sync(folder, idx_path, show_progress=False)
    full_s = time.perf_counter() - t0
    chunks = len(index)
    log(f"full build: {chunks} chunks in {full_s:.1f}s")

    target = pdfs // 2
    changed = _changed_page(layout[target], pages // 2, paras[need:need + paragraphs])
    _write_pdf(folder / f"doc{target:04d}.pdf", changed, f"Benchmark document {target}")
    t0 = time.perf_counter()
    updated, report = Index.sync(folder, idx_path, show_progress=False)
    update_s = time.perf_counter() - t0
    log(f"update: {report.line()} in {update_s:.1f}s")
    t0 = time.perf_counter()
    _, noop = Index.sync(folder, idx_path, show_progress=False)
    noop_s = time.perf_counter() - t0

    result: dict[str, Any] = {
        "pdfs": pdfs, "pages_per_pdf": pages, "chunks": chunks, "chunks_after": len(updated),
        "full_build_s": round(full_s, 2), "update_s": round(update_s, 2),
        "update_share_of_full": round(update_s / full_s, 4), "noop_update_s": round(noop_s, 2),
        "update": {k: v for k, v in report.to_dict().items() if k != "stats"},
        "update_phases_s": {k: round(v, 3) for k, v in report.stats.items()},
        "full_phases_s": {k: round(v, 3) for k, v in (full.stats or {}).items()},
        "noop_written": noop.written,
    }
    if check:
        t0 = time.perf_counter()
        fresh, _ = Index.sync(folder, workdir / "index-full", rebuild=True, show_progress=False)
        result["check_full_build_s"] = round(time.perf_counter() - t0, 2)
        qs = questions or [c.text[:120] for c in list(fresh.chunks)[:: max(1, len(fresh) // 50)]][:50]
        same, worst = 0, 0.0
        for q in qs:
            a, b = updated.search(q, k=10), fresh.search(q, k=10)
            same += [h.id for h in a] == [h.id for h in b]
            worst = max(worst, float(np.max(np.abs(np.array([h.score for h in a]) - [h.score for h in b]))))
        result["check"] = {"queries": len(qs), "same_top10_ids": same, "max_score_difference": worst}
    return result
