"""A program's ``pred.confidence``: the reader's probability of its answer, where its LM reports
token logprobs, recorded on the answer's trace event; None (and no field) where it does not."""

from __future__ import annotations

import math

import dspy
from dspy.lm15 import Message, Response, TextPart, TokenLogprob, Usage

from ragnet.programs import OneShotRAG
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"


class LogprobEngine:
    """A DSPy engine that answers "12,345" citing c1, with a logprob per piece of its reply, as the
    llama.cpp engine reports them when asked; it records whether each request asked."""

    supported_params = frozenset({"temperature", "max_tokens", "logprobs", "top_logprobs"})
    PIECES = (("[[ ## answer ## ]]\n", -0.05), ("12", -0.2), (",345", -0.3),
              ("\n\n[[ ## evidence_ids ## ]]\n[\"c1\"]\n\n[[ ## completed ## ]]", -0.4))

    def __init__(self) -> None:
        self.asked: list[bool] = []

    def complete(self, request):
        asked = request.config.logprobs is not None
        self.asked.append(asked)
        text = "".join(piece for piece, _ in self.PIECES)
        logprobs = tuple(TokenLogprob(token=p, logprob=lp) for p, lp in self.PIECES) if asked else None
        return Response(id=None, model="scripted", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=10, output_tokens=4), logprobs=logprobs)


def test_confidence_from_an_lm_that_reports_logprobs(yearbook_index, dspy_state):
    engine = LogprobEngine()
    lm = dspy.LM("scripted-logprobs", engine=engine, temperature=0.0, cache=False)
    with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        pred = OneShotRAG(yearbook_index, 600)(question=Q)
    assert pred.answer == "12,345" and engine.asked == [True]
    assert pred.confidence == round(math.exp(-0.5), 4)  # "12" and ",345", not the reply's other tokens
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event["confidence"] == pred.confidence


def test_no_confidence_from_an_lm_without_logprobs(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = OneShotRAG(yearbook_index, 600)(question=Q)
    assert pred.answer and pred.confidence is None
    assert all("confidence" not in e for e in pred.trace if e["step"] == "answer")
