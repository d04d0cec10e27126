"""The rewrite step compiled on hop recall: cases from questions whose one-shot context lacks a
gold document, the metric a real search, and the compiled step installed into an agent."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from ragnet import Document, Index
from ragnet.errors import InputError
from ragnet.eval.run.datasets import QARecord
from ragnet.optimize.cases import rewrite_cases
from ragnet.optimize.step_metrics import hop_metric
from ragnet.optimize.steps import STEPS, compile_step

Q = "Which post did the star of the film Kiss and Tell hold?"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = [Document(id="film", title="Kiss and Tell", text="Kiss and Tell is a film starring Shirley Temple."),
            Document(id="st", title="Shirley Temple", text="Shirley Temple was an ambassador to Ghana."),
            Document(id="gh", title="Ghana", text="Ghana is a country in West Africa."),
            Document(id="ot", title="Other", text="Another film of that year starred another actress, and it was shot in a studio far away.")]
    return Index.build(docs, tmp_path_factory.mktemp("rw") / "i", show_progress=False)


HOP = QARecord(id="hop", question=Q, answers=["x"], gold_titles=["Kiss and Tell", "Shirley Temple"])
ONE = QARecord(id="one", question="What is Ghana?", answers=["x"], gold_titles=["Ghana"])


def test_cases_come_from_questions_that_need_a_hop_labelled_with_the_missing_title(index):
    cases = rewrite_cases([HOP, ONE], index=index, budget=445, k=1)
    assert [c.id for c in cases] == ["hop"]  # "one" holds its only gold document already
    case = cases[0]
    assert (case.entity, case.query, case.named) == ("Shirley Temple", "Shirley Temple", True)
    assert set(case.inputs().keys()) == {"question", "context", "previous_queries", "n"}
    assert "Kiss and Tell" in case.context and list(case.missing) == ["Shirley Temple"]
    with pytest.raises(InputError, match="no question yields a rewrite case"):
        rewrite_cases([ONE], index=index, budget=445, k=1)


def test_the_metric_searches_the_query(index):
    case = rewrite_cases([HOP], index=index, budget=445, k=1)[0]
    metric = hop_metric(index, k=1)
    assert metric(case, dspy.Prediction(best="Shirley Temple ambassador")) == 1.0
    assert metric(case, dspy.Prediction(best="Ghana West Africa")) == 0.0
    assert metric(case, dspy.Prediction(best=None)) == 0.0
    assert "Shirley Temple" in metric.explain(case, dspy.Prediction(best="film"), 0.0)
    with pytest.raises(ValueError, match="needs the index"):
        hop_metric()(case, dspy.Prediction(best="x"))


def test_compiling_the_one_query_step_keeps_demos_that_find_the_document(index):
    from ragnet.signatures import NextQueryStep

    class Agent(dspy.Module):  # the smallest program with a one-query rewrite step
        def __init__(self):
            super().__init__()
            self.rewrite = NextQueryStep()

        def steps(self):
            return {"rewrite": self.rewrite}

        def set_step(self, name, step):
            setattr(self, name, step)

    cases = rewrite_cases([HOP] * 4, index=index, budget=445, k=1)
    assert STEPS["rewrite"].needs_index
    lm = DummyLM([{"entity": "Shirley Temple", "query": "Shirley Temple"}] * 40)
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        result = compile_step(Agent(), "rewrite", cases[:2], metric=hop_metric(index, k=1), valset=cases[2:],
                              optimizer="bootstrap", effort="light", progress=False, log=lambda m: None)
    demos = result.program.rewrite.predict.demos
    assert demos and all(d["entity"] == "Shirley Temple" for d in demos)
    assert result.after == 1.0
