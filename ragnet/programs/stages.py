"""Program stages the strategies share: the rule-based Chunk Filter, the weight of a bridge
search's hits and the answer budget's default.

They live apart from any one strategy so that changing the one-shot cannot silently change the
agents or the recall measurements, which import them from here.
"""

from __future__ import annotations

import numpy as np

from ragnet.core import rules
from ragnet.core.page_listings import is_page_listing
from ragnet.corpus.metadata import extract_query_metadata
from ragnet.corpus.types import Chunk
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.trace import Trace

__all__ = ["DEFAULT_BUDGET", "HOP_WEIGHT", "LISTING_REASON", "apply_metadata_rules"]

# A bridge search's hits join the candidates at this share of their score: each search's best hit
# scores near 1 against its own query, and at full weight they displaced first-hop evidence from
# the pack (chosen on dev questions, docs/results/README.md#bridge-hops).
HOP_WEIGHT = 0.5
#: The answer budget (tokens of the whole answer prompt) when neither ``budget=`` nor a pack gives one.
DEFAULT_BUDGET = 4000
#: The trace's reason for a candidate dropped because it only lists pages.
LISTING_REASON = "a table of contents or an index: it lists pages and states nothing"


def apply_metadata_rules(
    index: ProgramIndex, question: str, candidates: list[Chunk], trace: Trace, *, max_add: int = 10,
    bm25_weight: float = 0.4, add: bool = True,
) -> list[Chunk]:
    """The rule-based Chunk Filter: drop candidates that only list pages (a manual's contents or
    index, :func:`~ragnet.core.page_listings.is_page_listing`) and those whose years/places
    contradict the question, add index chunks whose title or entities match it (scored as the
    dense half of the hybrid score at ``bm25_weight``). Recorded as a ``filter`` event."""
    listings = [c.id for c in candidates if is_page_listing(c.text)]
    candidates = [c for c in candidates if c.id not in listings]
    qmeta = extract_query_metadata(question, index.gazetteer)
    result = rules.apply(qmeta, [(c.id, c.metadata) for c in candidates], index.catalog, max_add=max_add, add=add)
    dropped = {d.chunk_id for d in result.dropped}
    kept = [c for c in candidates if c.id not in dropped]
    added = [c for c in _score_added(index, question, [d.chunk_id for d in result.added], kept, bm25_weight)
             if not is_page_listing(c.text)]
    added_ids = {c.id for c in added}
    trace.add(
        "filter",
        kind="rules",
        kept=[c.id for c in kept],
        dropped=[{"id": cid, "reason": LISTING_REASON} for cid in listings]
        + [{"id": d.chunk_id, "reason": d.reason} for d in result.dropped],
        added=[{"id": d.chunk_id, "reason": d.reason} for d in result.added if d.chunk_id in added_ids],
    )
    return sorted(kept + added, key=lambda c: -c.score)


def _score_added(index: ProgramIndex, question: str, ids: list[str], ranked: list[Chunk],
                 bm25_weight: float) -> list[Chunk]:
    """Give rule-added chunks a score on the candidates' scale: their cosine, min-max scaled by
    the candidates' cosines and weighted like the dense half of the hybrid score.

    (Lifting them level with a top-ranked candidate instead displaces retrieved gold chunks.)
    """
    if not ids:
        return []
    chunks = index.get(ids)
    cos = index.vectors(ids) @ index.embed_query(question)
    dense = [c.dense_score for c in ranked if c.dense_score is not None]
    lo, hi = (min(dense), max(dense)) if dense else (0.0, 1.0)
    out = []
    for chunk, cs in zip(chunks, cos.tolist()):
        estimate = (1 - bm25_weight) * float(np.clip((cs - lo) / (hi - lo), 0, 1)) if hi > lo else 0.0
        out.append(chunk.with_scores(score=estimate, dense_score=cs))
    return out
