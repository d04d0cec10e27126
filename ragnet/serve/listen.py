"""How ``ragnet serve`` listens: its socket, bound before anything loads, and its connections,
which must send a request's headers within a read timeout.

uvicorn waits for a new connection's first request with no limit, and for the rest of a request
whose first bytes came: idle or trickling sockets, a few hundred of them, hold every file
descriptor the process may open, and every other client is refused. Here each connection's
protocol (uvicorn's own, :func:`timed_protocol`) closes it when a request's headers have not all
arrived within ``read_timeout`` seconds of the connection opening, or of its first byte after a
reply (a partial request gets 408 first); the body then has ``read_timeout`` seconds of its own
(:class:`ragnet.serve.errors.LimitBody`), and a connection idle after a reply is closed by
uvicorn's keep-alive timeout.

The socket is bound by :func:`bind` before the index loads, so a port in use is one line and
exit 2 (uvicorn's own bind exits 3, which ``ragnet`` uses for "the LM failed").

Example:
    >>> [sock] = bind("127.0.0.1", 0)
    >>> sock.getsockname()[0]
    '127.0.0.1'
    >>> sock.listen()
    >>> try:
    ...     bind("127.0.0.1", sock.getsockname()[1])
    ... except InputError as err:
    ...     print(str(err).split(":")[0])
    argument 'port'
    >>> sock.close()
"""

from __future__ import annotations

import errno
import socket
from typing import Any

from ragnet.errors import InputError

__all__ = ["bind", "server_config", "timed_protocol"]

#: Seconds an idle connection stays open after a reply (uvicorn's keep-alive timeout).
KEEP_ALIVE_S = 5
_TIMEOUT_REPLY = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                  b"content-length: 30\r\nconnection: close\r\n\r\nthe request headers came late\n")


def bind(host: str, port: int) -> list[socket.socket]:
    """TCP sockets bound to ``host``:``port``, one for each address the host name has (not yet
    listening), as uvicorn would bind them.

    Raises:
        InputError: the address cannot be resolved, or the port is in use or not allowed.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise InputError(f"cannot resolve {host!r} ({getattr(exc, 'strerror', None) or exc})",
                         argument="host") from None
    sockets: list[socket.socket] = []
    for family, kind, proto, _, address in dict.fromkeys((i[0], i[1], i[2], None, i[4]) for i in infos):
        sock = socket.socket(family, kind, proto)
        sockets.append(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # its IPv4 twin binds on its own
        try:
            sock.bind(address)
        except OSError as exc:
            for opened in sockets:
                opened.close()
            why = {errno.EADDRINUSE: "is in use (another server listens there: give another --port)",
                   errno.EACCES: "needs privileges (ports below 1024): give another --port",
                   errno.EADDRNOTAVAIL: "is not an address of this machine (--host)"}.get(
                exc.errno, f"cannot be bound ({exc.strerror or exc})")
            raise InputError(f"{host}:{port} {why}", argument="port") from None
    return sockets


def timed_protocol(read_timeout: float) -> type:
    """uvicorn's HTTP protocol class, with the header read timeout (see the module docs)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class TimedProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _clock: Any = None
        _seen: Any = None  # the request whose headers came last
        _partial = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._clock is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the first bytes of the next request: its headers get the same time
            self._partial = True
            super().data_received(data)
            if self.cycle is not None and self.cycle is not self._seen:
                self._seen, self._partial = self.cycle, False  # headers in: the body is LimitBody's
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._clock = self.loop.call_later(read_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._clock is not None:
                self._clock.cancel()
                self._clock = None

        def _too_slow(self) -> None:
            self._clock = None
            if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
                return
            if self._partial:
                self.transport.write(_TIMEOUT_REPLY)
            self.transport.close()

    return TimedProtocol


def server_config(app: Any, host: str, port: int, read_timeout: float, **kwargs: Any) -> Any:
    """The ``uvicorn.Config`` of a server of ``app``, its connections under ``read_timeout``."""
    import uvicorn

    kwargs.setdefault("log_level", "warning")
    return uvicorn.Config(app, host=host, port=port, http=timed_protocol(read_timeout),
                          timeout_keep_alive=KEEP_ALIVE_S, **kwargs)
