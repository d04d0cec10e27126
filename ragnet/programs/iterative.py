"""IterativeRAG — "cast a small net many times": an agent loop with chunk_search and chunk_delete.

Each turn (at most ``loop.max_turns``):

1. **Query.** RewriteQuery proposes sub-queries with probabilities (verbalized sampling); the
   most probable one not searched before is used. Turn 1 without the rewrite step
   (``LMSteps(rewrite=False)``) searches the question itself.
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

import numpy as np

from ragnet.core.links import mention_bonus
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.programs.agent import AgentRAG, Turns
from ragnet.programs.base import RunResult
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.options import LMSteps, Loop, Pack, Search
from ragnet.programs.stages import HOP_WEIGHT, apply_metadata_rules
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, DeleteStep


class IterativeRAG(AgentRAG):
    """Agentic multi-turn retrieval with fallback search, dedup, notes, deletion and a sufficiency stop.

    Args:
        index: a ``ragnet.Index``.
        budget: total tokens of the answer prompt, a shortcut for ``pack``'s budget. None (the
            default, the study's design): the answer step reads every kept chunk and all the
            notes. A number: the kept chunks are packed into it as in CombinedRAG
            (``AgentRAG._pack_final``).
        pack: the final pack (:class:`ragnet.programs.options.Pack`): with ``sentences`` the kept
            chunks' best sentences instead of whole chunks (needs a budget; the
            ``iterative:sentences`` preset, e.g. ``iterative:no-delete+sentences``); the notes take
            at most ``notes_share`` of the budget.
        search: the searches' ``bm25_weight``, and the final pack's start
            (:class:`ragnet.programs.options.Search`): with ``sentences`` and a ``pool``, the pack
            starts from the one-shot's candidates, the question's ``pool`` best hits after the
            metadata ``rules``, as ``OneShotRAG`` ranks them, then the chunks the later turns'
            searches found at ``HOP_WEIGHT`` of their best score, as ``oneshot:sentences+hops``
            takes its bridge hits (preset ``pool``: 100, the one-shot's). The LM steps still see
            only the turns' ``k`` chunks a search; the pool costs one search and no LM call, and
            keeps the first-hop evidence the one-shot finds beyond the top ``k``. Left open: 0,
            the pack draws only on what the turns gathered.
        loop: the turns (:class:`ragnet.programs.options.Loop`): at most ``max_turns`` (5, as in
            the study) of ``k`` chunks a search (5), ``n_queries`` sampled per rewrite in its
            ``query_form`` (``"one"``: NextQuery, one query naming what to look up next, a form
            small step LMs follow; preset ``one-query``); the turn-1 ``fallback`` search of the
            question; ``dedup``; the ``bridge`` search of the best bridge entity of the evidence (a
            name it gives and the question does not,
            ``ragnet.programs.bridge_search.bridge_search``; no LM call) when the rewrite gives no
            new query, or on every turn after the first without the rewrite step;
            ``stop_on_repeat`` (stop when AssessSufficiency says "Refine" with the same missing
            fact two turns running, ``ragnet.programs.agent.verdict_unchanged``: a step that never
            changes its verdict is not paid for again; off, it is asked every turn but the last).
            ``protect`` guards ``chunk_delete``: it may not remove the question's own top-``k``
            hits (what BasicRAG reads), the best hit of any search, the ``protect`` context chunks
            closest to the question (embedding cosine), nor a chunk whose title the question or
            another context chunk names (the bridge links of ``ragnet.core.links``); refused
            deletions are recorded (see :meth:`_protected` for why the links). With the turn-1
            fallback search the question's top-``k`` are all in the context after turn 1, so the
            final context holds every chunk BasicRAG would read: its gold recall is never below
            basic's, whatever the LM deletes. 0 lets the LM delete anything, as in the study; a
            small model then deletes much of the gold it retrieved, and protecting only the best
            hits and the closest chunks is not enough (docs/design.md#agent-loops).
        lm_steps: which LM steps run (:class:`ragnet.programs.options.LMSteps`), all on:
            ``rewrite`` (search queries from RewriteQuery; off: turn 1 searches the question, and
            later turns the bridge search when ``bridge`` is on, else the question again),
            ``contextualize`` (a notes cache updated from each retrieval), ``delete``
            (``chunk_delete``, SelectDeletions, after each search; with a small local LM, turn it
            off, the ``iterative:no-delete`` preset: it then keeps the gold more often at fewer LM
            calls, and give it a ``budget`` too, since a small reader does worse on everything the
            turns kept than on it packed into a budget, docs/design.md#agent-loops) and
            ``sufficiency`` (stop when AssessSufficiency says "Sufficient").
        retries, answer: as in :class:`ragnet.programs.RAGProgram` (where the answer step leaves
            the question's place open, it is chosen per question, "auto", as in ``OneShotRAG``).

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> lm = DummyLM([{"queries": [{"query": "Italy capital city", "probability": 0.9}]},  # rewrite
        ...               {"new_notes": "- Rome is the capital of Italy."},                    # contextualize
        ...               {"delete_ids": []},                                                   # delete
        ...               {"answer": "Rome", "evidence_ids": ["c1"]}])                          # answer
        >>> program = IterativeRAG(index, loop=Loop(max_turns=1, n_queries=1, k=2))
        >>> with dspy.context(lm=lm):
        ...     pred = program(question="What is the capital of Italy?")
        >>> pred.answer, [e["query"] for e in pred.trace if e["step"] == "search"][:1]
        ('Rome', ['Italy capital city'])
    """

    reads = {"lm_steps": ("contextualize", "rewrite", "sufficiency", "delete")}

    def __init__(
        self,
        index: ProgramIndex,
        budget: int | None = None,
        *,
        pack: Pack = Pack(),
        search: Search = Search(),
        loop: Loop = Loop(),
        lm_steps: LMSteps = LMSteps(),
        retries: int = 1,
        answer: AnswerStep | None = None,
    ) -> None:
        super().__init__(index, budget, pack=pack, search=search, loop=loop, lm_steps=lm_steps, retries=retries,
                         answer=answer)
        self.search = self.search.fill(pool=0)
        if self.search.pool and not self.pack.sentences:
            raise InputError("the question's pool joins the sentence pack, as in the one-shot; give "
                             "pack=Pack(sentences=True) (preset iterative:sentences+pool) or leave the pool at 0",
                             argument="search.pool")
        self.delete = DeleteStep(retries=self.retries, enabled=self.lm_steps.delete)

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
        if not self.search.pool:
            return self._ranked_for_pack(state)
        # the question's own search, not a turn's
        hits = self._search(question, trace, k=min(self.search.pool, len(self.index)), turn=0, pool=True)
        candidates = hits
        if self.search.rules:
            candidates = apply_metadata_rules(self.index, question, hits, trace, max_add=self.search.max_add,
                                              bm25_weight=self.search.bm25_weight)
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
        if not self.loop.protect or not context:
            return set(), set()
        ids = [c.id for c in context]
        # the same search BasicRAG makes (not recorded as a search: the agent did not ask for it)
        question_hits = {c.id for c in self.index.search(question, k=self.loop.k, bm25_weight=self.search.bm25_weight)}
        best_hits = {e["retrieved"][0] for e in trace.of("search") if e.get("retrieved")}
        cos = self.index.vectors(ids) @ self.index.embed_query(question)
        closest = {ids[i] for i in np.argsort(-cos, kind="stable")[: self.loop.protect].tolist()}
        named = mention_bonus([c.title for c in context], [c.text for c in context], question,
                              top=len(context), bonus=1.0)
        linked = {cid for cid, b in zip(ids, named.tolist()) if b > 0}
        ranked = (question_hits | best_hits | closest) & set(ids)
        return ranked | linked, linked - ranked

    def _chunk_delete(self, question: str, context: list[Chunk], turn: int, trace: Trace) -> list[Chunk]:
        protected, linked = self._protected(question, context, trace)
        pred = self.delete(question=question, chunks=self._step_view(question, context), protected=protected,
                           keep_at_least=1)
        doomed = set(pred.delete_ids) & {c.id for c in context}
        trace.add("delete", turn=turn, deleted=[c.id for c in context if c.id in doomed],
                  protected=sorted(protected), linked=sorted(linked))
        return [c for c in context if c.id not in doomed]
