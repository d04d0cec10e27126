"""Fill the reader's token budget with sentences instead of whole chunks, with no LM call.

Each candidate chunk is split into its sentences (read from the index's sentence store, so
nothing is re-embedded per question); every sentence is valued by
:func:`ragnet.core.sentence_values.values` (its chunk's hybrid score plus the bridge-link bonus of
:mod:`ragnet.core.links`, its own cosine and BM25 match, the lead-sentence floor, and in a
chunk of a document with sections the floor of the sentence before it and, when
``weights.term`` is set, the floor an option's term line takes from its description), then, in
those chunks, the floor a sentence takes from one of the best sentences when it names the same
command-line option (:mod:`ragnet.core.option_links`: the second place of a two-part answer in a
manual) and a sentence that two neighbouring chunks both hold (their overlap) keeps one copy
(:mod:`ragnet.core.overlap_copies`); then the exact knapsack packs the best into the answer
prompt's budget (:func:`ragnet.core.sentence_values.pack`).

The reader sees coherent passages: each chunk keeps its id and title, its chosen sentences
stay in document order, and a gap between two chosen sentences is shown as `` … ``. Chunks
come in the candidates' rank order. Evidence ids are unchanged, so everything downstream
(the answer's citations, gold recall) works as for whole chunks.

Example:
    >>> import ragnet, tempfile
    >>> docs = [ragnet.Document(id="sd", title="Scott Derrickson", text=(
    ...     "Scott Derrickson is an American director. He lives in Los Angeles. He likes cats.")),
    ...     ragnet.Document(id="ew", title="Ed Wood", text="Ed Wood was an American filmmaker. He died in 1978."),
    ...     ragnet.Document(id="tea", title="Tea", text="Tea is a drink made from leaves. It is popular in Britain.")]
    >>> index = ragnet.Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
    >>> question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    >>> budget = PromptBudget(ragnet.BasicRAG(index).answer.predict, question, 457)  # 421 of them: the prompt around
    >>> packed = pack_sentences(index.search(question, k=3), question, budget, index)
    >>> [c.text for c in packed.chunks]
    ['Ed Wood was an American filmmaker.', 'Scott Derrickson is an American director.']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ragnet.core import links, option_links
from ragnet.core import sentence_values as core_sentences
from ragnet.core.definition_items import item_openers
from ragnet.core.overlap_copies import drop_overlap_copies
from ragnet.corpus.tokens import count_tokens_batch
from ragnet.corpus.types import Chunk
from ragnet.programs.citations import showing
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.packing import PackResult, PromptBudget
from ragnet.signatures.formatting import chunk_header

__all__ = ["SentencePackResult", "SentenceSelection", "crop_to_sentences", "pack_sentences", "select_sentences",
           "sentence_candidates", "sentence_view"]

GAP = " … "  # shown between two chosen sentences that are not adjacent in the chunk
LINK_TOP = 5
LINK_BONUS = 0.4


@dataclass
class SentenceCandidates:
    """The sentences of a question's candidate chunks, with what the value model reads."""

    chunk_of: np.ndarray
    position: np.ndarray
    texts: list[str]
    tokens: np.ndarray
    cos: np.ndarray
    bm25: np.ndarray


@dataclass
class SentencePackResult(PackResult):
    """A :class:`~ragnet.programs.packing.PackResult` whose chunks hold only their chosen
    sentences, plus ``cropped`` (``{id, sentences, kept, tokens_before, tokens_after}`` per chunk)."""

    cropped: list[dict[str, Any]] = field(default_factory=list)


