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

from ragnet.corpus.types import Chunk
from ragnet.programs.agent import AgentRAG, Turns
from ragnet.programs.base import RunResult
from ragnet.programs.stages import DEFAULT_BUDGET, apply_metadata_rules
from ragnet.programs.trace import Trace


class CombinedRAG(AgentRAG):
    """Iterative small casts feeding one budgeted Top-Kmax pack (see module docstring).

    Args:
        index: a ``ragnet.Index``.
        budget: total tokens of the answer prompt, a shortcut for ``pack``'s budget (4,000 when
            neither gives one).
        pack: the final pack (:class:`ragnet.programs.options.Pack`): whole chunks by their best
            calibrated relevance (``transform``, ``temperature``) and the knapsack ``method``, or
            with ``sentences`` the pool's best sentences (``ragnet.programs.sentence_packing``),
            as ``OneShotRAG`` packs them. ``notes_share`` is the largest share of the budget the
            notes may take in the answer prompt (whole lines, earliest first; the rest is recorded
            in the trace as ``notes_cap``): at a reader-sized budget uncapped notes starve the
            evidence (docs/design.md#agent-loops). 0 leaves the notes out; 1 never cuts them.
        search: the searches' ``bm25_weight``, and ``rules``: the metadata rule filter on the pool
            before packing (:class:`ragnet.programs.options.Search`; it never adds chunks here).
        loop: the casts (:class:`ragnet.programs.options.Loop`), as in IterativeRAG; ``max_turns``
            left open is 3 (the pool, not the turns, carries recall). It has no delete step to guard.
        lm_steps: ``contextualize``, ``rewrite`` and ``sufficiency``, as in IterativeRAG
            (:class:`ragnet.programs.options.LMSteps`).
        retries: as in IterativeRAG.
        answer: the answer step; where it leaves the question's place open, CombinedRAG shows it
            "auto", as ``OneShotRAG`` does (as every agent does, ``AgentRAG``).

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> from ragnet.programs.options import Loop
        >>> lm = DummyLM([{"queries": [{"query": "Italy capital city", "probability": 0.9}]},  # rewrite
        ...               {"new_notes": "- Rome is the capital of Italy."},                    # contextualize
        ...               {"answer": "Rome", "evidence_ids": ["c1"]}])                          # answer
        >>> with dspy.context(lm=lm):
        ...     pred = CombinedRAG(index, budget=1000, loop=Loop(max_turns=1, n_queries=1, k=2))(
        ...         question="What is the capital of Italy?")
        >>> pred.answer, "rome#0" in pred.context
        ('Rome', True)
    """

    default_max_turns = 3
    default_budget = DEFAULT_BUDGET
    reads = {"search": ("bm25_weight", "rules"),
             "loop": ("max_turns", "k", "n_queries", "query_form", "fallback", "dedup", "bridge", "stop_on_repeat",
                      "step_tokens"),
             "lm_steps": ("contextualize", "rewrite", "sufficiency")}

    def _run(self, question: str, trace: Trace) -> RunResult:
        state = self._turns(question, trace)
        candidates = self._ranked_for_pack(state)
        if self.search.rules:
            candidates = apply_metadata_rules(self.index, question, candidates, trace, add=False,
                                              bm25_weight=self.search.bm25_weight)
        chunks, shown_notes = self._pack_final(question, candidates, state.notes, trace)
        answer, evidence = self._answer(question, chunks, trace, notes=shown_notes)
        return RunResult(answer=answer, evidence=evidence, context=chunks, notes=state.notes)

    # -- AgentRAG's hooks: a short working view, a pool instead of LM deletion -------------------
    def _shown(self, state: Turns) -> list[Chunk]:
        return []  # the rewrite sees the notes only, never the growing pool

    def _view(self, state: Turns, new: list[Chunk]) -> list[Chunk]:
        return new  # the sufficiency step sees the notes plus the newest cast
