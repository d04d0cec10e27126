"""Sentence-level context selection: score the sentences of candidate chunks, pack the best.

The study's Chunk Cropping cuts each chunk down to the parts that bear on the question with
an LM call per chunk. This does the same with no LM: every sentence of every candidate chunk
gets a value, and the exact knapsack packs the most valuable sentences into the reader's
token budget. The reader then sees short, dense passages (each chunk's chosen sentences under
its title, in document order), so a small budget holds the evidence of many chunks.

Value model. A sentence is useful when its chunk is relevant *and* it is the part of the
chunk that matters, so its value is a product::

    value(i) = chunk_relevance(c) * sentence_share(i | c)

* ``chunk_relevance(c) = exp((s_c - max s) / chunk_temperature)``: the chunk's hybrid score,
  calibrated like the paragraph knapsack (:mod:`ragnet.core.calibrate`).
* ``sentence_share(i | c)``: how much of the chunk's relevance sentence ``i`` carries. Its
  match with the question, ``m_i = match_weight * cos_i + (1 - match_weight) * bm25_i``
  (each min-max scaled over all candidate sentences of the question), relative to the best
  sentence of its chunk, ``exp((m_i - max_c m) / sentence_temperature)``; the chunk's lead
  sentence gets at least ``lead`` of the chunk's relevance. The lead sentence matters because
  it names what the chunk is about: HotpotQA's gold supporting sentences are most often a
  paragraph's first sentence, which often shares few words with the question ("Scott
  Derrickson (born July 16, 1966) is an American director" for "Were Scott Derrickson and Ed
  Wood of the same nationality?").
* In a chunk of a document with sections (a manual), a sentence keeps at least ``follow`` of
  the value of the sentence before it: manuals state a fact across short consecutive sentences
  ("Adjust the maximum depth of the template stack. The default is 3000."), and the second
  shares no word with the question. Encyclopedic paragraphs are not given it: there the budget
  is better spent on the second document of a two-hop question.
* In those chunks, when ``term`` is set, the sentence that opens a definition item (the term
  line of an option, a command or a variable, :mod:`ragnet.core.definition_items`) keeps at
  least ``term`` of the best value in its item: a description's later sentence does not say
  which option it describes, and a reader shown it without the term may name a neighbouring
  option.

Costs. A sentence costs its tokens plus one for the separator; a chunk whose sentences are
chosen also costs its header (``[cN] Title: ``). Headers are not additive per sentence, so
:func:`pack` solves the knapsack, charges the headers of the chunks it used, and re-solves with
the budget shrunk by any overrun; each round's answer is made to fit by dropping its least
valuable sentences, and the best round wins.

Example:
    >>> import numpy as np
    >>> chunk_of = np.array([0, 0, 0, 1, 1])          # two chunks: 3 and 2 sentences
    >>> lead = np.array([True, False, False, True, False])
    >>> cos = np.array([0.2, 0.7, 0.1, 0.3, 0.2])
    >>> bm25 = np.array([0.0, 3.0, 0.0, 1.0, 0.0])
    >>> v = values(np.array([0.9, 0.5]), chunk_of, lead, cos, bm25)
    >>> [round(x, 3) for x in v.tolist()]
    [0.5, 1.0, 0.0, 0.018, 0.002]
    >>> pack(v, np.array([10, 12, 9, 11, 8]), chunk_of, np.array([4, 4]), budget=30).tolist()
    [0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragnet.core import knapsack

__all__ = ["SentenceWeights", "pack", "values"]


@dataclass(frozen=True)
class SentenceWeights:
    """Parameters of the value model (see the module docstring); defaults chosen on HotpotQA dev.

    Attributes:
        chunk_temperature: decay of chunk relevance with the hybrid score gap to the best chunk.
        sentence_temperature: decay of a sentence's share with its match gap to its chunk's best.
        match_weight: weight of the sentence's cosine against its BM25 score in the match.
        lead: the least share of its chunk's relevance a chunk's first sentence keeps.
        follow: the least share of the value of the sentence before it that a sentence keeps, in
            the chunks :func:`values` is told follow on (chosen on the real-document dev set).
        term: the least share of the best value in its definition item that the item's opening
            (term) sentence keeps, in the same chunks; off by default, as on the real-document dev
            set it cost the 1.5B reader more answers than it gained (docs/results/README.md).
        option_link: the least share of an anchor sentence's value that a sentence naming one of
            its options keeps, in chunks with sections (:func:`ragnet.core.option_links.link_floor`,
            applied by the sentence packer after :func:`values`; chosen on the real-document dev set).
    """

    chunk_temperature: float = 0.1
    sentence_temperature: float = 0.1
    match_weight: float = 0.5
    lead: float = 0.5
    follow: float = 0.5
    term: float = 0.0
    option_link: float = 0.5


def _minmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    return np.zeros_like(x) if hi <= lo else (x - lo) / (hi - lo)


def values(
    chunk_scores: np.ndarray,
    chunk_of: np.ndarray,
    is_lead: np.ndarray,
    cos: np.ndarray,
    bm25: np.ndarray,
    weights: SentenceWeights = SentenceWeights(),
    follows: np.ndarray | None = None,
    item_of: np.ndarray | None = None,
) -> np.ndarray:
    """Value of every candidate sentence (see the module docstring).

    Args:
        chunk_scores: hybrid score of each candidate chunk (higher is better).
        chunk_of: for each sentence, the index of its chunk in ``chunk_scores``; a chunk's
            sentences are consecutive and in document order.
        is_lead: for each sentence, whether it is its chunk's first sentence.
        cos: cosine of each sentence's embedding with the question's.
        bm25: BM25 score of each sentence for the question.
        weights: the value model's parameters.
        follows: for each chunk, whether its sentences keep ``weights.follow`` of the value of the
            sentence before them (chunks of documents with sections); None: no chunk does.
        item_of: for each sentence, the index of the sentence opening its definition item, or -1
            (:func:`ragnet.core.definition_items.item_openers`); openers in chunks that follow on
            keep ``weights.term`` of their item's best value. None: no items.

    Returns:
        float64 values, one per sentence, in ``[0, 1]``.

    Example:
        >>> chunk_of, lead = np.array([0, 0, 0]), np.array([True, False, False])
        >>> cos, bm25 = np.array([0.1, 0.9, 0.0]), np.array([0.0, 2.0, 0.0])
        >>> [round(x, 3) for x in values(np.array([1.0]), chunk_of, lead, cos, bm25).tolist()]
        [0.5, 1.0, 0.0]
        >>> [round(x, 3) for x in values(np.array([1.0]), chunk_of, lead, cos, bm25, follows=np.array([True])).tolist()]
        [0.5, 1.0, 0.5]
    """
    chunk_of = np.asarray(chunk_of, dtype=np.int64)
    if chunk_of.size == 0:
        return np.zeros(0, dtype=np.float64)
    scores = np.asarray(chunk_scores, dtype=np.float64)
    chunk_rel = np.exp((scores - scores.max()) / weights.chunk_temperature)
    match = weights.match_weight * _minmax(cos) + (1.0 - weights.match_weight) * _minmax(bm25)
    best = np.full(scores.size, -np.inf)
    np.maximum.at(best, chunk_of, match)
    share = np.exp((match - best[chunk_of]) / weights.sentence_temperature)
    share = np.where(np.asarray(is_lead, dtype=bool), np.maximum(share, weights.lead), share)
    value = chunk_rel[chunk_of] * share
    if follows is None:
        return value
    sectioned = np.asarray(follows, dtype=bool)[chunk_of]
    if weights.follow > 0:
        after = np.r_[False, chunk_of[1:] == chunk_of[:-1]] & sectioned
        value = np.where(after, np.maximum(value, weights.follow * np.r_[0.0, value[:-1]]), value)
    if item_of is not None and weights.term > 0:
        owner = np.asarray(item_of, dtype=np.int64)
        inside = (owner >= 0) & sectioned
        best_in_item = np.zeros_like(value)
        np.maximum.at(best_in_item, owner[inside], value[inside])
        value = np.maximum(value, weights.term * best_in_item)
    return value


def pack(
    sentence_values: np.ndarray,
    costs: np.ndarray,
    chunk_of: np.ndarray,
    header_costs: np.ndarray,
    budget: int,
    *,
    max_rounds: int = 8,
) -> np.ndarray:
    """Sentences with the most total value whose tokens, plus their chunks' headers, fit ``budget``.

    Args:
        sentence_values: value per sentence (:func:`values`).
        costs: tokens per sentence (separator included).
        chunk_of: chunk index of each sentence.
        header_costs: tokens of each chunk's header, charged once per chunk used.
        budget: total tokens allowed.
        max_rounds: most knapsack solves (each with the budget shrunk by the last overrun).

    Returns:
        Selected sentence indices, ascending (so each chunk's sentences keep document order).
    """
    v = np.asarray(sentence_values, dtype=np.float64)
    w = np.asarray(costs, dtype=np.int64)
    chunk_of = np.asarray(chunk_of, dtype=np.int64)
    headers = np.asarray(header_costs, dtype=np.int64)
    keep = np.flatnonzero(v > 0)
    if keep.size == 0 or budget <= 0:
        return np.zeros(0, dtype=np.int64)

    def cost(picked: list[int]) -> int:
        return int(w[picked].sum() + headers[np.unique(chunk_of[picked])].sum()) if picked else 0

    def repair(picked: list[int]) -> list[int]:
        """Drop the least valuable sentences until the headers fit too."""
        picked = list(picked)
        while picked and cost(picked) > budget:
            picked.remove(min(picked, key=lambda i: (v[i], -i)))
        return picked

    best: list[int] = []
    inner = int(budget)
    for _ in range(max_rounds):
        picked = sorted(keep[knapsack.select(v[keep], w[keep], inner, method="exact")].tolist())
        feasible = repair(picked)
        if v[feasible].sum() > v[best].sum():
            best = feasible
        overrun = cost(picked) - budget
        if overrun <= 0:
            break
        inner -= overrun
        if inner <= 0:
            break
    return np.asarray(sorted(best), dtype=np.int64)