def sentence_candidates(index: ProgramIndex, chunks: Sequence[Chunk], question: str) -> SentenceCandidates:
    """Sentences of ``chunks`` with their cosine and BM25 match to ``question``.

    Sentences of chunks the index stores unchanged come from its sentence store; the rest (an
    index built without sentences, or chunks an LM cropped) are split and embedded here.
    """
    from ragnet.index.sentence_store import SentenceStore

    qvec = index.embed_query(question)
    terms = index.query_terms(question)
    store = index.sentences
    stored: list[int] = []
    adhoc: list[int] = []
    for i, chunk in enumerate(chunks):
        same = store is not None and chunk.id in index and index.chunk(chunk.id).text == chunk.text
        (stored if same else adhoc).append(i)

    parts = []
    if stored:
        rows, local, position = store.gather(index.rows([chunks[i].id for i in stored]))
        parts.append((np.asarray(stored)[local], position, rows, store))
    if adhoc:
        temp = SentenceStore.build([chunks[i] for i in adhoc], index.embedder, index.sparse)
        rows, local, position = temp.gather(range(len(adhoc)))
        parts.append((np.asarray(adhoc)[local], position, rows, temp))
    chunk_of, position, texts, tokens, cos, bm25 = [], [], [], [], [], []
    for owner, pos, rows, source in parts:
        chunk_of.append(owner)
        position.append(pos)
        texts.extend(source.text(chunks[c], r) for c, r in zip(owner.tolist(), rows.tolist()))
        tokens.append(np.asarray(source.tokens[rows], dtype=np.int64))
        cos.append(source.cosines(rows, qvec))
        bm25.append(source.bm25(rows, terms, index.idf))
    if not parts:
        empty = np.zeros(0)
        return SentenceCandidates(empty.astype(np.int64), empty.astype(np.int64), [], empty.astype(np.int64),
                                  empty, empty)
    chunk_of_a = np.concatenate(chunk_of)
    order = np.lexsort((np.concatenate(position), chunk_of_a))  # chunk, then document order
    return SentenceCandidates(
        chunk_of=chunk_of_a[order], position=np.concatenate(position)[order], texts=[texts[i] for i in order],
        tokens=np.concatenate(tokens)[order], cos=np.concatenate(cos)[order], bm25=np.concatenate(bm25)[order],
    )


def join_sentences(texts: Sequence[str], positions: Sequence[int]) -> str:
    """Sentences of one chunk, in document order, as the reader sees them: adjacent ones joined by
    a space, the others by :data:`GAP` (``positions``: each sentence's index in its chunk).

    Example:
        >>> join_sentences(["A.", "B.", "D."], [0, 1, 3])
        'A. B. … D.'
    """
    out = texts[0]
    for prev, pos, text in zip(positions, positions[1:], texts[1:]):
        out += (" " if pos == prev + 1 else GAP) + text
    return out


@dataclass
class SentenceSelection:
    """What :func:`select_sentences` chose: the candidates' sentences, their values, the
    chosen sentence indices (into ``candidates``), and each chunk's header cost."""

    candidates: SentenceCandidates
    values: np.ndarray
    picked: list[int]
    headers: np.ndarray


def _sectioned(chunk: Chunk) -> bool:
    """Whether ``chunk`` comes from a document with sections (its location has a heading path)."""
    location = chunk.metadata.get("location") if isinstance(chunk.metadata, dict) else None
    return bool(isinstance(location, dict) and location.get("headings"))


def select_sentences(
    chunks: Sequence[Chunk],
    question: str,
    index: ProgramIndex,
    context_budget: int,
    *,
    weights: core_sentences.SentenceWeights = core_sentences.SentenceWeights(),
    link_top: int = LINK_TOP,
    link_bonus: float = LINK_BONUS,
) -> SentenceSelection:
    """Value the sentences of ``chunks`` and pick the best that fit ``context_budget`` tokens of
    rendered context (``[cN] Title: `` headers included). Used by :func:`pack_sentences` and by
    ``ragnet eval retrieval``, so the program and its measurement run the same code.

    Args:
        chunks: candidate chunks, best first, with their hybrid ``score``.
        question: the question.
        index: the index the chunks come from (sentence store, embedder, BM25 statistics).
        context_budget: tokens the rendered context may take.
        weights: the sentence value model's parameters.
        link_top, link_bonus: the bridge-link bonus (``ragnet.core.links.mention_bonus``); a
            bonus of 0 turns it off.
    """
    chunks = list(chunks)
    cands = sentence_candidates(index, chunks, question)
    scores = np.asarray([c.score or 0.0 for c in chunks], dtype=np.float64)
    scores = scores + links.mention_bonus([c.title for c in chunks], [c.text for c in chunks], question,
                                          top=link_top, bonus=link_bonus)
    sectioned = np.asarray([_sectioned(c) for c in chunks], dtype=bool)
    values = core_sentences.values(scores, cands.chunk_of, cands.position == 0, cands.cos, cands.bm25, weights,
                                   follows=sectioned,
                                   item_of=item_openers(cands.texts, cands.chunk_of) if weights.term > 0 else None)
    values = option_links.link_floor(values, cands.texts, sectioned[cands.chunk_of], share=weights.option_link)
    values = drop_overlap_copies(values, cands.texts, cands.chunk_of, [c.doc_id for c in chunks],
                                 [c.position for c in chunks], where=sectioned[cands.chunk_of])
    headers = np.asarray(count_tokens_batch([chunk_header(f"c{i + 1}", c.title) for i, c in enumerate(chunks)]),
                         dtype=np.int64) + 2
    picked = core_sentences.pack(values, cands.tokens + 1, cands.chunk_of, headers, context_budget).tolist()
    return SentenceSelection(cands, values, picked, headers)


