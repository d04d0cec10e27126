"""A minimal real OpenAI-compatible HTTP server on 127.0.0.1 that can be told to fail.

It answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) in one of these modes,
counting every request it receives:

* ``ok``: a well-formed completion whose content is ``reply`` (a JSON string DSPy's adapters
  can parse, by default an answer for any ragnet step); a request that asks for ``logprobs`` and
  ``top_logprobs`` (as llama.cpp's server needs) also gets the reply's token logprobs, one token
  per whitespace-separated piece at ``token_logprob`` each (with ``refuse_logprobs``, such a
  request gets HTTP 400 instead, as from a provider that does not take the parameter);
* ``error500``: HTTP 500 with a JSON error body;
* ``badjson``: HTTP 200 with a body that is not JSON;
* ``nochoices``: HTTP 200 with ``"choices": []``;
* ``hang``: accept the request and never answer (until the server stops);
* ``drop``: close the connection without a response;
* ``trickle``: the ``ok`` completion sent one byte every ``interval`` seconds, padded with leading
  whitespace (valid JSON) so that the whole reply takes about ``seconds``: every single read
  finishes long before a per-read timeout would fire, so only a deadline over the whole call stops
  it. The server stops trickling when the block ends.

Used by ``tests/lm/test_served.py`` and ``tests/lm/test_lm_deadline.py`` for the fault cases; the
success case also runs against llama.cpp's own server with the local GGUF. Traffic stays on the
loopback interface.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("ok", "error500", "badjson", "nochoices", "hang", "drop", "trickle")


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (at its deadline, or on a dropped connection) is the point, not an error


class FaultServer:
    """``with FaultServer("hang") as server: ... server.url ... server.requests``."""

    def __init__(self, mode: str = "ok", reply: str | None = None, *, interval: float = 0.05,
                 seconds: float = 30.0, token_logprob: float = -0.1, refuse_logprobs: bool = False) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        self.mode = mode
        self.interval, self.seconds = interval, seconds  # the trickle's pace and length
        self.reply = reply if reply is not None else json.dumps(
            {"answer": "Paris", "evidence_ids": ["c1"], "verdict": "Sufficient", "confidence": 0.9, "missing": ""})
        self.token_logprob, self.refuse_logprobs = token_logprob, refuse_logprobs
        self.requests = 0
        self.bodies: list[dict] = []  # the JSON body of every request, in order
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle
    def __enter__(self) -> "FaultServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with server._lock:
                    server.requests += 1
                    server.bodies.append(body)
                mode = server.mode
                if mode == "hang":
                    server._stop.wait(300)
                    return
                if mode == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if mode == "error500":
                    self._send(500, {"error": {"message": "internal failure", "type": "server_error"}})
                elif mode == "badjson":
                    self._raw(200, b"{this is not json", "application/json")
                elif mode == "nochoices":
                    self._send(200, {"id": "x", "object": "chat.completion", "created": int(time.time()),
                                     "model": "test-model", "choices": [], "usage": {}})
                elif mode == "trickle":
                    self._trickle(json.dumps(self._completion()).encode())
                elif server.refuse_logprobs and body.get("logprobs"):
                    self._send(400, {"error": {"message": "logprobs is not supported", "type": "invalid_request_error"}})
                else:
                    self._send(200, self._completion(body.get("logprobs") and body.get("top_logprobs")))

            def _completion(self, logprobs: Any = False) -> dict:
                choice = {"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": server.reply}}
                if logprobs:
                    pieces = re.findall(r"\s*\S+", server.reply)
                    choice["logprobs"] = {"content": [
                        {"token": piece, "logprob": server.token_logprob, "bytes": None,
                         "top_logprobs": [{"token": piece, "logprob": server.token_logprob, "bytes": None}]}
                        for piece in pieces]}
                return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                        "model": "test-model", "choices": [choice],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

            def _trickle(self, body: bytes) -> None:
                data = b" " * max(0, int(server.seconds / server.interval) - len(body)) + body
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    for i in range(len(data)):
                        if server._stop.wait(server.interval):
                            return
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                except OSError:  # the client hung up: what a deadline does
                    return

            def _send(self, status: int, body: dict) -> None:
                self._raw(status, json.dumps(body).encode(), "application/json")

            def _raw(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The ``api_base`` for litellm (``openai/<model>`` ids)."""
        return f"http://127.0.0.1:{self.port}/v1"
