"""The real-document figures of a run whose questions were partly asked again (2026-12-06).

A change that moves the reader's context for a few questions needs LM calls for those questions
only: the 1.5B reader is deterministic, so an unchanged prompt gives the answer already in a
committed row. And the same code over an index built on another machine can keep other
sentences for some questions (the knapsack's near-ties), so a baseline measured elsewhere is re-asked here only where its pack's text differs. This study takes
the rows of a BASE result folder, replaces by question id those of each OVERLAY folder (later ones
win; a folder's rows are its ``results.jsonl`` or ``results.jsonl.gz``), and prints the figures of
the results page's real-document table for the merged rows, then the wins and losses against BASE
alone with a two-sided sign test. No LM call.

    python -m benchmarks.fetch_rows docs/results/realdocs-dev-auto-2000
    python -m benchmarks.studies.rows_overlay realdocs-dev-auto-2000 realdocs-dev-listings/baseline-here
    python -m benchmarks.studies.rows_overlay realdocs-dev-auto-2000 realdocs-dev-listings/baseline-here \\
        realdocs-dev-listings/listings
"""

from __future__ import annotations

from collections.abc import Sequence

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


def figures(rows: Sequence[dict]) -> dict[str, float | int]:
    """Right answers, F1, two-part right, cited and cited first (of the right answers), the gold place
    in the context, and the misses that had it (as in ``ragnet eval``'s "Over your documents")."""
    right = [r for r in rows if r["contains"] >= 1]
    two_part = [r for r in rows if r["type"] == "two-part"]
    misses = [r for r in rows if r["contains"] < 1]
    return {
        "n": len(rows),
        "right": len(right),
        "f1": 100 * sum(r["f1"] for r in rows) / max(1, len(rows)),
        "two_part_right": sum(r["contains"] >= 1 for r in two_part),
        "two_part": len(two_part),
        "cited": 100 * sum(r["gold_cited"] or 0 for r in right) / max(1, len(right)),
        "cited_first": 100 * sum(r["gold_cited_first"] or 0 for r in right) / max(1, len(right)),
        "gold_place": 100 * sum(r["gold_place_in_context"] or 0 for r in rows) / max(1, len(rows)),
        "misses_with_gold_place": sum((r["gold_place_in_context"] or 0) >= 1 for r in misses),
        "misses": len(misses),
    }


def main(argv: Sequence[str] | None = None) -> None:
    from ragnet.eval.metrics.stats import sign_test

    p = parser(__doc__, "rows_overlay")
    p.add_argument("base", help="A result folder under docs/results (its rows restored).")
    p.add_argument("overlays", nargs="*", help="Result folders whose rows replace BASE's, by question id.")
    args = p.parse_args(argv)
    base = result_rows(args.base)
    merged = overlay(base, *(result_rows(folder) for folder in args.overlays))
    f = figures(merged)
    print(f"{f['n']} questions: right {f['right']} ({100 * f['right'] / max(1, f['n']):.1f}%), F1 {f['f1']:.1f}, "
          f"two-part {f['two_part_right']} of {f['two_part']}, cited {f['cited']:.1f} "
          f"(first {f['cited_first']:.1f}), gold place in context {f['gold_place']:.1f}, "
          f"misses with the gold place {f['misses_with_gold_place']} of {f['misses']}")
    replaced = sum(a is not b for a, b in zip(base, merged))
    wins = [b["id"] for a, b in zip(base, merged) if b["contains"] > a["contains"]]
    losses = [b["id"] for a, b in zip(base, merged) if b["contains"] < a["contains"]]
    print(f"against {args.base} alone: {replaced} rows replaced, {len(wins)} wins {wins}, "
          f"{len(losses)} losses {losses}, sign test p = {sign_test(len(wins), len(losses)):.2f}")


if __name__ == "__main__":
    main()
