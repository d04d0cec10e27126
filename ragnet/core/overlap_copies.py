"""Overlap copies: a sentence that two neighbouring chunks of one document both hold.

Chunks are overlapping windows (:mod:`ragnet.corpus.chunking`), so the sentences at the end of
one chunk open the next. When both chunks are candidates, the sentence knapsack would pack such a
sentence twice: the budget pays for a line the reader already has, and the pack shows one place
of the document as if two said it. :func:`drop_overlap_copies` keeps the most valuable copy and
gives the others value 0, which the knapsack never packs. A sentence repeated in chunks that are
not neighbours ("Returns: 0 on success." under two functions), or twice in one chunk, is written
in two places of the document, and every copy stays.

The pack applies it in chunks of documents with sections only (``where``). In a manual the freed
tokens bring lines of the same sections; in Wikipedia's short passages they brought other pages'
sentences, which cost the 1.5B reader more answers than they gained (docs/results/README.md,
"overlap copies").

Example:
    >>> texts = ["The default is 8.", "Jobs run in parallel.", "Jobs run in parallel.", "Logs go to stderr."]
    >>> drop_overlap_copies(np.array([0.9, 0.4, 0.5, 0.3]), texts, chunk_of=np.array([0, 0, 1, 1]),
    ...                     chunk_doc=["m", "m"], chunk_pos=[3, 4]).tolist()
    [0.9, 0.0, 0.5, 0.3]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["drop_overlap_copies"]


def drop_overlap_copies(values: np.ndarray, texts: Sequence[str], chunk_of: np.ndarray,
                        chunk_doc: Sequence[str], chunk_pos: Sequence[int],
                        where: np.ndarray | None = None) -> np.ndarray:
    """``values`` with 0 for every copy of a sentence that a neighbouring chunk of the same
    document (positions one apart) also holds, except its most valuable copy (the earliest on a tie).

    Args:
        values: value per candidate sentence.
        texts: the sentences' texts (compared with whitespace runs collapsed).
        chunk_of: the chunk index of each sentence.
        chunk_doc: each chunk's document id.
        chunk_pos: each chunk's position in its document (``Chunk.position``).
        where: per sentence, whether it may be dropped or count as a copy (None: every sentence).

    Example:
        >>> same = ["A line.", "A line."]
        >>> drop_overlap_copies(np.array([0.5, 0.5]), same, np.array([0, 1]), ["m", "m"], [0, 2]).tolist()
        [0.5, 0.5]
        >>> drop_overlap_copies(np.array([0.2, 0.7]), same, np.array([0, 1]), ["m", "m"], [5, 4]).tolist()
        [0.0, 0.7]
        >>> drop_overlap_copies(np.array([0.2, 0.7]), same, np.array([0, 1]), ["m", "m"], [5, 4],
        ...                     where=np.array([False, False])).tolist()
        [0.2, 0.7]
    """
    out = np.array(values, dtype=np.float64, copy=True)
    copies: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        if where is None or where[i]:
            copies.setdefault(" ".join(text.split()), []).append(i)
    for group in copies.values():
        if len(group) < 2:
            continue
        for i in sorted(group, key=lambda j: (-out[j], j)):  # the best copy first; it keeps its value
            if out[i] <= 0:
                continue
            for j in group:
                a, b = int(chunk_of[i]), int(chunk_of[j])
                if j != i and out[j] > 0 and chunk_doc[a] == chunk_doc[b] and abs(chunk_pos[a] - chunk_pos[b]) == 1:
                    out[j] = 0.0
    return out
