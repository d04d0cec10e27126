"""What every ragnet program shares: the answer step, searches that are traced, and the
``dspy.Prediction`` every program returns (``answer``, ``evidence``, ``context``, ``trace``, ``usage``).

Programs subclass :class:`RAGProgram` and implement ``_run(question, trace) -> RunResult``.
The base ``forward`` validates the question, meters LM usage and wall time, and assembles
the Prediction, so each program holds only its own control flow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import dspy

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.lm.usage import track_usage
from ragnet.programs.trace import Trace
from ragnet.signatures import GenerateAnswer, run_answer


@dataclass
class RunResult:
    """What a program's ``_run`` hands back to ``forward``."""

    answer: str
    evidence: list[str]
    context: list[Chunk]
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def check_positive_int(value: Any, name: str, minimum: int = 1) -> int:
    """Validate an integer constructor argument, naming it in the error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"must be an integer >= {minimum}, got {value!r}", argument=name)
    return value


def check_fraction(value: Any, name: str, low: float = 0.0, high: float = 1.0) -> float:
    """Validate a float argument in ``[low, high]``, naming it in the error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"must be a number, got {value!r}", argument=name) from None
    if not low <= v <= high:
        raise InputError(f"must be between {low} and {high}, got {v}", argument=name)
    return v


# Output-token caps per step: generous for a well-behaved model, but they stop a small local
# model that rambles (an unbounded answer costs minutes on CPU and then fails to parse anyway).
MAX_TOKENS = {
    "answer": 256,
    "sufficiency": 160,
    "rewrite": 320,
    "contextualize": 384,
    "delete": 128,
    "filter": 768,
    "crop": 384,
}


def step_predictor(signature: type, step: str) -> dspy.Predict:
    """A ``dspy.Predict`` for one ragnet step, with that step's output-token cap."""
    return dspy.Predict(signature, max_tokens=MAX_TOKENS[step])


class RAGProgram(dspy.Module):
    """Base class of ragnet's programs.

    Args:
        index: a ``ragnet.Index`` (not a DSPy parameter: saving a program stores prompts and
            demos only, never the index).
        lam: hybrid weight, ``lam * BM25 + (1 - lam) * cosine``; 0.4 as in ReflectiveRAG.
        retries: LM retries per step before falling back to a safe default.
    """

    def __init__(self, index: Any, *, lam: float = 0.4, retries: int = 1) -> None:
        super().__init__()
        if index is None or not hasattr(index, "search"):
            raise InputError("expected a ragnet.Index (from Index.build or Index.load)", argument="index")
        self.index = index
        self.lam = check_fraction(lam, "lam")
        self.retries = check_positive_int(retries, "retries", minimum=0)
        self.answer = step_predictor(GenerateAnswer, "answer")

    # -- the one method subclasses implement ---------------------------------------------
    def _run(self, question: str, trace: Trace) -> RunResult:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- DSPy entry point -----------------------------------------------------------------
    def forward(self, question: str) -> dspy.Prediction:
        """Answer ``question``; returns a ``dspy.Prediction`` (see module docstring)."""
        if not isinstance(question, str) or not question.strip():
            raise InputError("must be a non-empty string", argument="question")
        question = question.strip()
        trace = Trace()
        started = time.perf_counter()
        with track_usage() as meter:
            result = self._run(question, trace)
        usage = meter.to_dict()
        usage["seconds"] = round(time.perf_counter() - started, 4)
        usage["searches"] = len(trace.of("search"))
        usage["turns"] = max([e.get("turn", 0) for e in trace.events] + [0])
        usage["context_tokens"] = sum(c.tokens for c in result.context)
        usage["lm_errors"] = len(trace.errors())
        return dspy.Prediction(
            answer=result.answer,
            evidence=result.evidence,
            context=[c.id for c in result.context],
            notes=result.notes,
            trace=trace.to_list(),
            usage=usage,
            **result.extra,
        )

    # -- shared steps ----------------------------------------------------------------------
    def _search(
        self,
        query: str,
        trace: Trace,
        *,
        k: int,
        turn: int = 1,
        exclude: Iterable[str] = (),
        fallback: bool = False,
    ) -> list[Chunk]:
        """Hybrid search, recorded as a ``search`` event."""
        hits = self.index.search(query, k=k, exclude=exclude, lam=self.lam)
        trace.add("search", turn=turn, query=query, retrieved=[h.id for h in hits], fallback=fallback)
        return hits

    def _answer(self, question: str, chunks: list[Chunk], trace: Trace, *, notes: str = "") -> tuple[str, list[str]]:
        """Run GenerateAnswer; evidence = cited ids, or the whole context when nothing valid was cited."""
        pred = run_answer(self.answer, question, chunks, notes=notes, trace=trace, retries=self.retries)
        cited = [cid for cid in (pred.evidence_ids or []) if cid in {c.id for c in chunks}]
        evidence = cited or [c.id for c in chunks]
        trace.add(
            "answer",
            evidence=evidence,
            cited=bool(cited),
            fallback=bool(getattr(pred, "fallback", False)),
            context=[c.id for c in chunks],
        )
        return str(pred.answer or ""), evidence
