"""The HTTP application of ``ragnet serve`` (FastAPI on uvicorn).

Every error, whatever the route, is one JSON object in OpenAI's shape,
``{"error": {"message", "type", "code", "param"}}``:

====  ===============================================================================
400   malformed JSON, a bad strategy or budget, no user message, an empty question
401   a key is required (``--api-key-env``) and the request has none or another
404   no such route, or a model that names no ragnet strategy (``model_not_found``)
413   the body is larger than ``--max-body-bytes`` or the question than ``--max-question-chars``
422   a field of the wrong type, or a missing one
503   every slot and the queue are busy (``Retry-After``), or the LM failed to answer
504   no answer within ``--timeout`` (the question is stopped, its slot freed)
====  ===============================================================================

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from fastapi.testclient import TestClient
    >>> from ragnet.serve.options import ServeOptions
    >>> app = create_app(ServeOptions(index=index.path, reload_every=0),
    ...                  lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}]))
    >>> with TestClient(app) as client:
    ...     client.post("/ask", json={"question": "Capital of Italy?", "strategy": "basic"}).json()["answer"]
    'Rome'
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import signal
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragnet.errors import InputError, LMUnavailableError
from ragnet.serve.answering import Answerer, Busy, TimedOut
from ragnet.serve.options import ServeOptions

__all__ = ["create_app"]

log = logging.getLogger("ragnet.serve")
_OPEN = ("/", "/health", "/static/app.js", "/static/style.css", "/favicon.ico")


# -- request bodies (module level: FastAPI reads their annotations) ---------------------------
class Message(BaseModel):
    """One chat message; the question is the last one with role ``user``."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``; temperature, max_tokens, user ... are accepted and not used."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[Message] = Field(min_length=1)
    stream: bool = False


class AskRequest(BaseModel):
    """``POST /ask``."""

    model_config = ConfigDict(extra="forbid")
    question: str
    strategy: str | None = None
    budget: int | None = Field(default=None, ge=1)
    trace: bool = False


class ApiError(Exception):
    """An error answered as one JSON object with an HTTP status."""

    def __init__(self, status: int, message: str, code: str, kind: str = "invalid_request_error",
                 param: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.kind, self.param = status, message, code, kind, param
        self.headers = headers or {}


def _body(message: str, kind: str, code: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code, "param": param}}


