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
   chunk the evidence signals rank highest (the best hit of a search, the chunks closest to the
   question) is never deleted, and the context is never emptied.
6. **AssessSufficiency** decides whether to stop. Small local LMs never stop on their own
   (DESIGN.md: 12/12 "search" even with full evidence), so stopping is a separate, compilable
   step, and ``max_turns`` caps the loop regardless. It is not asked on the last allowed turn,
   where its verdict could change nothing (one LM call saved per question that reaches the cap).

Every switch is independent; defaults are the studies' best settings (all on).
"""

from __future__ import annotations

from typing import Any

import dspy
import numpy as np

from ragnet.corpus.types import Chunk
from ragnet.programs.base import RAGProgram, RunResult, step_predictor, check_positive_int
from ragnet.programs.trace import Trace
from ragnet.signatures import (
    AssessSufficiency,
    Contextualize,
    RewriteQuery,
    SelectDeletions,
    format_context,
    run_contextualize,
    run_delete,
    run_rewrite,
    run_sufficiency,
)


class IterativeRAG(RAGProgram):
    """Agentic multi-turn retrieval with fallback search, dedup, notes, deletion and a sufficiency stop.

    Args:
        index: a ``ragnet.Index``.
        max_turns: hard cap on search turns (5, as in the study).
        k: chunks per ``chunk_search`` (5).
        fallback: on turn 1 also search the original question.
        delete: run ``chunk_delete`` (SelectDeletions) after each search.
        dedup: replace already-seen ids with the next-ranked unseen chunks.
        contextualize: keep a notes cache updated from each retrieval.
        sufficiency: stop when AssessSufficiency says "Sufficient".
        rewrite: write search queries with RewriteQuery (off: every turn searches the question).
        n_queries: sub-queries sampled per rewrite (verbalized sampling).
        protect: ``chunk_delete`` may not remove the best hit of any search, nor the ``protect``
            context chunks closest to the question (embedding cosine); refused deletions are
            recorded. 0 lets the LM delete anything, as in the study (a 0.5B model then deleted
            40% of the gold it had retrieved on HotpotQA dev).
        lam: hybrid BM25 weight.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> lm = DummyLM([{"queries": [{"query": "capital of Italy", "probability": 0.9}]},   # rewrite
        ...               {"new_notes": "- Rome is the capital of Italy."},                    # contextualize
        ...               {"delete_ids": []},                                                   # delete
        ...               {"answer": "Rome", "evidence_ids": ["c1"]}])                          # answer
        >>> with dspy.context(lm=lm):
        ...     pred = IterativeRAG(index, max_turns=1, n_queries=1, k=2)(question="What is the capital of Italy?")
        >>> pred.answer, [e["query"] for e in pred.trace if e["step"] == "search"][:1]
        ('Rome', ['capital of Italy'])
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
        n_queries: int = 5,
        protect: int = 2,
        lam: float = 0.4,
        retries: int = 1,
        answer_lm: Any = None,
    ) -> None:
        super().__init__(index, lam=lam, retries=retries, answer_lm=answer_lm)
        self.protect = check_positive_int(protect, "protect", minimum=0)
        self.max_turns = check_positive_int(max_turns, "max_turns")
        self.k = check_positive_int(k, "k")
        self.n_queries = check_positive_int(n_queries, "n_queries")
        self.fallback, self.delete, self.dedup = bool(fallback), bool(delete), bool(dedup)
        self.contextualize, self.sufficiency, self.rewrite = bool(contextualize), bool(sufficiency), bool(rewrite)
        self.rewriter = step_predictor(RewriteQuery, "rewrite")
        self.contextualizer = step_predictor(Contextualize, "contextualize")
        self.deleter = step_predictor(SelectDeletions, "delete")
        self.assess = step_predictor(AssessSufficiency, "sufficiency")

    def steps(self) -> dict[str, dspy.Predict]:
        return {"rewrite": self.rewriter, "contextualize": self.contextualizer, "delete": self.deleter,
                "sufficiency": self.assess, **super().steps()}

    def max_lm_calls(self) -> int:
        per_turn = int(self.rewrite) + int(self.contextualize) + int(self.delete) + int(self.sufficiency)
        return self.max_turns * per_turn + 1

    def _run(self, question: str, trace: Trace) -> RunResult:
        context: list[Chunk] = []
        seen: set[str] = set()
        notes, missing = "", ""
        queries: list[str] = []
        for turn in range(1, self.max_turns + 1):
            query = self._next_query(question, context, notes, missing, queries, turn, trace)
            if query is None:
                trace.add("stop", turn=turn, reason="no new query")
                break
            new = self._cast(question, query, turn, seen, context, queries, trace)
            context.extend(new)
            notes = self._update_notes(question, notes, new, turn, trace)
            if self.delete and len(context) > 1:
                context = self._chunk_delete(question, context, turn, trace)
            if self.sufficiency and turn < self.max_turns:
                sufficient, missing = self._assess(question, format_context(context, notes)[0], turn, trace)
                if sufficient:
                    break
        else:
            trace.add("stop", turn=self.max_turns, reason="max_turns")
        answer, evidence = self._answer(question, context, trace, notes=notes if self.contextualize else "")
        return RunResult(answer=answer, evidence=evidence, context=context, notes=notes)

    def _update_notes(self, question: str, notes: str, new: list[Chunk], turn: int, trace: Trace) -> str:
        """Contextualize: fold the newly retrieved chunks into the notes (unchanged when off or nothing new)."""
        if not (self.contextualize and new):
            return notes
        out = run_contextualize(self.contextualizer, question, notes, new, trace=trace, retries=self.retries)
        trace.add("notes", turn=turn, added=len(out.added), repeated=len(out.repeated), chars=len(out.notes))
        return out.notes

    def _assess(self, question: str, view: str, turn: int, trace: Trace) -> tuple[bool, str]:
        """AssessSufficiency on ``view``; returns (stop, what is missing), both traced."""
        verdict = run_sufficiency(self.assess, question, view, trace=trace, retries=self.retries)
        trace.add("sufficiency", turn=turn, verdict=verdict.verdict,
                  confidence=verdict.confidence, missing=verdict.missing)
        if verdict.verdict == "Sufficient":
            trace.add("stop", turn=turn, reason="sufficient")
            return True, verdict.missing
        return False, verdict.missing

    def _next_query(
        self, question: str, context: list[Chunk], notes: str, missing: str,
        queries: list[str], turn: int, trace: Trace,
    ) -> str | None:
        """The next chunk_search query: rewritten when enabled, else the question (first turn only
        when dedup is off, since repeating it would return the same chunks)."""
        if not self.rewrite:
            return question if (turn == 1 or self.dedup) else None
        shown = format_context(context, notes)[0]
        if missing:
            shown = f"{shown}\n\nStill missing: {missing}" if shown else f"Still missing: {missing}"
        pred = run_rewrite(self.rewriter, question, shown, queries, n=self.n_queries, trace=trace, retries=self.retries)
        trace.add("rewrite", turn=turn, candidates=[{"query": q.query, "probability": q.probability} for q in pred.queries],
                  chosen=pred.best)
        if pred.best:
            return pred.best
        # The rewriter failed or only repeated itself: the question itself is the safe query
        # on turn 1; later turns stop rather than loop on the same search.
        return question if turn == 1 else None

    def _cast(
        self, question: str, query: str, turn: int, seen: set[str],
        context: list[Chunk], queries: list[str], trace: Trace,
    ) -> list[Chunk]:
        """chunk_search (plus the turn-1 fallback search); returns chunks new to the context."""
        in_context = {c.id for c in context}
        searches = [(query, False)]
        if turn == 1 and self.fallback and query.strip().casefold() != question.casefold():
            searches.append((question, True))
        new: list[Chunk] = []
        for q, is_fallback in searches:
            hits = self._search(q, trace, k=self.k, turn=turn, exclude=seen if self.dedup else (), fallback=is_fallback)
            queries.append(q)
            for hit in hits:
                if hit.id not in in_context:
                    new.append(hit)
                    in_context.add(hit.id)
                seen.add(hit.id)
        return new

    def _protected(self, question: str, context: list[Chunk], trace: Trace) -> set[str]:
        """Chunks the evidence signals rank highest, which ``chunk_delete`` may not remove: the
        best hit of every search so far, and the ``protect`` chunks closest to the question."""
        if not self.protect or not context:
            return set()
        ids = [c.id for c in context]
        best_hits = {e["retrieved"][0] for e in trace.of("search") if e.get("retrieved")}
        closest: set[str] = set()
        if hasattr(self.index, "vectors"):  # any ragnet.Index; a bare search backend only protects best hits
            cos = self.index.vectors(ids) @ self.index.embed_query(question)
            closest = {ids[i] for i in np.argsort(-cos, kind="stable")[: self.protect].tolist()}
        return (best_hits | closest) & set(ids)

    def _chunk_delete(self, question: str, context: list[Chunk], turn: int, trace: Trace) -> list[Chunk]:
        protected = self._protected(question, context, trace)
        pred = run_delete(self.deleter, question, context, trace=trace, protected=protected, keep_at_least=1,
                          retries=self.retries)
        doomed = set(pred.delete_ids) & {c.id for c in context}
        trace.add("delete", turn=turn, deleted=[c.id for c in context if c.id in doomed],
                  protected=sorted(protected))
        return [c for c in context if c.id not in doomed]
