"""Benchmark (2026-12-07): what reading type sizes costs a PDF's text extraction.

A PDF with neither an outline nor numbered headings gets its sections from the lines it sets
larger than its body text (:func:`ragnet.corpus.formats.pdf_sections.type_size_headings`); the
sizes are read in the same pypdf pass as the text, by a visitor called for every piece of text.
This writes such a PDF (``--pages`` pages, each a 14-point heading over 11-point text) and reads
it with ``read_pdf`` as ragnet does and with the plain text pass (no sizes, so no sections),
alternating, in one process, and prints the median seconds of each and their ratio.

    taskset -c 1 python -m benchmarks.studies.pdf_type_size_cost --pages 40 --repeats 7
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from benchmarks.studies import parser


def sectionless_pdf(pages: int) -> bytes:
    """``pages`` pages, each an unnumbered 14-point heading and a paragraph of 11-point text."""
    from fpdf import FPDF

    pdf = FPDF()
    for n in range(pages):
        pdf.add_page()
        pdf.set_font("Helvetica", size=14)
        pdf.multi_cell(0, 8, f"Topic {chr(65 + n % 26)}{n}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, "The report describes the roads, schools and taxes of the city. " * 30,
                       new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def main(argv: Sequence[str] | None = None) -> None:
    import ragnet.corpus.formats.pdf as pdf

    p = parser(__doc__, "pdf_type_size_cost")
    p.add_argument("--pages", type=int, default=40, help="Pages of the PDF read.")
    p.add_argument("--repeats", type=int, default=7, help="Reads of each kind (alternating).")
    args = p.parse_args(argv)
    data = sectionless_pdf(args.pages)
    sized_text = pdf._sized_text

    def text_only(page):
        return page.extract_text() or "", []

    seconds: dict[str, list[float]] = {"with": [], "without": []}
    try:
        for _ in range(args.repeats):
            for kind in seconds:
                pdf._sized_text = sized_text if kind == "with" else text_only
                start = time.perf_counter()
                read = pdf.read_pdf(data, "report.pdf")
                seconds[kind].append(time.perf_counter() - start)
                assert (read.metadata.get("sections") == "type sizes") == (kind == "with")
    finally:
        pdf._sized_text = sized_text
    with_pass, without = statistics.median(seconds["with"]), statistics.median(seconds["without"])
    print(f"{args.pages} pages, median of {args.repeats}: with type sizes {with_pass:.3f} s, "
          f"text only {without:.3f} s, {with_pass / without:.2f}x")


if __name__ == "__main__":
    main()
