"""``ragnet serve`` through real HTTP with a scripted LM: the endpoints, the OpenAI client,
streaming, bad requests, auth, limits, timeouts, the queue, reloads and the page's escaping."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from ragnet.serve import ServeOptions
from tests.programs.scripted import ProgramLM, SureProgramLM
from tests.serve.conftest import HOSTILE, StreamingLM

KEY = "test-key-123456"


def options(index, **kw) -> ServeOptions:
    return ServeOptions(index=index, reload_every=0, **{"timeout": 30, **kw})


def citing(*ids):
    return lambda prompt, n: {"answer": "Paris", "evidence_ids": list(ids)}


def test_health_models_page_and_search(serve, serve_index):
    with serve(options(serve_index.path), lm=ProgramLM().lm()) as (url, _):
        health = httpx.get(f"{url}/health").json()
        assert health["status"] == "ok" and health["index"]["chunks"] == 4 and health["auth"] is False
        assert health["index"]["generation"] == 1
        models = httpx.get(f"{url}/v1/models").json()
        assert models["object"] == "list" and "ragnet-auto" in [m["id"] for m in models["data"]]
        assert "ragnet-oneshot:sentences" in [m["id"] for m in models["data"]]
        page = httpx.get(f"{url}/")
        assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        found = httpx.get(f"{url}/search", params={"q": "river through Rome", "k": 2}).json()
        assert found["hits"][0]["id"] == "rome#0" and found["hits"][0]["file"] == "rome.md"
        assert found["hits"][0]["source"] == "Rome — rome.md"
        by_name = {name: httpx.get(f"{url}/search", params={"q": "river through Rome", "k": 4, name: 1.0}).json()
                   for name in ("bm25_weight", "lam")}  # lam: bm25_weight's old name, still read
        assert [h["id"] for h in by_name["bm25_weight"]["hits"]] == [h["id"] for h in by_name["lam"]["hits"]]
        assert by_name["bm25_weight"]["hits"][0]["dense_score"] is not None


def test_ask_answers_with_citations_and_trace(serve, serve_index):
    lm = ProgramLM(answer=citing("c1"))
    with serve(options(serve_index.path), lm=lm.lm()) as (url, _):
        reply = httpx.post(f"{url}/ask", json={"question": "Which river runs through Paris?", "strategy": "basic",
                                               "trace": True}, timeout=30)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["answer"] == "Paris" and body["strategy"] == "basic"
        cite = body["citations"][0]
        assert cite["id"] == body["evidence"][0] and cite["file"].endswith(".md") and cite["sentences"]
        assert cite["source"].startswith(cite["title"])
        assert body["usage"]["lm_calls"] == 1 and any(e["step"] == "search" for e in body["trace"])
        assert body["confidence"] is None  # the scripted reader reports no logprobs


def test_ask_and_search_keep_to_the_files_a_request_names(serve, serve_index):
    lm = ProgramLM(answer=citing("c1"))
    with serve(options(serve_index.path), lm=lm.lm()) as (url, _):
        found = httpx.get(f"{url}/search", params={"q": "river through Rome", "k": 3, "only": ["oslo.md", "paris.md"]})
        assert found.status_code == 200, found.text
        assert {h["file"] for h in found.json()["hits"]} == {"oslo.md", "paris.md"}
        reply = httpx.post(f"{url}/ask", json={"question": "Which river runs through Rome?", "strategy": "basic",
                                               "only": ["paris.md"], "trace": True}, timeout=30)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["evidence"] and all(c["file"] == "paris.md" for c in body["citations"])
        retrieved = [i for e in body["trace"] if e["step"] == "search" for i in e["retrieved"]]
        assert retrieved and all(i.startswith("paris#") for i in retrieved)
        # the chat endpoint takes them as the OpenAI client's extra_body={"ragnet": {"only": [...]}}
        for stream in (False, True):
            chat = httpx.post(f"{url}/v1/chat/completions", timeout=30, json={
                "model": "ragnet-basic", "stream": stream, "ragnet": {"only": ["oslo.md"]},
                "messages": [{"role": "user", "content": "Which river runs through Rome?"}]})
            assert chat.status_code == 200, chat.text
            last = (json.loads([ln for ln in chat.text.splitlines() if ln.startswith("data: {")][-1][6:]) if stream
                    else chat.json())
            assert last["citations"] and all(c["file"] == "oslo.md" for c in last["citations"])
        refused = httpx.post(f"{url}/v1/chat/completions", timeout=30, json={
            "model": "ragnet-basic", "stream": True, "ragnet": {"only": ["lisbon.md"]},
            "messages": [{"role": "user", "content": "River?"}]})
        assert refused.status_code == 400 and "no indexed file matches 'lisbon.md'" in refused.json()["error"]["message"]


def test_ask_and_chat_return_the_readers_confidence(serve, serve_index):
    lm = SureProgramLM(sure=0.8, answer=citing("c1"))
    with serve(options(serve_index.path), lm=lm.lm()) as (url, _):
        asked = httpx.post(f"{url}/ask", json={"question": "Which river runs through Paris?", "strategy": "basic"},
                           timeout=30).json()
        chat = httpx.post(f"{url}/v1/chat/completions", timeout=30, json={
            "model": "ragnet-basic", "messages": [{"role": "user", "content": "Which river runs through Rome?"}]}).json()
    assert asked["answer"] == "Paris" and asked["confidence"] == 0.8
    assert chat["ragnet"]["confidence"] == 0.8


def test_the_openai_client_works_unchanged(serve, serve_index):
    openai = pytest.importorskip("openai")
    with serve(options(serve_index.path), lm=StreamingLM(answer=citing("c1")).lm()) as (url, _):
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        reply = client.chat.completions.create(
            model="ragnet-basic", messages=[{"role": "system", "content": "Be brief."},
                                            {"role": "user", "content": "Which river runs through Paris?"}])
        message = reply.choices[0].message.content
        assert message.startswith("Paris\n\nSources:\n[1] ") and reply.choices[0].finish_reason == "stop"
        citations = reply.model_extra["citations"]
        assert citations and citations[0]["sentences"] and reply.usage.total_tokens > 0
        pieces, last = [], None
        for chunk in client.chat.completions.create(model="ragnet-basic", stream=True,
                                                    messages=[{"role": "user", "content": "River of Paris?"}]):
            pieces.append(chunk.choices[0].delta.content or "")
            last = chunk
        # the role, the answer in the reader's deltas, the Sources list, then the last chunk
        sources = next(i for i, piece in enumerate(pieces) if piece.startswith("\n\nSources:"))
        assert "".join(pieces) == message and "".join(pieces[:sources]) == "Paris" and sources > 2
        assert last.choices[0].finish_reason == "stop" and last.model_extra["citations"] == citations
        assert last.model_extra["ragnet"]["streamed"] == "tokens" and last.usage.total_tokens > 0
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])


def test_streaming_events_in_order(serve, serve_index):
    with serve(options(serve_index.path), lm=ProgramLM(answer=citing("c1")).lm()) as (url, _):
        with httpx.stream("POST", f"{url}/v1/chat/completions", timeout=30,
                          json={"model": "ragnet-basic", "stream": True,
                                "messages": [{"role": "user", "content": "River of Rome?"}]}) as reply:
            assert reply.headers["content-type"].startswith("text/event-stream")
            lines = [line for line in reply.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[-1]["choices"][0]["finish_reason"] == "stop" and events[-1]["citations"]
    assert len({e["id"] for e in events}) == 1


@pytest.mark.parametrize("method, path, body, status, code", [
    ("POST", "/ask", b"{not json", 400, "invalid_json"),
    ("POST", "/ask", {"strategy": "basic"}, 422, "invalid_field"),
    ("POST", "/ask", {"question": ["a list"]}, 422, "invalid_field"),
    ("POST", "/ask", {"question": "x", "budget": -3}, 422, "invalid_field"),
    ("POST", "/ask", {"question": "x", "surprise": 1}, 422, "invalid_field"),
    ("POST", "/ask", {"question": "   "}, 400, "empty_question"),
    ("POST", "/ask", {"question": "x" * 5000}, 413, "question_too_long"),
    ("POST", "/ask", {"question": "x", "strategy": "oneshot:nonsense"}, 400, "invalid_value"),
    ("POST", "/ask", {"question": "x", "only": ["nginx.pdf"]}, 400, "invalid_value"),
    ("POST", "/ask", {"question": "x", "only": ["a.md"] * 40}, 422, "invalid_field"),
    ("GET", "/search?q=paris&only=nope.md", None, 400, "invalid_value"),
    ("GET", "/search?q=paris" + "&only=a.md" * 40, None, 400, "only_too_long"),
    ("POST", "/ask", {"question": "y" * 70_000}, 413, "body_too_large"),
    ("POST", "/v1/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}, 404,
     "model_not_found"),
    ("POST", "/v1/chat/completions", {"model": "ragnet-auto", "messages": [{"role": "system", "content": "x"}]},
     400, "invalid_value"),
    ("POST", "/v1/chat/completions", {"model": "ragnet-auto", "messages": []}, 422, "invalid_field"),
    ("GET", "/search?q=paris&k=500", None, 400, "k_too_large"),
    ("GET", "/search?q=paris&bm25_weight=0.5&lam=0.5", None, 400, "conflicting_parameters"),
    ("GET", "/search", None, 422, "invalid_field"),
    ("GET", "/nowhere", None, 404, "not_found"),
    ("GET", "/ask", None, 405, "method_not_allowed"),
])
def test_every_bad_request_is_one_json_error(serve, serve_index, method, path, body, status, code):
    lm = ProgramLM()
    with serve(options(serve_index.path), lm=lm.lm()) as (url, _):
        content = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
        reply = httpx.request(method, f"{url}{path}", content=content,
                              headers={"Content-Type": "application/json"}, timeout=30)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["code"] == code and error["message"] and "Traceback" not in error["message"]
    assert lm.calls == []  # nothing reached the LM


def test_a_body_sent_in_chunks_is_cut_at_the_limit(serve, serve_index):
    def chunks():
        for _ in range(100):
            yield b"x" * 1000

    with serve(options(serve_index.path), lm=ProgramLM().lm()) as (url, _):
        reply = httpx.post(f"{url}/ask", content=chunks(), headers={"Content-Type": "application/json"})
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "body_too_large"


def test_auth(serve, serve_index):
    with serve(options(serve_index.path, api_key=KEY), lm=ProgramLM().lm()) as (url, _):
        assert httpx.get(f"{url}/health").json()["auth"] is True  # open: the page asks it whether to show a key field
        assert httpx.get(f"{url}/").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong-key-000"}, {"Authorization": KEY}):
            reply = httpx.post(f"{url}/ask", json={"question": "x"}, headers=headers)
            assert reply.status_code == 401 and reply.headers["www-authenticate"] == "Bearer"
            assert reply.json()["error"]["code"] == "invalid_api_key"
        assert httpx.get(f"{url}/search?q=paris").status_code == 401
        assert httpx.post(f"{url}/reload").status_code == 401
        good = {"Authorization": f"Bearer {KEY}"}
        assert httpx.get(f"{url}/search?q=paris", headers=good).status_code == 200
        assert httpx.post(f"{url}/ask", json={"question": "x", "strategy": "basic"}, headers=good,
                          timeout=30).status_code == 200


def test_a_question_past_the_timeout_gets_504_and_stops(serve, serve_index):
    def slow_turn(prompt, n):  # every agent turn's first LM call takes longer than the deadline
        time.sleep(1.5)
        return {"verdict": "Refine", "confidence": 0.3, "missing": "more"}

    lm = ProgramLM(sufficiency=slow_turn)
    with serve(options(serve_index.path, timeout=1.0), lm=lm.lm()) as (url, app):
        t0 = time.perf_counter()
        reply = httpx.post(f"{url}/ask", json={"question": "Which river runs through Paris?",
                                               "strategy": "iterative:no-rewrite"}, timeout=30)
        assert reply.status_code == 504 and reply.json()["error"]["code"] == "timeout"
        assert time.perf_counter() - t0 < 1.4  # answered at the deadline, not when the program ends
        deadline = time.time() + 10
        while app.state.answerer.status()["pending"] and time.time() < deadline:
            time.sleep(0.05)
        assert app.state.answerer.status()["pending"] == 0  # the slot is free again
        calls = len(lm.calls)
        time.sleep(2)
        steps = [step for step, _ in lm.calls]
        assert len(lm.calls) == calls and "answer" not in steps  # the program stopped at its next step
        quick = httpx.post(f"{url}/ask", json={"question": "x", "strategy": "basic"}, timeout=30)
        assert quick.status_code == 200


def test_a_full_queue_gets_503_and_lm_calls_never_overlap(serve, serve_index):
    release, active, most = threading.Event(), [0], [0]
    guard = threading.Lock()

    def answer(prompt, n):
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        release.wait(20)
        time.sleep(0.05)
        with guard:
            active[0] -= 1
        return {"answer": "Paris", "evidence_ids": ["c1"]}

    with serve(options(serve_index.path, concurrency=1, queue=2), lm=ProgramLM(answer=answer).lm()) as (url, _):
        ask = lambda: httpx.post(f"{url}/ask", json={"question": "Paris?", "strategy": "basic"}, timeout=60)  # noqa: E731
        with ThreadPoolExecutor(4) as pool:
            first = [pool.submit(ask) for _ in range(3)]  # one answering, two waiting
            time.sleep(0.8)
            busy = ask()
            assert busy.status_code == 503 and busy.headers["retry-after"] == "5"
            assert busy.json()["error"]["code"] == "server_busy"
            release.set()
            assert [f.result().status_code for f in first] == [200, 200, 200]
    assert most[0] == 1  # one LM call at a time


def test_an_updated_index_is_picked_up_whole(serve, index_copy, embedder_for_serve):
    from ragnet.corpus.types import Document
    from ragnet.index import Index

    opts = ServeOptions(index=index_copy, reload_every=0.2, timeout=30)
    with serve(opts, lm=ProgramLM().lm()) as (url, app):
        assert httpx.get(f"{url}/search", params={"q": "fjords of Bergen"}).json()["hits"][0]["doc_id"] != "bergen"
        errors, seen = [], set()
        stop = threading.Event()

        def hammer():  # searches all through the update: every reply whole, from one generation
            while not stop.is_set():
                reply = httpx.get(f"{url}/search", params={"q": "capital river", "k": 10})
                if reply.status_code != 200:
                    errors.append(reply.text)
                    continue
                body = reply.json()
                seen.add(body["index"])
                ids = {h["id"] for h in body["hits"]}
                if body["index"] == 1 and "bergen#0" in ids:
                    errors.append("generation 1 holds a passage of generation 2")

        thread = threading.Thread(target=hammer)
        thread.start()
        try:
            idx = Index.load(index_copy)
            idx.update([Document(id="bergen", title="Bergen", text="Bergen lies among the fjords of western Norway.")],
                       remove_missing=False, embedder=embedder_for_serve, show_progress=False)
            deadline = time.time() + 15
            while httpx.get(f"{url}/health").json()["index"]["generation"] < 2 and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
        finally:
            stop.set()
            thread.join()
        assert errors == [] and seen == {1, 2}
        assert httpx.get(f"{url}/search", params={"q": "fjords of Bergen"}).json()["hits"][0]["doc_id"] == "bergen"
        reloaded = httpx.post(f"{url}/reload").json()
        assert reloaded["status"] == "reloaded" and reloaded["index"]["generation"] == 3
        assert reloaded["index"]["chunks"] == 5


@pytest.fixture(scope="module")
def embedder_for_serve():
    from ragnet.index import Embedder

    return Embedder()


def test_the_page_shows_documents_as_text(serve, serve_index):
    from ragnet.serve import page

    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function(",
                 "setAttribute(\"on", "setAttribute(\"href", "location ="):
        assert sink not in page.SCRIPT, sink  # text goes in through textContent only
    # one link target is set: a citation's url, and only when it is a /files/ path (never javascript:)
    assert page.SCRIPT.count("href") == 1 and 'cite.url.startsWith("/files/") ? cite.url : null' in page.SCRIPT
    assert "<script>" not in page.PAGE and "style=" not in page.PAGE  # nothing inline: the CSP allows none
    # an answer no passage states word for word: the reader's cited chunks stay its citations
    lm = ProgramLM(answer=lambda prompt, n: {"answer": "yes", "evidence_ids": ["c1", "c2", "c3"]})
    with serve(options(serve_index.path), lm=lm.lm()) as (url, _):
        body = httpx.post(f"{url}/ask", json={"question": "script tag onerror alert", "strategy": "basic"},
                          timeout=30).json()
        script = httpx.get(f"{url}/static/app.js")
    assert script.headers["content-type"].startswith("text/javascript") and script.headers["x-content-type-options"] == "nosniff"
    # the passage reaches the page as JSON data, which the script sets as text
    hostile = [c for c in body["citations"] if c["doc_id"] == "hostile"]
    assert hostile and HOSTILE in " ".join(hostile[0]["sentences"]) and hostile[0]["title"] == "<b>Markup</b> & co"
