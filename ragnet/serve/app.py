"""The HTTP application of ``ragnet serve`` (FastAPI on uvicorn): the routes of
:mod:`ragnet.serve.routes`, :mod:`ragnet.serve.chat`, :mod:`ragnet.serve.files` and
:mod:`ragnet.serve.feedback` over one :class:`~ragnet.serve.service.Service`, behind the Host and
Origin checks (:mod:`ragnet.serve.hosts`), the body limit and the API key, with every error one
JSON object (:mod:`ragnet.serve.errors`) and every secret redacted from errors and log records.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from fastapi.testclient import TestClient
    >>> from ragnet.serve.options import ServeOptions
    >>> app = create_app(ServeOptions(index=index.path, reload_every=0),
    ...                  lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}]))
    >>> with TestClient(app, base_url="http://127.0.0.1") as client:
    ...     client.post("/ask", json={"question": "Capital of Italy?", "strategy": "basic"}).json()["answer"]
    'Rome'
"""

from __future__ import annotations

import contextlib
from typing import Any

from ragnet.serve.options import ServeOptions

__all__ = ["create_app"]


def create_app(options: ServeOptions, *, lm: Any = None, reader: Any = None, holder: Any = None,
               library: Any = None) -> Any:
    """The application: syncs a served folder, loads the index and sets the LMs up now (errors
    surface before the server answers).

    Args:
        options: the server's settings.
        lm: a ``dspy.BaseLM`` for every step (tests: a scripted LM); None: ``options.lm``
            (:class:`ragnet.lm.config.LMOptions`), configured as ``ragnet ask`` does.
        reader: the answer step's LM when ``lm`` is given (None: ``lm`` answers too).
        holder: an :class:`~ragnet.serve.state.IndexHolder` already made.
        library: a :class:`~ragnet.serve.library.Library` of ``options.folder`` (its first sync
            run or not); None: made here when ``options.folder`` is set.
    """
    from fastapi import FastAPI

    from ragnet._secrets import redact_logs, remember
    from ragnet.serve import chat, feedback, files, routes
    from ragnet.serve.errors import Guard, LimitBody, install_handlers
    from ragnet.serve.feedback_file import FeedbackFile
    from ragnet.serve.hosts import HostCheck, allowed_hosts
    from ragnet.serve.service import Service

    remember(options.api_key)  # the server's own key: never in a reply or a log line
    redact_logs()
    state = Service.create(options, lm=lm, reader=reader, holder=holder, library=library)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        async with state.running():
            yield

    app = FastAPI(title="ragnet", version="1", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = state
    app.state.answerer, app.state.holder, app.state.options = state.answerer, state.holder, options
    app.state.files = files.SourceFiles(options.served_docs())
    app.state.marks = FeedbackFile(state.holder.path)  # the marks of POST /feedback, in the index folder
    install_handlers(app)
    app.include_router(routes.pages)
    app.include_router(routes.index_routes)
    app.include_router(chat.router)
    app.include_router(feedback.router)
    app.include_router(files.router)
    app.add_middleware(Guard, key=options.api_key, open=routes.OPEN,
                       admit=state.links.admits if state.links is not None else None)  # a file link's token
    app.add_middleware(LimitBody, limit=options.max_body_bytes, read_timeout=options.read_timeout)
    app.add_middleware(HostCheck, allowed=allowed_hosts(options.host, options.allowed_hosts))  # last: runs first
    return app
