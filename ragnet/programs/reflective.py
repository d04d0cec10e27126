"""ReflectiveRAG — self-reflective retrieval with verbalized sampling, a convergence stop, and
noise removal before answering.

Loop (at most ``reflection.max_reflections`` refinements):

1. AssessSufficiency judges the current document set D_t: *Sufficient* stops, and so does a
   *Refine* that names the same missing fact as the verdict before it (``stop_on_repeat``: a small
   step LM never says Sufficient, and its repeated verdict is not paid for again).
2. *Refine*: RewriteQuery writes ``n_queries`` sub-queries with probabilities (verbalized
   sampling); the most probable unseen one is searched and its top-``k`` unseen chunks join D
   (no unseen chunk left: the loop stops). Once the reflections are used up the loop ends without
   asking (a verdict could change nothing).
3. Convergence: Δ_t = (1 − Sim(D_t, D_{t−1})) + β·|Conf_t − Conf_{t−1}|; stop when Δ_t < τ.
   Sim is the cosine between the mean embeddings of the two sets. The paper writes
   Sim(D_t, D_{t−1}) directly; read literally, a loop that stops changing would never stop, so
   ragnet uses the *change* (1 − Sim), which makes "Δ < τ" mean "nothing new is coming in".
4. Noise removal (α = 5, keep 70%) prunes D before the answer; the redundancy ratio before and
   after is recorded in the trace.
5. The answer context: without a ``budget`` (the paper's design) the answer step reads what noise
   removal kept. With one, that is packed into it by the agents' final pack
   (:class:`ragnet.programs.agent.FinalPack`: whole chunks by the knapsack on each chunk's best
   calibrated relevance, or with ``sentences`` their best sentences), the same dense context
   IterativeRAG and CombinedRAG answer over. The loop's ``stop`` event says why it ended
   (``ragnet.programs.agent.STOP_REASONS``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ragnet.core import noise
from ragnet.corpus.types import Chunk
from ragnet.programs.agent import FinalPack, Gathered, assess, rewrite_query, rewrite_step, stop, verdict_unchanged
from ragnet.programs.base import RAGProgram, RunResult
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.options import Loop, Pack, Reflection, Search, check_option
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, SufficiencyStep, format_context


class ReflectiveRAG(FinalPack, RAGProgram):
    """Self-reflective retrieval (ReflectiveRAG).

    Args:
        index: a ``ragnet.Index``.
        budget: total tokens of the answer prompt, a shortcut for ``pack``'s budget. None (the
            paper's design): the answer step reads every chunk noise removal kept. A number: they
            are packed into it as the agents pack theirs (``ragnet.programs.agent.FinalPack``).
        pack: the final pack (:class:`ragnet.programs.options.Pack`): with ``sentences`` the kept
            chunks' best sentences instead of whole chunks (needs a budget; the
            ``reflective:sentences`` preset).
        search: the searches' ``bm25_weight`` (:class:`ragnet.programs.options.Search`).
        loop: of the agents' turn loop (:class:`ragnet.programs.options.Loop`), ReflectiveRAG reads
            ``k`` (chunks per search), ``n_queries`` (sub-queries sampled per Refine, verbalized
            sampling), ``query_form`` (``"one"``: NextQuery, one query naming what to look up next,
            for small step LMs; preset ``one-query``), ``bridge`` (when a Refine gives no new
            query, search the best bridge entity of the evidence instead,
            ``ragnet.programs.bridge_search.bridge_search``, no LM call) and ``stop_on_repeat``
            (stop when AssessSufficiency says "Refine" with the same missing fact twice running,
            ``ragnet.programs.agent.verdict_unchanged``) and ``step_tokens`` (the most chunk tokens
            its sufficiency and rewrite calls read). Its reflections are capped by
            ``reflection.max_reflections``, not ``max_turns``.
        reflection: the reflections (:class:`ragnet.programs.options.Reflection`): at most
            ``max_reflections`` Refine rounds (each adds one search), the Δ rule's ``beta``
            (weight of the confidence change) and ``tau`` (stop when Δ falls below it), and the
            ``noise_removal`` of the final set (``core.noise.filter`` at temperature ``alpha``,
            keeping the share ``keep``).
        retries, answer: as in :class:`ragnet.programs.RAGProgram` (where the answer step leaves
            the question's place open, it is chosen per question, "auto", as in ``OneShotRAG``).

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}])):
        ...     pred = ReflectiveRAG(index, reflection=Reflection(max_reflections=0))(
        ...         question="What is the capital of Italy?")
        >>> pred.answer, pred.usage["lm_calls"]       # no reflection: search, noise removal, answer
        ('Rome', 1)
    """

    default_question_at = "auto"
    reads = {"search": ("bm25_weight",), "loop": ("k", "n_queries", "query_form", "bridge", "stop_on_repeat", "step_tokens")}

    def __init__(
        self,
        index: ProgramIndex,
        budget: int | None = None,
        *,
        pack: Pack = Pack(),
        search: Search = Search(),
        loop: Loop = Loop(),
        reflection: Reflection = Reflection(),
        retries: int = 1,
        answer: AnswerStep | None = None,
    ) -> None:
        super().__init__(index, search=search, retries=retries, answer=answer)
        self.pack = check_option(pack, Pack, "pack").at(budget, None)
        self.loop = self._hold("loop", loop, Loop)
        self.reflection = self._hold("reflection", reflection, Reflection)
        self.sufficiency = SufficiencyStep(retries=self.retries)
        self.rewrite = rewrite_step(self.loop.query_form, retries=self.retries)

    def max_lm_calls(self) -> int:
        # a verdict per reflection plus the last, a rewrite per reflection, the answer
        return (self.reflection.max_reflections + 1) + self.reflection.max_reflections + 1

    def _run(self, question: str, trace: Trace) -> RunResult:
        state = self._reflect(question, trace)
        final = state.context
        if self.reflection.noise_removal:
            final = self._remove_noise(question, final, trace)
        if self.budget is not None:
            final, _ = self._pack_final(question, self._ranked_for_pack(replace(state, context=final)), "", trace)
        answer, evidence = self._answer(question, final, trace)
        return RunResult(answer=answer, evidence=evidence, context=final)

    def _reflect(self, question: str, trace: Trace) -> Gathered:
        """The search and its reflections; they end with one ``stop`` event, at the turn that
        stopped (a reflection's verdict is asked at turn t and its search is turn t + 1)."""
        state = Gathered()
        state.take(self._search(question, trace, k=self.loop.k, turn=1), trace.of("search")[-1:],
                   self.pack.transform, self.pack.temperature)
        queries = [question]
        prev_docs: list[Chunk] | None = None
        prev_conf: float | None = None
        previous = None
        for turn in range(1, self.reflection.max_reflections + 1):
            docs = state.context
            verdict, event = assess(self.sufficiency, question, format_context(self._step_view(question, docs))[0], turn,
                                    trace)
            if verdict.verdict == "Sufficient":
                stop(trace, turn, "sufficient")
                return state
            if prev_docs is not None:
                change = abs(verdict.confidence - prev_conf)
                delta = (1.0 - self._set_similarity(docs, prev_docs)) + self.reflection.beta * change
                event["delta"] = round(float(delta), 4)
                if delta < self.reflection.tau:
                    stop(trace, turn, "converged", delta=round(float(delta), 4))
                    return state
            if self.loop.stop_on_repeat and verdict_unchanged(previous, verdict):
                stop(trace, turn, "verdict_unchanged")
                return state
            query = rewrite_query(self.rewrite, question, docs, "", verdict.missing, queries, turn + 1, trace,
                                  n=self.loop.n_queries, index=self.index, bridge=self.loop.bridge,
                                  shown=self._step_view(question, docs))
            if query is None:
                stop(trace, turn + 1, "no_query")
                return state
            queries.append(query)
            new = self._search(query, trace, k=self.loop.k, turn=turn + 1, exclude={c.id for c in docs})
            if not new:
                stop(trace, turn + 1, "no_new_evidence")
                return state
            prev_docs, prev_conf, previous = list(docs), verdict.confidence, verdict
            state.take(new, trace.of("search")[-1:], self.pack.transform, self.pack.temperature)
        # Out of reflections: a verdict now could change nothing, so it is not asked for.
        stop(trace, self.reflection.max_reflections + 1, "max_turns")
        return state

    def _set_similarity(self, a: list[Chunk], b: list[Chunk]) -> float:
        """Cosine between the mean embeddings of two chunk sets."""
        va = self.index.vectors([c.id for c in a]).mean(axis=0)
        vb = self.index.vectors([c.id for c in b]).mean(axis=0)
        denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
        return float(va @ vb / denom) if denom > 0 else 0.0

    def _remove_noise(self, question: str, docs: list[Chunk], trace: Trace) -> list[Chunk]:
        if len(docs) < 2:
            return docs
        vecs = self.index.vectors([c.id for c in docs])
        kept_idx = noise.filter(self.index.embed_query(question), vecs, alpha=self.reflection.alpha,
                                keep=self.reflection.keep)
        kept = [docs[i] for i in kept_idx.tolist()]
        trace.add(
            "noise",
            kept=[c.id for c in kept],
            removed=[c.id for i, c in enumerate(docs) if i not in set(kept_idx.tolist())],
            redundancy_before=round(noise.redundancy_ratio(vecs), 4),
            redundancy_after=round(noise.redundancy_ratio(vecs[kept_idx]), 4),
        )
        return kept
