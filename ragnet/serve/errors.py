"""Every error of ``ragnet serve``, whatever the route, as one JSON object in OpenAI's shape,
``{"error": {"message", "type", "code", "param"}}``; and the two checks that run before any
route: the body size and the API key.

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
    >>> error_body("the question is empty", "invalid_request_error", "empty_question", "question")["error"]["code"]
    'empty_question'
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Any

from ragnet.errors import InputError

__all__ = ["ApiError", "Guard", "LimitBody", "check_key", "error_body", "install_handlers"]

log = logging.getLogger("ragnet.serve")


class ApiError(Exception):
    """An error answered as one JSON object with an HTTP status."""

    def __init__(self, status: int, message: str, code: str, kind: str = "invalid_request_error",
                 param: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.kind, self.param = status, message, code, kind, param
        self.headers = headers or {}


def error_body(message: str, kind: str, code: str, param: str | None = None) -> dict[str, Any]:
    """The JSON object of one error."""
    return {"error": {"message": message, "type": kind, "code": code, "param": param}}


def check_key(authorization: str, key: str | None) -> ApiError | None:
    """The 401 for a request whose ``Authorization`` header does not carry ``key`` (None: it does,
    or no key is required).

    Example:
        >>> check_key("Bearer s3cret-key", "s3cret-key") is None, check_key("", "s3cret-key").status
        (True, 401)
    """
    if key is None:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode()):
        return None
    why = "no API key given" if not authorization else "the API key is not valid"
    return ApiError(401, f"{why}: send 'Authorization: Bearer <key>' (ragnet serve --api-key-env)", "invalid_api_key",
                    "authentication_error", headers={"WWW-Authenticate": "Bearer"})


def install_handlers(app: Any) -> None:
    """Answer every exception a route raises, and FastAPI's own errors, with one JSON error."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    def reply(status: int, message: str, code: str, kind: str = "invalid_request_error", param: str | None = None,
              headers: dict[str, str] | None = None) -> JSONResponse:
        return JSONResponse(error_body(message, kind, code, param), status_code=status, headers=headers)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return reply(exc.status, exc.message, exc.code, exc.kind, exc.param, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        if first.get("type") in ("json_invalid", "model_attributes_type") or not where and "json" in str(first.get("msg", "")).lower():
            return reply(400, f"the body is not valid JSON: {first.get('msg', '')}", "invalid_json")
        message = f"{where or 'body'}: {first.get('msg', 'invalid')}" + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
        return reply(422, message, "invalid_field", param=where or None)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = {404: f"no such endpoint: {request.method} {request.url.path}",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
        return reply(exc.status_code, message, code)

    @app.exception_handler(InputError)
    async def bad_input(request: Request, exc: InputError) -> JSONResponse:
        return reply(400, str(exc), "invalid_value", param=exc.argument)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return reply(500, f"internal error: {type(exc).__name__}", "internal_error", "server_error")


class LimitBody:
    """ASGI middleware: refuse a request body over ``limit`` bytes with 413, before it is parsed."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        too_large = error_body(f"the request body is larger than {self.limit:,} bytes (ragnet serve --max-body-bytes)",
                               "invalid_request_error", "body_too_large")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await send_json(send, 413, too_large)
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
                await send_json(send, 413, too_large)

        await self.app(scope, counted, sending)


class Guard:
    """ASGI middleware: refuse a request without the API key (but on the ``open`` paths: the page
    and ``/health``) with 401, and give every response the headers that keep a browser from
    sniffing, caching or leaking it."""

    HEADERS = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
               (b"cache-control", b"no-store"))

    def __init__(self, app: Any, key: str | None, open: tuple[str, ...]) -> None:
        self.app, self.key, self.open = app, key, open

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] not in self.open:
            authorization = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            refused = check_key(authorization, self.key)
            if refused is not None:
                return await send_json(send, refused.status, error_body(refused.message, refused.kind, refused.code),
                                       refused.headers)

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message = {**message, "headers": [*message.get("headers", []),
                                                  *(h for h in self.HEADERS if h[0] not in present)]}
            await send(message)

        await self.app(scope, receive, sending)


async def send_json(send: Any, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
    """Send ``body`` as a whole JSON response through the ASGI ``send``."""
    data = json.dumps(body).encode()
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *extra]})
    await send({"type": "http.response.body", "body": data})
