"""IterativeRAG — "cast a small net many times": an agent loop with chunk_search and chunk_delete.

Each turn (at most ``max_turns``):

1. **Query.** RewriteQuery proposes sub-queries with probabilities (verbalized sampling); the
   most probable one not searched before is used. Turn 1 with ``rewrite=False`` searches the
   question itself.
2. **chunk_search(query)** returns the top-``k`` chunks. With ``dedup``, already-seen ids are
   excluded so the next-ranked unseen chunks come back instead (Search-R1 de-duplication).
3. **Fallback Search** (turn 1 only): the original question is searched alongside the
   rewritten query, guarding against query drift.
4. **Contextualize** writes the new chunks' relevant facts; they are appended to a persistent
   notes cache (earlier notes are never dropped).
5. **chunk_delete(ids)**: SelectDeletions removes chunks that do not help, keeping the working
   context short (long contexts cause "retrieval laziness"). The code checks every deletion: a
   chunk the evidence signals rank highest (the question's own top hits, the best hit of a
   search, the chunks closest to the question) or that the question or the evidence names by its
   title is never deleted, and the context is never emptied (see ``protect``).
6. **AssessSufficiency** decides whether to stop. Small local LMs never stop on their own
   (they choose to search even with full evidence, DESIGN.md), so stopping is a separate, compilable
   step, and ``max_turns`` caps the loop regardless. It is not asked on the last allowed turn,
   where its verdict could change nothing (one LM call saved per question that reaches the cap).
   Nor is it asked again once it repeats itself: a small step LM says "Refine" with the same
   missing fact turn after turn, and the loop stops there (``stop_on_repeat``). A turn whose
   searches bring no chunk not already gathered stops the loop too. The trace's ``stop`` event
   says which rule ended it (``ragnet.programs.agent.STOP_REASONS``).

Every switch is independent; defaults are the studies' best settings (all on).

**The answer context.** By default the answer step reads everything the turns kept, with all the
notes, as in the study, with the question placed per question as ``OneShotRAG`` places it. Without
the delete step that grows by up to ``k`` chunks a search (25+ at ``max_turns=5``), more than a
small reader can use. With a ``budget`` the kept chunks are packed into it the way CombinedRAG packs
its pool (whole chunks by calibrated relevance and the knapsack, or with ``sentences`` their best
sentences, valued from each chunk's best hybrid score; the notes capped at ``notes_share`` of the
budget). ``ragnet ask`` gives a small local reader 1,000 tokens of sentences
(``ragnet.programs.registry.resolve_strategy``), the one-shot's recommended context.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragnet.core.links import mention_bonus
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.programs.agent import DEFAULT_NOTES_SHARE, AgentRAG, Turns
from ragnet.programs.base import RunResult, check_positive_int
from ragnet.programs.oneshot import HOP_WEIGHT, apply_metadata_rules
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, DeleteStep


class IterativeRAG(AgentRAG):
    """Agentic multi-turn retrieval with fallback search, dedup, notes, deletion and a sufficiency stop.

    Args:
        index: a ``ragnet.Index``.
        max_turns: hard cap on search turns (5, as in the study).
        k: chunks per ``chunk_search`` (5).
        fallback: on turn 1 also search the original question.
        delete: run ``chunk_delete`` (SelectDeletions) after each search. With a small local LM,
            turn it off (the ``iterative:no-delete`` preset): it then keeps the gold more often at
            fewer LM calls, and give it a ``budget`` too, since a small reader does worse on
            everything the turns kept than on it packed into a budget (docs/design.md#agent-loops).
        dedup: replace already-seen ids with the next-ranked unseen chunks.
        contextualize: keep a notes cache updated from each retrieval.
        sufficiency: stop when AssessSufficiency says "Sufficient".
        stop_on_repeat: stop when AssessSufficiency says "Refine" with the same missing fact two
            turns running (``ragnet.programs.agent.verdict_unchanged``): a step that never changes
            its verdict is not paid for again. Off: it is asked every turn but the last.
        rewrite: write search queries with RewriteQuery (off: turn 1 searches the question, and
            later turns the bridge search when ``bridge`` is on, else the question again).
        bridge: search the best bridge entity of the evidence (a name it gives and the question
            does not, ``ragnet.programs.bridge.bridge_search``; no LM call) when the rewrite gives
            no new query, or on every turn after the first without the rewrite step.
        n_queries: sub-queries sampled per rewrite (verbalized sampling).
        query_form: the rewrite step's form: ``"sampled"`` (RewriteQuery, ``n_queries`` candidates
            with probabilities) or ``"one"`` (NextQuery: the name to look up next and one query,
            a form small step LMs follow; preset ``one-query``). Either is the ``rewrite`` step.
        protect: ``chunk_delete`` may not remove the question's own top-``k`` hits (what
            BasicRAG reads), the best hit of any search, the ``protect`` context chunks closest to
            the question (embedding cosine), nor a chunk whose title the question or another
            context chunk names (the bridge links of ``ragnet.core.links``); refused deletions are
            recorded (see :meth:`_protected` for why the links). With the turn-1 fallback search
            the question's top-``k`` are all in the context after turn 1, so the final context
            holds every chunk BasicRAG would read: its gold recall is never below basic's, whatever
            the LM deletes. 0 lets the LM delete anything, as in the study; a small model then
            deletes much of the gold it retrieved, and protecting only the best hits and the
            closest chunks is not enough (docs/design.md#agent-loops).
        lam: hybrid BM25 weight.
        retries, answer: as in :class:`ragnet.programs.RAGProgram` (where the answer step leaves
            the question's place open, it is chosen per question, "auto", as in ``OneShotRAG``).
        budget: total tokens of the answer prompt. None (the default, the study's design): the
            answer step reads every kept chunk and all the notes. A number: the kept chunks are
            packed into it as in CombinedRAG (``AgentRAG._pack_final``).
        sentences: pack the kept chunks' best sentences instead of whole chunks (needs a
            ``budget``; the ``iterative:sentences`` preset, e.g. ``iterative:no-delete+sentences``).
        notes_share: the largest share of ``budget`` the notes may take (as in CombinedRAG).
        pool: with ``sentences``, the final pack starts from the one-shot's candidates: the
            question's ``pool`` best hits after the metadata rules, as ``OneShotRAG`` ranks them, then
            the chunks the later turns' searches found at ``HOP_WEIGHT`` of their best score, as
            ``oneshot:sentences+hops`` takes its bridge hits (preset ``pool``: 100, the one-shot's).
            The LM steps still see only the turns' ``k`` chunks a search; the pool costs one search
            and no LM call, and keeps the first-hop evidence the one-shot finds beyond the top ``k``.
            0 (the default): the pack draws only on what the turns gathered.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> lm = DummyLM([{"queries": [{"query": "Italy capital city", "probability": 0.9}]},  # rewrite
        ...               {"new_notes": "- Rome is the capital of Italy."},                    # contextualize
        ...               {"delete_ids": []},                                                   # delete
        ...               {"answer": "Rome", "evidence_ids": ["c1"]}])                          # answer
        >>> with dspy.context(lm=lm):
        ...     pred = IterativeRAG(index, max_turns=1, n_queries=1, k=2)(question="What is the capital of Italy?")
        >>> pred.answer, [e["query"] for e in pred.trace if e["step"] == "search"][:1]
        ('Rome', ['Italy capital city'])
    """

    def __init__(
        self,
        index: Any,
        *,
        max_turns: int = 5,
        k: int = 5,
        fallback: bool = True,
        delete: bool = True,
        dedup: bool = True,
        contextualize: bool = True,
        sufficiency: bool = True,
        rewrite: bool = True,
        bridge: bool = True,
        stop_on_repeat: bool = True,
        n_queries: int = 5,
        query_form: str = "sampled",
        protect: int = 2,
        lam: float = 0.4,
        retries: int = 1,
        answer: AnswerStep | None = None,
        budget: int | None = None,
        sentences: bool = False,
        notes_share: float = DEFAULT_NOTES_SHARE,
        pool: int = 0,
    ) -> None:
        super().__init__(
            index, max_turns=max_turns, k=k, fallback=fallback, dedup=dedup, contextualize=contextualize,
            sufficiency=sufficiency, rewrite=rewrite, bridge=bridge, stop_on_repeat=stop_on_repeat,
            n_queries=n_queries, query_form=query_form, lam=lam, retries=retries, answer=answer, budget=budget,
            sentences=sentences,
            notes_share=notes_share,
        )
        self.protect = check_positive_int(protect, "protect", minimum=0)
        self.pool = check_positive_int(pool, "pool", minimum=0)
        if self.pool and not self.sentences:
            raise InputError("the question's pool joins the sentence pack, as in the one-shot; give sentences=True "
                             "(preset iterative:sentences+pool) or pool=0", argument="pool")
        self.delete = DeleteStep(retries=self.retries, enabled=delete)

    def _run(self, question: str, trace: Trace) -> RunResult:
        state = self._turns(question, trace)
        if self.budget is None:
            context, notes = state.context, (state.notes if self.contextualize.enabled else "")
        else:
            candidates = self._final_candidates(question, state, trace)
            context, notes = self._pack_final(question, candidates, state.notes, trace)
        answer, evidence = self._answer(question, context, trace, notes=notes)
        return RunResult(answer=answer, evidence=evidence, context=context, notes=state.notes)

    def _final_candidates(self, question: str, state: Turns, trace: Trace) -> list[Chunk]:
        """The final pack's candidates: what the turns gathered, best first, or with a ``pool`` the
        one-shot's candidates followed by the later turns' finds at ``HOP_WEIGHT`` (see ``pool``)."""
        if not self.pool:
            return self._ranked_for_pack(state)
        hits = self._search(question, trace, k=min(self.pool, len(self.index)), turn=0, pool=True)  # not a turn's
        candidates = apply_metadata_rules(self.index, question, hits, trace, lam=self.lam)
        taken = {c.id for c in candidates}
        found = [c.with_scores(score=HOP_WEIGHT * state.hybrid[c.id])
                 for c in state.context if c.id not in taken]
        return candidates + sorted(found, key=lambda c: -c.score)

    def _prune(self, question: str, state: Turns, turn: int, trace: Trace) -> None:
        """chunk_delete, checked: protected chunks stay and the context is never emptied."""
        if self.delete.enabled and len(state.context) > 1:
            state.context = self._chunk_delete(question, state.context, turn, trace)

    def _protected(self, question: str, context: list[Chunk], trace: Trace) -> tuple[set[str], set[str]]:
        """The context chunks ``chunk_delete`` may not remove, and those of them only the links protect.

        Two kinds of signal protect a chunk:

        * **rank**: the question's own top-``k`` hits (what BasicRAG reads), the best hit of every
          search so far, and the ``protect`` chunks closest to the question. Each of these is a
          fixed number of places, and places can be filled: documents written to match the question
          (injected ones, near-duplicates) take the question's top-``k`` and its closest places and
          leave the real evidence unprotected behind them.
        * **links**: a chunk whose title the question names, or another context chunk names, as a
          whole phrase (:func:`ragnet.core.links.mention_bonus`, the bridge links the sentence
          selector reads). These are not places: adding documents can add links but never take
          one away, so however many documents crowd the question's ranking, the page of an entity
          the question names, and the page of an entity the evidence names (a multi-hop question's
          second hop), stay. What no search ranks first, no close-cosine place holds and nothing
          names can still be deleted; that is the LM's pruning, and ``protect=0`` turns every
          guard off.
        """
        if not self.protect or not context:
            return set(), set()
        ids = [c.id for c in context]
        # the same search BasicRAG makes (not recorded as a search: the agent did not ask for it)
        question_hits = {c.id for c in self.index.search(question, k=self.k, lam=self.lam)}
        best_hits = {e["retrieved"][0] for e in trace.of("search") if e.get("retrieved")}
        closest: set[str] = set()
        if hasattr(self.index, "vectors"):  # any ragnet.Index; a bare search backend only protects best hits
            cos = self.index.vectors(ids) @ self.index.embed_query(question)
            closest = {ids[i] for i in np.argsort(-cos, kind="stable")[: self.protect].tolist()}
        named = mention_bonus([c.title for c in context], [c.text for c in context], question,
                              top=len(context), bonus=1.0)
        linked = {cid for cid, b in zip(ids, named.tolist()) if b > 0}
        ranked = (question_hits | best_hits | closest) & set(ids)
        return ranked | linked, linked - ranked

    def _chunk_delete(self, question: str, context: list[Chunk], turn: int, trace: Trace) -> list[Chunk]:
        protected, linked = self._protected(question, context, trace)
        pred = self.delete(question=question, chunks=context, protected=protected, keep_at_least=1)
        doomed = set(pred.delete_ids) & {c.id for c in context}
        trace.add("delete", turn=turn, deleted=[c.id for c in context if c.id in doomed],
                  protected=sorted(protected), linked=sorted(linked))
        return [c for c in context if c.id not in doomed]
