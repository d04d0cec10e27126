"""Validators and step modules: unknown ids, verbatim crops, kept notes, never deleting everything."""

from __future__ import annotations

import dspy
import pytest

from ragnet.signatures import (
    AnswerStep,
    ContextualizeStep,
    CropStep,
    DeleteStep,
    FilterStep,
    JudgeStep,
    RewriteStep,
    StepOutputError,
    SubQuery,
    SufficiencyStep,
    best_query,
    normalize_queries,
    verbatim_spans,
)
from ragnet.signatures.answer import answer_validator
from ragnet.signatures.contextualize import contextualize_validator
from ragnet.signatures.crop import crop_validator
from ragnet.signatures.delete import delete_validator
from ragnet.signatures.filter import filter_validator
from ragnet.signatures.sufficiency import sufficiency_validator
from ragnet.signatures.filter import ChunkDecision

ID_MAP = {"c1": "paris#0", "c2": "lyon#0", "c3": "cats#3"}


# --- ids -------------------------------------------------------------------------------------


def test_answer_validator_maps_ids_and_drops_unknown():
    pred, problems = answer_validator(ID_MAP)(dspy.Prediction(answer=" Paris ", evidence_ids=["[c1]", "c7", "lyon#0"]))
    assert pred.answer == "Paris"
    assert pred.evidence_ids == ["paris#0", "lyon#0"]
    assert pred.unknown_ids == ["c7"]
    assert problems == ["dropped unknown evidence ids: ['c7']"]


def test_answer_validator_rejects_empty_answer():
    with pytest.raises(StepOutputError):
        answer_validator(ID_MAP)(dspy.Prediction(answer="  ", evidence_ids=[]))


def test_run_answer_records_unknown_ids(scripted, trace, chunks):
    with scripted([{"answer": "Paris", "evidence_ids": ["c1", "c9"]}]):
        out = AnswerStep()(question="Capital of France?", context=chunks, notes="- fact")
    assert out.evidence_ids == ["paris#0"] and out.fallback is False
    (error,) = trace.errors()
    assert error["action"] == "repaired" and "c9" in error["error"]


def test_run_answer_empty_answer_retries_then_falls_back(scripted, trace, chunks):
    with scripted([{"answer": "", "evidence_ids": []}, {"answer": "", "evidence_ids": []}]):
        out = AnswerStep()(question="q", context=chunks, default_answer="unknown")
    assert (out.answer, out.evidence_ids, out.fallback) == ("unknown", [], True)
    assert [e["action"] for e in trace.errors()] == ["retried", "fallback"]


def test_filter_validator_unknown_missing_and_duplicate_decisions():
    decisions = [
        ChunkDecision(id="c2", keep=False, reason="other city"),
        ChunkDecision(id="c2", keep=True, reason="dup"),
        ChunkDecision(id="c8", keep=False, reason="ghost"),
    ]
    pred, problems = filter_validator(ID_MAP)(dspy.Prediction(decisions=decisions))
    assert pred.kept == ["paris#0", "cats#3"]  # undecided chunks are kept
    assert pred.dropped == [{"id": "lyon#0", "reason": "other city"}]
    assert [d.id for d in pred.decisions] == ["paris#0", "lyon#0", "cats#3"]
    assert any("unknown chunk ids: ['c8']" in p for p in problems)
    assert any("no decision for 2 chunk(s)" in p for p in problems)
    assert any("duplicate decision" in p for p in problems)


def test_run_filter_end_to_end(scripted, trace, chunks):
    answer = {"decisions": [
        {"id": "c1", "keep": True, "reason": "Paris"},
        {"id": "c2", "keep": False, "reason": "Lyon"},
        {"id": "c3", "keep": False, "reason": "cats"},
    ]}
    with scripted([answer]):
        out = FilterStep()(question="What is the capital of France?", chunks=chunks)
    assert out.kept == ["paris#0"]
    assert [d["id"] for d in out.dropped] == ["lyon#0", "cats#3"]
    assert trace.errors() == []


def test_run_filter_fallback_keeps_everything(scripted, trace, chunks):
    with scripted([{"decisions": "not a list"}, {"decisions": "still not"}]):
        out = FilterStep()(question="q", chunks=chunks)
    assert out.fallback is True
    assert out.kept == [c.id for c in chunks] and out.dropped == []


