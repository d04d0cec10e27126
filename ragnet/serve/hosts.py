"""Which ``Host`` the server answers to, and which pages may make it act.

A server on 127.0.0.1 with no key is still reachable from a web page: a page of another site
can point its own domain name at 127.0.0.1 (DNS rebinding) and then read ``/search`` and
``/ask`` as its own origin, and any page can send a POST that needs no preflight. Two checks,
before anything else runs (:class:`HostCheck`):

* the ``Host`` header must name the server: the address it is bound to, ``localhost``,
  ``127.0.0.1`` or ``[::1]``, a name given with ``--allowed-host`` (a reverse proxy's; ``*``
  allows any), or, on a wildcard bind (``0.0.0.0``, ``::``), any IP address; else 421;
* a request that acts (any method but GET, HEAD and OPTIONS) carrying an ``Origin`` must come
  from the server's own origin (the ``Origin``'s host and port are the ``Host``) or from a host
  given with ``--allowed-host``; else 403. Same-origin pages (the page at ``/``) and clients that
  send no ``Origin`` (curl, the OpenAI client) are unaffected.

Example:
    >>> allowed = allowed_hosts("127.0.0.1", ["rag.example.com"])
    >>> host_allowed("localhost:8000", allowed), host_allowed("evil.example", allowed)
    (True, False)
    >>> origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000", allowed)
    True
    >>> origin_allowed("https://evil.example", "127.0.0.1:8000", allowed)
    False
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable
from urllib.parse import urlsplit

from ragnet.serve.errors import error_body, send_json

__all__ = ["LOCAL_HOSTS", "HostCheck", "allowed_hosts", "host_allowed", "host_name", "origin_allowed"]

#: Names that always mean this machine.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
_WILDCARD = ("0.0.0.0", "::", "")
_SAFE = ("GET", "HEAD", "OPTIONS")


class Allowed:
    """The names a server answers to (see :func:`allowed_hosts`)."""

    def __init__(self, names: frozenset[str], extra: frozenset[str], any_ip: bool) -> None:
        self.names, self.extra, self.any_ip = names, extra, any_ip
        self.anything = "*" in extra


def host_name(value: str) -> str:
    """The host of a ``Host`` header or a netloc, lower-cased, without its port or brackets.

    Example:
        >>> host_name("[::1]:8000"), host_name("LocalHost:80"), host_name("example.com.")
        ('::1', 'localhost', 'example.com')
    """
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> Allowed:
    """The names a server bound to ``bound`` answers to, with the ``--allowed-host`` names
    ``extra``."""
    more = frozenset(host_name(h) if h.strip() != "*" else "*" for h in extra if h.strip())
    names = frozenset({*LOCAL_HOSTS, host_name(bound), *more} - {""})
    return Allowed(names, more, host_name(bound) in _WILDCARD)


def host_allowed(host: str, allowed: Allowed) -> bool:
    """Whether a request with this ``Host`` header is answered."""
    name = host_name(host)
    return allowed.anything or name in allowed.names or (allowed.any_ip and _is_ip(name))


def origin_allowed(origin: str, host: str, allowed: Allowed) -> bool:
    """Whether a page of ``origin`` may make the server act (``host``: the request's ``Host``)."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # "null" (a sandboxed frame, a file), or not an origin at all
    if parts.netloc.lower() == host.strip().lower():
        return True  # the page is the server's own
    return allowed.anything or host_name(parts.netloc) in allowed.extra


class HostCheck:
    """ASGI middleware: 421 for a ``Host`` the server does not answer to, 403 for a request that
    acts from a page of another origin (see the module docs)."""

    def __init__(self, app: Any, allowed: Allowed) -> None:
        self.app, self.allowed = app, allowed

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if host and not host_allowed(host, self.allowed):
            return await send_json(send, 421, error_body(
                f"this server does not answer to the host {host_name(host)!r} (ragnet serve --allowed-host)",
                "invalid_request_error", "host_not_allowed"))
        origin = headers.get(b"origin")
        if origin is not None and scope.get("method", "GET") not in _SAFE:
            origin_text = origin.decode("latin-1")
            if not origin_allowed(origin_text, host, self.allowed):
                return await send_json(send, 403, error_body(
                    f"requests from the page at {origin_text[:200]!r} may not act on this server "
                    "(ragnet serve --allowed-host)", "invalid_request_error", "origin_not_allowed"))
        await self.app(scope, receive, send)
