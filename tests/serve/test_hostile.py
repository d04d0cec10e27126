"""``ragnet serve`` against a hostile client (issue 74): secrets kept out of replies and logs,
strangers' hosts and pages kept out, a client that leaves freeing its slot, bounded scopes,
surrogates, no absolute paths where no key is asked, read timeouts, and reload retries of an
index copied into place file by file. Real servers on 127.0.0.1, scripted LMs."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import socket
import time

import httpx
import pytest

from ragnet.serve import ServeOptions
from tests.programs.scripted import ProgramLM
from tests.serve.conftest import StreamingLM

CHAT = {"model": "ragnet-basic", "messages": [{"role": "user", "content": "Which river runs through Paris?"}]}


def options(index, **kw) -> ServeOptions:
    return ServeOptions(index=index, reload_every=0, **{"timeout": 30, **kw})


def citing(prompt, n):
    return {"answer": "Paris", "evidence_ids": ["c1"]}


def wait_until(check, seconds: float = 10.0) -> bool:
    deadline = time.time() + seconds
    while not check():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


# -- 1: secrets ---------------------------------------------------------------------------------
def test_no_secret_reaches_a_reply_an_error_event_or_a_log_line(serve, serve_index, monkeypatch, caplog):
    from ragnet.lm.config import LMOptions

    lm_key, password, own_key = "sk-hostile-lm-key-0042", "pw9", "serve-own-key-0042"
    monkeypatch.setenv("RAGNET_TEST_HOSTILE_LM_KEY", lm_key)
    LMOptions(lm="openai/test-model", api_key_env="RAGNET_TEST_HOSTILE_LM_KEY",
              api_base=f"http://user:{password}@127.0.0.1:1/v1").connection()  # as `ragnet serve` resolves them
    echoed = (f"Incorrect API key provided: Bearer {lm_key}; failed to connect to user:{password}@127.0.0.1:1 "
              f"(server key {own_key})")

    def failing(prompt, n):  # an LM whose error text echoes every secret
        raise RuntimeError(echoed)

    auth = {"Authorization": f"Bearer {own_key}"}
    caplog.set_level(logging.DEBUG)
    with serve(options(serve_index.path, api_key=own_key), lm=StreamingLM(answer=failing).lm()) as (url, _):
        asked = httpx.post(f"{url}/ask", json={"question": "River of Paris?", "strategy": "basic"}, headers=auth,
                           timeout=30)
        streamed = httpx.post(f"{url}/v1/chat/completions", json={**CHAT, "stream": True}, headers=auth, timeout=30)
        logging.getLogger("ragnet.serve").error("the LM said: %s", echoed)  # whatever a log line quotes
    assert asked.status_code == 503 and asked.json()["error"]["code"] == "lm_failed"
    assert "Incorrect API key provided: Bearer ***" in asked.json()["error"]["message"]
    error = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")][-1]
    assert error["error"]["code"] == "lm_failed" and "Bearer ***" in error["error"]["message"]
    logged = "\n".join(logging.Formatter().format(r) for r in caplog.records)
    assert "the LM said: Incorrect API key provided: Bearer ***" in logged
    for text in (asked.text, streamed.text, logged):
        assert lm_key not in text and f":{password}@" not in text and own_key not in text


# -- 2: hosts and origins -----------------------------------------------------------------------
def test_a_foreign_host_or_a_foreign_page_is_refused(serve, serve_index):
    lm = ProgramLM(answer=citing)
    with serve(options(serve_index.path, allowed_hosts=("rag.example.com",)), lm=lm.lm()) as (url, app):
        port = url.rsplit(":", 1)[1]
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
            for path in ("/health", "/search?q=Paris", "/"):  # DNS rebinding: read as the attacker's origin
                reply = httpx.get(f"{url}{path}", headers={"Host": host})
                assert reply.status_code == 421 and reply.json()["error"]["code"] == "host_not_allowed", (host, path)
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "rag.example.com"):
            assert httpx.get(f"{url}/search?q=Paris", headers={"Host": host}).status_code == 200, host
        # a POST from another site's page (no preflight: no body, or a simple one) does not act
        for origin in ("https://evil.example", f"http://localhost:{int(port) + 1}", "null"):
            reply = httpx.post(f"{url}/reload", headers={"Origin": origin})
            assert reply.status_code == 403 and reply.json()["error"]["code"] == "origin_not_allowed", origin
            refused = httpx.post(f"{url}/ask", json={"question": "River?", "strategy": "basic"},
                                 headers={"Origin": origin})
            assert refused.status_code == 403
        assert app.state.holder.current.generation == 1 and lm.calls == []
        # the page's own requests (same origin), a reverse proxy's page, and clients with no Origin act
        assert httpx.post(f"{url}/reload", headers={"Origin": url}).status_code == 200
        assert httpx.post(f"{url}/reload", headers={"Origin": "https://rag.example.com"}).status_code == 200
        assert httpx.post(f"{url}/ask", json={"question": "River?", "strategy": "basic"}, headers={"Origin": url},
                          timeout=30).status_code == 200
        assert httpx.post(f"{url}/reload").status_code == 200


# -- 3: a client gone from /ask ---------------------------------------------------------------
def test_a_client_gone_from_ask_stops_its_question_and_frees_the_slot(serve, serve_index):
    from ragnet.lm.deadline import LMCallStopped
    from ragnet.lm.stop import requested

    generating = []

    def answer(prompt, n):  # 20 s of generation, stopped between tokens as the local engine is
        generating.append(n)
        for _ in range(400):
            if requested():
                raise LMCallStopped("stopped")
            time.sleep(0.05)
        return {"answer": "Paris", "evidence_ids": ["c1"]}

    lm = ProgramLM(answer=answer)
    with serve(options(serve_index.path, timeout=60), lm=lm.lm()) as (url, app):
        for path, body in (("/ask", {"question": "River of Paris?", "strategy": "basic"}),
                           ("/v1/chat/completions", CHAT)):
            calls = len(lm.calls)
            with pytest.raises(httpx.ReadTimeout):
                httpx.post(f"{url}{path}", json=body, timeout=1.0)  # the client leaves after 1 s
            assert wait_until(lambda: app.state.answerer.status()["pending"] == 0, 3), path  # slot free
            time.sleep(0.3)
            assert len(lm.calls) == calls + 1, path  # the question stopped: no step after it
        assert app.state.answerer.status()["timed_out"] == 0


# -- 5: scope patterns --------------------------------------------------------------------------
def test_scope_patterns_are_bounded_and_compiled_off_the_event_loop(serve, serve_index, monkeypatch):
    from ragnet.index import Index

    on_loop = []
    scoped = Index.scoped

    def recording(self, *patterns):
        try:
            asyncio.get_running_loop()
            on_loop.append(patterns)
        except RuntimeError:
            pass
        return scoped(self, *patterns)

    monkeypatch.setattr(Index, "scoped", recording)
    hostile = "[" + "a" * 1_000
    with serve(options(serve_index.path), lm=StreamingLM(answer=citing).lm()) as (url, _):
        for reply in (httpx.post(f"{url}/ask", json={"question": "River?", "only": [hostile] * 32}),
                      httpx.get(f"{url}/search", params={"q": "river", "only": [hostile]}),
                      httpx.post(f"{url}/v1/chat/completions", json={**CHAT, "ragnet": {"only": [hostile]}})):
            assert reply.status_code == 400 and reply.json()["error"]["code"] == "pattern_too_long", reply.text
        ask = {"question": "River?", "strategy": "basic", "only": ["paris.md"]}
        assert httpx.post(f"{url}/ask", json=ask, timeout=30).status_code == 200
        assert httpx.get(f"{url}/search", params={"q": "river", "only": ["rome.md"]}).status_code == 200
        for stream in (False, True):
            chat = httpx.post(f"{url}/v1/chat/completions", timeout=30,
                              json={**CHAT, "stream": stream, "ragnet": {"only": ["oslo.md", "*.md"]}})
            assert chat.status_code == 200
        assert httpx.post(f"{url}/ask", json={**ask, "only": ["lisbon.md"]}).status_code == 400
    assert on_loop == []


# -- 6: lone surrogates -------------------------------------------------------------------------
@pytest.mark.parametrize("path, body", [
    ("/ask", b'{"question": "Which river \\ud800 runs through Paris?", "strategy": "basic"}'),
    ("/ask", b'{"question": "River?", "strategy": "basic", "only": ["paris\\udfff.md"]}'),
    ("/v1/chat/completions", b'{"model": "ragnet-basic", "messages": [{"role": "user", "content": "River \\udc00?"}]}'),
    ("/v1/chat/completions", b'{"model": "ragnet-\\ud800", "messages": [{"role": "user", "content": "River?"}]}'),
])
def test_a_lone_surrogate_is_a_clean_json_error(serve, serve_index, path, body):
    lm = ProgramLM(answer=citing)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    for name in ("uvicorn.error", "ragnet.serve"):
        logging.getLogger(name).addHandler(handler)
    try:
        with serve(options(serve_index.path), lm=lm.lm()) as (url, _):
            reply = httpx.post(f"{url}{path}", content=body, headers={"Content-Type": "application/json"}, timeout=30)
    finally:
        for name in ("uvicorn.error", "ragnet.serve"):
            logging.getLogger(name).removeHandler(handler)
    assert reply.status_code in (400, 404, 422), reply.text
    error = reply.json()["error"]
    assert error["code"] in ("invalid_text", "model_not_found") and "Traceback" not in error["message"]
    assert [r for r in records if r.levelno >= logging.ERROR] == [] and lm.calls == []


# -- 9 and 10: an index copied into place; no absolute path in /health ------------------------------
def copy_file_by_file(source, target, first=("manifest.json",), skip=()) -> None:
    """Copy ``source`` over ``target`` one file at a time (each to a temporary name, then
    renamed, as rsync does), ``first`` first, leaving out ``skip``."""
    names = sorted(os.path.relpath(os.path.join(d, f), source) for d, _, fs in os.walk(source) for f in fs)
    for name in [*first, *(n for n in names if n not in first)]:
        if name in skip:
            continue
        os.makedirs(os.path.dirname(target / name), exist_ok=True)
        shutil.copyfile(source / name, target / f"{name}.part")
        os.replace(target / f"{name}.part", target / name)


def test_an_index_copied_in_mid_reload_is_retried_until_it_loads(serve, index_copy, tmp_path):
    from ragnet.index import Index
    from ragnet.serve.state import IndexHolder

    newer = tmp_path / "newer"
    shutil.copytree(index_copy, newer)
    Index.load(newer).remove("oslo", show_progress=False)  # the version to copy in: 3 chunks
    data = sorted(os.path.relpath(os.path.join(d, f), newer) for d, _, fs in os.walk(newer) for f in fs
                  if f != "manifest.json")
    holder = IndexHolder(index_copy, retry_first=0.1)
    with serve(ServeOptions(index=index_copy, reload_every=0.1, timeout=30), lm=ProgramLM().lm(),
               holder=holder) as (url, _):
        copy_file_by_file(newer, index_copy, skip=data)  # the manifest is in, the data files are not yet
        assert wait_until(lambda: httpx.get(f"{url}/health").json()["reload_error"])
        health = httpx.get(f"{url}/health").json()
        assert health["index"]["generation"] == 1 and health["index"]["chunks"] == 4  # the old one serves
        assert "idx" in health["reload_error"] and str(tmp_path) not in health["reload_error"]  # 10: no path
        assert httpx.get(f"{url}/search", params={"q": "Oslofjord"}).json()["hits"][0]["doc_id"] == "oslo"
        time.sleep(0.5)
        copy_file_by_file(newer, index_copy)  # the copy ends; the manifest does not change again
        assert wait_until(lambda: httpx.get(f"{url}/health").json()["index"]["generation"] == 2, 15)
        health = httpx.get(f"{url}/health").json()
        assert health["index"]["chunks"] == 3 and health["reload_error"] is None


def test_health_shows_a_reload_error_with_no_absolute_path(serve, index_copy, tmp_path):
    with serve(options(index_copy), lm=ProgramLM().lm()) as (url, _):
        (index_copy / "chunks.jsonl.part").write_text("damaged\n")
        os.replace(index_copy / "chunks.jsonl.part", index_copy / "chunks.jsonl")
        failed = httpx.post(f"{url}/reload")
        error = httpx.get(f"{url}/health").json()["reload_error"]
    assert failed.status_code == 503 and error and "idx" in error
    for text in (error, failed.json()["error"]["message"]):
        assert str(tmp_path) not in text and not any(word.startswith("/") for word in text.split()), text


# -- 12: read timeouts --------------------------------------------------------------------------
def test_idle_and_trickling_connections_are_closed_at_the_read_timeout(serve, serve_index):
    def closed_within(sock, seconds) -> bytes | None:
        """What the server sent before it closed ``sock`` (None: still open after ``seconds``)."""
        sock.settimeout(seconds)
        got = b""
        try:
            while chunk := sock.recv(4096):
                got += chunk
        except socket.timeout:
            return None
        return got

    with serve(options(serve_index.path, read_timeout=0.5), lm=ProgramLM().lm()) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        body = socket.create_connection(("127.0.0.1", port))
        body.sendall(b"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"question\": ")  # and never the rest
        try:
            t0 = time.perf_counter()
            assert all(closed_within(s, 3) == b"" for s in idle)
            assert closed_within(partial, 3).startswith(b"HTTP/1.1 408")
            slow = closed_within(body, 3)
            assert slow.startswith(b"HTTP/1.1 408") and b"body_timeout" in slow
            assert time.perf_counter() - t0 < 3
        finally:
            for s in (*idle, partial, body):
                s.close()
        assert httpx.get(f"{url}/health").status_code == 200  # a prompt client is served as ever
