"""run_step: retries, lenient salvage, validation, fallback, LM exceptions, and what lands in the trace."""

from __future__ import annotations

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.signatures import (
    AssessSufficiency,
    GenerateAnswer,
    JudgeAnswer,
    Step,
    SufficiencyStep,
    StepOutputError,
    lenient_parse,
    recording,
    run_step,
)

DEFAULT = {"verdict": "Refine", "confidence": 0.0, "missing": ""}
GOOD = {"verdict": "Sufficient", "confidence": 0.8, "missing": ""}
MALFORMED = {"wrong_field": "no verdict here"}


def _suff(trace, **kw):
    return run_step(dspy.Predict(AssessSufficiency), step="sufficiency", trace=trace, default=DEFAULT,
                    question="q", context="c", **kw)


def test_ok_first_try_records_lm_step(scripted, trace):
    with scripted([GOOD]):
        pred = _suff(trace)
    assert (pred.verdict, pred.confidence, pred.fallback) == ("Sufficient", 0.8, False)
    assert trace.errors() == []
    (event,) = trace.of("lm_step")
    assert event["name"] == "sufficiency"
    assert event["outcome"] == "ok" and event["attempts"] == 1 and event["repaired"] is False
    assert event["seconds"] >= 0


def test_retries_after_malformed_answer_and_succeeds(scripted, trace):
    with scripted([MALFORMED, GOOD]) as lm:
        pred = _suff(trace, retries=1)
    assert pred.verdict == "Sufficient" and pred.fallback is False
    (error,) = trace.errors()
    assert error["failed_step"] == "sufficiency"
    assert error["action"] == "retried" and error["attempt"] == 1
    assert error["error_type"] == "AdapterParseError"
    assert trace.of("lm_step")[0]["outcome"] == "retried"
    assert trace.of("lm_step")[0]["attempts"] == 2
    # the retry bypasses the cache and samples: fresh rollout id, non-zero temperature
    assert lm.history[-1]["kwargs"] == {"rollout_id": 1, "temperature": 0.7}
    assert "rollout_id" not in lm.history[0]["kwargs"]


def test_falls_back_to_default_after_repeated_malformed_answers(scripted, trace):
    with scripted([MALFORMED, MALFORMED, MALFORMED]) as lm:
        pred = _suff(trace, retries=2)
    assert pred.fallback is True
    assert (pred.verdict, pred.confidence, pred.missing) == ("Refine", 0.0, "")
    assert len(lm.history) == 3
    assert [e["action"] for e in trace.errors()] == ["retried", "retried", "fallback"]
    assert all("AdapterParseError" in e["error"] for e in trace.errors())
    assert trace.of("lm_step")[0]["outcome"] == "fallback"


def test_default_is_copied_not_shared(scripted, trace):
    default = {"answer": "", "evidence_ids": []}
    with scripted([MALFORMED]):
        pred = run_step(dspy.Predict(GenerateAnswer), step="answer", trace=trace, default=default, retries=0,
                        question="q", context="c")
    pred.evidence_ids.append("x")
    assert default["evidence_ids"] == []


def test_chat_adapter_json_fallback_costs_a_second_call(scripted, trace):
    # DSPy's ChatAdapter retries a parse failure once with JSONAdapter (another LM call) before
    # raising; run_step's own retry comes after that.
    with scripted([MALFORMED, MALFORMED, GOOD], json_fallback=True) as lm:
        pred = _suff(trace, retries=1)
    assert len(lm.history) == 3
    assert pred.verdict == "Sufficient" and pred.fallback is False
    assert [e["action"] for e in trace.errors()] == ["retried"]


def test_lenient_parse_salvages_small_model_slips(scripted, trace):
    with scripted([{"verdict": "sufficient.", "confidence": "85%", "missing": ""}]) as lm:
        pred = _suff(trace, retries=0)
    assert len(lm.history) == 1  # salvaged without another LM call
    assert (pred.verdict, pred.confidence, pred.fallback) == ("Sufficient", pytest.approx(0.85), False)
    (event,) = trace.errors()
    assert event["action"] == "repaired" and "lenient parse" in event["error"]
    assert trace.of("lm_step")[0]["repaired"] is True


def test_lenient_parse_reads_comma_separated_ids():
    completion = "[[ ## answer ## ]]\nParis\n\n[[ ## evidence_ids ## ]]\nc1, c3\n\n[[ ## completed ## ]]"
    assert lenient_parse(GenerateAnswer, completion) == {"answer": "Paris", "evidence_ids": ["c1", "c3"]}
    assert lenient_parse(GenerateAnswer, '{"answer": "Paris", "evidence_ids": "[c2]"}') == {
        "answer": "Paris", "evidence_ids": ["c2"]}
    assert lenient_parse(JudgeAnswer, "[[ ## match ## ]]\nyes") == {"rationale": "", "match": True}


