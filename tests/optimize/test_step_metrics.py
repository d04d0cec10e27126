"""Step and program metrics against hand-computed examples, in every shape optimizers call them."""

from __future__ import annotations

from types import SimpleNamespace

import dspy
import pytest

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.eval.metrics.program_metrics import evidence_recall, program_metric
from ragnet.optimize.step_metrics import crop_metric, crop_score, verdict_metric
from tests.optimize.conftest import OptimizeLM

SENTS = ["Paris is the capital of France.", " It has 2 million people.", " The Seine flows through it.",
         " Cats like naps."]


@pytest.mark.parametrize("output, recall, precision, score", [
    ("Paris is the capital of France.", 1.0, 1.0, 1.0),                              # exactly the gold
    ("".join(SENTS), 1.0, 0.25, 5 * 0.25 / (4 * 0.25 + 1)),                          # everything: 0.625
    ("Paris is the capital of France. It has 2 million people.", 1.0, 0.5, 5 * 0.5 / 3),  # one spare: 0.833
    ("Cats like naps.", 0.0, 0.0, 0.0),                                               # wrong sentence
    ("", 0.0, 0.0, 0.0),                                                              # nothing
    ("paris  is the CAPITAL of france.", 1.0, 1.0, 1.0),                              # case/space-insensitive
])
def test_crop_score_single_gold(output, recall, precision, score):
    got = crop_score(SENTS, [0], output)
    assert got["recall"] == pytest.approx(recall)
    assert got["precision"] == pytest.approx(precision)
    assert got["score"] == pytest.approx(score)


def test_crop_score_two_golds_half_found():
    # gold {0, 2}; kept {0, 3}: recall 1/2, precision 1/2 -> F2 = 5*.25/(4*.5+.5) = 0.5
    got = crop_score(SENTS, [0, 2], "Paris is the capital of France. Cats like naps.")
    assert (got["recall"], got["precision"], got["score"]) == pytest.approx((0.5, 0.5, 0.5))
    assert crop_score(SENTS, [0, 9], SENTS[0])["recall"] == 1.0  # out-of-range gold ids are ignored


def test_crop_metric_reads_the_case_and_prediction():
    case = dspy.Example(sentences=SENTS, gold_idx=[0])
    metric = crop_metric()
    assert metric(case, dspy.Prediction(relevant_text="".join(SENTS))) == pytest.approx(0.625)
    assert metric(case, dspy.Prediction(relevant_text="".join(SENTS)), trace=[]) is False  # below 0.8: no demo
    assert metric(case, dspy.Prediction(relevant_text=SENTS[0]), trace=[]) is True


def test_verdict_metric_and_its_gepa_feedback():
    refine = dspy.Example(verdict="Refine", missing_titles=["Ed Wood"], present_titles=["Scott Derrickson"])
    metric = verdict_metric()
    assert metric(refine, dspy.Prediction(verdict="Refine")) == 1.0
    assert metric(refine, dspy.Prediction(verdict="Sufficient")) == 0.0
    assert metric(refine, dspy.Prediction(verdict="Sufficient"), trace=[]) is False
    fb = metric.for_gepa()(refine, dspy.Prediction(verdict="Sufficient"), None, "assess", None)
    assert fb.score == 0.0 and "Ed Wood" in fb.feedback and "'Refine'" in fb.feedback and "wrong" in fb.feedback
    ok = metric.for_gepa()(dspy.Example(verdict="Sufficient", present_titles=["A", "B"]),
                           dspy.Prediction(verdict="Sufficient"))
    assert ok.score == 1.0 and "correct" in ok.feedback


