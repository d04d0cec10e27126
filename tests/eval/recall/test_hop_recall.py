"""Hop recall (``ragnet eval hops``): the first context, who needs a hop, each policy's follow-up
searches and the rewrite step's failures, with a scripted LM for the rewrite policies."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from ragnet import Document, Index
from ragnet.errors import InputError
from ragnet.eval.recall.hop_recall import HopEvaluator, parse_policies
from ragnet.eval.run.datasets import QARecord

Q = "Which film starred the actress?"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = [Document(id="film", title="Kiss and Tell", text="Kiss and Tell is a film starring Shirley Temple."),
            Document(id="st", title="Shirley Temple", text="Shirley Temple was an ambassador to Ghana."),
            Document(id="gh", title="Ghana", text="Ghana is a country in West Africa."),
            Document(id="ot", title="Other", text="Another film starred another actress.")]
    return Index.build(docs, tmp_path_factory.mktemp("hops") / "i", show_progress=False)


QUESTIONS = [QARecord(id="hop", question=Q, answers=["x"], gold_titles=["Kiss and Tell", "Shirley Temple"]),
             QARecord(id="one", question="What is Ghana?", answers=["x"], gold_titles=["Ghana"])]


def run(index, policies, lm=None):
    evaluator = HopEvaluator(index, QUESTIONS, policies=policies, budget=435, searches=1, k=1, n_queries=1,
                             show_progress=False)
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        return evaluator()


def test_bridge_finds_the_second_document_without_an_lm(index):
    stats = run(index, ["bridge"])["policies"]["bridge"]
    assert (stats["questions"], stats["needs_hop"], stats["found"], stats["hop_recall"]) == (2, 1, 1, 1.0)
    assert "rewrite_calls" not in stats


def test_an_echoing_rewrite_is_a_failure_and_the_bridge_fills_in(index):
    echo = {"queries": [{"query": Q, "probability": 1.0}]}
    summary = run(index, ["rewrite", "rewrite+bridge"], DummyLM([echo] * 4))
    lm_only, both = summary["policies"]["rewrite"], summary["policies"]["rewrite+bridge"]
    assert lm_only["rewrite_failures"] == {"no new query": 1, "empty": 0, "wrong form": 0}
    assert lm_only["rewrite_failure_rate"] == 1.0 and lm_only["found"] == 0 and lm_only["searches"] == 0
    assert both["found"] == 1 and both["searches"] == 1


def test_a_useful_rewrite_counts_and_a_wrong_count_is_a_wrong_form(index):
    good = {"queries": [{"query": "Shirley Temple", "probability": 0.6}, {"query": "Temple career", "probability": 0.4}]}
    stats = run(index, ["rewrite"], DummyLM([good]))["policies"]["rewrite"]
    assert stats["found"] == 1 and stats["rewrite_failures"]["wrong form"] == 1  # two queries for one asked


def test_policies_are_checked_by_name():
    assert parse_policies("rewrite, bridge") == ["rewrite", "bridge"]
    with pytest.raises(InputError, match="unknown policy guess") as err:
        parse_policies("bridge,guess")
    assert err.value.argument == "policies"


def test_bridge_reports_whether_the_second_hop_survives_the_pack(index):
    stats = run(index, ["bridge"])["policies"]["bridge"]
    assert stats["all_gold_first"] == 0.5  # "one" holds its only gold document, "hop" lacks Shirley Temple
    # this budget holds one document: the hop's hit cannot join the film's page, and "one" keeps Ghana
    assert stats["all_gold_packed"] == 0.5


def test_the_one_query_step_names_the_bridge_entity_and_an_echo_falls_back_to_the_bridge(index):
    named = {"entity": "Shirley Temple", "query": "Shirley Temple ambassador"}
    stats = run(index, ["next"], DummyLM([named]))["policies"]["next"]
    assert stats["found"] == 1 and stats["rewrite_failure_rate"] == 0.0
    echo = {"entity": "", "query": Q}
    summary = run(index, ["next", "next+bridge"], DummyLM([echo] * 4))
    assert summary["policies"]["next"]["rewrite_failures"]["no new query"] == 1
    assert summary["policies"]["next"]["found"] == 0 and summary["policies"]["next+bridge"]["found"] == 1


def test_a_given_rewrite_step_serves_the_policies_of_its_form(index):
    from ragnet.signatures import NextQueryStep

    step = NextQueryStep()
    step.predict.demos = [dspy.Example(question="q", context="c", previous_queries=["q"], entity="E", query="E")]
    evaluator = HopEvaluator(index, QUESTIONS, policies=["next"], budget=435, searches=1, k=1,
                             rewrite_step=step, program="compiled.json", show_progress=False)
    assert evaluator.steps == {"next": step} and evaluator.settings()["program"] == "compiled.json"
    lm = DummyLM([{"entity": "Shirley Temple", "query": "Shirley Temple"}])
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        assert evaluator()["policies"]["next"]["found"] == 1
    assert "E" in str(lm.history[-1]["messages"])  # the given step's demo reached the prompt