class _LimitBody:
    """ASGI middleware: refuse a request body over ``limit`` bytes with 413, before it is parsed."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        too_large = _body(f"the request body is larger than {self.limit:,} bytes (ragnet serve --max-body-bytes)",
                          "invalid_request_error", "body_too_large")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await _send_json(send, 413, too_large)
        seen = 0
        over = False

        async def counted() -> dict:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:  # stop reading: the app sees an end, and its reply is replaced below
                    over = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        replaced = False

        async def sending(message: dict) -> None:
            nonlocal replaced
            if not over:
                return await send(message)
            if not replaced and message["type"] == "http.response.start":
                replaced = True
                await _send_json(send, 413, too_large)

        await self.app(scope, counted, sending)


async def _send_json(send: Any, status: int, body: dict) -> None:
    import json

    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def create_app(options: ServeOptions, *, lm: Any = None, reader: Any = None, holder: Any = None) -> Any:
    """The application: loads the index and sets the LMs up now (errors surface before binding).

    Args:
        options: the server's settings.
        lm: a ``dspy.BaseLM`` for every step (tests: a scripted LM); None: ``options.lm``
            (:class:`ragnet.lm.config.LMOptions`), configured as ``ragnet ask`` does.
        reader: the answer step's LM when ``lm`` is given (None: ``lm`` answers too).
        holder: an :class:`~ragnet.serve.state.IndexHolder` already made.
    """
    from fastapi import FastAPI, Query, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from ragnet.lm.failures import answer_failure
    from ragnet.programs.citations import source_line
    from ragnet.serve import openai_api, page
    from ragnet.serve.state import IndexHolder

    holder = holder or IndexHolder(options.index)
    step_lm = lm
    if lm is None:
        from ragnet.lm.config import LMOptions

        lms = options.lm or LMOptions(timeout=options.timeout)
        lms.connection()
        lms.configure()
        reader = lms.reader_lm()
        step_lm = None
        reader_for_auto = reader if reader is not None else lms.lm
    else:
        reader_for_auto = reader if reader is not None else lm
    answerer = Answerer(holder, reader=reader, step_lm=step_lm, strategy=options.strategy,
                        concurrency=options.concurrency, queue=options.queue, timeout=options.timeout,
                        auto_for=reader_for_auto)
    default_spec, default_budget = answerer.resolve(None, None)  # a bad --strategy fails here

    async def reload_loop() -> None:
        while options.reload_every > 0:
            await asyncio.sleep(options.reload_every)
            if holder.changed():
                await _reload(force=False)

    async def _reload(force: bool) -> Any:
        try:
            snap = await asyncio.to_thread(holder.reload, force)
            log.info("index %s: generation %d, %d chunks", holder.path, snap.generation, len(snap.index))
            return snap
        except Exception as exc:  # noqa: BLE001 - the current index keeps serving
            log.warning("index %s could not be reloaded (%s); still serving generation %d", holder.path, exc,
                        holder.current.generation)
            raise

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        task = asyncio.create_task(reload_loop())
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread: no signals
            loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(_quiet_reload()))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGHUP)
            answerer.close()

    async def _quiet_reload() -> None:
        with contextlib.suppress(Exception):
            await _reload(force=True)

    app = FastAPI(title="ragnet", version="1", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.answerer, app.state.holder, app.state.options = answerer, holder, options

    # -- errors: one JSON object each -----------------------------------------------------
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(_body(exc.message, exc.kind, exc.code, exc.param), status_code=exc.status,
                            headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        if first.get("type") in ("json_invalid", "model_attributes_type") or not where and "json" in str(first.get("msg", "")).lower():
            return JSONResponse(_body(f"the body is not valid JSON: {first.get('msg', '')}", "invalid_request_error",
                                      "invalid_json"), status_code=400)
        message = f"{where or 'body'}: {first.get('msg', 'invalid')}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
        return JSONResponse(_body(message, "invalid_request_error", "invalid_field", where or None), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = {404: f"no such endpoint: {request.method} {request.url.path}",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
        return JSONResponse(_body(message, "invalid_request_error", code), status_code=exc.status_code)

    @app.exception_handler(InputError)
    async def bad_input(request: Request, exc: InputError) -> JSONResponse:
        return JSONResponse(_body(str(exc), "invalid_request_error", "invalid_value", exc.argument), status_code=400)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(_body(f"internal error: {type(exc).__name__}", "server_error", "internal_error"),
                            status_code=500)

    # -- auth, headers ---------------------------------------------------------------------
    @app.middleware("http")
    async def guard(request: Request, call_next: Any) -> Any:
        if options.api_key is not None and request.url.path not in _OPEN:
            given = request.headers.get("authorization", "")
            scheme, _, token = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), options.api_key.encode()):
                why = "no API key given" if not given else "the API key is not valid"
                return JSONResponse(_body(f"{why}: send 'Authorization: Bearer <key>' (ragnet serve --api-key-env)",
                                          "authentication_error", "invalid_api_key"), status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
        response = await call_next(request)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    def check_question(question: str) -> str:
        question = question.strip()
        if not question:
            raise ApiError(400, "the question is empty", "empty_question", param="question")
        if len(question) > options.max_question_chars:
            raise ApiError(413, f"the question has {len(question):,} characters, more than the "
                                f"{options.max_question_chars:,} allowed (ragnet serve --max-question-chars)",
                           "question_too_long", param="question")
        return question

    def cited(prediction: Any) -> list[dict[str, Any]]:
        return [{**c, "source": source_line(c)} for c in (prediction.citations or [])]

    async def run(question: str, strategy: str | None, budget: int | None) -> Any:
        try:
            result = await answerer.answer(question, strategy, budget)
        except Busy as exc:
            raise ApiError(503, str(exc), "server_busy", "server_error", headers={"Retry-After": "5"}) from None
        except TimedOut as exc:
            raise ApiError(504, str(exc), "timeout", "server_error") from None
        except LMUnavailableError as exc:
            raise ApiError(503, f"the LM is unavailable: {exc}", "lm_unavailable", "server_error") from None
        failure = answer_failure(result.prediction.trace)
        if failure:
            raise ApiError(503, f"no answer: {failure}", "lm_failed", "server_error")
        return result

    # -- routes ------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def home() -> Response:
        return HTMLResponse(page.PAGE, headers={"Content-Security-Policy": page.CSP, "X-Frame-Options": "DENY"})

    @app.get("/static/app.js", include_in_schema=False)
    async def script() -> Response:
        return Response(page.SCRIPT, media_type="text/javascript; charset=utf-8")

    @app.get("/static/style.css", include_in_schema=False)
    async def style() -> Response:
        return Response(page.STYLE, media_type="text/css; charset=utf-8")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        from ragnet.programs import STRATEGIES

        return {"status": "ok", "index": holder.current.describe(), "reload_error": holder.last_error,
                "auth": options.api_key is not None, "strategy": default_spec, "budget": default_budget,
                "strategies": ["auto", *STRATEGIES], "queue": answerer.status()}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        created = int(holder.current.loaded_at)
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "ragnet"}
                                           for name in openai_api.model_names()]}

    @app.post("/reload")
    async def reload() -> dict[str, Any]:
        try:
            snap = await _reload(force=True)
        except Exception as exc:  # noqa: BLE001
            raise ApiError(503, f"the index could not be reloaded ({exc}); still serving generation "
                                f"{holder.current.generation}", "reload_failed", "server_error") from None
        return {"status": "reloaded", "index": snap.describe()}

    @app.get("/search")
    async def search(q: str = Query(..., description="the query"), k: int = Query(5, ge=1),
                     lam: float = Query(0.4, ge=0.0, le=1.0)) -> dict[str, Any]:
        q = check_question(q)
        if k > options.max_k:
            raise ApiError(400, f"k is {k}, more than the {options.max_k} allowed", "k_too_large", param="k")
        snap = holder.current
        hits = await asyncio.to_thread(snap.index.search, q, k, (), lam)
        out = []
        for h in hits:
            loc = h.metadata.get("location") if isinstance(h.metadata, dict) else None
            entry = {"id": h.id, "doc_id": h.doc_id, "title": h.title, "text": h.text, "score": h.score,
                     "dense_score": h.dense_score, "bm25_score": h.bm25_score}
            if isinstance(loc, dict):
                entry.update({k2: v for k2, v in loc.items() if k2 in ("file", "page", "page_end", "headings", "line")})
            entry["source"] = source_line(entry)
            out.append(entry)
        return {"query": q, "k": k, "index": snap.generation, "hits": out}

    @app.post("/ask")
    async def ask(body: AskRequest) -> dict[str, Any]:
        question = check_question(body.question)
        result = await run(question, body.strategy, body.budget)
        pred = result.prediction
        out = {"answer": pred.answer, "citations": cited(pred), "evidence": list(pred.evidence or []),
               "strategy": result.spec, "budget": result.budget, "usage": dict(pred.usage),
               "index": result.generation, "queued_s": round(result.queued_s, 3)}
        if body.trace:
            import json

            out["trace"] = json.loads(json.dumps(list(pred.trace), default=str))
        return out

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest) -> Any:
        strategy = openai_api.strategy_of(body.model)
        if strategy is None:
            raise ApiError(404, f"the model {body.model!r} does not exist: use 'ragnet-auto' or 'ragnet-<strategy>' "
                                "(GET /v1/models lists them)", "model_not_found", param="model")
        question = check_question(openai_api.question_of([m.model_dump() for m in body.messages]))
        if not body.stream:
            result = await run(question, strategy, None)
            pred = result.prediction
            citations = cited(pred)
            return openai_api.completion(body.model, openai_api.with_sources(pred.answer, citations), citations,
                                         pred.usage, {"ragnet": {"strategy": result.spec, "budget": result.budget,
                                                                 "index": result.generation}})
        answerer.resolve(strategy, None)  # a bad spec is a 400 before the stream starts
        if answerer.status()["pending"] >= options.concurrency + options.queue:
            raise ApiError(503, "every slot and the queue are busy; try again shortly", "server_busy",
                           "server_error", headers={"Retry-After": "5"})
        writer = openai_api.chat_chunks(body.model, f"chatcmpl-{uuid.uuid4().hex}", int(time.time()))

        async def events() -> Any:
            # The answer is generated whole and then sent in word-sized chunks: DSPy's answer step
            # parses the reader's structured output (answer and cited ids) only once it is complete.
            yield writer.role()
            task = asyncio.ensure_future(run(question, strategy, None))
            try:
                while True:
                    done, _ = await asyncio.wait({task}, timeout=10)
                    if done:
                        break
                    yield ": still answering\n\n"  # a comment line: keeps proxies from closing the stream
                result = task.result()
            except ApiError as exc:
                yield writer.error(exc.message, exc.kind, exc.code)
                yield writer.done()
                return
            finally:
                if not task.done():
                    task.cancel()
            pred = result.prediction
            citations = cited(pred)
            for piece in writer.content(openai_api.with_sources(pred.answer, citations)):
                yield piece
            yield writer.end(citations, pred.usage)
            yield writer.done()

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return _LimitBody(app, options.max_body_bytes) if options.max_body_bytes else app
