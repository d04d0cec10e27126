"""``ragnet serve`` as a command: a real process, SIGHUP reload, auth from the environment, and
(live) the official ``openai`` client against it on the local models."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from tests.serve.conftest import free_port

KEY = "cli-test-key-0123"


def start(index, *args, env=None, wait=180):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragnet", "serve", "--index", str(index), "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + wait
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"ragnet serve exited {proc.returncode}: {proc.stdout.read()}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("ragnet serve did not start")


def stop(proc) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"ragnet serve did not stop on SIGTERM: {out}")
    return out


def test_serve_reloads_on_sighup_and_asks_for_its_key(index_copy):
    from ragnet.index import Index

    proc, url = start(index_copy, "--reload-every", "0", "--api-key-env", "RAGNET_TEST_SERVE_KEY",
                      "--lm", "openai/unused", "--api-base", "http://127.0.0.1:9/v1", "--answer-lm", "none",
                      env={"RAGNET_TEST_SERVE_KEY": KEY})
    try:
        auth = {"Authorization": f"Bearer {KEY}"}
        assert httpx.get(f"{url}/search", params={"q": "Oslofjord"}).status_code == 401
        assert httpx.get(f"{url}/search", params={"q": "Oslofjord"}, headers=auth).json()["hits"][0]["doc_id"] == "oslo"
        Index.load(index_copy).remove("oslo", show_progress=False)
        time.sleep(0.5)
        assert httpx.get(f"{url}/health").json()["index"]["generation"] == 1  # no polling: only on a signal
        proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while httpx.get(f"{url}/health").json()["index"]["generation"] < 2 and time.time() < deadline:
            time.sleep(0.1)
        health = httpx.get(f"{url}/health").json()
        assert health["index"]["generation"] == 2 and health["index"]["chunks"] == 3
        hits = httpx.get(f"{url}/search", params={"q": "Oslofjord", "k": 5}, headers=auth).json()["hits"]
        assert "oslo" not in {h["doc_id"] for h in hits}
    finally:
        out = stop(proc)
    # uvicorn shuts down gracefully, then ends by the signal it caught (-15), as a shell expects
    assert proc.returncode in (0, -signal.SIGTERM) and "ragnet serve: http://127.0.0.1:" in out
    assert "Traceback" not in out


def test_serve_refuses_an_unset_key_variable_in_one_line(index_copy, monkeypatch):
    monkeypatch.delenv("RAGNET_NO_SUCH_KEY", raising=False)
    result = CliRunner().invoke(app, ["serve", "--index", str(index_copy), "--api-key-env", "RAGNET_NO_SUCH_KEY"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: argument 'api-key-env': environment variable RAGNET_NO_SUCH_KEY is not set or empty"]


def test_serve_refuses_docs_that_are_not_a_folder_in_one_line(index_copy, tmp_path):
    result = CliRunner().invoke(app, ["serve", "--index", str(index_copy), "--docs", str(tmp_path / "nowhere")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: argument 'docs': must be the folder the index was built from, got {str(tmp_path / 'nowhere')!r}: "
        "not a folder"]


def test_the_openai_client_against_ragnet_serve_with_a_served_lm(serve_index, tmp_path):
    """The whole path without the local model: the openai client, the `ragnet serve` process, and
    its LM behind a real OpenAI-compatible HTTP server."""
    openai = pytest.importorskip("openai")
    from tests.lm.fault_server import FaultServer

    with FaultServer("ok") as lm_server:
        proc, url = start(serve_index.path, "--lm", "openai/test-model", "--api-base", lm_server.url,
                          "--answer-lm", "none", "--lm-api-key-env", "RAGNET_TEST_LM_KEY",
                          env={"RAGNET_TEST_LM_KEY": "lm-key", "RAGNET_CACHE_DIR": str(tmp_path / "cache")})
        try:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="not-needed", max_retries=0, timeout=60)
            reply = client.chat.completions.create(
                model="ragnet-basic", messages=[{"role": "user", "content": "Which river runs through Paris?"}])
            assert reply.choices[0].message.content.startswith("Paris\n\nSources:\n[1] ")
            assert reply.model_extra["citations"][0]["doc_id"] == "paris"
            assert lm_server.requests >= 1
        finally:
            stop(proc)


@pytest.mark.live
def test_the_openai_client_against_ragnet_serve_on_the_local_models(serve_index, live_model_path, tmp_path):
    openai = pytest.importorskip("openai")
    proc, url = start(serve_index.path, "--timeout", "600",
                      env={"RAGNET_LM_THREADS": os.environ.get("RAGNET_LM_THREADS", "1"),
                           "RAGNET_CACHE_DIR": str(tmp_path / "cache")})
    try:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="not-needed", max_retries=0, timeout=600)
        reply = client.chat.completions.create(
            model="ragnet-auto", messages=[{"role": "user", "content": "Which river runs through Rome?"}])
        content = reply.choices[0].message.content
        assert "tiber" in content.casefold() and "\n\nSources:\n[1] " in content
        citations = reply.model_extra["citations"]
        assert citations and citations[0]["doc_id"] == "rome" and citations[0]["sentences"]
        assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
        pieces = [chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
            model="ragnet-auto", stream=True, messages=[{"role": "user", "content": "What is the capital of Norway?"}])]
        assert "oslo" in "".join(pieces).casefold() and len(pieces) > 2
    finally:
        stop(proc)


class EchoingLM:
    """An OpenAI-compatible server on 127.0.0.1 that refuses every call with an error quoting the
    ``Authorization`` header it got, as some providers' errors do."""

    def __init__(self) -> None:
        self.requests = 0

    def __enter__(self) -> "EchoingLM":
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        echo = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                echo.requests += 1
                message = f"Incorrect API key provided: {self.headers.get('Authorization')}."
                data = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                             "code": "invalid_api_key"}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.port = self.httpd.server_address[1]
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


