"""ReflectiveRAG — self-reflective retrieval with verbalized sampling, a convergence stop, and
noise removal before answering.

Loop (at most ``max_reflections`` refinements):

1. AssessSufficiency judges the current document set D_t: *Sufficient* stops, and so does a
   *Refine* that names the same missing fact as the verdict before it (``stop_on_repeat``: a small
   step LM never says Sufficient, and its repeated verdict is not paid for again).
2. *Refine*: RewriteQuery writes ``n_subqueries`` sub-queries with probabilities (verbalized
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
from typing import Any

import numpy as np

from ragnet.core import noise
from ragnet.corpus.types import Chunk
from ragnet.programs.agent import (DEFAULT_NOTES_SHARE, FinalPack, Gathered, assess, rewrite_query, rewrite_step, stop,
                                   verdict_unchanged)
from ragnet.programs.base import RAGProgram, RunResult, check_fraction, check_positive_int
from ragnet.programs.oneshot import DEFAULT_METHOD, DEFAULT_TEMPERATURE, DEFAULT_TRANSFORM
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, SufficiencyStep, format_context


class ReflectiveRAG(FinalPack, RAGProgram):
    """Self-reflective retrieval (ReflectiveRAG).

    Args:
        index: a ``ragnet.Index``.
        k: chunks per search.
        max_reflections: most Refine rounds (each adds one search).
        n_subqueries: sub-queries sampled per Refine (5, verbalized sampling).
        query_form: ``"sampled"`` (the study's verbalized sampling) or ``"one"`` (NextQuery: one
            query naming what to look up next, for small step LMs; preset ``one-query``).
        bridge: when a Refine gives no new query, search the best bridge entity of the evidence
            instead (``ragnet.programs.bridge.bridge_search``, no LM call).
        beta: weight of the confidence change in Δ.
        tau: stop when Δ falls below this.
        stop_on_repeat: stop when AssessSufficiency says "Refine" with the same missing fact twice
            running (``ragnet.programs.agent.verdict_unchanged``).
        noise_removal: prune the final set with ``core.noise.filter``.
        alpha, keep: noise-removal temperature (5) and kept share (0.7).
        lam: hybrid BM25 weight (0.4).
        retries, answer: as in :class:`ragnet.programs.RAGProgram` (where the answer step leaves
            the question's place open, it is chosen per question, "auto", as in ``OneShotRAG``).
        budget: total tokens of the answer prompt. None (the paper's design): the answer step
            reads every chunk noise removal kept. A number: they are packed into it as the agents
            pack theirs (``ragnet.programs.agent.FinalPack``).
        sentences: pack the kept chunks' best sentences instead of whole chunks (needs a
            ``budget``; the ``reflective:sentences`` preset).

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}])):
        ...     pred = ReflectiveRAG(index, max_reflections=0)(question="What is the capital of Italy?")
        >>> pred.answer, pred.usage["lm_calls"]       # no reflection: search, noise removal, answer
        ('Rome', 1)
    """

    default_question_at = "auto"

    def __init__(
        self,
        index: Any,
        *,
        k: int = 5,
        max_reflections: int = 3,
        n_subqueries: int = 5,
        query_form: str = "sampled",
        beta: float = 0.5,
        tau: float = 0.05,
        noise_removal: bool = True,
        alpha: float = 5.0,
        keep: float = 0.7,
        bridge: bool = True,
        stop_on_repeat: bool = True,
        lam: float = 0.4,
        retries: int = 1,
        answer: AnswerStep | None = None,
        budget: int | None = None,
        sentences: bool = False,
    ) -> None:
        super().__init__(index, lam=lam, retries=retries, answer=answer)
        self.bridge, self.stop_on_repeat = bool(bridge), bool(stop_on_repeat)
        self._init_pack(budget, sentences, DEFAULT_NOTES_SHARE, DEFAULT_TRANSFORM, DEFAULT_TEMPERATURE, DEFAULT_METHOD)
        self.k = check_positive_int(k, "k")
        self.max_reflections = check_positive_int(max_reflections, "max_reflections", minimum=0)
        self.n_subqueries = check_positive_int(n_subqueries, "n_subqueries")
        self.beta = check_fraction(beta, "beta", 0.0, 10.0)
        self.tau = check_fraction(tau, "tau", 0.0, 10.0)
        self.noise_removal = bool(noise_removal)
        self.alpha = check_fraction(alpha, "alpha", 0.0, 100.0)
        self.keep = check_fraction(keep, "keep", 0.01, 1.0)
        self.sufficiency = SufficiencyStep(retries=self.retries)
        self.query_form = query_form
        self.rewrite = rewrite_step(query_form, retries=self.retries)

    def max_lm_calls(self) -> int:
        # a verdict per reflection plus the last, a rewrite per reflection, the answer
        return (self.max_reflections + 1) + self.max_reflections + 1

    def _run(self, question: str, trace: Trace) -> RunResult:
        state = self._reflect(question, trace)
        final = self._remove_noise(question, state.context, trace) if self.noise_removal else state.context
        if self.budget is not None:
            final, _ = self._pack_final(question, self._ranked_for_pack(replace(state, context=final)), "", trace)
        answer, evidence = self._answer(question, final, trace)
        return RunResult(answer=answer, evidence=evidence, context=final)

    def _reflect(self, question: str, trace: Trace) -> Gathered:
        """The search and its reflections; they end with one ``stop`` event, at the turn that
        stopped (a reflection's verdict is asked at turn t and its search is turn t + 1)."""
        state = Gathered()
        state.take(self._search(question, trace, k=self.k, turn=1), trace.of("search")[-1:],
                   self.transform, self.temperature)
        queries = [question]
        prev_docs: list[Chunk] | None = None
        prev_conf: float | None = None
        previous = None
        for turn in range(1, self.max_reflections + 1):
            docs = state.context
            verdict, event = assess(self.sufficiency, question, format_context(docs)[0], turn, trace)
            if verdict.verdict == "Sufficient":
                stop(trace, turn, "sufficient")
                return state
            if prev_docs is not None:
                delta = (1.0 - self._set_similarity(docs, prev_docs)) + self.beta * abs(verdict.confidence - prev_conf)
                event["delta"] = round(float(delta), 4)
                if delta < self.tau:
                    stop(trace, turn, "converged", delta=round(float(delta), 4))
                    return state
            if self.stop_on_repeat and verdict_unchanged(previous, verdict):
                stop(trace, turn, "verdict_unchanged")
                return state
            query = rewrite_query(self.rewrite, question, docs, "", verdict.missing, queries, turn + 1, trace,
                                  n=self.n_subqueries, index=self.index, bridge=self.bridge)
            if query is None:
                stop(trace, turn + 1, "no_query")
                return state
            queries.append(query)
            new = self._search(query, trace, k=self.k, turn=turn + 1, exclude={c.id for c in docs})
            if not new:
                stop(trace, turn + 1, "no_new_evidence")
                return state
            prev_docs, prev_conf, previous = list(docs), verdict.confidence, verdict
            state.take(new, trace.of("search")[-1:], self.transform, self.temperature)
        # Out of reflections: a verdict now could change nothing, so it is not asked for.
        stop(trace, self.max_reflections + 1, "max_turns")
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
        kept_idx = noise.filter(self.index.embed_query(question), vecs, alpha=self.alpha, keep=self.keep)
        kept = [docs[i] for i in kept_idx.tolist()]
        trace.add(
            "noise",
            kept=[c.id for c in kept],
            removed=[c.id for i, c in enumerate(docs) if i not in set(kept_idx.tolist())],
            redundancy_before=round(noise.redundancy_ratio(vecs), 4),
            redundancy_after=round(noise.redundancy_ratio(vecs[kept_idx]), 4),
        )
        return kept
