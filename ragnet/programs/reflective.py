"""ReflectiveRAG — self-reflective retrieval with verbalized sampling, a convergence stop, and
noise removal before answering.

Loop (at most ``max_reflections`` refinements):

1. AssessSufficiency judges the current document set D_t: *Sufficient* stops.
2. *Refine*: RewriteQuery writes ``n_subqueries`` sub-queries with probabilities (verbalized
   sampling); the most probable unseen one is searched and its top-``k`` unseen chunks join D.
   Once the reflections are used up the loop ends without asking (a verdict could change nothing).
3. Convergence: Δ_t = (1 − Sim(D_t, D_{t−1})) + β·|Conf_t − Conf_{t−1}|; stop when Δ_t < τ.
   Sim is the cosine between the mean embeddings of the two sets. The paper writes
   Sim(D_t, D_{t−1}) directly; read literally, a loop that stops changing would never stop, so
   ragnet uses the *change* (1 − Sim), which makes "Δ < τ" mean "nothing new is coming in".
4. Noise removal (α = 5, keep 70%) prunes D before the answer; the redundancy ratio before and
   after is recorded in the trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragnet.core import noise
from ragnet.corpus.types import Chunk
from ragnet.programs.agent import assess, rewrite_query
from ragnet.programs.base import RAGProgram, RunResult, check_fraction, check_positive_int
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, RewriteStep, SufficiencyStep, format_context


class ReflectiveRAG(RAGProgram):
    """Self-reflective retrieval (ReflectiveRAG).

    Args:
        index: a ``ragnet.Index``.
        k: chunks per search.
        max_reflections: most Refine rounds (each adds one search).
        n_subqueries: sub-queries sampled per Refine (5, verbalized sampling).
        bridge: when a Refine gives no new query, search the best bridge entity of the evidence
            instead (``ragnet.programs.bridge.bridge_search``, no LM call).
        beta: weight of the confidence change in Δ.
        tau: stop when Δ falls below this.
        noise_removal: prune the final set with ``core.noise.filter``.
        alpha, keep: noise-removal temperature (5) and kept share (0.7).
        lam: hybrid BM25 weight (0.4).
        retries, answer: as in :class:`ragnet.programs.RAGProgram`.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}])):
        ...     pred = ReflectiveRAG(index, max_reflections=0)(question="What is the capital of Italy?")
        >>> pred.answer, pred.usage["lm_calls"]       # no reflection: search, noise removal, answer
        ('Rome', 1)
    """

    def __init__(
        self,
        index: Any,
        *,
        k: int = 5,
        max_reflections: int = 3,
        n_subqueries: int = 5,
        beta: float = 0.5,
        tau: float = 0.05,
        noise_removal: bool = True,
        alpha: float = 5.0,
        keep: float = 0.7,
        bridge: bool = True,
        lam: float = 0.4,
        retries: int = 1,
        answer: AnswerStep | None = None,
    ) -> None:
        super().__init__(index, lam=lam, retries=retries, answer=answer)
        self.bridge = bool(bridge)
        self.k = check_positive_int(k, "k")
        self.max_reflections = check_positive_int(max_reflections, "max_reflections", minimum=0)
        self.n_subqueries = check_positive_int(n_subqueries, "n_subqueries")
        self.beta = check_fraction(beta, "beta", 0.0, 10.0)
        self.tau = check_fraction(tau, "tau", 0.0, 10.0)
        self.noise_removal = bool(noise_removal)
        self.alpha = check_fraction(alpha, "alpha", 0.0, 100.0)
        self.keep = check_fraction(keep, "keep", 0.01, 1.0)
        self.sufficiency = SufficiencyStep(retries=self.retries)
        self.rewrite = RewriteStep(retries=self.retries)

    def max_lm_calls(self) -> int:
        # a verdict per reflection plus the last, a rewrite per reflection, the answer
        return (self.max_reflections + 1) + self.max_reflections + 1

    def _run(self, question: str, trace: Trace) -> RunResult:
        docs = self._search(question, trace, k=self.k, turn=1)
        queries = [question]
        prev_docs: list[Chunk] | None = None
        prev_conf: float | None = None
        for turn in range(1, self.max_reflections + 1):
            verdict, event = assess(self.sufficiency, question, format_context(docs)[0], turn, trace)
            if verdict.verdict == "Sufficient":
                break
            if prev_docs is not None:
                delta = (1.0 - self._set_similarity(docs, prev_docs)) + self.beta * abs(verdict.confidence - prev_conf)
                event["delta"] = round(float(delta), 4)
                if delta < self.tau:
                    trace.add("stop", turn=turn, reason="converged", delta=round(float(delta), 4))
                    break
            query = rewrite_query(self.rewrite, question, docs, "", verdict.missing, queries, turn + 1, trace,
                                  n=self.n_subqueries, index=self.index, bridge=self.bridge)
            if query is None:
                trace.add("stop", turn=turn, reason="no new query")
                break
            queries.append(query)
            new = self._search(query, trace, k=self.k, turn=turn + 1, exclude={c.id for c in docs})
            prev_docs, prev_conf = docs, verdict.confidence
            docs = docs + new
        else:
            # Out of reflections: a verdict now could change nothing, so it is not asked for.
            trace.add("stop", turn=self.max_reflections + 1, reason="max_reflections")
        final = self._remove_noise(question, docs, trace) if self.noise_removal else docs
        answer, evidence = self._answer(question, final, trace)
        return RunResult(answer=answer, evidence=evidence, context=final)

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
