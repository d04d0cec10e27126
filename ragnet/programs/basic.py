"""BasicRAG: the baseline — hybrid top-k retrieval, then answer."""

from __future__ import annotations

from ragnet.programs.base import RAGProgram, RunResult
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.options import Search, check_positive_int
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep


class BasicRAG(RAGProgram):
    """Plain top-k RAG, the baseline every strategy is measured against.

    Args:
        index: a ``ragnet.Index``.
        k: chunks retrieved and shown to the answer step.
        search: the search's ``bm25_weight`` (:class:`ragnet.programs.options.Search`; its other
            fields are the programs' that gather candidates).
        retries, answer: as in :class:`ragnet.programs.RAGProgram`.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}])):
        ...     pred = BasicRAG(index, k=2)(question="What is the capital of Italy?")
        >>> pred.answer, pred.context, pred.evidence
        ('Rome', ['rome#0', 'paris#0'], ['rome#0'])
    """

    reads = {"search": ("bm25_weight",)}

    def __init__(self, index: ProgramIndex, k: int = 5, *, search: Search = Search(), retries: int = 1,
                 answer: AnswerStep | None = None) -> None:
        super().__init__(index, search=search, retries=retries, answer=answer)
        self.k = check_positive_int(k, "k")

    def _run(self, question: str, trace: Trace) -> RunResult:
        hits = self._search(question, trace, k=self.k)
        answer, evidence = self._answer(question, hits, trace)
        return RunResult(answer=answer, evidence=evidence, context=hits)
