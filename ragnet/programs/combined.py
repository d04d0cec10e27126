"""CombinedRAG — "big net, many casts", designed around the two ways the naive combination fails.

The study combined Top-Kmax with the iterative agent and lost accuracy for two reasons:

* **chunk_delete dropped golden chunks** once the working context held 30+ chunks (listwise
  LLM deletion over a long list is unreliable, worst on small models);
* **long contexts cause retrieval laziness**: the longer the context, the less often the agent
  searches again (docs/results/README.md, "Retrieval laziness").

CombinedRAG removes both causes instead of tuning around them:

1. **Small casts.** Each turn searches ``k`` chunks (plus the question itself on turn 1 — the
   fallback search), with de-duplication, like IterativeRAG.
2. **A short working view.** The agent's steps (Contextualize, AssessSufficiency, RewriteQuery)
   see only the notes cache plus the newest cast, never the growing pile, so the context that
   drives "search again?" stays a few hundred tokens long however many turns run.
3. **No LLM deletion at all.** Everything retrieved stays in a candidate pool with a calibrated
   relevance: each cast's scores are calibrated against that cast's best hit, and a chunk keeps
   the best relevance any cast gave it. Nothing golden can be deleted by an LM.
4. **One budgeted final pack.** The metadata rules drop contradicting chunks, and the knapsack
   fills the answer budget from the pool — the "bigger net" applied once, at the end, where the
   answer step (not the search agent) reads the long context.
"""

from __future__ import annotations

from typing import Any

from ragnet.corpus.types import Chunk
from ragnet.programs.agent import DEFAULT_NOTES_SHARE, AgentRAG, Turns
from ragnet.programs.oneshot import DEFAULT_METHOD, DEFAULT_TEMPERATURE, DEFAULT_TRANSFORM, apply_metadata_rules
from ragnet.programs.base import RunResult, check_positive_int
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep


class CombinedRAG(AgentRAG):
    """Iterative small casts feeding one budgeted Top-Kmax pack (see module docstring).

    Args:
        index: a ``ragnet.Index``.
        budget: total tokens of the answer prompt.
        max_turns: cap on casts (3: the pool, not the turns, carries recall).
        k, fallback, dedup, contextualize, sufficiency, rewrite, bridge, stop_on_repeat, n_queries, query_form: as in
            IterativeRAG.
        rules: apply the metadata rule filter to the pool before packing.
        sentences: pack the pool's best sentences instead of whole chunks
            (``ragnet.programs.sentence_packing``), as ``OneShotRAG(sentences=True)`` does.
        notes_share: the largest share of ``budget`` the notes may take in the answer prompt
            (whole lines, earliest first; the rest is recorded in the trace as ``notes_cap``).
            At a reader-sized budget uncapped notes starve the evidence (docs/design.md#agent-loops).
            0 leaves the notes out of the answer prompt; 1 never cuts them.
        transform, temperature, method: relevance calibration and knapsack method.
        lam, retries: as in IterativeRAG.
        answer: the answer step; where it leaves the question's place open, CombinedRAG shows it
            "auto", as ``OneShotRAG`` does (as every agent does, ``AgentRAG``).

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> lm = DummyLM([{"queries": [{"query": "Italy capital city", "probability": 0.9}]},  # rewrite
        ...               {"new_notes": "- Rome is the capital of Italy."},                    # contextualize
        ...               {"answer": "Rome", "evidence_ids": ["c1"]}])                          # answer
        >>> with dspy.context(lm=lm):
        ...     pred = CombinedRAG(index, budget=1000, max_turns=1, n_queries=1, k=2)(question="What is the capital of Italy?")
        >>> pred.answer, "rome#0" in pred.context
        ('Rome', True)
    """

    def __init__(
        self,
        index: Any,
        budget: int = 4000,
        *,
        max_turns: int = 3,
        k: int = 5,
        fallback: bool = True,
        dedup: bool = True,
        contextualize: bool = True,
        sufficiency: bool = True,
        rewrite: bool = True,
        bridge: bool = True,
        stop_on_repeat: bool = True,
        n_queries: int = 5,
        query_form: str = "sampled",
        rules: bool = True,
        sentences: bool = False,
        notes_share: float = DEFAULT_NOTES_SHARE,
        transform: str = DEFAULT_TRANSFORM,
        temperature: float = DEFAULT_TEMPERATURE,
        method: str = DEFAULT_METHOD,
        lam: float = 0.4,
        retries: int = 1,
        answer: AnswerStep | None = None,
    ) -> None:
        super().__init__(
            index, max_turns=max_turns, k=k, fallback=fallback, dedup=dedup,
            contextualize=contextualize, sufficiency=sufficiency, rewrite=rewrite, bridge=bridge,
            stop_on_repeat=stop_on_repeat, n_queries=n_queries, query_form=query_form,
            lam=lam, retries=retries, answer=answer, budget=check_positive_int(budget, "budget"), sentences=sentences,
            notes_share=notes_share, transform=transform, temperature=temperature, method=method,
        )
        self.rules = bool(rules)

    def _run(self, question: str, trace: Trace) -> RunResult:
        state = self._turns(question, trace)
        candidates = self._ranked_for_pack(state)
        if self.rules:
            candidates = apply_metadata_rules(self.index, question, candidates, trace, add=False, lam=self.lam)
        chunks, shown_notes = self._pack_final(question, candidates, state.notes, trace)
        answer, evidence = self._answer(question, chunks, trace, notes=shown_notes)
        return RunResult(answer=answer, evidence=evidence, context=chunks, notes=state.notes)

    # -- AgentRAG's hooks: a short working view, a pool instead of LM deletion -------------------
    def _shown(self, state: Turns) -> list[Chunk]:
        return []  # the rewrite sees the notes only, never the growing pool

    def _view(self, state: Turns, new: list[Chunk]) -> list[Chunk]:
        return new  # the sufficiency step sees the notes plus the newest cast