def test_empty_inputs_make_no_lm_call(scripted, trace):
    with scripted([]) as lm:
        assert FilterStep()(question="q", chunks=[]).kept == []
        assert DeleteStep()(question="q", chunks=[]).delete_ids == []
        assert ContextualizeStep()(question="q", notes="- a", new_chunks=[]).notes == "- a"
        assert JudgeStep()(question="q", gold_answers=["Paris"], prediction="  ").match is False
    assert lm.history == []


# --- crop --------------------------------------------------------------------------------------

SOURCE = "Paris is the capital of France.  It has many museums.\nThe Seine flows through it."


def test_crop_keeps_only_verbatim_sentences_in_source_order():
    out = "The Seine flows through it. Paris is a lovely city. paris is the capital   of France."
    pred, problems = crop_validator(SOURCE)(dspy.Prediction(relevant_text=out))
    assert pred.relevant_text == "Paris is the capital of France. The Seine flows through it."
    assert pred.kept_full is False
    assert len(problems) == 1 and "Paris is a lovely city" in problems[0]


def test_crop_non_verbatim_output_falls_back_to_full_chunk():
    pred, problems = crop_validator(SOURCE)(dspy.Prediction(relevant_text="France's capital is Paris."))
    assert pred.relevant_text == SOURCE and pred.kept_full is True
    assert any("kept the full chunk" in p for p in problems)


def test_crop_rejects_tiny_fragments():
    spans, rejected = verbatim_spans("is the", SOURCE)
    assert spans == [] and rejected == ["is the"]


def test_run_crop_records_rejection(scripted, trace, chunks):
    with scripted([{"relevant_text": "Paris, a city of museums, is the French capital."}]):
        out = CropStep()(question="Capital of France?", title=chunks[0].title, chunk=chunks[0].text)
    assert out.relevant_text == chunks[0].text and out.kept_full is True and out.fallback is False
    assert {e["action"] for e in trace.errors()} == {"repaired"}
    assert any("kept the full chunk" in e["error"] for e in trace.errors())


def test_run_crop_valid(scripted, trace, chunks):
    with scripted([{"relevant_text": "Paris is the capital of France."}]) as lm:
        out = CropStep()(question="Capital of France?", title=chunks[0].title, chunk=chunks[0].text)
    assert out.relevant_text == "Paris is the capital of France." and out.kept_full is False
    assert "[[ ## title ## ]]\nParis" in lm.history[-1]["messages"][-1]["content"]


# --- contextualize -------------------------------------------------------------------------


def test_contextualize_appends_new_facts_after_every_earlier_note():
    previous = "- X Corp is a bank.\n- It was founded in 1901"
    pred, problems = contextualize_validator(previous)(
        dspy.Prediction(new_notes="- X Corp merged with Y in 1999")
    )
    assert pred.notes.splitlines() == [
        "- X Corp is a bank.", "- It was founded in 1901", "- X Corp merged with Y in 1999"]
    assert pred.added == ["- X Corp merged with Y in 1999"] and problems == []


def test_contextualize_skips_restated_notes_and_none():
    previous = "- X Corp is a bank.\n- It was founded in 1901"
    new = "* x corp is a bank\n* It was founded in   1901.\n* New fact\n* New fact"
    pred, problems = contextualize_validator(previous)(dspy.Prediction(new_notes=new))
    assert pred.notes == "- X Corp is a bank.\n- It was founded in 1901\n* New fact"
    assert pred.repeated == ["* x corp is a bank", "* It was founded in   1901.", "* New fact"] and problems == []
    pred, _ = contextualize_validator(previous)(dspy.Prediction(new_notes="None."))
    assert pred.notes == previous and pred.added == []


def test_run_contextualize_keeps_earlier_notes(scripted, trace, chunks):
    with scripted([{"new_notes": "- Lyon is in France"}]) as lm:
        out = ContextualizeStep()(question="q", notes="- Paris is the capital of France", new_chunks=chunks[1:2])
    assert out.notes == "- Paris is the capital of France\n- Lyon is in France"
    assert trace.errors() == [] and out.fallback is False
    # The model is shown the earlier notes (so it can avoid repeating them) but never asked to copy them.
    assert "- Paris is the capital of France" in lm.history[-1]["messages"][-1]["content"]