def test_lenient_parse_refuses_what_it_cannot_read():
    assert lenient_parse(AssessSufficiency, "[[ ## verdict ## ]]\nnot sufficient\n[[ ## confidence ## ]]\n0.5") is None
    assert lenient_parse(AssessSufficiency, "[[ ## verdict ## ]]\nRefine") is None  # confidence missing
    assert lenient_parse(AssessSufficiency, "") is None


def test_lm_exception_is_recorded_and_falls_back(engine_lm, trace):
    engine, lm = engine_lm([ConnectionError("server closed the connection"), ConnectionError("server closed the connection")])
    with dspy.context(lm=lm):
        pred = _suff(trace, retries=1)
    assert engine.calls == 2
    assert pred.fallback is True and pred.verdict == "Refine"
    errors = trace.errors()
    assert [e["action"] for e in errors] == ["retried", "fallback"]
    assert all(e["cause"] == "ConnectionError" for e in errors)
    assert "server closed the connection" in errors[0]["error"]


def test_an_engine_timeout_falls_back_without_a_retry(engine_lm, trace):
    engine, lm = engine_lm([TimeoutError("generation exceeded 30s"), TimeoutError("generation exceeded 30s")])
    with dspy.context(lm=lm):
        pred = _suff(trace, retries=1)
    assert engine.calls == 1 and pred.fallback is True
    assert [(e["action"], e["cause"]) for e in trace.errors()] == [("fallback", "TimeoutError")]
    assert trace.of("lm_step")[0]["outcome"] == "fallback"


def test_lm_exception_then_success(engine_lm, trace):
    good = ("[[ ## verdict ## ]]\nSufficient\n\n[[ ## confidence ## ]]\n0.9\n\n"
            "[[ ## missing ## ]]\n\n[[ ## completed ## ]]")
    engine, lm = engine_lm([ConnectionError("server went away"), good])
    with dspy.context(lm=lm):
        pred = _suff(trace, retries=1)
    assert engine.calls == 2
    assert (pred.verdict, pred.confidence, pred.fallback) == ("Sufficient", 0.9, False)
    (error,) = trace.errors()
    assert error["cause"] == "ConnectionError" and error["action"] == "retried"


def test_any_predictor_exception_is_caught(trace):
    def broken(**_):
        raise RuntimeError("boom")

    pred = run_step(broken, step="x", trace=trace, default={"a": 1}, retries=0)
    assert (pred.a, pred.fallback) == (1, True)
    assert trace.errors()[0]["error"] == "RuntimeError: boom"
    assert trace.errors()[0]["action"] == "fallback"


def test_validator_repairs_and_problems_are_recorded(scripted, trace):
    def validate(pred):
        pred.missing = pred.missing.upper()
        return pred, ["first problem", "second problem"]

    with scripted([{"verdict": "Refine", "confidence": 0.2, "missing": "year"}]):
        pred = _suff(trace, validate=validate)
    assert pred.missing == "YEAR" and pred.fallback is False
    assert [(e["error"], e["action"]) for e in trace.errors()] == [
        ("first problem", "repaired"), ("second problem", "repaired")]
    assert trace.of("lm_step")[0]["repaired"] is True


def test_validator_rejection_triggers_retry(scripted, trace):
    def validate(pred):
        if pred.verdict == "Refine" and not pred.missing:
            raise StepOutputError("Refine without a missing fact")
        return pred, []

    with scripted([{"verdict": "Refine", "confidence": 0.2, "missing": ""}, GOOD]):
        pred = _suff(trace, validate=validate)
    assert pred.verdict == "Sufficient"
    (error,) = trace.errors()
    assert error["error_type"] == "StepOutputError" and "without a missing fact" in error["error"]


def test_validator_receives_a_copy_of_the_dspy_prediction(trace):
    original = dspy.Prediction(answer="x", evidence_ids=["c1"])

    def validate(pred):
        pred.evidence_ids.append("c2")
        return pred, []

    pred = run_step(lambda **_: original, step="answer", trace=trace, default={}, validate=validate)
    assert pred.evidence_ids == ["c1", "c2"]
    assert original.evidence_ids == ["c1"]  # what DSPy keeps in its own trace is untouched
    assert "fallback" not in original


def test_zero_retries_means_one_attempt_and_trace_optional(scripted):
    with scripted([MALFORMED, GOOD]) as lm:
        pred = _suff(None, retries=0)
    assert pred.fallback is True and len(lm.history) == 1


def test_negative_retries_is_an_input_error(trace):
    with pytest.raises(InputError, match="retries"):
        run_step(lambda **_: None, step="x", trace=trace, default={}, retries=-1)


def test_step_module_exposes_its_predictor_and_records_into_the_running_trace(scripted, trace):
    module = Step(AssessSufficiency, name="sufficiency")
    assert [name for name, _ in module.named_predictors()] == ["predict"]
    with scripted([GOOD]):
        pred = module.run(default=DEFAULT, question="q", context="c")  # no trace passed: the fixture's is active
    assert pred.verdict == "Sufficient"
    assert trace.of("lm_step")[0]["name"] == "sufficiency"


