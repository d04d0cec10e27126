"""``timeout`` (``--timeout``) bounds a whole served-LM call, whatever the server does.

A real HTTP server on 127.0.0.1 sends its reply one byte at a time, slowly: every single read
finishes well inside the timeout, so only a wall-clock deadline over the whole call (connect,
wait and read) stops it. Without one, a step waited as long as the server kept trickling.
"""

from __future__ import annotations

import asyncio
import time

import dspy
import pytest
from typer.testing import CliRunner

import ragnet
from ragnet.cli import app
from ragnet.corpus.types import Document
from ragnet.index import Index
from ragnet.lm.config import make_lm
from ragnet.lm.deadline import LMCallTimeoutError
from ragnet.lm.failures import answer_failure
from ragnet.programs import BasicRAG
from tests.lm.fault_server import FaultServer

runner = CliRunner()
TIMEOUT = 1.0
QUESTION = "What is the capital of France?"
CHAT_ANSWER = '[[ ## answer ## ]]\nParis\n\n[[ ## evidence_ids ## ]]\n["c1"]\n\n[[ ## completed ## ]]'
# How long the server takes to send its whole reply; without a deadline a step waited for all of it.
TRICKLE_SECONDS = 30.0


def trickle_server() -> FaultServer:
    """A server that sends a valid answer one byte at a time, taking ``TRICKLE_SECONDS`` in all."""
    return FaultServer("trickle", reply=CHAT_ANSWER, seconds=TRICKLE_SECONDS)


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory):
    docs = [Document(id="paris", title="Paris", text="Paris is the capital of France."),
            Document(id="rome", title="Rome", text="Rome is the capital of Italy.")]
    index = Index.build(docs, tmp_path_factory.mktemp("deadline") / "idx", show_progress=False)
    index.search(QUESTION)  # load the query embedder now, outside the timed program runs
    return index


def _served(url: str, timeout: float = TIMEOUT) -> dspy.LM:
    return make_lm("openai/test-model", api_base=url, api_key="test-key", timeout=timeout, cache=False)


def test_a_trickling_server_is_cut_at_the_deadline_and_named(tiny_index, dspy_state, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    with trickle_server() as server:
        ragnet.configure("openai/test-model", api_base=server.url, api_key="test-key", timeout=TIMEOUT, cache=False)
        started = time.monotonic()
        pred = BasicRAG(tiny_index, k=2)(question=QUESTION)
        elapsed = time.monotonic() - started
    # one try, stopped at TIMEOUT and not retried (a generous bound: not a benchmark)
    answer_step = [e for e in pred.trace if e.get("step") == "lm_step" and e.get("name") == "answer"][-1]
    assert answer_step["seconds"] < TIMEOUT + 2 and answer_step["attempts"] == 1, answer_step
    assert elapsed < TRICKLE_SECONDS / 2, f"{elapsed:.1f}s for one step with a {TIMEOUT}s timeout"
    assert server.requests == 1 and pred.answer == ""
    failure = answer_failure(pred.trace)
    assert failure is not None and failure.startswith("the LM did not answer in time (timeout)"), failure
    assert "--timeout" in failure and "Timeouts(" not in failure
    errors = [e for e in pred.trace if e.get("step") == "lm_error"]
    assert errors and all(e["error_type"] == "LMCallTimeoutError" for e in errors)
    assert pred.usage["timeouts"] == 1 and pred.usage["failed_calls"] == 1


def test_ask_with_a_trickling_server_exits_3_with_one_line_naming_timeout(tiny_index, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    with trickle_server() as server:
        started = time.monotonic()
        result = runner.invoke(app, ["ask", QUESTION, "--index", str(tiny_index.path), "--lm", "openai/test-model",
                                     "--api-base", server.url, "--api-key", "k", "--timeout", str(TIMEOUT)])
        elapsed = time.monotonic() - started
    # loading the index and its embedder is most of it; the one LM call takes about TIMEOUT (no retry)
    assert elapsed < TRICKLE_SECONDS * 0.75, f"ask ran {elapsed:.1f}s with --timeout {TIMEOUT}"
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no answer: the LM did not answer in time"), lines
    assert "--timeout" in lines[0] and "Timeouts(" not in lines[0]


def test_a_server_that_sends_nothing_is_named_the_same_way(dspy_state):
    # lm15's own per-read timeout could fire here too; the message still names --timeout
    with FaultServer("hang") as server:
        lm = _served(server.url)
        started = time.monotonic()
        with pytest.raises(LMCallTimeoutError, match="--timeout") as info:
            lm(messages=[{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < TIMEOUT + 5
    assert "Timeouts(" not in str(info.value) and info.value.timeout == TIMEOUT


def test_the_async_call_is_bounded_too(dspy_state):
    with trickle_server() as server:
        lm = _served(server.url)
        started = time.monotonic()
        with pytest.raises(LMCallTimeoutError, match="--timeout"):
            asyncio.run(lm.acall(messages=[{"role": "user", "content": "hi"}]))
        assert time.monotonic() - started < TRICKLE_SECONDS / 2


def test_a_healthy_server_answers_through_the_deadline_unchanged(dspy_state):
    from ragnet.lm.deadline import DeadlineLM

    with FaultServer("ok", reply="hello") as server:
        lm = _served(server.url)
        assert isinstance(lm, DeadlineLM) and lm.model == "openai/test-model"
        assert lm(messages=[{"role": "user", "content": "hi"}]) == ["hello"]
        assert asyncio.run(lm.acall(messages=[{"role": "user", "content": "hi"}])) == ["hello"]
        copied = lm.copy(timeout=7.0)  # a copy keeps the deadline and follows its own timeout
        assert isinstance(copied, DeadlineLM) and copied.kwargs["timeout"] == 7.0
        assert copied(messages=[{"role": "user", "content": "hi"}]) == ["hello"]
    assert server.requests == 3
    assert isinstance(make_lm("openai/test-model", api_key="k", timeout=None), dspy.LM)


def test_a_served_call_is_abandoned_once_its_request_is_over(dspy_state):
    from ragnet.lm.deadline import LMCallStopped
    from ragnet.lm.stop import stop_when

    with trickle_server() as server:
        lm = _served(server.url, timeout=TRICKLE_SECONDS)  # its own deadline is far off
        started = time.monotonic()
        with stop_when(lambda: time.monotonic() - started > 0.3), pytest.raises(LMCallStopped, match="request"):
            lm(messages=[{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 5  # the request's end, not the 30 s trickle
    with FaultServer("ok", reply="hello") as server, stop_when(lambda: False):  # polled, and unchanged
        assert _served(server.url, timeout=30)(messages=[{"role": "user", "content": "hi"}]) == ["hello"]


def test_an_async_served_call_is_abandoned_once_its_request_is_over(dspy_state):
    from ragnet.lm.deadline import LMCallStopped
    from ragnet.lm.stop import stop_when

    async def ask(lm, over):
        with stop_when(over):
            return await lm.acall(messages=[{"role": "user", "content": "hi"}])

    with trickle_server() as server:
        started = time.monotonic()
        with pytest.raises(LMCallStopped):
            asyncio.run(ask(_served(server.url, timeout=None), lambda: time.monotonic() - started > 0.3))
        assert time.monotonic() - started < 5
    with FaultServer("ok", reply="hello") as server:
        assert asyncio.run(ask(_served(server.url, timeout=30), lambda: False)) == ["hello"]