def test_run_contextualize_failure_keeps_notes_unchanged(scripted, trace, chunks):
    with scripted([{"wrong_field": "x"}] * 4):
        out = ContextualizeStep(retries=1)(question="q", notes="- Paris is the capital of France",
                                            new_chunks=chunks[1:2])
    assert out.notes == "- Paris is the capital of France" and out.fallback is True
    assert trace.errors()[-1]["action"] == "fallback"


# --- delete ----------------------------------------------------------------------------------


def test_delete_refuses_to_delete_everything():
    pred, problems = delete_validator(ID_MAP)(dspy.Prediction(delete_ids=["c3", "c1", "c2"]))
    assert pred.kept_ids == ["paris#0", "lyon#0", "cats#3"]  # the whole decision is refused
    assert pred.delete_ids == []
    assert any("refused a deletion that would leave fewer than 1" in p for p in problems)


def test_delete_below_floor_is_refused_but_partial_delete_passes():
    pred, problems = delete_validator(ID_MAP, keep_at_least=2)(dspy.Prediction(delete_ids=["c1", "c2"]))
    assert pred.delete_ids == [] and len(pred.kept_ids) == 3 and problems
    pred, problems = delete_validator(ID_MAP, keep_at_least=2)(dspy.Prediction(delete_ids=["c2"]))
    assert pred.delete_ids == ["lyon#0"] and pred.kept_ids == ["paris#0", "cats#3"] and not problems


def test_delete_drops_unknown_and_protected_ids():
    pred, problems = delete_validator(ID_MAP, protected={"lyon#0"})(dspy.Prediction(delete_ids=["c2", "c5", "c3"]))
    assert pred.delete_ids == ["cats#3"]
    assert pred.kept_ids == ["paris#0", "lyon#0"]
    assert any("unknown chunk ids: ['c5']" in p for p in problems)
    assert any("protected" in p for p in problems)


def test_run_delete_end_to_end(scripted, trace, chunks):
    with scripted([{"delete_ids": ["c1", "c2", "c3"]}]):
        out = DeleteStep()(question="q", chunks=chunks, keep_at_least=2)
    assert out.kept_ids == ["paris#0", "lyon#0", "cats#3"] and out.delete_ids == []
    assert trace.errors()[0]["action"] == "repaired"


# --- rewrite ---------------------------------------------------------------------------------


def test_normalize_queries_dedupes_and_normalises():
    queries = [
        SubQuery(query="Lyon cuisine", probability=0.2),
        SubQuery(query="Paris museums", probability=0.6),
        SubQuery(query="paris  MUSEUMS?", probability=0.9),
        SubQuery(query="capital of France", probability=-1),
        SubQuery(query=" ", probability=0.5),
    ]
    kept, dropped = normalize_queries(queries, previous=["Capital of France"])
    assert [q.query for q in kept] == ["Paris museums", "Lyon cuisine"]
    assert sum(q.probability for q in kept) == pytest.approx(1.0)
    assert kept[0].probability == pytest.approx(0.75)
    assert dropped == ["paris MUSEUMS?", "capital of France", ""]
    assert best_query(kept) == "Paris museums"
    assert best_query([]) is None


def test_normalize_queries_all_zero_share_equally():
    kept, _ = normalize_queries([{"query": "a", "probability": 0}, {"query": "b", "probability": "0"}])
    assert [q.probability for q in kept] == [0.5, 0.5]


def test_run_rewrite_picks_most_probable_new_query(scripted, trace):
    answer = {"queries": [{"query": "Who founded X?", "probability": 0.7}, {"query": "X founder", "probability": 0.2},
                          {"query": "X founding year", "probability": 0.1}]}
    with scripted([answer]) as lm:
        out = RewriteStep()(question="Who founded X?", context="ctx", previous_queries=["Who founded X?"], n=3)
    assert out.best == "X founder"
    assert [q.query for q in out.queries] == ["X founder", "X founding year"]
    assert "[[ ## n ## ]]\n3" in lm.history[-1]["messages"][-1]["content"]
    assert "repeated" in trace.errors()[0]["error"]


