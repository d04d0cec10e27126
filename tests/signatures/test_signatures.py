"""Each signature: documented fields, an instruction prompt, and scripted outputs parsed into the right types."""

from __future__ import annotations

import typing

import dspy
import pytest

from ragnet.signatures import (
    SIGNATURES,
    AssessSufficiency,
    ChunkDecision,
    Contextualize,
    CropChunk,
    FilterChunks,
    GenerateAnswer,
    JudgeAnswer,
    RewriteQuery,
    SelectDeletions,
    SubQuery,
)

FIELDS = {
    FilterChunks: (["question", "chunks"], ["decisions"]),
    CropChunk: (["question", "title", "chunk"], ["relevant_text"]),
    AssessSufficiency: (["question", "context"], ["verdict", "confidence", "missing"]),
    RewriteQuery: (["question", "context", "previous_queries", "n"], ["queries"]),
    Contextualize: (["question", "notes", "new_chunks"], ["new_notes"]),
    SelectDeletions: (["question", "chunks"], ["delete_ids"]),
    GenerateAnswer: (["question", "context"], ["answer", "evidence_ids"]),
    JudgeAnswer: (["question", "gold_answers", "prediction"], ["rationale", "match"]),
}


@pytest.mark.parametrize("sig", list(FIELDS), ids=lambda s: s.__name__)
def test_fields_and_instructions(sig):
    inputs, outputs = FIELDS[sig]
    assert list(sig.input_fields) == inputs
    assert list(sig.output_fields) == outputs
    assert len(sig.instructions.split()) >= 30  # a real instruction prompt, not a stub
    for field in {**sig.input_fields, **sig.output_fields}.values():
        assert field.json_schema_extra["desc"]  # every field carries a concise description
    assert sig in SIGNATURES.values()


def test_signature_types():
    assert AssessSufficiency.output_fields["verdict"].annotation == typing.Literal["Sufficient", "Refine"]
    assert AssessSufficiency.output_fields["confidence"].annotation is float
    assert FilterChunks.output_fields["decisions"].annotation == list[ChunkDecision]
    assert RewriteQuery.output_fields["queries"].annotation == list[SubQuery]
    assert SelectDeletions.output_fields["delete_ids"].annotation == list[str]
    assert JudgeAnswer.output_fields["match"].annotation is bool


def test_filter_parses_decisions(scripted):
    answer = {"decisions": [{"id": "c1", "keep": True, "reason": "names Paris"}, {"id": "c2", "keep": "drop"}]}
    with scripted([answer]):
        pred = dspy.Predict(FilterChunks)(question="Where is Paris?", chunks="[c1] ...\n\n[c2] ...")
    assert all(isinstance(d, ChunkDecision) for d in pred.decisions)
    assert [(d.id, d.keep, d.reason) for d in pred.decisions] == [("c1", True, "names Paris"), ("c2", False, "")]


def test_sufficiency_parses_literal_float_and_str(scripted):
    with scripted([{"verdict": "Refine", "confidence": "0.35", "missing": "birth year of X"}]):
        pred = dspy.Predict(AssessSufficiency)(question="q", context="c")
    assert pred.verdict == "Refine"
    assert isinstance(pred.confidence, float) and pred.confidence == pytest.approx(0.35)
    assert pred.missing == "birth year of X"


def test_sufficiency_missing_is_optional(scripted):
    with scripted([{"verdict": "Sufficient", "confidence": 0.9}]):
        pred = dspy.Predict(AssessSufficiency)(question="q", context="c")
    assert (pred.verdict, pred.missing) == ("Sufficient", "")


def test_rewrite_parses_subqueries(scripted):
    answer = {"queries": [{"query": "X founder", "probability": 0.6},
                          {"query": "X founded year", "probability": "40%"}]}
    with scripted([answer]):
        pred = dspy.Predict(RewriteQuery)(question="q", context="c", previous_queries=["q"], n=2)
    assert all(isinstance(q, SubQuery) for q in pred.queries)
    assert [(q.query, q.probability) for q in pred.queries] == [("X founder", 0.6), ("X founded year", 0.4)]


def test_judge_parses_bool(scripted):
    with scripted([{"rationale": "different city", "match": "False"}]):
        pred = dspy.Predict(JudgeAnswer)(question="q", gold_answers=["Paris"], prediction="Lyon")
    assert pred.match is False
    assert pred.rationale == "different city"


def test_prompt_shows_short_ids_and_instructions(scripted, chunks):
    from ragnet.signatures import FilterStep

    with scripted([{"decisions": [{"id": "c1", "keep": True}]}]) as lm:
        FilterStep()(question="Where is Paris?", chunks=chunks)
    messages = lm.history[-1]["messages"]
    assert "Decide which retrieved chunks to keep" in messages[0]["content"]
    assert "[c1] Paris: Paris is the capital" in messages[-1]["content"]
    assert "paris#0" not in messages[-1]["content"]
