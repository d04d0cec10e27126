"""Served LMs through litellm against real HTTP servers on 127.0.0.1: every fault is bounded in
time and requests, recorded, and loud (ask exits 3 with the cause; eval counts outages apart
from wrong answers and stops when the LM is down).

The fault cases use the minimal OpenAI-compatible server in ``fault_server.py``; the success
and killed-server cases use llama.cpp's own server with the local GGUF (marked ``live``).
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import dspy
import pytest
from typer.testing import CliRunner

import ragnet
from ragnet.cli import app
from ragnet.corpus.types import Document
from ragnet.index import Index
from ragnet.lm.failures import answer_failure
from ragnet.programs import BasicRAG
from tests.lm.fault_server import FaultServer

runner = CliRunner()
TIMEOUT = 2.0
QUESTION = "What is the capital of France?"
# what a well-behaved model writes for ragnet's answer step in DSPy's ChatAdapter format
CHAT_ANSWER = '[[ ## answer ## ]]\nParis\n\n[[ ## evidence_ids ## ]]\n["c1"]\n\n[[ ## completed ## ]]'


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory):
    docs = [Document(id="paris", title="Paris", text="Paris is the capital of France."),
            Document(id="rome", title="Rome", text="Rome is the capital of Italy."),
            Document(id="oslo", title="Oslo", text="Oslo is the capital of Norway.")]
    return Index.build(docs, tmp_path_factory.mktemp("served") / "idx", show_progress=False)


@pytest.fixture
def served(dspy_state, tmp_path, monkeypatch):
    """Configure ragnet with ``openai/test-model`` at a server's URL; DSPy state restored after."""
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))

    def configure(url: str, **options):
        options = {"timeout": TIMEOUT, "cache": False, **options}
        return ragnet.configure("openai/test-model", api_base=url, api_key="test-key", **options)

    return configure


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_healthy_server_answers_with_one_request_per_step(tiny_index, served):
    with FaultServer("ok", reply=CHAT_ANSWER) as server:
        served(server.url)
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
    assert pred.answer == "Paris" and answer_failure(pred.trace) is None
    assert server.requests == 1 and pred.usage["lm_calls"] == 1


def test_a_served_greedy_reader_reports_its_confidence(tiny_index, served):
    # the answer's one token "\nParis" at logprob -0.4: confidence exp(-0.4), from the same one request
    with FaultServer("ok", reply=CHAT_ANSWER, token_logprob=-0.4) as server:
        served(server.url)
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
    assert pred.answer == "Paris" and server.requests == 1
    assert pred.confidence == pytest.approx(math.exp(-0.4), abs=1e-4)  # rounded to 4 places
    assert server.bodies[0]["logprobs"] is True and server.bodies[0]["top_logprobs"] == 1


def test_a_server_that_refuses_logprobs_still_answers_and_is_not_asked_again(tiny_index, served):
    # the first request asks for logprobs and gets HTTP 400; the same greedy request is sent again
    # without them, and the LM is not asked for them again
    with FaultServer("ok", reply=CHAT_ANSWER, refuse_logprobs=True) as server:
        served(server.url)
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
        assert pred.answer == "Paris" and pred.confidence is None and answer_failure(pred.trace) is None
        assert server.requests == 2 and "logprobs" in server.bodies[0] and "logprobs" not in server.bodies[1]
        assert "top_logprobs" not in server.bodies[1] and server.bodies[1].get("temperature") == 0.0
        assert [e["action"] for e in pred.trace if e.get("step") == "lm_error"] == ["dropped logprobs, top_logprobs"]
        again = BasicRAG(tiny_index, k=2)(question="What is the capital of Italy?")
    # the refusal is remembered for this LM: the next question is asked once, greedily, without logprobs
    assert again.confidence is None and server.requests == 3
    assert "logprobs" not in server.bodies[2] and server.bodies[2].get("temperature") == 0.0
    assert not [e for e in again.trace if e.get("step") == "lm_error"]


def test_a_sampled_served_reader_is_not_asked_for_logprobs(tiny_index, served):
    with FaultServer("ok", reply=CHAT_ANSWER) as server:
        served(server.url, temperature=0.7)
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
    assert pred.answer == "Paris" and pred.confidence is None
    assert "logprobs" not in server.bodies[0]


@pytest.mark.parametrize("mode, kind", [
    ("error500", "server failed"),
    ("badjson", "malformed response"),
    ("nochoices", "malformed response"),
    ("drop", "could not be reached"),
    ("hang", "did not answer in time"),
])
def test_faults_are_bounded_recorded_and_named(tiny_index, served, mode, kind):
    with FaultServer(mode) as server:
        served(server.url)
        started = time.perf_counter()
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
        elapsed = time.perf_counter() - started
    # one try plus ragnet's one retry; no HTTP-level retries multiply them
    assert server.requests <= 2, f"{server.requests} requests for one step"
    assert elapsed <= TIMEOUT * 2 + 5
    assert pred.answer == ""  # the safe fallback, not a crash
    failure = answer_failure(pred.trace)
    assert failure is not None and kind in failure, failure
    assert pred.usage["lm_calls"] == server.requests or mode in ("drop",)


def test_connection_refused_is_named(tiny_index, served):
    served(f"http://127.0.0.1:{_free_port()}/v1")
    pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
    assert "could not be reached" in (answer_failure(pred.trace) or "")