LM_KEY, LM_PASSWORD = "sk-echoed-lm-key-0099", "pw7"


def test_serve_and_ask_never_show_the_lm_key_or_a_server_password(serve_index, tmp_path, monkeypatch):
    import json

    env = {"RAGNET_TEST_LM_KEY": LM_KEY, "RAGNET_TEST_SERVE_KEY": KEY, "RAGNET_CACHE_DIR": str(tmp_path / "c")}
    with EchoingLM() as lm_server:
        lm_args = ["--lm", "openai/test-model", "--api-base", f"http://127.0.0.1:{lm_server.port}/v1",
                   "--answer-lm", "none"]
        proc, url = start(serve_index.path, *lm_args, "--lm-api-key-env", "RAGNET_TEST_LM_KEY",
                          "--api-key-env", "RAGNET_TEST_SERVE_KEY", env=env)
        try:
            auth = {"Authorization": f"Bearer {KEY}"}
            asked = httpx.post(f"{url}/ask", json={"question": "River of Paris?", "strategy": "basic"},
                               headers=auth, timeout=60)
            streamed = httpx.post(f"{url}/v1/chat/completions", headers=auth, timeout=60, json={
                "model": "ragnet-basic", "stream": True, "messages": [{"role": "user", "content": "River?"}]})
        finally:
            out = stop(proc)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        ask = ["ask", "River of Paris?", "--index", str(serve_index.path), "--strategy", "basic",
               "--answer-lm", "none", "--lm", "openai/test-model", "--api-key-env", "RAGNET_TEST_LM_KEY"]
        echoed = CliRunner().invoke(app, [*ask, "--api-base", f"http://127.0.0.1:{lm_server.port}/v1"])
    assert lm_server.requests >= 3  # the LM was asked, and refused each time, quoting the key
    # a password in --api-base: the URL it could not reach is named, the password not
    unreached = CliRunner().invoke(app, [*ask, "--api-base", f"http://user:{LM_PASSWORD}@127.0.0.1:9/v1"])
    assert asked.status_code == 503 and "Bearer ***" in asked.json()["error"]["message"]
    error = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")][-1]["error"]
    assert "Bearer ***" in error["message"]
    assert echoed.exit_code == 3 and "error: no answer:" in echoed.output and "Bearer ***" in echoed.output
    assert unreached.exit_code == 3 and "user:***@127.0.0.1:9" in unreached.output
    for text in (asked.text, streamed.text, out, echoed.output, unreached.output):
        assert LM_KEY not in text and f":{LM_PASSWORD}@" not in text and KEY not in text, text


def test_serve_on_a_busy_port_is_one_line_and_exit_2(index_copy):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "--index", str(index_copy), "--port", str(port), "--lm",
                                          "openai/unused", "--api-base", "http://127.0.0.1:9/v1", "--answer-lm",
                                          "none"])
    assert result.exit_code == 2  # not 3, which means "the LM failed"
    assert result.output.strip().splitlines() == [
        f"error: argument 'port': 127.0.0.1:{port} is in use (another server listens there: give another --port)"]