def crop_to_sentences(chunks: Sequence[Chunk], cands: SentenceCandidates,
                      picked: Sequence[int]) -> tuple[list[Chunk], list[dict[str, Any]]]:
    """The chunks holding only their picked sentences (rank order; document order inside),
    and ``{id, sentences, kept, tokens_before, tokens_after}`` per chunk."""
    by_chunk: dict[int, list[int]] = {}
    for j in sorted(picked):
        by_chunk.setdefault(int(cands.chunk_of[j]), []).append(j)
    out, info = [], []
    for c in sorted(by_chunk):
        js = by_chunk[c]
        n_all = int((cands.chunk_of == c).sum())
        if len(js) == n_all:
            out.append(chunks[c])
        else:
            kept = [cands.texts[j] for j in js]
            text = join_sentences(kept, [int(cands.position[j]) for j in js])
            out.append(showing(chunks[c], text, int(cands.tokens[js].sum()) + len(js) - 1, kept))
        info.append({"id": chunks[c].id, "sentences": n_all, "kept": [int(cands.position[j]) for j in js],
                     "tokens_before": chunks[c].tokens, "tokens_after": out[-1].tokens})
    return out, info


def sentence_view(chunks: Sequence[Chunk], question: str, index: Any, tokens: int | None) -> list[Chunk]:
    """What an LM step is shown of ``chunks`` (best first): their best sentences for ``question``
    within ``tokens`` tokens of rendered context (``[cN] Title:`` headers included), each chunk's
    sentences in document order under its own id; a chunk none of whose sentences fits is left
    out. ``tokens`` None: the chunks as they are. No LM call (``ragnet.programs.options.Loop.step_tokens``).

    Example:
        >>> import ragnet, tempfile
        >>> docs = [ragnet.Document(id="m", title="Manual", text="The default is 8 jobs. Jobs run in parallel. "
        ...         "The log goes to stderr. Colours are off.")]
        >>> index = ragnet.Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
        >>> [c.text for c in sentence_view(index.search("How many jobs by default?", k=1), "How many jobs by default?",
        ...                                index, tokens=20)]
        ['The default is 8 jobs.']
    """
    chunks = list(chunks)
    if tokens is None or not chunks:
        return chunks
    choice = select_sentences(chunks, question, index, tokens)
    return crop_to_sentences(chunks, choice.candidates, choice.picked)[0]


def pack_sentences(
    chunks: Sequence[Chunk],
    question: str,
    budget: PromptBudget,
    index: ProgramIndex,
    **options: Any,
) -> SentencePackResult:
    """The sentences of ``chunks`` (best first) that fit ``budget`` and carry the most value.

    Args:
        chunks: candidate chunks, best first, with their hybrid ``score``.
        question: the question.
        budget: the answer prompt's budget.
        index: the index the chunks come from.
        **options: ``weights``, ``link_top``, ``link_bonus`` of :func:`select_sentences`.

    Raises:
        InputError: the budget cannot hold the prompt's fixed part plus one sentence.
    """
    chunks = list(chunks)
    if not chunks:
        return SentencePackResult([], budget.total([]), budget.context_budget, budget.overhead, 0)
    choice = select_sentences(chunks, question, index, budget.context_budget, **options)
    cands, values, picked = choice.candidates, choice.values, list(choice.picked)
    if cands.tokens.size:
        budget.require_fits(np.asarray([int((cands.tokens + 1 + choice.headers[cands.chunk_of]).min())]))
    selected, info = crop_to_sentences(chunks, cands, picked)
    total = budget.total(selected)
    while picked and total > budget.budget:  # repair: the estimate missed by a few tokens
        picked.remove(min(picked, key=lambda j: (values[j], -j)))
        selected, info = crop_to_sentences(chunks, cands, picked)
        total = budget.total(selected)
    return SentencePackResult(selected, total, budget.context_budget, budget.overhead, len(chunks), cropped=info)
