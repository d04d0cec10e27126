"""Evaluation metrics against hand-computed values: gold recall, stage retention, redundancy,
the LLM judge (with its exact-match shortcut), one scored row, aggregates and the sign test, and
the same figures as DSPy metrics (``program_metric``)."""

from __future__ import annotations

import dspy
import numpy as np
import pytest

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.eval.run.datasets import QARecord
from ragnet.eval.metrics import (
    AnswerJudge,
    aggregate,
    context_redundancy,
    gold_chunks,
    gold_recall,
    paired_comparison,
    percentile,
    program_metric,
    score_prediction,
    sign_test,
    stage_retention,
)
from tests.programs.scripted import ProgramLM


class FakeIndex:
    """Chunks with ids, doc ids and titles, and fixed vectors (enough for gold maps and redundancy)."""

    def __init__(self, rows):
        self.chunks = [Chunk(id=cid, doc_id=doc, title=title, text="t", tokens=1) for cid, doc, title, _ in rows]
        self._vec = {cid: np.asarray(v, dtype=np.float32) for cid, _, _, v in rows}

    def __len__(self):
        return len(self.chunks)

    def vectors(self, ids):
        return np.stack([self._vec[i] for i in ids])


INDEX = FakeIndex([
    ("p1#0", "p1", "Paris", [1.0, 0.0]),
    ("p1#1", "p1", "Paris", [1.0, 0.0]),
    ("r1#0", "r1", "Rome", [0.0, 1.0]),
    ("o1#0", "o1", "Oslo", [0.6, 0.8]),
])


def test_answer_metrics_work_as_dspy_metrics():
    ex = dspy.Example(question="Who?", answers=["Alexander Fleming"]).with_inputs("question")
    pred = dspy.Prediction(answer="Fleming")
    em, f1, contains = program_metric("em"), program_metric("f1"), program_metric("contains")
    assert em(ex, pred) == 0.0
    assert f1(ex, pred) == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # precision 1/1, recall 1/2
    assert contains(ex, dspy.Prediction(answer="It was Alexander Fleming.")) == 1.0
    assert em(ex, dspy.Prediction(answer="alexander fleming!"), trace=None) == 1.0


def test_gold_recall_by_title_and_by_chunk_id_without_index():
    rec = QARecord(id="q", question="?", answers=["a"], gold_titles=["Paris", "Rome"])
    # with an index: titles map to chunks (doc ids p1/r1 differ from titles)
    assert gold_recall(rec, ["p1#1", "o1#0"], INDEX) == {"all": 0.0, "fraction": 0.5, "n_gold": 2}
    assert gold_recall(rec, ["p1#0", "r1#0"], INDEX)["all"] == 1.0
    # without an index the document part of the chunk id is matched (pooled sets: doc id = title)
    assert gold_recall(rec, ["Paris#3", "Rome#0"])["all"] == 1.0
    assert gold_recall(QARecord(id="q", question="?", answers=["a"]), ["x#0"]) == {
        "all": None, "fraction": None, "n_gold": 0}


def test_gold_passage_ids_win_and_fall_back_to_titles_when_absent_from_the_index():
    rec = QARecord(id="q", question="?", answers=["a"], gold_titles=["Rome"], gold_passage_ids=["o1"])
    assert gold_chunks(rec, INDEX) == {"o1": {"o1#0"}}
    missing = QARecord(id="q", question="?", answers=["a"], gold_titles=["Rome"], gold_passage_ids=["zz"])
    assert gold_chunks(missing, INDEX) == {"Rome": {"r1#0"}}


def test_gold_recall_metrics_take_an_example_and_a_prediction():
    ex = dspy.Example(question="?", answers=["a"], gold_titles=["Paris", "Rome"]).with_inputs("question")
    pred = dspy.Prediction(answer="a", context=["p1#0"])
    assert program_metric("gold_all", index=INDEX)(ex, pred) == 0.0
    assert program_metric("recall", index=INDEX)(ex, pred) == 0.5
    with pytest.raises(InputError, match="needs the index"):
        program_metric("gold_all")


