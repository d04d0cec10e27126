"""One DSPy signature per LLM step, its step module, prompt formatting and the robust step runner.

Each ``<step>.py`` holds a ``dspy.Signature`` (its docstring is the instruction prompt an
optimizer can improve) and the step's ``dspy.Module`` (``AnswerStep``, ``SufficiencyStep``, ...):
one predictor plus the step's validator, its safe default and retries. A step formats its
inputs with short chunk ids, runs through ``run_step`` and hands back real chunk ids; it
records into the trace of the program that is running (``recording``), so nothing passes a
trace by hand. Programs hold one step module per LM step, under the step's name.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet import Chunk
    >>> from ragnet.programs.trace import Trace
    >>> chunks = [Chunk(id="p#0", doc_id="p", title="Paris", text="Paris is the capital of France.", tokens=7)]
    >>> with dspy.context(lm=DummyLM([{"answer": "Paris", "evidence_ids": ["c1"]}])), recording(Trace()) as trace:
    ...     out = AnswerStep()(question="Capital of France?", context=chunks)
    >>> out.answer, out.evidence_ids, out.fallback, trace.of("lm_step")[0]["name"]
    ('Paris', ['p#0'], False, 'answer')
"""

from __future__ import annotations

from ragnet.signatures.answer import AnswerStep, GenerateAnswer
from ragnet.signatures.condense import Condense, CondenseStep
from ragnet.signatures.contextualize import Contextualize, ContextualizeStep, note_lines
from ragnet.signatures.crop import CropChunk, CropStep, split_sentences, verbatim_spans
from ragnet.signatures.delete import DeleteStep, SelectDeletions
from ragnet.signatures.filter import ChunkDecision, FilterChunks, FilterStep
from ragnet.signatures.formatting import format_chunks, format_context, resolve_ids, split_id_text
from ragnet.signatures.judge import JudgeAnswer, JudgeStep
from ragnet.signatures.next_query import NextQuery, NextQueryStep
from ragnet.signatures.rewrite import RewriteQuery, RewriteStep, SubQuery, best_query, normalize_queries
from ragnet.signatures.step import (
    AdapterParseError,
    Step,
    StepOutputError,
    active_trace,
    lenient_parse,
    recording,
    run_step,
)
from ragnet.signatures.sufficiency import AssessSufficiency, SufficiencyStep, Verdict

SIGNATURES = {
    "filter": FilterChunks,
    "crop": CropChunk,
    "sufficiency": AssessSufficiency,
    "rewrite": RewriteQuery,
    "contextualize": Contextualize,
    "delete": SelectDeletions,
    "answer": GenerateAnswer,
    "judge": JudgeAnswer,
    "condense": Condense,
}
"""Step name (as used in trace events) -> signature class."""

STEP_MODULES: dict[str, type[Step]] = {
    cls.name: cls
    for cls in (FilterStep, CropStep, SufficiencyStep, RewriteStep, ContextualizeStep, DeleteStep, AnswerStep, JudgeStep,
                CondenseStep)
}
"""Step name -> its ``dspy.Module`` (each holds ``SIGNATURES[name]``). ``NextQueryStep``, the
one-query form of the ``rewrite`` step for small step LMs, is not listed: it shares the name."""

__all__ = [
    "SIGNATURES",
    "STEP_MODULES",
    "AdapterParseError",
    "AnswerStep",
    "AssessSufficiency",
    "ChunkDecision",
    "Condense",
    "CondenseStep",
    "Contextualize",
    "ContextualizeStep",
    "CropChunk",
    "CropStep",
    "DeleteStep",
    "FilterChunks",
    "FilterStep",
    "GenerateAnswer",
    "JudgeAnswer",
    "JudgeStep",
    "NextQuery",
    "NextQueryStep",
    "RewriteQuery",
    "RewriteStep",
    "SelectDeletions",
    "Step",
    "StepOutputError",
    "SubQuery",
    "SufficiencyStep",
    "Verdict",
    "active_trace",
    "best_query",
    "format_chunks",
    "format_context",
    "lenient_parse",
    "normalize_queries",
    "note_lines",
    "recording",
    "resolve_ids",
    "run_step",
    "split_id_text",
    "split_sentences",
    "verbatim_spans",
]
