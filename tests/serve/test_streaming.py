"""``stream: true`` through real HTTP: the reader's tokens as it writes them (JSON or chat replies),
the whole answer from a reader that does not stream, one slot for streams and questions, a
client gone mid-stream and the deadline; and (live) the local reader's own tokens."""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from ragnet.serve import ServeOptions
from ragnet.serve.openai_api import with_sources
from tests.programs.scripted import ProgramLM
from tests.serve.conftest import StreamingLM

QUESTION = {"model": "ragnet-basic", "stream": True, "messages": [{"role": "user", "content": "River of Paris?"}]}


def options(index, **kw) -> ServeOptions:
    return ServeOptions(index=index, reload_every=0, **{"timeout": 30, **kw})


def answering(text, *ids):
    return lambda prompt, n: {"answer": text, "evidence_ids": list(ids or ["c1"])}


def events(url, body=QUESTION, until=None):
    """The data of each event of one streamed reply (and when it came), up to ``until``'s first True."""
    got = []
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=60) as reply:
        assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data: "):
                got.append((time.perf_counter(), line[6:] if line == "data: [DONE]" else json.loads(line[6:])))
                if until is not None and until(got):
                    break
    return got


def content(got):
    return [data["choices"][0]["delta"].get("content") or "" for _, data in got if isinstance(data, dict)
            and data.get("choices")]


def test_a_json_reader_streams_its_answer_as_text(serve, serve_index):
    # steps on the chat adapter, a reader on the JSON one (as a local model is): the listener reads
    # the reader's JSON, and hands on the answer text decoded, as the answer step will read it
    reader = StreamingLM(json=True, delay=0.02, answer=answering('The "Seine"  river,\ncafé side'))
    with serve(options(serve_index.path), lm=ProgramLM().lm(), reader=reader.lm("llamacpp/scripted-reader")) as (url, _):
        got = events(url)
    assert got[-1][1] == "[DONE]"
    last = got[-2][1]
    pieces = content(got)
    sources = next(i for i, piece in enumerate(pieces) if piece.startswith("\n\nSources:"))
    assert "".join(pieces[:sources]) == 'The "Seine" river, café side' and sources > 5
    assert "".join(pieces) == with_sources('The "Seine" river, café side', last["citations"])
    assert last["ragnet"]["streamed"] == "tokens" and last["choices"][0]["finish_reason"] == "stop"
    first_text = next(t for t, data in got if isinstance(data, dict) and data["choices"][0]["delta"].get("content"))
    assert got[-2][0] - first_text > 0.2  # the first words came well before the reader had finished


def test_a_reader_that_does_not_stream_answers_whole(serve, serve_index):
    with serve(options(serve_index.path), lm=ProgramLM(answer=answering("Paris")).lm()) as (url, _):
        got = events(url)
    last = got[-2][1]
    assert content(got) == ["", with_sources("Paris", last["citations"]), ""]
    assert last["ragnet"]["streamed"] == "whole"


def test_a_retried_reply_is_followed_by_the_answer(serve, serve_index):
    # the first reply is cut short after "Wrong" (the connection dropped): the answer step asks
    # again, and the answer that counts follows what was streamed
    class CutOnce(StreamingLM):
        cut = True

        def stream(self, request):
            for i, event in enumerate(super().stream(request)):
                if self.cut and i == 9:  # the start event, then 8 deltas: "...]]\nWrong\n"
                    CutOnce.cut = False
                    raise ConnectionResetError("the connection dropped")
                yield event

    reader = CutOnce(answer=lambda prompt, n: {"answer": "Wrong" if n == 1 else "Paris", "evidence_ids": ["c1"]})
    with serve(options(serve_index.path), lm=reader.lm()) as (url, _):
        got = events(url)
    last = got[-2][1]
    assert "".join(content(got)) == "Wrong\n\n" + with_sources("Paris", last["citations"])
    assert last["ragnet"]["streamed"] == "tokens"


def test_a_client_gone_mid_stream_frees_the_slot_and_stops_the_reader(serve, serve_index):
    reader = StreamingLM(delay=0.05, answer=answering("a long answer " * 20))
    with serve(options(serve_index.path), lm=reader.lm()) as (url, app):
        t0 = time.perf_counter()
        got = events(url, until=lambda got: len(content(got)) >= 4)  # the role and three pieces of text
        assert time.perf_counter() - t0 < 5 and len(content(got)) == 4
        deadline = time.time() + 10
        while (app.state.answerer.status()["pending"] or not reader.closed) and time.time() < deadline:
            time.sleep(0.05)
        assert app.state.answerer.status()["pending"] == 0 and reader.closed == 1  # slot free, generation cut
        sent = reader.sent
        time.sleep(0.5)
        assert reader.sent == sent < 40  # nothing generated since: 100 pieces were to come
        after = httpx.post(f"{url}/ask", json={"question": "Paris?", "strategy": "basic"}, timeout=30)
        assert after.status_code == 200 and after.json()["answer"].startswith("a long answer")