def test_run_rewrite_only_repeats_retries_then_falls_back(scripted, trace):
    repeat = {"queries": [{"query": "q1", "probability": 1.0}]}
    with scripted([repeat, repeat]):
        out = RewriteStep()(question="q", context="c", previous_queries=["q1"], n=1)
    assert out.fallback is True and out.best is None and out.queries == []
    assert [e["action"] for e in trace.errors()] == ["retried", "fallback"]


# --- sufficiency / judge ----------------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [(0.4, 0.4), (85.0, 0.85), (-0.2, 0.0), (250.0, 1.0), (float("nan"), 0.0)])
def test_sufficiency_confidence_is_clamped(raw, expected):
    pred, problems = sufficiency_validator(dspy.Prediction(verdict="Refine", confidence=raw, missing=" a  b "))
    assert pred.confidence == pytest.approx(expected)
    assert pred.missing == "a b"
    assert bool(problems) == (raw != 0.4)


def test_run_sufficiency_fallback_verdict(scripted, trace):
    with scripted([{"nope": 1}, {"nope": 1}]):
        out = SufficiencyStep()(question="q", context="c", default_verdict="Sufficient")
    assert (out.verdict, out.fallback) == ("Sufficient", True)


def test_run_judge(scripted, trace):
    with scripted([{"rationale": "same city", "match": True}]) as lm:
        out = JudgeStep()(question="Capital of France?", gold_answers=["Paris", "City of Paris"], prediction="paris")
    assert out.match is True and out.fallback is False
    assert '"City of Paris"' in lm.history[-1]["messages"][-1]["content"]


def test_missing_that_copies_the_instructions_or_the_context_is_dropped_and_recorded():
    import dspy

    from ragnet.programs.trace import Trace
    from ragnet.signatures.step import recording
    from ragnet.signatures.sufficiency import SufficiencyStep

    context = "[c1] Ed Wood: Ed Wood was an American filmmaker, actor and writer born in New York in 1924."
    cases = [
        ("the director of the film that won X", ""),
        ("Ed Wood was an American filmmaker, actor and writer born in New York", ""),
        (" ".join(["word"] * 30), ""),
        ("the nationality of Scott Derrickson", "the nationality of Scott Derrickson"),
    ]
    for said, kept in cases:
        lm = dspy.utils.DummyLM([{"verdict": "Refine", "confidence": 0.5, "missing": said}])
        with dspy.context(lm=lm, adapter=dspy.ChatAdapter()), recording(Trace()) as trace:
            out = SufficiencyStep()(question="Were they both American?", context=context)
        assert out.missing == kept and out.verdict == "Refine"
        repairs = [e for e in trace.errors() if e["action"] == "repaired"]
        assert bool(repairs) == (kept == "") and all("dropped 'missing'" in e["error"] for e in repairs)


def test_echoes_of_the_question_or_an_earlier_query_are_refused_narrower_queries_are_not():
    from ragnet.signatures.rewrite import is_echo

    q = "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert is_echo("Scott Derrickson and Ed Wood same nationality", q)
    assert is_echo("were scott derrickson, ed wood of same nationality", q)
    assert not is_echo("Scott Derrickson nationality", q)  # one side of the comparison
    assert not is_echo("Ed Wood birthplace", q)  # a new term
    assert is_echo("Ed Wood director nationality", q, previous=["Ed Wood director nationality American"])


def test_the_rewrite_step_retries_and_falls_back_when_it_only_echoes():
    import dspy
    from dspy.utils import DummyLM

    from ragnet.signatures.rewrite import RewriteStep

    q = "Were Scott Derrickson and Ed Wood of the same nationality?"
    echo = {"queries": [{"query": q, "probability": 1.0}]}
    with dspy.context(lm=DummyLM([echo, echo])):
        out = RewriteStep(retries=1)(question=q, context="", previous_queries=[], n=1)
    assert out.best is None and out.fallback
    good = {"queries": [{"query": "Scott Derrickson birthplace", "probability": 1.0}]}
    with dspy.context(lm=DummyLM([echo, good])):
        out = RewriteStep(retries=1)(question=q, context="", previous_queries=[], n=1)
    assert out.best == "Scott Derrickson birthplace" and not out.fallback
