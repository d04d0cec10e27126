"""Read the built folder as ragnet reads it, to write and review questions.

    python -m benchmarks.realdocs.show [--docs DIR] FILE --page N      # one PDF page
    python -m benchmarks.realdocs.show [--docs DIR] FILE --section "A > B"  # one section
    python -m benchmarks.realdocs.show [--docs DIR] FILE --toc         # pages' first lines, or headings
    python -m benchmarks.realdocs.show [--docs DIR] FILE --all         # the whole text, each place marked
    python -m benchmarks.realdocs.show [--docs DIR] --find "TEXT"      # where a text occurs, with its place
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.realdocs import places
from benchmarks.realdocs.build import default_out

__all__ = ["main"]


def _toc(doc) -> None:
    paths = places.sections(doc)
    if paths:
        for path in paths:
            print(" > ".join(path))
        return
    pages = sorted({place["page"] for _, place in doc.positions if "page" in place})
    for page in pages:
        first = places.page_text(doc, page).split("\n", 1)[0]
        print(f"p. {page:3d}  {first[:100]}")


def _all(doc) -> None:
    """The whole text, with a ``=== p. N`` or ``=== A > B`` line where each place starts."""
    bounds = [offset for offset, _ in doc.positions] + [len(doc.text)]
    if not doc.positions or bounds[0] > 0:
        print(doc.text[:bounds[0]])
    last = None
    for i, (_, place) in enumerate(doc.positions):
        mark = f"p. {place['page']}" if "page" in place else " > ".join(place.get("headings", []))
        if mark != last:
            print(f"\n=== {mark}")
            last = mark
        print(doc.text[bounds[i]:bounds[i + 1]].strip())


def _find(docs: dict, text: str, context: int) -> None:
    for file, doc in docs.items():
        for start, end in places.find_all(doc.text, text):
            place = places.place_of(doc, start, end)
            where = f"p. {place['page']}" if "page" in place else " > ".join(place.get("headings", []))
            snippet = " ".join(doc.text[max(0, start - context):end + context].split())
            print(f"{file} | {where} | ...{snippet}...")


def main(argv: list[str] | None = None) -> int:
    """Print a page, a section, a table of contents, or the places of a text."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realdocs.show", description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", help="a document, relative to the folder")
    parser.add_argument("--docs", type=Path, default=None, help=f"the built folder (default {default_out()})")
    parser.add_argument("--page", type=int, help="print this PDF page")
    parser.add_argument("--section", help='print this section: headings joined by " > "')
    parser.add_argument("--toc", action="store_true", help="list the document's headings or pages")
    parser.add_argument("--all", action="store_true", help="print the whole text, marking where each place starts")
    parser.add_argument("--find", help="list every place where this text occurs (case and spacing ignored)")
    parser.add_argument("--context", type=int, default=80, help="characters around each found text")
    args = parser.parse_args(argv)
    docs = places.load(args.docs or default_out())
    if args.find:
        _find({args.file: docs[args.file]} if args.file else docs, args.find, args.context)
        return 0
    if not args.file or args.file not in docs:
        print(f"error: name a document of the folder: {', '.join(docs)}", file=sys.stderr)
        return 2
    doc = docs[args.file]
    if args.page is not None:
        print(places.page_text(doc, args.page))
    elif args.all:
        _all(doc)
    elif args.section:
        print(places.section_text(doc, [part.strip() for part in args.section.split(" > ")]))
    else:
        _toc(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