def test_answer_metrics_f1_and_em():
    gold = dspy.Example(question="Capital?", answers=["Paris", "City of Paris"])
    f1, em = program_metric("f1"), program_metric("em")
    assert f1(gold, dspy.Prediction(answer="Paris, France")) == pytest.approx(2 / 3)
    assert em(gold, dspy.Prediction(answer="the city of Paris")) == 1.0
    assert em(gold, dspy.Prediction(answer="Lyon")) == 0.0
    assert f1(gold, dspy.Prediction(answer="Paris, France"), trace=[]) is False  # 0.67 < 0.8
    assert "Paris" in f1.for_gepa()(gold, dspy.Prediction(answer="Lyon")).feedback


def test_recall_metric_counts_gold_documents_in_the_final_context():
    ex = dspy.Example(gold_titles=["A", "B"])
    assert evidence_recall(ex, dspy.Prediction(context=["A#0", "A#1", "C#0", "gone#9"])) == 0.5
    assert evidence_recall(dspy.Example(gold_titles=["A"]), dspy.Prediction(context=["A#1"])) == 1.0
    assert evidence_recall(ex, dspy.Prediction(context=[])) == 0.0
    passage = dspy.Example(gold_titles=["Title A"], gold_passage_ids=["A"])  # passage ids win over titles
    assert evidence_recall(passage, dspy.Prediction(context=["A#0"])) == 1.0
    with pytest.raises(InputError, match="index"):
        program_metric("recall")


def test_program_recall_metric_scores_the_context_against_the_index():
    # Chunk ids say nothing about their document, so only the index can map them to gold titles.
    chunks = [Chunk(id=cid, doc_id=doc, title=doc, text="t", tokens=1)
              for cid, doc in [("p1", "Gold A"), ("p2", "Gold B"), ("p3", "Noise"), ("p4", "Gold A")]]
    index = SimpleNamespace(chunks=chunks)
    metric = program_metric("recall", index=index)
    assert metric.name == "recall" and metric.threshold == 1.0
    gold = dspy.Example(question="q?", gold_titles=["Gold A", "Gold B"]).with_inputs("question")
    half = dspy.Prediction(answer="x", context=["p4", "p3"])  # Gold A (second chunk) and a distractor
    full = dspy.Prediction(answer="x", context=["p3", "p2", "p1"])
    assert metric(gold, half) == 0.5
    assert metric(gold, full) == 1.0
    assert metric(gold, dspy.Prediction(answer="x", context=["p3"])) == 0.0
    assert metric(gold, half, trace=[]) is False  # 0.5 < threshold 1.0: not a demo
    assert metric(gold, full, trace=[]) is True
    assert program_metric("recall", index=index, threshold=0.5)(gold, half, trace=[]) is True
    fb = metric.for_gepa()(gold, half, None, "answer", None)
    assert fb.score == 0.5 and "50%" in fb.feedback and "Gold A, Gold B" in fb.feedback


def test_llm_match_skips_the_judge_on_exact_matches_and_asks_it_otherwise():
    engine = OptimizeLM(judge=lambda p, n: {"rationale": "same person", "match": "Robert Smith" in p})
    metric = program_metric("llm_match", judge_lm=engine.lm())
    gold = dspy.Example(question="Who?", answers=["Bob Smith"])
    with dspy.context(adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        assert metric(gold, dspy.Prediction(answer="bob smith")) == 1.0
        assert engine.calls == []
        assert metric(gold, dspy.Prediction(answer="Robert Smith")) == 1.0
        assert metric(gold, dspy.Prediction(answer="Alice")) == 0.0
    assert engine.steps() == ["judge", "judge"]


def test_unknown_metric_is_refused():
    with pytest.raises(InputError) as err:
        program_metric("bleu")
    assert err.value.argument == "metric" and "f1, em, strict, llm_match, recall" in str(err.value)


def test_the_family_is_shared_with_ragnet_eval():
    import ragnet.optimize
    from ragnet.eval.metrics import program_metrics

    assert ragnet.optimize.Metric is program_metrics.Metric and ragnet.optimize.program_metric is program_metric
    assert isinstance(verdict_metric(), program_metrics.Metric) and isinstance(crop_metric(), program_metrics.Metric)
