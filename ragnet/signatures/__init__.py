"""One DSPy signature per LLM step, plus prompt formatting and a robust step runner.

Each ``<step>.py`` holds a ``dspy.Signature`` (its docstring is the instruction prompt an
optimizer can improve), the step's fallback (``*_default``), its output validator
(``*_validator``) and a ``run_*`` helper that formats chunks with short ids, calls
``run_step`` and returns real chunk ids. Programs keep a ``dspy.Predict(Signature)`` (so
optimizers can compile it) and call the ``run_*`` helper with it.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet import Chunk
    >>> from ragnet.programs.trace import Trace
    >>> chunks = [Chunk(id="p#0", doc_id="p", title="Paris", text="Paris is the capital of France.", tokens=7)]
    >>> trace = Trace()
    >>> with dspy.context(lm=DummyLM([{"answer": "Paris", "evidence_ids": ["c1"]}])):
    ...     out = run_answer(dspy.Predict(GenerateAnswer), "Capital of France?", chunks, trace=trace)
    >>> out.answer, out.evidence_ids, out.fallback
    ('Paris', ['p#0'], False)
"""

from __future__ import annotations

from ragnet.signatures.answer import GenerateAnswer, answer_default, answer_validator, run_answer
from ragnet.signatures.contextualize import (
    Contextualize,
    contextualize_default,
    contextualize_validator,
    note_lines,
    run_contextualize,
)
from ragnet.signatures.crop import (
    CropChunk,
    crop_default,
    crop_validator,
    run_crop,
    split_sentences,
    verbatim_spans,
)
from ragnet.signatures.delete import SelectDeletions, delete_default, delete_validator, run_delete
from ragnet.signatures.filter import ChunkDecision, FilterChunks, filter_default, filter_validator, run_filter
from ragnet.signatures.formatting import format_chunks, format_context, resolve_ids, split_id_text
from ragnet.signatures.judge import JudgeAnswer, judge_default, run_judge
from ragnet.signatures.rewrite import (
    RewriteQuery,
    SubQuery,
    best_query,
    normalize_queries,
    rewrite_default,
    rewrite_validator,
    run_rewrite,
)
from ragnet.signatures.step import AdapterParseError, StepModule, StepOutputError, lenient_parse, run_step
from ragnet.signatures.sufficiency import (
    AssessSufficiency,
    Verdict,
    run_sufficiency,
    sufficiency_default,
    sufficiency_validator,
)

SIGNATURES = {
    "filter": FilterChunks,
    "crop": CropChunk,
    "sufficiency": AssessSufficiency,
    "rewrite": RewriteQuery,
    "contextualize": Contextualize,
    "delete": SelectDeletions,
    "answer": GenerateAnswer,
    "judge": JudgeAnswer,
}
"""Step name (as used in trace events) -> signature class."""

__all__ = [
    "SIGNATURES",
    "AdapterParseError",
    "AssessSufficiency",
    "ChunkDecision",
    "Contextualize",
    "CropChunk",
    "FilterChunks",
    "GenerateAnswer",
    "JudgeAnswer",
    "RewriteQuery",
    "SelectDeletions",
    "StepModule",
    "StepOutputError",
    "SubQuery",
    "Verdict",
    "answer_default",
    "answer_validator",
    "best_query",
    "contextualize_default",
    "contextualize_validator",
    "crop_default",
    "crop_validator",
    "delete_default",
    "delete_validator",
    "filter_default",
    "filter_validator",
    "format_chunks",
    "format_context",
    "judge_default",
    "lenient_parse",
    "normalize_queries",
    "note_lines",
    "resolve_ids",
    "rewrite_default",
    "rewrite_validator",
    "run_answer",
    "run_contextualize",
    "run_crop",
    "run_delete",
    "run_filter",
    "run_judge",
    "run_rewrite",
    "run_step",
    "run_sufficiency",
    "split_id_text",
    "split_sentences",
    "sufficiency_default",
    "sufficiency_validator",
    "verbatim_spans",
]