def test_stage_retention_follows_a_oneshot_trace():
    trace = [
        {"step": "search", "retrieved": ["A#0", "B#0", "C#0", "D#0"]},
        {"step": "filter", "kept": ["A#0", "B#0", "C#0"], "dropped": [{"id": "D#0", "reason": "year"}],
         "added": [{"id": "E#0", "reason": "title"}]},
        {"step": "crop", "cropped": [{"id": "A#0", "tokens_before": 100, "tokens_after": 40}]},
        {"step": "select", "kept": ["A#0", "E#0"]},
        {"step": "answer", "evidence": ["A#0"]},
    ]
    gold = {"A": set(), "C": set()}
    stages = stage_retention(trace, ["A#0", "E#0"], gold)
    assert list(stages) == ["retrieved", "filter", "crop", "select", "final"]
    assert stages["retrieved"] == {"chunks": 4, "gold": 2}
    assert stages["filter"] == {"chunks": 4, "gold": 2, "added": 1, "dropped": 1}
    assert stages["crop"] == {"chunks": 4, "gold": 2, "cropped": 1, "tokens_saved": 60}
    assert stages["select"] == {"chunks": 2, "gold": 1}
    assert stages["final"] == {"chunks": 2, "gold": 1}


def test_a_routers_probe_counts_as_a_search_and_its_selection_is_not_the_agents():
    """The hard route's agent ran no crop of its own: the probe's crop and select must not show as its stages."""
    trace = [
        {"step": "search", "retrieved": ["A#0", "B#0"], "probe": True},
        {"step": "crop", "cropped": [{"id": "A#0", "tokens_before": 90, "tokens_after": 30}], "probe": True},
        {"step": "select", "kept": ["A#0"], "probe": True},
        {"step": "route", "route": "hard"},
        {"step": "search", "turn": 1, "retrieved": ["B#0", "C#0"]},
    ]
    stages = stage_retention(trace, ["B#0", "C#0"], {"A": set(), "C": set()})
    assert list(stages) == ["retrieved", "final"]
    assert stages["retrieved"] == {"chunks": 3, "gold": 2} and stages["final"] == {"chunks": 2, "gold": 1}


def test_stage_retention_follows_deletions_and_noise_removal():
    trace = [
        {"step": "search", "turn": 1, "retrieved": ["A#0", "B#0"]},
        {"step": "delete", "turn": 1, "deleted": ["A#0"]},
        {"step": "search", "turn": 2, "retrieved": ["B#0", "C#0", "D#0"]},
        {"step": "delete", "turn": 2, "deleted": ["D#0"]},
        {"step": "noise", "kept": ["C#0"], "removed": ["B#0"]},
    ]
    stages = stage_retention(trace, ["C#0"], {"A": set(), "C": set()})
    assert stages["retrieved"] == {"chunks": 4, "gold": 2}
    assert stages["delete"] == {"chunks": 2, "gold": 1, "removed": 2}  # B, C left; gold A deleted
    assert stages["noise"] == {"chunks": 1, "gold": 1, "removed": 1}


def test_stage_gold_metric_reads_the_trace():
    pred = dspy.Prediction(context=["C#0"], trace=[{"step": "search", "retrieved": ["A#0", "C#0"]},
                                                    {"step": "delete", "deleted": ["A#0"]}])
    ex = dspy.Example(question="?", answers=["x"], gold_titles=["A", "C"]).with_inputs("question")
    index = FakeIndex([("A#0", "A", "A", [1.0, 0.0]), ("C#0", "C", "C", [0.0, 1.0])])
    assert program_metric("recall@retrieved", index=index)(ex, pred) == 1.0
    assert program_metric("recall@delete", index=index)(ex, pred) == 0.5
    assert program_metric("recall@select", index=index)(ex, pred) == 0.0  # no such stage in this run
    with pytest.raises(InputError, match="unknown stage"):
        program_metric("recall@nope", index=index)