def test_ask_exits_3_with_the_cause_on_stderr(tiny_index, served, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache2"))
    with FaultServer("error500") as server:
        result = runner.invoke(app, ["ask", QUESTION, "--index", str(tiny_index.path), "--strategy", "basic",
                                     "--lm", "openai/test-model", "--api-base", server.url, "--api-key", "k",
                                     "--timeout", str(TIMEOUT)])
    assert result.exit_code == 3, result.output
    assert "error: no answer: the LM server failed (HTTP 5xx)" in result.stderr
    with FaultServer("ok", reply=CHAT_ANSWER) as server:
        monkeypatch.setenv("MY_KEY", "secret")
        result = runner.invoke(app, ["ask", QUESTION, "--index", str(tiny_index.path), "--strategy", "basic",
                                     "--lm", "openai/test-model", "--api-base", server.url, "--api-key-env", "MY_KEY",
                                     "--timeout", str(TIMEOUT)])
    assert result.exit_code == 0, result.output
    assert "answer: Paris" in result.stdout


def test_ask_refuses_bad_lm_options_before_loading_anything(tiny_index):
    result = runner.invoke(app, ["ask", QUESTION, "--index", str(tiny_index.path), "--timeout", "0"])
    assert result.exit_code == 2 and "--timeout" in result.stderr and "more than 0 seconds" in result.stderr
    result = runner.invoke(app, ["ask", QUESTION, "--index", str(tiny_index.path), "--timeout", "soon"])
    assert result.exit_code == 2 and "number of seconds or 'auto'" in result.stderr
    result = runner.invoke(app, ["ask", QUESTION, "--index", str(tiny_index.path), "--api-key-env", "NOPE_UNSET_VAR"])
    assert result.exit_code == 2 and "NOPE_UNSET_VAR is not set" in result.stderr


def _eval_set(tmp_path: Path, n: int) -> Path:
    folder = tmp_path / "served_set"
    folder.mkdir()
    rows = [{"id": f"q{i}", "question": f"What is the capital of France ({i})?", "answers": ["Paris"],
             "gold_titles": ["Paris"], "context": [{"title": "Paris", "text": "Paris is the capital of France."},
                                                  {"title": "Rome", "text": "Rome is the capital of Italy."}]}
            for i in range(n)]
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


def test_eval_counts_outages_apart_and_stops_when_the_lm_is_down(tmp_path, dspy_state, monkeypatch):
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    data = _eval_set(tmp_path, 12)
    out = tmp_path / "out"
    with FaultServer("error500") as server:
        result = runner.invoke(app, ["eval", "--data", str(data), "--split", "all", "--strategies", "basic",
                                     "--lm", "openai/test-model", "--api-base", server.url, "--api-key", "k",
                                     "--timeout", str(TIMEOUT), "--no-judge", "--no-plots", "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert "stopped: 8 of the last 8 answers failed because the LM failed: the LM server failed" in result.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["error_kind"] == "lm" and r["error"].startswith("LM failure") for r in rows)

    # the server is back: the resumed run asks the failed questions again and scores them
    with FaultServer("ok", reply=CHAT_ANSWER) as server:
        result = runner.invoke(app, ["eval", "--data", str(data), "--split", "all", "--strategies", "basic",
                                     "--lm", "openai/test-model", "--api-base", server.url, "--api-key", "k",
                                     "--timeout", str(TIMEOUT), "--no-judge", "--no-plots", "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    basic = summary["strategies"]["basic"]
    assert basic["n"] == 12 and basic["lm_failures"] == 0 and basic["em"] == 1.0


def test_lm_failure_rows_stay_out_of_accuracy():
    from ragnet.eval.metrics.stats import aggregate, paired_comparison

    ok = {"id": "a", "em": 1.0, "f1": 1.0, "contains": 1.0, "llm_match": None, "usage": {}}
    outage = {"id": "b", "em": 0.0, "f1": 0.0, "contains": 0.0, "llm_match": None, "error": "LM failure: x",
              "error_kind": "lm"}
    crash = {"id": "c", "em": 0.0, "f1": 0.0, "contains": 0.0, "llm_match": None, "error": "boom",
             "error_kind": "program"}
    agg = aggregate([ok, outage, crash])
    assert agg["lm_failures"] == 1 and agg["scored"] == 2 and agg["em"] == 0.5 and agg["errors"] == 2
    cmp = paired_comparison([ok, outage], [dict(ok, em=0.0), dict(outage, error_kind=None)], "em")
    assert cmp["questions"] == 1 and cmp["wins"] == 1


@pytest.mark.live
def test_llama_cpp_server_answers_and_a_killed_server_is_loud(tiny_index, served, tmp_path):
    import importlib.util

    from ragnet.lm.models import default_model_path
    from tests.required import skip_or_fail

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        skip_or_fail("llama-cpp-python[server] is not installed")
    model = default_model_path()
    if not Path(model).is_file():
        skip_or_fail(f"local model {model} is missing (run `ragnet fetch-model`)")
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "2048", "--model_alias", "test-model"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "2"})
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("llama.cpp server did not start")
        served(f"http://127.0.0.1:{port}/v1", timeout=120)
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
        assert answer_failure(pred.trace) is None and "paris" in pred.answer.casefold()
        assert 0.0 < pred.confidence <= 1.0  # llama.cpp's server reports the answer's token logprobs
        server.kill()
        server.wait()
        served(f"http://127.0.0.1:{port}/v1")
        pred = BasicRAG(tiny_index, k=2)(question="What is the capital of Italy?")
        assert "could not be reached" in (answer_failure(pred.trace) or "")
    finally:
        server.kill()
        server.wait()