def test_a_stream_past_the_timeout_ends_with_an_error_and_frees_the_slot(serve, serve_index):
    reader = StreamingLM(delay=0.05, answer=answering("a long answer " * 20))
    with serve(options(serve_index.path, timeout=1.0), lm=reader.lm()) as (url, app):
        got = events(url)
        assert got[-1][1] == "[DONE]" and got[-2][1]["error"]["code"] == "timeout"
        assert 0 < len(content(got)) - 1 < 40  # some text came before the deadline
        deadline = time.time() + 10
        while app.state.answerer.status()["pending"] and time.time() < deadline:
            time.sleep(0.05)
        assert app.state.answerer.status()["pending"] == 0 and reader.closed == 1


def test_streams_and_questions_take_turns_on_the_reader(serve, serve_index):
    class Counting(StreamingLM):
        active = most = 0
        guard = threading.Lock()

        def busy(self, delta):
            with self.guard:
                Counting.active += delta
                Counting.most = max(Counting.most, Counting.active)

        def complete(self, request):
            self.busy(1)
            time.sleep(0.3)
            try:
                return super().complete(request)
            finally:
                self.busy(-1)

        def stream(self, request):
            self.busy(1)
            try:
                yield from super().stream(request)
            finally:
                self.busy(-1)

    reader = Counting(delay=0.02, answer=answering("Paris on the Seine"))
    with serve(options(serve_index.path, concurrency=1, queue=4), lm=reader.lm()) as (url, app):
        with ThreadPoolExecutor(3) as pool:
            streams = [pool.submit(events, url) for _ in range(2)]
            asked = pool.submit(httpx.post, f"{url}/ask", json={"question": "Paris?", "strategy": "basic"}, timeout=60)
            assert asked.result().status_code == 200
            for future in streams:
                got = future.result()
                assert "".join(content(got)).startswith("Paris on the Seine\n\nSources:")
        assert app.state.answerer.status()["answered"] == 3
    assert Counting.most == 1  # one LM call at a time, streamed or not


@pytest.mark.live
def test_the_local_reader_streams_its_tokens(serve, serve_index, live_model_path, capsys, monkeypatch):
    """The openai client streams ragnet-auto's answer from the local models, token by token; it is
    the answer, citations and token counts of the same question asked without streaming."""
    import dspy

    openai = pytest.importorskip("openai")
    from ragnet.lm.config import LMOptions

    monkeypatch.setenv("RAGNET_LM_THREADS", os.environ.get("RAGNET_LM_THREADS", "1"))
    question = [{"role": "user", "content": "Which river runs through Rome?"}]
    with serve(options(serve_index.path, timeout=600, lm=LMOptions(timeout=600))) as (url, _):
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)  # both questions reach the model
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="not-needed", max_retries=0, timeout=600)
        t0, times, pieces, last = time.perf_counter(), [], [], None
        for chunk in client.chat.completions.create(model="ragnet-auto", stream=True, messages=question):
            if chunk.choices and chunk.choices[0].delta.content:
                times.append(time.perf_counter() - t0)
                pieces.append(chunk.choices[0].delta.content)
            last = chunk
        total = time.perf_counter() - t0
        whole = client.chat.completions.create(model="ragnet-auto", messages=question)
    streamed = "".join(pieces)
    assert last.model_extra["ragnet"]["streamed"] == "tokens" and "tiber" in streamed.casefold()
    sources = next(i for i, piece in enumerate(pieces) if piece.startswith("\n\nSources:"))
    assert sources >= 2 and times[0] < times[sources - 1]  # the answer came in several pieces, over time
    assert streamed == whole.choices[0].message.content  # the same answer, token for token
    assert last.model_extra["citations"] == whole.model_extra["citations"]
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (whole.usage.prompt_tokens,
                                                                        whole.usage.completion_tokens)
    with capsys.disabled():
        print(f"\nstreamed {last.model_extra['ragnet']['strategy']}: first answer text at {times[0]:.2f}s, "
              f"answer done at {times[sources - 1]:.2f}s, reply done at {total:.2f}s; {sources} answer pieces, "
              f"{last.usage.completion_tokens} completion tokens")