def test_a_step_outside_any_program_records_nothing_and_still_falls_back(scripted):
    with scripted([MALFORMED] * 2):
        pred = SufficiencyStep(retries=1)(question="q", context="c")
    assert pred.fallback is True and pred.verdict == "Refine"


def test_each_thread_records_into_its_own_trace():
    """dspy.Evaluate calls one program from several threads; each call's steps must land in that
    call's trace, not a neighbour's."""
    import threading

    from dspy.utils import DummyLM

    from ragnet.programs.trace import Trace

    step = SufficiencyStep(retries=0)
    traces: dict[int, Trace] = {}
    barrier = threading.Barrier(4)

    def work(i: int) -> None:
        with dspy.context(lm=DummyLM([GOOD]), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
            with recording(Trace()) as t:
                barrier.wait()  # all four traces are active at once
                for _ in range(i + 1):
                    step(question=f"q{i}", context="c")
                traces[i] = t

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [len(traces[i].of("lm_step")) for i in range(4)] == [1, 2, 3, 4]


def test_step_arguments_are_checked():
    with pytest.raises(InputError, match="retries"):
        SufficiencyStep(retries=-1)
    with pytest.raises(InputError, match="signature"):
        Step()
    assert SufficiencyStep(enabled=False).enabled is False and SufficiencyStep().predict.config["max_tokens"] == 160


def test_chain_of_thought_salvage_and_retry_config(scripted, trace):
    from ragnet.signatures.answer import answer_validator

    answers = [
        {"reasoning": "r", "wrong": "x"},
        {"reasoning": "c1 says so", "answer": "Paris", "evidence_ids": "c1, c2"},
    ]
    with scripted(answers) as lm:
        pred = run_step(dspy.ChainOfThought(GenerateAnswer), step="answer", trace=trace,
                        default={"answer": "", "evidence_ids": []},
                        validate=answer_validator({"c1": "paris#0", "c2": "lyon#0"}),
                        question="q", context="[c1] ...")
    assert (pred.reasoning, pred.answer, pred.evidence_ids) == ("c1 says so", "Paris", ["paris#0", "lyon#0"])
    assert lm.history[-1]["kwargs"]["rollout_id"] == 1
    assert [e["action"] for e in trace.errors()] == ["retried", "repaired"]


def test_a_timed_out_attempt_is_not_retried():
    """The deadline bounds the step: a second attempt would spend a second --timeout."""
    from ragnet.programs.trace import Trace

    calls = []

    def slow(**_):
        calls.append(1)
        raise TimeoutError("no complete reply within the 5s timeout")

    trace = Trace()
    pred = run_step(slow, step="answer", trace=trace, default={"answer": ""}, retries=2, q="x")
    assert pred.fallback and len(calls) == 1
    assert [e["action"] for e in trace.of("lm_error")] == ["fallback"]
    assert trace.of("lm_step")[0]["attempts"] == 1


class BadRequestError(Exception):
    """Named as litellm's invalid-request errors are: run_step reads the type's name."""


def test_a_refused_request_option_is_dropped_and_asked_again_greedily_without_using_a_retry(trace):
    configs = []

    def server(**inputs):
        config = dict(inputs.get("config") or {})
        configs.append(config)
        if "logprobs" in config:
            raise BadRequestError("logprobs is not supported by this model")
        if len(configs) == 2:
            raise ValueError("off-format reply")
        return dspy.Prediction(answer="Paris")

    refused = []
    pred = run_step(server, step="answer", trace=trace, default={"answer": ""}, retries=1, on_refused=refused.append,
                    config={"logprobs": True, "top_logprobs": 1, "seed": 3}, q="x")
    # the second request is the first less the refused options (greedy, same seed); the retry after
    # its off-format reply is still there
    assert configs[1] == {"seed": 3} and pred.answer == "Paris" and not pred.fallback
    assert refused == [["logprobs", "top_logprobs"]]
    assert [e["action"] for e in trace.errors()] == ["dropped logprobs, top_logprobs", "retried"]
    assert trace.errors()[0]["dropped"] == ["logprobs", "top_logprobs"]
    assert trace.of("lm_step")[0]["attempts"] == 3


def test_an_invalid_request_naming_no_option_is_an_ordinary_failure(trace):
    calls = []

    def server(**inputs):
        calls.append(inputs.get("config"))
        raise BadRequestError("context length exceeded")

    pred = run_step(server, step="answer", trace=trace, default={"answer": ""}, retries=1,
                    on_refused=lambda options: pytest.fail("nothing was refused"), config={"logprobs": True}, q="x")
    assert pred.fallback and len(calls) == 2
    assert [e["action"] for e in trace.errors()] == ["retried", "fallback"]
