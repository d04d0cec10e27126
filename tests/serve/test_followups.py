"""Follow-up questions over HTTP: a chat client's conversation and ``/ask``'s ``history`` reach the
condense step, and the reader answers the standalone question."""

from __future__ import annotations

import httpx
import pytest

from ragnet.serve import ServeOptions
from tests.programs.scripted import ProgramLM
from tests.serve.conftest import StreamingLM


def options(index, **kw) -> ServeOptions:
    return ServeOptions(index=index, reload_every=0, **{"timeout": 30, **kw})


def standalone(prompt: str, n: int) -> dict:
    return {"standalone_question": "Which river runs through Rome?"}


def answer_rome(prompt: str, n: int) -> dict:
    return {"answer": "the Tiber", "evidence_ids": ["c1"]}


def asked(engine: ProgramLM, step: str) -> list[str]:
    return [prompt for s, prompt in engine.calls if s == step]


def test_a_follow_up_through_the_openai_client_uses_the_conversation(serve, serve_index):
    openai = pytest.importorskip("openai")
    engine = StreamingLM(condense=standalone, answer=answer_rome)
    with serve(options(serve_index.path), lm=engine.lm()) as (url, _):
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        messages = [{"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Which river runs through Paris?"}]
        first = client.chat.completions.create(model="ragnet-basic", messages=messages)
        assert "condense" not in engine.steps()  # one question: no rewrite, no extra LM call
        messages += [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": "And through Rome?"}]
        second = client.chat.completions.create(model="ragnet-basic", messages=messages)
        streamed = list(client.chat.completions.create(model="ragnet-basic", messages=messages, stream=True))
    condense = asked(engine, "condense")
    assert len(condense) == 2 and "User: Which river runs through Paris?" in condense[0]
    assert "Assistant: the Tiber" in condense[0] and "Sources:" not in condense[0].rsplit("## history ## ]]", 1)[-1]
    assert "And through Rome?" in condense[0] and "Be brief." not in condense[0]
    answers = asked(engine, "answer")
    assert "Which river runs through Rome?" in answers[1].rsplit("[[ ## question ## ]]", 1)[1]
    assert second.model_extra["ragnet"]["standalone_question"] == "Which river runs through Rome?"
    assert second.choices[0].message.content.startswith("the Tiber\n\nSources:")
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == second.choices[0].message.content
    assert streamed[-1].model_extra["ragnet"]["standalone_question"] == "Which river runs through Rome?"


def test_ask_takes_the_earlier_turns_and_their_citations(serve, serve_index):
    engine = ProgramLM(condense=standalone, answer=answer_rome)
    with serve(options(serve_index.path), lm=engine.lm()) as (url, _):
        first = httpx.post(f"{url}/ask", json={"question": "Which river runs through Paris?", "strategy": "basic",
                                               "trace": True}, timeout=30).json()
        assert first["standalone_question"] is None
        turn = {"question": "Which river runs through Paris?", "answer": first["answer"],
                "citations": first["citations"]}
        second = httpx.post(f"{url}/ask", json={"question": "And through Rome?", "strategy": "basic", "trace": True,
                                                "history": [turn]}, timeout=30).json()
    assert second["standalone_question"] == "Which river runs through Rome?"
    follow = next(e for e in second["trace"] if e["step"] == "follow_up")
    assert follow["carried"] == [c["id"] for c in first["citations"]]


@pytest.mark.parametrize("history, message", [
    ([{"question": "q?", "answer": "a", "extra": 1}], "extra"),
    ([{"question": "q?"}] * 51, "history"),
    ([{"answer": "no question"}], "question"),
])
def test_a_bad_history_is_a_400_naming_it(serve, serve_index, history, message):
    engine = ProgramLM()
    with serve(options(serve_index.path), lm=engine.lm()) as (url, _):
        reply = httpx.post(f"{url}/ask", json={"question": "And Rome?", "history": history}, timeout=30)
    assert reply.status_code in (400, 422) and message in reply.text and engine.calls == []
