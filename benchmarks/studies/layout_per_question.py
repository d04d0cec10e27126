"""Simulate a per-question answer layout from existing eval rows (no LM call).

"both" (question before and after the context) for questions that end with two options
("... A or B?"), "last" otherwise: each question's row is taken from the column measured with
that layout, in the results folders under docs/results:

    python -m benchmarks.studies.layout_per_question
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from benchmarks.studies import parser, result_rows
from ragnet.eval.metrics.stats import paired_bootstrap, sign_test

OPT = re.compile(r"\s+or\s+[^,?]+\?\s*$")


def load(folder: str, strategy: str) -> dict:
    """The rows of ``strategy`` in ``docs/results/<folder>``, by question id."""
    return {r["id"]: r for r in result_rows(folder) if r["strategy"] == strategy}


def main(argv: Sequence[str] | None = None) -> None:
    parser(__doc__, "layout_per_question").parse_args(argv)
    for name, folder_b, sb, folder_l, sl in (
        ("hotpotqa", "hotpotqa-dev-reader-qboth", "oneshot:sentences-qboth@1000", "hotpotqa-dev-reader-qlast", "oneshot:sentences-qlast@1000"),
        ("2wiki", "2wiki-dev-reader-qboth", "oneshot:sentences-qboth@1000", "2wiki-dev-reader-qlast", "oneshot:sentences@1000")):
        qb, ql = load(folder_b, sb), load(folder_l, sl)
        basic = load(folder_l, "basic")
        ids = list(ql)
        two = {i for i in ids if OPT.search(ql[i]["question"])}
        pol = {i: (qb[i] if i in two else ql[i]) for i in ids}
        f = lambda d: 100 * sum(d[i]["f1"] for i in ids) / len(ids)  # noqa: E731
        e = lambda d: 100 * sum(d[i]["em"] for i in ids) / len(ids)  # noqa: E731
        print(name, len(ids), "two-option", len(two), "F1 last %.1f both %.1f policy %.1f basic %.1f" % (f(ql), f(qb), f(pol), f(basic)), "EM policy %.1f" % e(pol))
        for other, d in (("basic", basic), ("last", ql), ("both", qb)):
            w = sum(pol[i]["em"] > d[i]["em"] for i in ids)
            losses = sum(pol[i]["em"] < d[i]["em"] for i in ids)
            print("  policy vs", other, paired_bootstrap([pol[i]["f1"] - d[i]["f1"] for i in ids]), "EM w/l", w, losses, round(sign_test(w, losses), 4))


if __name__ == "__main__":
    main()
