"""OneShotRAG — "cast a bigger net": a large candidate pool, metadata rules, optional LLM
filter and crop, then a token-budget knapsack (Token-Constrained Top-Kmax).

Order matters (DESIGN.md, study 1): filtering and cropping run *before* the budget is filled,
so the budget is spent on evidence rather than on contradicting or padded chunks.

Defaults are the study's best reported setting, Top-Kmax with the rule-based Chunk Filter. The
LLM filter and crop are switches, off by default: each costs LM calls per candidate (crop: one
per chunk), minutes per question on a small local model, and the study's best setting did not
need them.

Why a 4,000-token default budget: the study's example is 32k, for strong hosted models. Small
local readers are slow on long prompts and lose the answer in them, while 4k already holds the
gold evidence of most questions (docs/design.md#selection-and-budgets).
"""

from __future__ import annotations

from ragnet._text import is_blank
from ragnet.core.document_focus import focus_document
from ragnet.core.page_listings import is_page_listing
from ragnet.core.support import answer_key, states_answer
from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.programs.base import RAGProgram, RunResult
from ragnet.programs.bridge_search import bridge_searches
from ragnet.programs.citations import shown_sentences
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.options import Hops, LMSteps, Pack, Search, check_option, check_positive_int
from ragnet.programs.packing import PromptBudget, answer_notes, pack
from ragnet.programs.sentence_packing import pack_sentences
from ragnet.programs.stages import DEFAULT_BUDGET, HOP_WEIGHT, apply_metadata_rules
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, ContextualizeStep, CropStep, FilterStep, recording

#: The candidates its search retrieves when its ``Search`` leaves the pool open.
DEFAULT_POOL = 100