def test_redundancy_is_mean_pairwise_cosine_and_undefined_below_two_chunks():
    # cos(p1#0, p1#1) = 1, cos(p1#0, r1#0) = 0, cos(p1#1, r1#0) = 0 -> mean 1/3
    assert context_redundancy(INDEX, ["p1#0", "p1#1", "r1#0"]) == pytest.approx(1 / 3, abs=1e-6)
    assert context_redundancy(INDEX, ["p1#0"]) is None
    redundancy = program_metric("redundancy", index=INDEX)
    assert redundancy(None, dspy.Prediction(context=["p1#0", "o1#0"])) == pytest.approx(0.6, abs=1e-6)
    assert redundancy(None, dspy.Prediction(context=["p1#0"])) == 0.0  # undefined counts as none
    assert not redundancy.greater_is_better and redundancy(None, dspy.Prediction(context=[]), trace=[]) is True
    lm_calls = program_metric("lm_calls")
    assert lm_calls(None, dspy.Prediction(usage={"lm_calls": 3})) == 3.0 and not lm_calls.greater_is_better


def _judge_lm(match: bool) -> ProgramLM:
    return ProgramLM(judge=lambda p, n: {"rationale": "r", "match": match})


def test_judge_skips_the_lm_on_exact_match_and_calls_it_otherwise():
    engine = _judge_lm(True)
    judge = AnswerJudge(lm=engine.lm())
    same = judge.judge("Capital?", ["Paris"], "paris")
    assert (same.match, same.called, same.lm_calls) == (1.0, False, 0)
    assert engine.calls == []
    para = judge.judge("Capital?", ["Paris"], "the city of Paris, France")
    assert (para.match, para.called, para.lm_calls) == (1.0, True, 1)
    assert para.seconds >= 0 and engine.steps() == ["judge"]
    empty = judge.judge("Capital?", ["Paris"], "  ")
    assert (empty.match, empty.called) == (0.0, False)
    reject = AnswerJudge(lm=_judge_lm(False).lm())
    ex = dspy.Example(question="Capital?", answers=["Paris"]).with_inputs("question")
    assert reject(ex, dspy.Prediction(answer="Lyon")) == 0.0


def test_score_prediction_builds_a_full_row():
    rec = QARecord(id="q", question="Capital of Italy?", answers=["Rome"], gold_titles=["Rome"])
    pred = dspy.Prediction(
        answer="Rome", evidence=["r1#0"], context=["r1#0", "p1#0"],
        trace=[{"step": "search", "retrieved": ["r1#0", "p1#0", "o1#0"]}],
        usage={"lm_calls": 1, "cached_calls": 0, "input_tokens": 100, "output_tokens": 5, "seconds": 1.5,
               "searches": 1, "turns": 1, "context_tokens": 2, "lm_errors": 0},
    )
    row = score_prediction(rec, pred, INDEX, AnswerJudge(lm=_judge_lm(False).lm()))
    assert (row["em"], row["f1"], row["llm_match"]) == (1.0, 1.0, 1.0)
    assert row["judge"]["called"] is False  # exact match: no judge call
    assert (row["gold_all"], row["gold_fraction"], row["n_gold"]) == (1.0, 1.0, 1)
    assert row["stages"]["retrieved"] == {"chunks": 3, "gold": 1}
    assert row["redundancy"] == pytest.approx(0.0, abs=1e-6)
    assert row["chunks"] == 2 and row["usage"]["input_tokens"] == 100
    assert score_prediction(rec, pred, INDEX)["llm_match"] is None  # no judge


