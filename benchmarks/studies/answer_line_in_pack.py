"""Probe (2026-12-06, no LM): does `auto`'s sentence knapsack keep the line that states the answer?

For every real-document dev question, `auto`'s candidates (``oneshot:sentences+hops`` at 2,000
tokens, the 1.5B reader's prompt overhead) and their sentence values are computed as the program
computes them; the gold quote's line is the candidate sentence holding most of its words (at least
60%). Prints how often that line is packed, and the same under a floor from each sentence's own
match across all candidates (``own x exp((m - max m) / temperature)`` in chunks with sections),
which would let a line with a strong match in a low-ranked chunk in, with the questions it gains
and loses; and the same without the option links (:mod:`ragnet.core.option_links`, added after
this probe's first run at aae1280, where 108 lines were packed) and with both copies of a line two
overlapping chunks share (:mod:`ragnet.core.overlap_copies`, added at bd5f1ba).

    python -m benchmarks.realdocs.build
    python -m benchmarks.studies.answer_line_in_pack
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from benchmarks.realdocs.build import default_out
from benchmarks.realdocs.check import QUESTIONS, load_questions
from benchmarks.studies import parser, result_rows

#: `auto`'s rows at 2,000 tokens (fetch them with ``python -m benchmarks.fetch_rows``).
ROWS = "realdocs-dev-confidence"


def _cases(docs) -> list[tuple]:
    """Per question: its id, sentence candidates, chunk scores, sectioned flags, header costs,
    context budget, the candidate index of its gold answer line (None when none matches), and the
    chunks' document ids and positions."""
    from ragnet.core import links
    from ragnet.core.support import answer_key
    from ragnet.corpus.tokens import count_tokens_batch
    from ragnet.eval.run.eval_indexes import docs_index
    from ragnet.lm.config import LazyLM
    from ragnet.programs import sentence_packing as sp
    from ragnet.programs.registry import build_program
    from ragnet.programs.trace import Trace
    from ragnet.signatures.formatting import chunk_header

    index = docs_index(docs)
    program = build_program("oneshot:sentences+hops", index, budget=2000, reader=LazyLM("local:qwen2.5-coder-1.5b"))
    cases = []
    for q in load_questions(QUESTIONS):
        chunks, budget = program._candidates(q["question"], Trace())
        cands = sp.sentence_candidates(index, chunks, q["question"])
        scores = np.asarray([c.score or 0.0 for c in chunks]) + links.mention_bonus(
            [c.title for c in chunks], [c.text for c in chunks], q["question"], top=sp.LINK_TOP, bonus=sp.LINK_BONUS)
        sectioned = np.asarray([sp._sectioned(c) for c in chunks], dtype=bool)
        headers = np.asarray(count_tokens_batch([chunk_header(f"c{i + 1}", c.title) for i, c in enumerate(chunks)]),
                             dtype=np.int64) + 2
        line = None
        for gold in q["gold"]:
            if gold.get("role") != "answer":
                continue
            want = set(answer_key(gold["quote"]))
            shares = [len(want & set(answer_key(t))) / max(1, len(want)) for t in cands.texts]
            if shares and max(shares) >= 0.6:
                line = int(np.argmax(shares))
        cases.append((q["id"], cands, scores, sectioned, headers, budget.context_budget, line,
                      [c.doc_id for c in chunks], [c.position for c in chunks]))
    return cases


def packed_lines(cases: list[tuple], own: float = 0.0, temperature: float = 0.1,
                 option_link: float | None = None, overlap_copies: bool = True) -> dict[str, bool]:
    """Whether each question's answer line is packed, with the own-match floor ``own`` (0: today's
    values), the option links' share ``option_link`` (None: today's) and one copy of an overlap
    line (:mod:`ragnet.core.overlap_copies`, added after this probe's second run, at bd5f1ba)."""
    from ragnet.core import option_links
    from ragnet.core import sentence_values as sv
    from ragnet.core.overlap_copies import drop_overlap_copies

    weights = sv.SentenceWeights()
    link = weights.option_link if option_link is None else option_link
    out = {}
    for qid, cands, scores, sectioned, headers, budget, line, docs, positions in cases:
        if line is None:
            continue
        values = sv.values(scores, cands.chunk_of, cands.position == 0, cands.cos, cands.bm25, weights,
                           follows=sectioned)
        if own > 0:
            match = weights.match_weight * sv._minmax(cands.cos) + (1 - weights.match_weight) * sv._minmax(cands.bm25)
            floor = own * np.exp((match - match.max()) / temperature)
            values = np.maximum(values, np.where(sectioned[cands.chunk_of], floor, 0.0))
        values = option_links.link_floor(values, cands.texts, sectioned[cands.chunk_of], share=link)
        if overlap_copies:
            values = drop_overlap_copies(values, cands.texts, cands.chunk_of, docs, positions)
        packed = sv.pack(values, cands.tokens + 1, cands.chunk_of, headers, budget).tolist()
        out[qid] = any(cands.texts[j] == cands.texts[line] for j in packed)  # the line, or its overlap copy
    return out


def main(argv: Sequence[str] | None = None) -> None:
    cli = parser(__doc__, "answer_line_in_pack")
    cli.add_argument("--docs", default=str(default_out()), help="the built dev documents")
    args = cli.parse_args(argv)
    from pathlib import Path

    cases = _cases(Path(args.docs))
    today = packed_lines(cases)
    print(f"answer line packed: {sum(today.values())} of {len(today)} questions whose line is a candidate "
          f"({len(cases) - len(today)} without one)")
    copies = packed_lines(cases, overlap_copies=False)
    print(f"with both copies of overlap lines: {sum(copies.values())}; gains {sorted(q for q in today if today[q] and not copies[q])}, "
          f"losses {sorted(q for q in today if copies[q] and not today[q])}")
    unlinked = packed_lines(cases, option_link=0.0)
    print(f"without option links: {sum(unlinked.values())}; gains {sorted(q for q in today if today[q] and not unlinked[q])}, "
          f"losses {sorted(q for q in today if unlinked[q] and not today[q])}")
    rows = {r["id"]: r for r in result_rows(ROWS)}
    if rows:
        right = {q: (rows[q].get("contains") or 0) >= 1 for q in today if q in rows}
        print(f"{ROWS}'s reader right: {sum(right[q] for q in right if today[q])} of the packs with the line, "
              f"{sum(right[q] for q in right if not today[q])} of those without it")
    for own, temperature in itertools.product((0.25, 0.5, 1.0), (0.05, 0.1, 0.2)):
        floor = packed_lines(cases, own, temperature)
        gained = sorted(q for q in floor if floor[q] and not today[q])
        lost = sorted(q for q in floor if today[q] and not floor[q])
        print(f"own-match floor {own} at temperature {temperature}: {sum(floor.values())} packed, "
              f"gains {gained}, losses {lost}")


if __name__ == "__main__":
    main()
