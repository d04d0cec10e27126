"""A question past the server's deadline stops the local reader's call under way (``ragnet.lm.stop``):
the model is free again at the next token, not after the whole answer. A real server over HTTP, the
llama.cpp engine on the stand-in for ``llama_cpp.Llama`` of ``tests/lm/test_local_stream``."""

from __future__ import annotations

import time

import dspy
import httpx
import pytest

from ragnet.lm.local import _MODELS
from ragnet.serve import ServeOptions
from tests.lm.test_local_stream import fake  # noqa: F401 - the fixture is used by name

pytest.importorskip("llama_cpp")


def test_a_timed_out_question_stops_the_local_call_and_frees_the_model(serve, serve_index, fake):
    engine, llm = fake([f" w{i}" for i in range(200)], delay=0.02)  # 4 s of answer to generate
    reader = dspy.LM(engine.model_name, engine=engine, num_retries=0, cache=False)
    with serve(ServeOptions(index=serve_index.path, reload_every=0, timeout=0.5), lm=reader) as (url, app):
        reply = httpx.post(f"{url}/ask", json={"question": "River of Paris?", "strategy": "basic"}, timeout=30)
        assert reply.status_code == 504
        deadline = time.time() + 3
        while app.state.answerer.status()["pending"] and time.time() < deadline:
            time.sleep(0.02)
        assert app.state.answerer.status()["pending"] == 0
        lock = _MODELS[engine._key()].lock
        assert lock.acquire(blocking=False)  # the model is free
        lock.release()
        assert 0 < llm.generated < 60  # stopped near the 0.5 s deadline, not after the 200 tokens
