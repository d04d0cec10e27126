"""A real HTTP server (uvicorn on a free port of 127.0.0.1, in a thread) over a small index,
answering with a scripted DSPy LM (one that streams: :class:`StreamingLM`)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import dspy
import pytest
from dspy.lm15 import StreamDeltaEvent, StreamEndEvent, StreamStartEvent, TextDelta, Usage

from ragnet.corpus.types import Document
from tests.corpus.make_files import PAGES, docx_bytes, pdf_bytes
from tests.programs.scripted import ProgramLM

HOSTILE = 'The <script>alert("pwned")</script> tag and <img src=x onerror="alert(1)"> are shown as text.'
DOCS = [
    ("paris", "Paris", "Paris is the capital of France. The Seine river runs through Paris."),
    ("rome", "Rome", "Rome is the capital of Italy. The Tiber river runs through Rome."),
    ("oslo", "Oslo", "Oslo is the capital of Norway. It lies at the head of the Oslofjord."),
    ("hostile", "<b>Markup</b> & co", HOSTILE),
]


PDF = "guide/budget plan.pdf"  # a space: a link quotes it, the file route takes it back
HOSTILE_HTML = """<!doctype html><html><head><title>Pump manual</title>
<script>document.title = "pwned"; fetch("/ask", {method: "POST"});</script></head>
<body><h1>Pump</h1><p>The pump runs at 50 rpm.</p><img src="x" onerror="document.title = 'pwned'"></body></html>
"""
SECRET = "The vault code is 4242."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def serve_index(tmp_path_factory):
    from ragnet.index import Index

    docs = [Document(id=i, title=t, text=x, location={"file": f"{i}.md"}) for i, t, x in DOCS]
    return Index.build(docs, tmp_path_factory.mktemp("serve") / "idx", show_progress=False)


@pytest.fixture(scope="session")
def manuals(tmp_path_factory):
    """A folder of manuals indexed by ``Index.sync`` (what ``ragnet index`` runs), a file outside
    it, and the index."""
    from ragnet.index import Index

    root = tmp_path_factory.mktemp("files")
    docs = root / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / PDF).write_bytes(pdf_bytes(PAGES))
    (docs / "notes.md").write_text("# Notes\n\n## Rivers\n\nThe Seine runs through Paris. It is long.\n")
    (docs / "pump.html").write_text(HOSTILE_HTML)
    (docs / "handbook.docx").write_bytes(docx_bytes())
    (root / "secret.md").write_text(SECRET)
    index, _ = Index.sync([str(docs)], root / "idx", chunk_tokens=24, overlap=0, show_progress=False)
    (docs / "later.md").write_text("Written after indexing: not indexed.")
    return SimpleNamespace(root=root, docs=docs, index=index.path)


@pytest.fixture
def index_copy(serve_index, tmp_path) -> Path:
    target = tmp_path / "idx"
    shutil.copytree(serve_index.path, target)
    return target


@contextlib.contextmanager
def running(app, **config):
    """Serve ``app`` on a free port in a thread, as ``ragnet serve`` does (its read timeout
    included; ``config``: more ``uvicorn.Config`` settings, e.g. ``log_level``); yields its base URL."""
    import uvicorn

    from ragnet.serve.listen import server_config

    port = free_port()
    options = getattr(getattr(app, "state", None), "options", None)
    server = uvicorn.Server(server_config(app, "127.0.0.1", port, getattr(options, "read_timeout", 10.0), **config))
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


class StreamingLM(ProgramLM):
    """:class:`tests.programs.scripted.ProgramLM` with DSPy's streaming hook: each reply comes as
    ``piece``-character deltas, ``delay`` seconds apart, as a model's tokens would; with
    ``json=True`` the reply is the JSON object DSPy's JSONAdapter asks for. ``sent`` counts the
    deltas it yielded, and ``closed`` how many streams were closed before their end."""

    def __init__(self, *, json: bool = False, piece: int = 3, delay: float = 0.0, **responders) -> None:
        super().__init__(**responders)
        self.json, self.piece, self.delay = json, piece, delay
        self.sent = self.closed = 0

    def reply(self, request) -> str:
        response = ProgramLM.complete(self, request)
        text = response.message.text
        if self.json:
            fields = re.findall(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", text, re.S)
            text = json.dumps({name: _value(value) for name, value in fields if name != "completed"})
        return text

    def stream(self, request):
        text = self.reply(request)
        yield StreamStartEvent(model="scripted")
        finished = False
        try:
            for start in range(0, len(text), self.piece):
                if self.delay:
                    time.sleep(self.delay)
                self.sent += 1
                yield StreamDeltaEvent(delta=TextDelta(text=text[start:start + self.piece], part_index=0))
            finished = True
        finally:
            self.closed += not finished
        yield StreamEndEvent(finish_reason="stop", usage=Usage(input_tokens=len(text) // 4, output_tokens=10))

    def lm(self, model: str = "scripted/streaming") -> dspy.LM:
        return dspy.LM(model, engine=self, cache=False, num_retries=0)


def _value(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text