def _row(qid, em, llm, gold, seconds, turns=1, **extra):
    return {"id": qid, "em": em, "f1": em, "contains": em, "llm_match": llm, "gold_all": gold,
            "gold_fraction": gold, "n_gold": 1, "redundancy": 0.5, "chunks": 2,
            "usage": {"seconds": seconds, "turns": turns, "searches": turns, "lm_calls": 2, "input_tokens": 10,
                      "output_tokens": 1, "lm_errors": 0},
            "stages": {"retrieved": {"chunks": 4, "gold": 1}, "final": {"chunks": 2, "gold": gold}},
            "judge": {"called": em == 0, "seconds": 0.5 if em == 0 else 0.0}, **extra}


def test_aggregate_counts_errors_as_wrong_and_takes_latency_from_rows_that_ran():
    rows = [_row("a", 1.0, 1.0, 1, 1.0), _row("b", 0.0, 1.0, 0, 2.0, turns=2), _row("c", 0.0, 0.0, 1, 4.0),
            {"id": "d", "error": "boom", "em": 0.0, "f1": 0.0, "llm_match": 0.0, "gold_all": 0.0, "n_gold": 1}]
    agg = aggregate(rows)
    assert (agg["n"], agg["errors"]) == (4, 1)
    assert agg["em"] == 0.25 and agg["llm_match"] == 0.5
    assert agg["gold_all"] == 0.5 and agg["gold_questions"] == 4
    assert agg["latency_p50"] == 2.0 and agg["latency_p95"] == pytest.approx(3.8)
    assert agg["judge_calls"] == 2 and agg["judge_seconds"] == 1.0
    assert agg["turns_hist"] == {"1": 2, "2": 1}
    assert agg["stages"]["final"]["gold_retention"] == pytest.approx(2 / 3)
    assert aggregate([{"id": "x", "em": 1.0, "f1": 1.0, "contains": 1.0, "llm_match": None}])["llm_match"] is None


def test_aggregate_takes_tokens_and_latency_from_rows_that_ran_live():
    live = [_row("a", 1.0, 1.0, 1, 4.0), _row("b", 0.0, 1.0, 1, 6.0)]
    cached = _row("c", 1.0, 1.0, 1, 0.01)
    cached["usage"].update(cached_calls=2, input_tokens=0, output_tokens=0)
    agg = aggregate(live + [cached])
    assert agg["cost_rows"] == 2 and agg["latency_p50"] == 5.0 and agg["input_tokens"] == 10
    assert agg["lm_calls"] == 2 and agg["cached_calls"] == pytest.approx(2 / 3)  # counts use every row
    assert agg["program_seconds"] == pytest.approx(10.01)  # overhead is measured against all program time
    only_cached = aggregate([cached])
    assert only_cached["cost_rows"] == 1 and only_cached["latency_p50"] == 0.01  # nothing better to report
    assert only_cached["cost_all_cached"] is True and agg["cost_all_cached"] is False


def test_percentile_sign_test_and_paired_comparison():
    assert percentile([], 50) is None and percentile([3.0], 95) == 3.0
    assert sign_test(9, 1) == pytest.approx(2 * 11 / 1024, abs=1e-6)
    assert sign_test(0, 0) == 1.0
    base = [{"id": "a", "em": 0.0}, {"id": "b", "em": 1.0}, {"id": "c", "em": 0.0}]
    mine = [{"id": "a", "em": 1.0}, {"id": "b", "em": 1.0}, {"id": "c", "em": 1.0}, {"id": "z", "em": 1.0}]
    cmp = paired_comparison(mine, base, "em")
    boot = cmp.pop("bootstrap")
    assert cmp == {"metric": "em", "questions": 3, "delta": pytest.approx(2 / 3, abs=1e-6), "wins": 2, "losses": 0,
                   "ties": 1, "p_value": 0.5}
    # differences 1, 0, 1: every resample has a mean >= 0, 1/27 of them exactly 0
    assert boot["mean"] == pytest.approx(2 / 3, abs=1e-6) and boot["low"] == 0.0 and boot["high"] == 1.0
    assert boot["p_value"] == pytest.approx(2 / 27, abs=0.02)
