"""Every error of ``ragnet serve``, whatever the route, as one JSON object in OpenAI's shape,
``{"error": {"message", "type", "code", "param"}}``; and the two checks that run before any
route: the body size and the API key.

====  ===============================================================================
400   malformed JSON, a bad strategy or budget, no user message, an empty question, a lone surrogate,
      ``only`` patterns too many or too long, a mark whose place the index does not have or a wrong
      mark without the right answer (:mod:`ragnet.serve.feedback`)
401   a key is required (``--api-key-env``) and the request has none or another, or a file link expired
403   a state-changing request (POST) from a page of another origin (:mod:`ragnet.serve.hosts`), or a file
      link's token made for another file (:mod:`ragnet.serve.links`)
404   no such route, a model that names no ragnet strategy (``model_not_found``), or a file the index
      does not name (:mod:`ragnet.serve.files`)
408   the request's headers or body did not arrive within ``--read-timeout`` (:mod:`ragnet.serve.listen`)
410   a file the index names that is gone from the served folders, or changed since it was indexed
413   the body is larger than ``--max-body-bytes`` or the question than ``--max-question-chars``
421   a ``Host`` the server does not answer to (``--allowed-host``; :mod:`ragnet.serve.hosts`)
422   a field of the wrong type, or a missing one
499   the client left before its answer (the question is stopped, its slot freed; sent to nobody)
503   every slot and the queue are busy (``Retry-After``), the LM failed to answer, or a mark found
      the index folder locked by an update for too long (``Retry-After``)
504   no answer within ``--timeout`` (the question is stopped, its slot freed)
507   ``feedback.jsonl`` is at its bound, or the disk is full
====  ===============================================================================

Every message goes through :func:`public_text` on its way out: the secrets ragnet was given
(the LM's key, a server URL's password, the server's own key) read ``***``
(:func:`ragnet._secrets.redact`), whatever error text an LM or a library echoed them in; an
error about a folder of the server's (the index, a served folder) loses its absolute paths too
(:func:`public_error`).

Example:
    >>> error_body("the question is empty", "invalid_request_error", "empty_question", "question")["error"]["code"]
    'empty_question'
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
from pathlib import Path
from typing import Any

from ragnet.errors import InputError

__all__ = ["ApiError", "Guard", "LimitBody", "check_key", "error_body", "install_handlers", "public_error",
           "public_text"]

log = logging.getLogger("ragnet.serve")
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/[^\s'\"`:,;()\[\]]+")


class ApiError(Exception):
    """An error answered as one JSON object with an HTTP status."""

    def __init__(self, status: int, message: str, code: str, kind: str = "invalid_request_error",
                 param: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.kind, self.param = status, message, code, kind, param
        self.headers = headers or {}


def public_text(text: str) -> str:
    """``text`` as a client may read it: secrets redacted, and a lone surrogate (which UTF-8
    cannot encode) written as its escape.

    Example:
        >>> public_text("bad " + chr(0xD800) + " name")
        'bad \\\\ud800 name'
    """
    from ragnet._secrets import redact

    return redact(text).encode("utf-8", "backslashreplace").decode("utf-8")


def public_error(text: str | None, root: Any) -> str | None:
    """An error about the index folder ``root`` as any client may read it: the folder's path
    written as its name, other absolute paths as their last part, secrets redacted.

    Example:
        >>> public_error("RagnetError: /srv/data/idx/chunks.npz: checksum mismatch (cache /home/me/.x/m.gguf)",
        ...              "/srv/data/idx")
        'RagnetError: idx/chunks.npz: checksum mismatch (cache m.gguf)'
    """
    if text is None:
        return None
    root = Path(root)
    for form in sorted({str(root.absolute()), str(root.resolve()), str(root)}, key=len, reverse=True):
        if form not in ("", ".", "/"):
            text = text.replace(form, root.name or form)
    text = _ABSOLUTE.sub(lambda m: Path(m.group(0)).name or "/", text)
    return public_text(text)


def error_body(message: str, kind: str, code: str, param: str | None = None) -> dict[str, Any]:
    """The JSON object of one error (its message through :func:`public_text`)."""
    return {"error": {"message": public_text(message), "type": kind, "code": code, "param": param}}


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
    """ASGI middleware: refuse a request body over ``limit`` bytes with 413, before it is parsed,
    and one that does not arrive within ``read_timeout`` seconds with 408 (a client that stops
    sending holds its connection no longer)."""

    def __init__(self, app: Any, limit: int, read_timeout: float | None = None) -> None:
        self.app, self.limit, self.read_timeout = app, limit, read_timeout

    def _too_large(self) -> dict[str, Any]:
        return error_body(f"the request body is larger than {self.limit:,} bytes (ragnet serve --max-body-bytes)",
                          "invalid_request_error", "body_too_large")

    def _too_slow(self) -> dict[str, Any]:
        return error_body(f"the request body did not arrive within {self.read_timeout:g}s "
                          "(ragnet serve --read-timeout)", "invalid_request_error", "body_timeout")

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await send_json(send, 413, self._too_large())
        seen = 0
        refusal: tuple[int, dict[str, Any]] | None = None  # the reply that replaces the app's
        deadline = None if self.read_timeout is None else asyncio.get_running_loop().time() + self.read_timeout
        body_done = False

        async def counted() -> dict:
            nonlocal seen, refusal, body_done
            if body_done or deadline is None:
                message = await receive()  # after the body: a wait for the client to leave, untimed
            else:
                try:
                    message = await asyncio.wait_for(receive(), max(0.0, deadline - asyncio.get_running_loop().time()))
                except asyncio.TimeoutError:
                    refusal = (408, self._too_slow())
                    return {"type": "http.request", "body": b"", "more_body": False}
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
                if seen > self.limit:  # stop reading: the app sees an end, and its reply is replaced below
                    refusal = (413, self._too_large())
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        replaced = False

        async def sending(message: dict) -> None:
            nonlocal replaced
            if refusal is None:
                return await send(message)
            if not replaced and message["type"] == "http.response.start":
                replaced = True
                await send_json(send, *refusal, headers={"Connection": "close"} if refusal[0] == 408 else None)

        await self.app(scope, counted, sending)


class Guard:
    """ASGI middleware: refuse a request without the API key (but on the ``open`` paths: the page
    and ``/health``) with 401, and give every response the headers that keep a browser from
    sniffing, caching or leaking it.

    ``admit`` (optional) judges a request without the key by another proof: True lets it in, an
    ApiError refuses it with that error, None leaves it to the key (a file link's token,
    :meth:`ragnet.serve.links.LinkSigner.admits`)."""

    HEADERS = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
               (b"cache-control", b"no-store"))

    def __init__(self, app: Any, key: str | None, open: tuple[str, ...], admit: Any = None) -> None:
        self.app, self.key, self.open, self.admit = app, key, open, admit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] not in self.open:
            authorization = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            refused = check_key(authorization, self.key)
            if refused is not None and self.admit is not None:
                verdict = self.admit(scope)
                refused = None if verdict is True else verdict if isinstance(verdict, ApiError) else refused
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
