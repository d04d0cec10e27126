"""A real HTTP server (uvicorn on a free port of 127.0.0.1, in a thread) over a small index,
answering with a scripted DSPy LM."""

from __future__ import annotations

import contextlib
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from ragnet.corpus.types import Document

HOSTILE = 'The <script>alert("pwned")</script> tag and <img src=x onerror="alert(1)"> are shown as text.'
DOCS = [
    ("paris", "Paris", "Paris is the capital of France. The Seine river runs through Paris."),
    ("rome", "Rome", "Rome is the capital of Italy. The Tiber river runs through Rome."),
    ("oslo", "Oslo", "Oslo is the capital of Norway. It lies at the head of the Oslofjord."),
    ("hostile", "<b>Markup</b> & co", HOSTILE),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def serve_index(tmp_path_factory):
    from ragnet.index import Index

    docs = [Document(id=i, title=t, text=x, location={"file": f"{i}.md"}) for i, t, x in DOCS]
    return Index.build(docs, tmp_path_factory.mktemp("serve") / "idx", show_progress=False)


@pytest.fixture
def index_copy(serve_index, tmp_path) -> Path:
    target = tmp_path / "idx"
    shutil.copytree(serve_index.path, target)
    return target


@contextlib.contextmanager
def running(app):
    """Serve ``app`` on a free port in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def serve(dspy_state):
    """``with serve(options, lm=...) as (url, app):`` a real server over HTTP."""
    from ragnet.serve import create_app

    @contextlib.contextmanager
    def make(options, **kwargs):
        app = create_app(options, **kwargs)
        with running(app) as url:
            yield url, getattr(app, "app", app)

    return make
