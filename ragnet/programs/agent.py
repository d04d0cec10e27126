"""The pieces of an agent's search turns, shared by IterativeRAG, CombinedRAG and ReflectiveRAG.

* :func:`rewrite_query`: RewriteQuery on what the agent has seen plus what is still missing;
  the most probable unseen query, recorded as a ``rewrite`` event. When the rewriter gives no
  new query (it failed, or only repeated or echoed), the best bridge-entity search
  (:func:`ragnet.programs.bridge_search.bridge_search`, no LM) takes its place.
* :func:`assess`: AssessSufficiency on a view of the evidence, recorded as a ``sufficiency`` event.
* :func:`stop` and :data:`STOP_REASONS`: every agent loop ends with exactly one ``stop`` event
  whose ``reason`` says why. Small step LMs almost never say "Sufficient", so besides the verdict
  and the turn cap the loops stop on signals that cost no LM call: a verdict that repeats itself
  (:func:`verdict_unchanged`), a turn whose searches bring nothing new, no query left to search.
* :class:`Gathered` and :class:`FinalPack`: what the agents gathered, each chunk with the best
  calibrated relevance and the best hybrid score any cast gave it, and the one final pack that
  fills an answer ``budget`` from it (CombinedRAG always; IterativeRAG and ReflectiveRAG when
  given a budget), so every agent can answer over the same dense, reader-sized context the
  one-shot does.
* :class:`AgentRAG`: the turn loop of IterativeRAG and CombinedRAG. Each turn: next query →
  ``chunk_search`` cast (with the turn-1 fallback search and de-duplication) → gather → notes →
  prune → sufficiency. The two programs differ only in three hooks: what the rewrite is shown,
  whether the context is pruned, and what the sufficiency step sees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import dspy
import numpy as np

from ragnet.core.calibrate import relevance
from ragnet.corpus.types import Chunk
from ragnet.programs.base import RAGProgram
from ragnet.programs.bridge_search import bridge_search
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.options import LMSteps, Loop, Pack, Search, check_option
from ragnet.programs.packing import answer_notes, pack
from ragnet.programs.sentence_packing import pack_sentences, sentence_view
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, ContextualizeStep, NextQueryStep, RewriteStep, SufficiencyStep, format_context
from ragnet.signatures.formatting import quote


def rewrite_step(form: str, *, retries: int, enabled: bool = True) -> RewriteStep | NextQueryStep:
    """The rewrite step of ``form`` (``Loop.query_form``, one of
    :data:`ragnet.programs.options.QUERY_FORMS`); either is named ``rewrite``."""
    return (NextQueryStep if form == "one" else RewriteStep)(retries=retries, enabled=enabled)


def rewrite_query(
    rewrite: RewriteStep | NextQueryStep, question: str, context: list[Chunk], notes: str, missing: str,
    queries: list[str], turn: int, trace: Trace, *, n: int, index: ProgramIndex | None = None, bridge: bool = False,
    shown: list[Chunk] | None = None,
) -> str | None:
    """The next search query from RewriteQuery, shown ``context`` (or ``shown``, what the step may
    read of it: :meth:`FinalPack._step_view`) + ``notes`` + what is missing.

    When the rewriter gives no new query (it failed, or every query repeated or echoed an
    earlier one), ``bridge`` searches the best bridge entity of ``context`` instead
    (:func:`ragnet.programs.bridge_search.bridge_search`); failing that, turn 1 searches the
    question itself and later turns return None (the caller stops rather than loop on the same
    search). The ``rewrite`` event records the query taken and its ``source``: ``"lm"``,
    ``"bridge"`` or ``"question"``.
    """
    text = format_context(context if shown is None else shown, notes)[0]
    if missing:
        # the sufficiency step's words, which may copy a marker from a document: quoted like the evidence
        text = f"{text}\n\nStill missing: {quote(missing)}" if text else f"Still missing: {quote(missing)}"
    pred = rewrite(question=question, context=text, previous_queries=queries, n=n)
    query, source = pred.best, "lm"
    if not query and bridge:
        query, source = bridge_search(index, question, context, queries), "bridge"
    if not query and turn == 1:
        query, source = question, "question"
    trace.add("rewrite", turn=turn, candidates=[{"query": q.query, "probability": q.probability} for q in pred.queries],
              chosen=pred.best, query=query, source=source if query else None)
    return query or None


def assess(sufficiency: SufficiencyStep, question: str, view: str, turn: int, trace: Trace) -> tuple[dspy.Prediction, dict]:
    """AssessSufficiency on ``view``; returns the verdict and its ``sufficiency`` event (callers may
    add to it). The caller decides whether the loop stops (:func:`stop`)."""
    verdict = sufficiency(question=question, context=view)
    event = trace.add("sufficiency", turn=turn, verdict=verdict.verdict,
                      confidence=verdict.confidence, missing=verdict.missing)
    return verdict, event


#: Why an agent's loop stopped: the ``reason`` of the one ``stop`` event every agent run records.
STOP_REASONS = {
    "sufficient": "the sufficiency step said the evidence answers the question",
    "verdict_unchanged": "the sufficiency step said Refine with the same missing fact as on the turn before, "
                         "though a turn of new evidence came in between: it is not reading the evidence, and "
                         "its verdict would only repeat (a small step LM's constant Refine)",
    "no_query": "no new query: the rewrite gave none and no bridge entity is left to search",
    "no_new_evidence": "the turn's searches returned no chunk the agent had not gathered",
    "converged": "ReflectiveRAG: its evidence set stopped changing (delta < tau)",
    "max_turns": "the turn budget is spent (Loop.max_turns; ReflectiveRAG: Reflection.max_reflections)",
}


def stop(trace: Trace, turn: int, reason: str, **data: Any) -> None:
    """Record why the loop stopped: a ``stop`` event with ``reason``, one of :data:`STOP_REASONS`."""
    if reason not in STOP_REASONS:
        raise ValueError(f"unknown stop reason {reason!r}; one of {', '.join(STOP_REASONS)}")
    trace.add("stop", turn=turn, reason=reason, **data)


def verdict_unchanged(previous: dspy.Prediction | None, verdict: dspy.Prediction) -> bool:
    """Whether ``verdict`` repeats ``previous``: both real answers of the LM (not the step's
    fallback after a failure, which says nothing), both "Refine", naming the same missing fact
    (compared without case, spacing or end punctuation; an empty one repeats an empty one).

    Example:
        >>> import dspy
        >>> refine = lambda missing: dspy.Prediction(verdict="Refine", missing=missing, fallback=False)
        >>> verdict_unchanged(refine("the birth year"), refine("The birth  year."))
        True
        >>> verdict_unchanged(refine("the birth year"), refine("the director")), verdict_unchanged(None, refine(""))
        (False, False)
    """
    def key(pred: dspy.Prediction) -> str | None:
        if getattr(pred, "fallback", False) or pred.verdict != "Refine":
            return None
        return " ".join(str(pred.missing or "").casefold().split()).strip(" .;:!?")

    return previous is not None and key(previous) is not None and key(previous) == key(verdict)


@dataclass
class Gathered:
    """The chunks an agent gathered, in arrival order, each with the best calibrated relevance and
    the best hybrid score any of its casts gave it (what :class:`FinalPack` ranks by)."""

    context: list[Chunk] = field(default_factory=list)
    relevance: dict[str, float] = field(default_factory=dict)  # id -> best calibrated relevance of any cast
    hybrid: dict[str, float] = field(default_factory=dict)  # id -> best hybrid score of any cast (its own query's)

    def take(self, new: list[Chunk], searches: list[dict], transform: str, temperature: float) -> None:
        """Take in ``new`` chunks with per-cast calibrated relevance (``searches``: the ``search``
        events that returned them): each cast's scores are calibrated against that cast's best hit,
        and a chunk keeps the best relevance any cast gave it, so casts of different queries compare.
        Its best raw hybrid score is kept too (for sentence selection, :meth:`FinalPack._ranked_for_pack`)."""
        self.context.extend(new)
        by_id = {c.id: c for c in self.context}
        for event in searches:
            hits = [by_id[cid] for cid in event["retrieved"] if cid in by_id]
            if not hits:
                continue
            rel = relevance(np.array([h.score for h in hits]), transform, temperature)
            for hit, r in zip(hits, rel.tolist()):
                if r > self.relevance.get(hit.id, -np.inf):
                    self.relevance[hit.id] = r
                if hit.score > self.hybrid.get(hit.id, -np.inf):
                    self.hybrid[hit.id] = float(hit.score)


@dataclass
class Turns(Gathered):
    """What one question's turns gathered. Per call, never on the program: ``dspy.Evaluate``
    runs one program from several threads."""

    seen: set[str] = field(default_factory=set)  # every id a search returned (de-duplication)
    queries: list[str] = field(default_factory=list)  # every query searched
    notes: str = ""
    missing: str = ""  # the last verdict's "still missing", for the next rewrite


class FinalPack:
    """The agents' budgeted final pack (a mixin of :class:`AgentRAG` and ReflectiveRAG): the
    gathered chunks, best first, fill ``pack.budget`` tokens of answer prompt, as whole chunks by
    the knapsack or, with ``pack.sentences``, their best sentences
    (``ragnet.programs.sentence_packing``, what ``OneShotRAG(pack=Pack(sentences=True))`` does);
    the notes take at most ``pack.notes_share`` of it. The program holds its :class:`Pack` as
    ``pack`` (its budget None: no pack, the answer reads everything).
    """

    pack: Pack

    @property
    def budget(self) -> int | None:
        """The answer prompt's token budget (its pack's); None: the answer reads everything kept."""
        return self.pack.budget

    def _ranked_for_pack(self, state: Gathered) -> list[Chunk]:
        """The gathered chunks best first, scored for the final pack. The knapsack of whole chunks takes the
        calibrated relevance. Sentence selection takes the best hybrid score any cast gave the
        chunk: its value model was calibrated on hybrid scores, and with them the pack keeps all the
        gold for more questions than with calibrated relevance (docs/design.md#agent-loops)."""
        scores = state.hybrid if self.pack.sentences else state.relevance
        return [c.with_scores(score=scores[c.id]) for c in sorted(state.context, key=lambda c: -scores[c.id])]

    def _pack_final(self, question: str, candidates: list[Chunk], notes: str, trace: Trace) -> tuple[list[Chunk], str]:
        """Fill the budget's tokens of answer prompt from ``candidates`` (best first, scored by
        :meth:`_ranked_for_pack`): the notes capped at ``notes_share`` of the budget, then whole
        chunks by the knapsack or, with ``sentences``, their best sentences. Returns the context
        and the notes the answer prompt shows."""
        shown_notes = self._answer_notes(notes, trace)
        budget = self._answer_budget(question, self.budget, notes=shown_notes)
        if self.pack.sentences:
            result = pack_sentences(candidates, question, budget, self.index)
            trace.add("crop", kind="sentences",
                      cropped=[c for c in result.cropped if c["tokens_after"] < c["tokens_before"]])
            trace.add("select", kept=[c.id for c in result.chunks], candidates=result.candidates,
                      tokens=result.prompt_tokens, budget=self.budget, method="sentences",
                      sentences=[{"id": c["id"], "kept": c["kept"], "of": c["sentences"]} for c in result.cropped])
        else:
            # Scores are already calibrated per cast, so the knapsack takes them as they are.
            result = pack(candidates, [c.score for c in candidates], budget, transform="raw", method=self.pack.method)
            trace.add("select", kept=[c.id for c in result.chunks], candidates=result.candidates,
                      tokens=result.prompt_tokens, budget=self.budget, method=self.pack.method)
        return result.chunks, budget.notes

    def _answer_notes(self, notes: str, trace: Trace) -> str:
        """The notes the answer prompt shows: capped at ``notes_share`` of the budget."""
        return answer_notes(notes, int(self.pack.notes_share * self.budget), trace)

    def _step_view(self, question: str, chunks: list[Chunk]) -> list[Chunk]:
        """What a loop step's LM call reads of ``chunks``: all of them, or their best sentences
        within ``loop.step_tokens`` (:func:`ragnet.programs.sentence_packing.sentence_view`)."""
        return sentence_view(chunks, question, self.index, self.loop.step_tokens)


class AgentRAG(FinalPack, RAGProgram):
    """Base of the turn-based agents (IterativeRAG, CombinedRAG); see the module docstring.

    Args: as in :class:`ragnet.programs.IterativeRAG` and :class:`ragnet.programs.CombinedRAG`:
    the final pack's ``budget`` and ``pack``, the ``search``, the turn ``loop``, which LM steps run
    (``lm_steps``: ``contextualize``, ``rewrite``, ``sufficiency``; IterativeRAG's ``delete``),
    ``retries`` and the ``answer`` step.

    The answer step shows the question per question ("auto", as ``OneShotRAG`` does) where it
    leaves the place open: with a budget the agents answer over the same packed context the
    one-shot does, and without one they read a long context.
    """

    default_question_at = "auto"
    #: The turn cap where the loop leaves it open.
    default_max_turns: ClassVar[int] = 5
    #: The answer budget where neither ``budget=`` nor the pack gives one (None: no final pack).
    default_budget: ClassVar[int | None] = None

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
        super().__init__(index, search=search, retries=retries, answer=answer)
        self.pack = check_option(pack, Pack, "pack").at(budget, self.default_budget)
        self.loop = self._hold("loop", loop, Loop, max_turns=self.default_max_turns)
        self.lm_steps = self._hold("lm_steps", lm_steps, LMSteps, contextualize=True)
        self.rewrite = rewrite_step(self.loop.query_form, retries=self.retries, enabled=self.lm_steps.rewrite)
        self.contextualize = ContextualizeStep(retries=self.retries, enabled=self.lm_steps.contextualize)
        self.sufficiency = SufficiencyStep(retries=self.retries, enabled=self.lm_steps.sufficiency)

    def _turn_calls(self) -> int:
        """LM calls one turn can make with the current switches."""
        return sum(step.enabled for name, step in self.steps().items() if name != "answer")

    def max_lm_calls(self) -> int:
        return self.loop.max_turns * self._turn_calls() + 1

    # -- the loop ---------------------------------------------------------------------------
    def _turns(self, question: str, trace: Trace) -> Turns:
        """Run the turns; they end with one ``stop`` event (:data:`STOP_REASONS`)."""
        state, previous = Turns(), None
        for turn in range(1, self.loop.max_turns + 1):
            query = self._next_query(question, self._shown(state), state, turn, trace)
            if query is None:
                return self._stopped(state, trace, turn, "no_query")
            n_before = len(trace.of("search"))
            new = self._cast(question, query, turn, state, trace)
            if not new:  # nothing to take in, note, prune or judge: the next turn would see what this one saw
                return self._stopped(state, trace, turn, "no_new_evidence")
            state.take(new, trace.of("search")[n_before:], self.pack.transform, self.pack.temperature)
            state.notes = self._update_notes(question, state.notes, new, turn, trace)
            self._prune(question, state, turn, trace)
            # The last turn's verdict could change nothing, so it is not asked for.
            if self.sufficiency.enabled and turn < self.loop.max_turns:
                view = format_context(self._step_view(question, self._view(state, new)), state.notes)[0]
                verdict, _ = assess(self.sufficiency, question, view, turn, trace)
                state.missing = verdict.missing
                if verdict.verdict == "Sufficient":
                    return self._stopped(state, trace, turn, "sufficient")
                if self.loop.stop_on_repeat and verdict_unchanged(previous, verdict):
                    return self._stopped(state, trace, turn, "verdict_unchanged")
                previous = verdict
        return self._stopped(state, trace, self.loop.max_turns, "max_turns")

    @staticmethod
    def _stopped(state: Turns, trace: Trace, turn: int, reason: str) -> Turns:
        stop(trace, turn, reason)
        return state

    # -- the hooks the two agents differ in ---------------------------------------------------
    def _shown(self, state: Turns) -> list[Chunk]:
        """The chunks the rewrite step is shown (with the notes)."""
        return state.context

    def _prune(self, question: str, state: Turns, turn: int, trace: Trace) -> None:
        """Shorten the working context after a turn (nothing by default)."""

    def _view(self, state: Turns, new: list[Chunk]) -> list[Chunk]:
        """The chunks the sufficiency step is shown (with the notes)."""
        return state.context

    # -- the shared turn pieces ------------------------------------------------------------------
    def _next_query(self, question: str, shown: list[Chunk], state: Turns, turn: int, trace: Trace) -> str | None:
        """The next chunk_search query: rewritten when enabled (with the bridge search as its safe
        default); without the rewrite step, the question on turn 1 and then the bridge search
        when ``bridge`` is on (no LM call), else the question again when dedup is on."""
        if self.rewrite.enabled:
            return rewrite_query(self.rewrite, question, shown, state.notes, state.missing, state.queries, turn,
                                 trace, n=self.loop.n_queries, index=self.index, bridge=self.loop.bridge,
                                 shown=self._step_view(question, shown))
        if turn == 1:
            return question
        if self.loop.bridge:
            query = bridge_search(self.index, question, shown, state.queries)
            trace.add("rewrite", turn=turn, candidates=[], chosen=None, query=query, source="bridge" if query else None)
            return query
        return question if self.loop.dedup else None

    def _cast(self, question: str, query: str, turn: int, state: Turns, trace: Trace) -> list[Chunk]:
        """chunk_search (plus the turn-1 fallback search); returns the chunks new to the context."""
        in_context = {c.id for c in state.context}
        searches = [(query, False)]
        if turn == 1 and self.loop.fallback and query.strip().casefold() != question.casefold():
            searches.append((question, True))
        new: list[Chunk] = []
        for q, is_fallback in searches:
            hits = self._search(q, trace, k=self.loop.k, turn=turn, exclude=state.seen if self.loop.dedup else (),
                                fallback=is_fallback)
            state.queries.append(q)
            for hit in hits:
                if hit.id not in in_context:
                    new.append(hit)
                    in_context.add(hit.id)
                state.seen.add(hit.id)
        return new

    def _update_notes(self, question: str, notes: str, new: list[Chunk], turn: int, trace: Trace) -> str:
        """Contextualize: fold the newly retrieved chunks into the notes (unchanged when off or nothing new)."""
        if not (self.contextualize.enabled and new):
            return notes
        out = self.contextualize(question=question, notes=notes, new_chunks=self._step_view(question, new))
        trace.add("notes", turn=turn, added=len(out.added), repeated=len(out.repeated), chars=len(out.notes))
        return out.notes
