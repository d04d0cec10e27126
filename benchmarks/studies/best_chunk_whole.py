"""Probe (2026-12-06, commit aeb2e65): does `auto` answer more manual questions when its best chunk is shown whole?

For most of `auto`'s misses over the manuals the answer's line is in the best-ranked chunk, of
which the sentence knapsack keeps a few sentences. This study runs ``ragnet eval`` with every
sentence of each question's best chunk (the first candidate) valued above all others, so the
pack holds that chunk whole and fills the rest of its 2,000 tokens as before. Nothing else
changes; the eval's arguments pass through:

    python -m benchmarks.studies.best_chunk_whole --data benchmarks/realdocs/questions.jsonl \\
        --docs ~/.cache/ragnet/realdocs-dev -n 125 --strategies auto --no-judge --no-plots \\
        --lm local --answer-lm local:qwen2.5-coder-1.5b --out runs/best-chunk-whole

Compare the rows with ``realdocs-dev-split-fix`` (the same code without the lift).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _lift_best_chunk() -> None:
    """Make ``select_sentences`` value every sentence of the first candidate chunk above the rest."""
    import types

    import ragnet.programs.sentence_packing as packing

    floor = packing.option_links.link_floor
    seen: dict[str, np.ndarray] = {}
    candidates = packing.sentence_candidates

    def remembered(index, chunks, question):
        cands = candidates(index, chunks, question)
        seen["chunk_of"] = np.asarray(cands.chunk_of)
        return cands

    def lifted(values, texts, where, share):
        out = np.asarray(floor(values, texts, where, share=share), dtype=np.float64).copy()
        if out.size:
            out[seen["chunk_of"] == 0] += out.max() + 1.0
        return out

    packing.sentence_candidates = remembered
    packing.option_links = types.SimpleNamespace(link_floor=lifted)


def main(argv: Sequence[str] | None = None) -> None:
    from benchmarks.studies import parser

    _, eval_args = parser(__doc__, "best_chunk_whole").parse_known_args(argv)  # --help: this text
    _lift_best_chunk()
    from ragnet.cli import app

    app(["eval", *eval_args])


if __name__ == "__main__":
    main()