class OneShotRAG(RAGProgram):
    """One-shot retrieval that fills a token budget with the most relevant evidence.

    Args:
        index: a ``ragnet.Index``.
        budget: total tokens of the answer prompt (instructions + question + context): a
            shortcut for ``pack``'s budget; None takes the pack's, else 4,000.
        pack: how the evidence fills the budget (:class:`ragnet.programs.options.Pack`): whole
            chunks by calibrated relevance and ``method``, or with ``sentences`` the candidates'
            best sentences (``ragnet.programs.sentence_packing``; no LM call), a short reader
            prompt that still holds the evidence of many chunks. ``notes_share`` caps the notes.
        search: the candidates (:class:`ragnet.programs.options.Search`): the ``pool`` best
            hybrid hits (100 when left open) at ``bm25_weight``, then the metadata ``rules``
            (drop contradicting years/places, add up to ``max_add`` matching chunks).
        hops: bridge searches after a first selection (:class:`ragnet.programs.options.Hops`;
            no LM call): for each of the best names the selected evidence gives and the question
            does not (``ragnet.programs.bridge_search.bridge_searches``), ``k`` chunks are searched
            and join the candidates at :data:`HOP_WEIGHT` of their score, so the final pack can
            hold the second document of a multi-hop question without displacing the first.
            ``Hops()``: none; the ``hops`` preset: 3.
        lm_steps: the optional LM steps (:class:`ragnet.programs.options.LMSteps`), all off:
            ``filter`` (FilterChunks on the survivors of the rules), ``crop`` (CropChunk on the
            candidates in relevance order until the budget could be filled, at most ``max_crops``),
            ``contextualize`` (before answering, one call writes down the facts that help answer
            the question from the selected chunks, read whole, best first, at most ``budget``
            tokens of them, and the answer reads those notes above the pack, filled again around
            them; preset ``notes``), ``recheck`` (when no sentence of the context states the
            answer, :func:`ragnet.core.support.states_answer`, yes/no answers aside, ask once
            more from the best sentences of the same candidates at ``recheck_share`` of the
            budget and keep that answer when its context states it; preset ``recheck``).
        retries: as in :class:`ragnet.programs.RAGProgram`.
        answer: the answer step (:class:`ragnet.signatures.AnswerStep`). Where it leaves the
            question's place open, OneShotRAG shows it "auto": a budget fills a long context, and
            a small reader reads the question best right after it, and before it too when it names
            two options (docs/results/README.md). The presets ``oneshot:qlast``, ``oneshot:qfirst``
            and ``oneshot:qboth`` choose another place.

    Example:
        >>> prog = OneShotRAG(index, budget=1000, answer=AnswerStep(question_at="last"))
        >>> [c.id for c in prog.retrieve("What is the capital of Italy?")][:1]   # no LM call with defaults
        ['rome#0']
        >>> OneShotRAG(index, pack=Pack(budget=1000, sentences=True), hops=Hops(3)).budget
        1000
    """

    default_question_at = "auto"
    reads = {"lm_steps": ("filter", "crop", "max_crops", "contextualize", "recheck", "recheck_share")}

    def __init__(
        self,
        index: ProgramIndex,
        budget: int | None = None,
        *,
        pack: Pack = Pack(),
        search: Search = Search(),
        hops: Hops = Hops(),
        lm_steps: LMSteps = LMSteps(),
        retries: int = 1,
        answer: AnswerStep | None = None,
    ) -> None:
        super().__init__(index, search=search, retries=retries, answer=answer)
        self.pack = check_option(pack, Pack, "pack").at(budget, DEFAULT_BUDGET)
        self.search = self.search.fill(pool=DEFAULT_POOL)
        check_positive_int(self.search.pool, "search.pool")
        self.hops = self._hold("hops", hops, Hops)
        self.lm_steps = self._hold("lm_steps", lm_steps, LMSteps, contextualize=False)
        self.filter = FilterStep(retries=self.retries, enabled=self.lm_steps.filter)
        self.crop = CropStep(retries=self.retries, enabled=self.lm_steps.crop)
        self.contextualize = ContextualizeStep(retries=self.retries, enabled=self.lm_steps.contextualize)

    @property
    def budget(self) -> int:
        """The answer prompt's token budget (its pack's)."""
        return self.pack.budget

    # -- retrieval without answering --------------------------------------------------------
    def retrieve(self, question: str, trace: Trace | None = None) -> list[Chunk]:
        """The chunks OneShotRAG would answer from, best first.

        Makes no LM calls unless the ``filter`` or ``crop`` step is on.
        """
        if not isinstance(question, str) or is_blank(question):
            raise InputError("must be a non-empty string", argument="question")
        trace = trace if trace is not None else Trace()
        candidates, budget = self._candidates(question, trace)
        return self._fill(question, candidates, budget, trace)

    def _candidates(self, question: str, trace: Trace) -> tuple[list[Chunk], PromptBudget]:
        """Search, rules, the LLM filter, the bridge hops and the crop: the ranked candidates the
        pack is filled from, and the answer prompt's budget (no notes)."""
        candidates = self._search(question.strip(), trace, k=min(self.search.pool, len(self.index)))
        candidates = self._apply_rules(question, candidates, trace)
        if self.filter.enabled:
            candidates = self._apply_llm_filter(question, candidates, trace)
        focus = focus_document([c.doc_id for c in candidates]) if self.search.focus else None
        if focus is not None:
            candidates = self._focus(focus, candidates, trace)
        budget = self._answer_budget(question, self.budget)
        if self.hops.searches:
            hops = self._bridge_hops(question, candidates, budget, trace)
            candidates = candidates + (hops if focus is None else self._focus(focus, hops, trace, turn=2))
        if self.crop.enabled:
            candidates = self._apply_crop(question, candidates, budget, trace)
        return candidates, budget

    def _fill(self, question: str, candidates: list[Chunk], budget: PromptBudget, trace: Trace) -> list[Chunk]:
        if self.pack.sentences:
            return self._select_sentences(question, candidates, budget, trace)
        return self._select(candidates, budget, trace)

    def max_lm_calls(self) -> int:
        return (1 + int(self.filter.enabled) + (self.lm_steps.max_crops if self.crop.enabled else 0)
                + int(self.contextualize.enabled) + int(self.lm_steps.recheck))

    def _untraced_pack(self, question: str, candidates: list[Chunk], budget: PromptBudget) -> list[Chunk]:
        """The pack :meth:`_fill` would select, not recorded: what the bridge hops and the notes start from."""
        if self.pack.sentences:
            return pack_sentences(candidates, question, budget, self.index).chunks
        return pack(candidates, [c.score for c in candidates], budget, transform=self.pack.transform,
                    temperature=self.pack.temperature, method=self.pack.method).chunks

    @staticmethod
    def _focus(document: str, candidates: list[Chunk], trace: Trace, turn: int = 1) -> list[Chunk]:
        """The candidates of ``document`` alone, recorded as a ``focus`` event (turn 2: the bridge
        hops' hits)."""
        kept = [c for c in candidates if c.doc_id == document]
        trace.add("focus", turn=turn, document=document, kept=len(kept), dropped=len(candidates) - len(kept))
        return kept

    def _bridge_hops(self, question: str, candidates: list[Chunk], budget: PromptBudget, trace: Trace) -> list[Chunk]:
        """Bridge searches from a first, untraced selection of ``candidates``; their new hits at
        :data:`HOP_WEIGHT` of their score, recorded as ``search`` events (turn 2) and a ``hops`` event.
        With the rules on, a hit that only lists pages is left out as the rules leave it out of the
        first search (the event's ``listings``)."""
        first = self._untraced_pack(question, candidates, budget)
        seen = {c.id for c in candidates}
        queries, added = bridge_searches(self.index, question, first, [question], n=self.hops.searches), []
        listings: list[str] = []
        for query in queries:
            for hit in self._search(query, trace, k=self.hops.k, turn=2, exclude=seen):
                seen.add(hit.id)
                if self.search.rules and is_page_listing(hit.text):
                    listings.append(hit.id)
                    continue
                added.append(hit.with_scores(score=hit.score * HOP_WEIGHT, dense_score=hit.dense_score))
        trace.add("hops", queries=queries, added=[c.id for c in added], listings=listings)
        return added

    def _run(self, question: str, trace: Trace) -> RunResult:
        candidates, budget = self._candidates(question, trace)
        notes = self._notes(question, candidates, budget, trace) if self.contextualize.enabled else ""
        if notes:
            budget = self._answer_budget(question, self.budget, notes)
        selected = self._fill(question, candidates, budget, trace)
        answer, evidence = self._answer(question, selected, trace, notes=notes)
        if self.lm_steps.recheck and answer and not stated_in(answer, selected):
            return self._recheck(question, candidates, notes, trace, RunResult(answer, evidence, selected, notes))
        return RunResult(answer=answer, evidence=evidence, context=selected, notes=notes)

    def _recheck(self, question: str, candidates: list[Chunk], notes: str, trace: Trace,
                 first: RunResult) -> RunResult:
        """The answer from a denser pack (``recheck_share`` of the budget) when its context states
        it, else ``first``; recorded as a ``recheck`` event."""
        dense_budget = max(1, int(self.lm_steps.recheck_share * self.budget))
        try:
            dense = self._fill(question, candidates, self._answer_budget(question, dense_budget, notes), Trace())
        except InputError:  # the smaller budget cannot hold one sentence: nothing denser to ask from
            trace.add("recheck", kept=False, reason="the denser budget holds no sentence")
            return first
        second = Trace()  # the second answer's events join the trace only when it is kept
        with recording(second):
            answer, evidence = self._answer(question, dense, second, notes=notes)
        kept = bool(answer) and stated_in(answer, dense)
        if kept:
            trace.events.extend(second.events)
        trace.add("recheck", first=first.answer, second=answer, kept=kept, context=[c.id for c in dense],
                  budget=dense_budget, lm_errors=[e.get("error") for e in second.errors()])
        return RunResult(answer, evidence, dense, notes) if kept else first

    def _notes(self, question: str, candidates: list[Chunk], budget: PromptBudget, trace: Trace) -> str:
        """The Contextualize step's notes on the chunks a first, untraced pack selects, read whole
        (best first, at most ``budget`` tokens of them), capped at ``notes_share`` of the budget."""
        first = self._untraced_pack(question, candidates, budget)
        whole = {c.id: c for c in candidates}
        read, tokens = [], 0
        for chunk in (whole[c.id] for c in first):
            if read and tokens + chunk.tokens > self.budget:
                break
            read.append(chunk)
            tokens += chunk.tokens
        out = self.contextualize(question=question, notes="", new_chunks=read)
        trace.add("notes", turn=1, read=[c.id for c in read], added=len(out.added), repeated=len(out.repeated),
                  chars=len(out.notes))
        return answer_notes(out.notes, int(self.pack.notes_share * self.budget), trace)

    # -- stages -------------------------------------------------------------------------------
    def _apply_rules(self, question: str, candidates: list[Chunk], trace: Trace) -> list[Chunk]:
        if not self.search.rules:
            return candidates
        return apply_metadata_rules(self.index, question, candidates, trace, max_add=self.search.max_add,
                                    bm25_weight=self.search.bm25_weight)

    def _apply_llm_filter(self, question: str, candidates: list[Chunk], trace: Trace) -> list[Chunk]:
        pred = self.filter(question=question, chunks=candidates)
        keep = set(pred.kept)
        kept = [c for c in candidates if c.id in keep] if not pred.fallback else candidates
        trace.add("filter", kind="llm", kept=[c.id for c in kept], dropped=list(pred.dropped), added=[])
        return kept or candidates  # an LM that drops everything is ignored, not obeyed

    def _apply_crop(self, question: str, candidates: list[Chunk], budget: PromptBudget, trace: Trace) -> list[Chunk]:
        """Crop in relevance order until the cropped chunks alone could fill the budget."""
        out: list[Chunk] = []
        cropped_info = []
        filled = 0
        for i, chunk in enumerate(candidates):
            if i >= self.lm_steps.max_crops or filled >= budget.context_budget:
                out.append(chunk)
                continue
            pred = self.crop(question=question, title=chunk.title, chunk=chunk.text)
            text = str(pred.relevant_text or "").strip() or chunk.text
            tokens = count_tokens(text)
            if tokens < chunk.tokens:
                cropped_info.append({"id": chunk.id, "tokens_before": chunk.tokens, "tokens_after": tokens})
                chunk = chunk.with_text(text, tokens)
            filled += chunk.tokens
            out.append(chunk)
        trace.add("crop", cropped=cropped_info)
        return out

    def _select_sentences(self, question: str, candidates: list[Chunk], budget: PromptBudget,
                          trace: Trace) -> list[Chunk]:
        result = pack_sentences(candidates, question, budget, self.index)
        trace.add("crop", kind="sentences", cropped=[c for c in result.cropped if c["tokens_after"] < c["tokens_before"]])
        trace.add("select", kept=[c.id for c in result.chunks], candidates=result.candidates,
                  tokens=result.prompt_tokens, budget=self.budget, method="sentences",
                  sentences=[{"id": c["id"], "kept": c["kept"], "of": c["sentences"]} for c in result.cropped])
        return result.chunks

    def _select(self, candidates: list[Chunk], budget: PromptBudget, trace: Trace) -> list[Chunk]:
        result = pack(
            candidates, [c.score for c in candidates], budget,
            transform=self.pack.transform, temperature=self.pack.temperature, method=self.pack.method,
        )
        trace.add(
            "select",
            kept=[c.id for c in result.chunks],
            candidates=result.candidates,
            tokens=result.prompt_tokens,
            budget=self.budget,
            method=self.pack.method,
        )
        return result.chunks


def stated_in(answer: str, context: list[Chunk]) -> bool:
    """Whether a sentence the reader saw states ``answer`` (yes/no answers always count as stated:
    they are never words of the context). LM-free.

    Example:
        >>> c = Chunk(id="d#0", doc_id="d", title="T", text="The default is 8 jobs.", tokens=6)
        >>> stated_in("8", [c]), stated_in("16", [c]), stated_in("No", [c])
        (True, False, True)
    """
    if answer_key(answer) in (["yes"], ["no"]):
        return True
    return any(states_answer(answer, sentence) for chunk in context for sentence in shown_sentences(chunk))
