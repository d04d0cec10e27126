"""The real-document figures of a run whose questions were partly asked again (2026-12-06).

A change that moves the reader's context for a few questions needs LM calls for those questions
only: the 1.5B reader is deterministic, so an unchanged prompt gives the answer already in a
committed row. And the same code over an index built on another machine can keep other
sentences for some questions (the knapsack's near-ties), so a baseline measured elsewhere is re-asked here only where its pack's text differs. This study takes
the rows of a BASE result folder, replaces by question id those of each OVERLAY folder (later ones
win; a folder's rows are its ``results.jsonl`` or ``results.jsonl.gz``), and prints the figures of
the results page's real-document table for the merged rows (the answer's line in context scored
from the rows' passages where they predate that figure), then the wins and losses against BASE
alone with a two-sided sign test. No LM call.

    python -m benchmarks.fetch_rows docs/results/realdocs-dev-auto-2000
    python -m benchmarks.studies.rows_overlay realdocs-dev-auto-2000 realdocs-dev-listings/baseline-here
    python -m benchmarks.studies.rows_overlay realdocs-dev-auto-2000 realdocs-dev-listings/baseline-here \\
        realdocs-dev-listings/listings
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from benchmarks.realdocs.check import QUESTIONS
from benchmarks.studies import parser, result_rows


def overlay(base: list[dict], *overlays: list[dict]) -> list[dict]:
    """``base``'s rows, each replaced by the last overlay row with its id, in ``base``'s order.

    Example:
        >>> [r["a"] for r in overlay([{"id": 1, "a": "x"}, {"id": 2, "a": "y"}], [{"id": 2, "a": "z"}])]
        ['x', 'z']
    """
    by_id = {row["id"]: row for row in base}
    for rows in overlays:
        by_id.update((row["id"], row) for row in rows if row["id"] in by_id)
    return [by_id[row["id"]] for row in base]


@functools.cache
def _dev_questions() -> dict:
    """The real-document dev questions by id, read once."""
    from ragnet.eval.run.doc_questions import load_doc_questions

    return {q.id: q for q in load_doc_questions(QUESTIONS)}


def with_line_scored(row: dict) -> dict:
    """``row`` with ``line_in_context`` (the answer's quoted line shown), scored from its passages as
    ``ragnet eval --docs`` scores it since the figure exists; rows written before it lack the field."""
    from ragnet.eval.run.doc_questions import place_scores

    if "line_in_context" in row or not row.get("passages"):
        return row
    question = _dev_questions().get(row["id"])
    scored = place_scores(question, row) if question is not None else {}
    return {**row, **({"line_in_context": scored["line_in_context"]} if "line_in_context" in scored else {})}


def main(argv: Sequence[str] | None = None) -> None:
    from ragnet.eval.metrics.stats import sign_test
    from ragnet.eval.report.summary import documents_figures

    p = parser(__doc__, "rows_overlay")
    p.add_argument("base", help="A result folder under docs/results (its rows restored).")
    p.add_argument("overlays", nargs="*", help="Result folders whose rows replace BASE's, by question id.")
    args = p.parse_args(argv)
    base = result_rows(args.base)
    merged = overlay(base, *(result_rows(folder) for folder in args.overlays))
    f = documents_figures([with_line_scored(row) for row in merged])  # what `ragnet eval` reports "Over your documents"
    print(f"{f['n']} questions: right {f['right_count']} ({100 * f['right']:.1f}%), F1 {100 * f['f1']:.1f}, "
          f"two-part {round(f['two_part_right'] * f['two_part'])} of {f['two_part']}, "
          f"cited {100 * f['cited_of_right']:.1f} (first {100 * f['cited_first_of_right']:.1f}), "
          f"gold place in context {100 * f['gold_place_in_context']:.1f}, "
          f"misses with the gold place {round(f['misses_with_gold_place'] * f['misses'])} of {f['misses']}; "
          f"the answer's line in context {round(f['line_in_context'] * f['n'])} of {f['n']}, "
          f"misses with the line {round(f['misses_with_line_shown'] * f['quoted_misses'])} of {f['quoted_misses']}")
    replaced = sum(a is not b for a, b in zip(base, merged))
    wins = [b["id"] for a, b in zip(base, merged) if b["contains"] > a["contains"]]
    losses = [b["id"] for a, b in zip(base, merged) if b["contains"] < a["contains"]]
    print(f"against {args.base} alone: {replaced} rows replaced, {len(wins)} wins {wins}, "
          f"{len(losses)} losses {losses}, sign test p = {sign_test(len(wins), len(losses)):.2f}")


if __name__ == "__main__":
    main()
