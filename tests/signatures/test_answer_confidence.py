"""The reader's confidence: the probability of the tokens that spell its answer field."""

from __future__ import annotations

import math

import dspy
import pytest

from ragnet.signatures.answer_confidence import field_probability, reports_logprobs


def _content(*pieces):
    return {"content": [{"token": t, "logprob": lp} for t, lp in pieces]}


def test_json_reply_multiplies_only_the_answer_tokens():
    reply = _content(('```json\n{\n  "', -0.5), ('answer": "', -0.01), ("Kib", -0.9), ("ibytes", -0.1),
                     ('",\n  "evidence_ids": ["c1"]\n}', -2.0))
    assert field_probability(reply) == pytest.approx(math.exp(-1.0))


def test_a_token_straddling_the_value_counts_and_escaped_quotes_stay_inside():
    reply = _content(('{"answer": "say ', -0.2), ('\\"hi\\"', -0.3), ('"}', -0.4))
    assert field_probability(reply) == pytest.approx(math.exp(-0.5))
    assert field_probability(_content(('{"answer": "50"}', -0.7))) == pytest.approx(math.exp(-0.7))


def test_dspy_sections_reply():
    reply = _content(("[[ ## answer ## ]]\n", -0.1), ("7", -0.2), (" characters", -0.3),
                     ("\n\n[[ ## evidence_ids ## ]]\n['c2']", -1.0))
    assert field_probability(reply) == pytest.approx(math.exp(-0.5))


@pytest.mark.parametrize("logprobs", [None, {}, {"content": []}, _content(('{"other": "x"}', -0.1)),
                                      _content(('{"answer": ""}', -0.1))])
def test_no_tokens_no_field_or_an_empty_answer_give_none(logprobs):
    assert field_probability(logprobs) is None


def test_only_engines_that_report_logprobs_are_asked():
    class Engine:
        supported_params = frozenset({"temperature", "logprobs"})

        def complete(self, request):  # never called here
            raise AssertionError

    class Quiet(Engine):
        supported_params = frozenset({"temperature"})

    assert reports_logprobs(dspy.LM("local-test", engine=Engine()))
    assert reports_logprobs(dspy.LM("local-test", engine=Engine(), temperature=0.0))
    assert not reports_logprobs(dspy.LM("local-test", engine=Engine(), temperature=0.7))  # a sampled answer
    assert not reports_logprobs(dspy.LM("local-test", engine=Quiet()))
    assert not reports_logprobs(dspy.utils.DummyLM([{"answer": "x"}]))
