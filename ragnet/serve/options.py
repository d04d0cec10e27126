"""What ``ragnet serve`` is told: where the index is, how to reach the LMs, and its limits.

Example:
    >>> options = ServeOptions(index="idx", timeout=30, max_question_chars=500)
    >>> options.port, options.concurrency, options.queue
    (8000, 1, 32)
    >>> ServeOptions(index="idx", port=0).port
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: argument 'port': must be between 1 and 65535, got 0
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragnet._text import MAX_QUESTION_CHARS
from ragnet.errors import InputError

__all__ = ["ServeOptions"]


def _positive(value: Any, argument: str, *, number: type = int, low: float = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float) if number is float else int) or value < low:
        raise InputError(f"must be {'a number' if number is float else 'an integer'} of at least {low:g}, "
                         f"got {value!r}", argument=argument)


@dataclass(frozen=True)
class ServeOptions:
    """Settings of one ``ragnet serve`` process.

    Attributes:
        index: the index folder (``ragnet index``); with ``folder`` and no index, the folder's
            in ``$RAGNET_HOME/served`` (:func:`ragnet.serve.folder.cache_index`).
        host: the address to bind; 127.0.0.1 (this machine only) unless given.
        port: the TCP port.
        api_key: when set, every request but ``GET /health`` and the page itself must carry
            ``Authorization: Bearer <api_key>`` (``ragnet serve --api-key-env VAR`` reads it), or,
            for a file under ``/files/``, the token of a link a reply gave (:mod:`ragnet.serve.links`).
        lm: the ragnet LM options (:class:`ragnet.lm.config.LMOptions`): step LM, reader, server.
        strategy: the strategy ``auto`` and a bare ``ragnet`` model mean (``auto``: ragnet's
            recommendation for the reader).
        timeout: seconds a question may take, queue wait included; past it the request gets
            504 and its program stops (a local LM call under way at its next prompt slice or token), freeing the slot.
        concurrency: questions answered at once. 1 for a local model: llama.cpp runs one call at a
            time anyway, so more would only interleave them and slow every answer.
        queue: questions waiting beyond those; one more gets 503 (busy) at once.
        max_body_bytes: the largest request body (413 beyond it).
        max_question_chars: the longest question (413 beyond it).
        max_k: the most chunks ``/search`` returns.
        reload_every: seconds between checks of the index folder for an update (0: only on
            ``POST /reload`` or SIGHUP).
        allowed_hosts: more names the ``Host`` header may give (a reverse proxy's; ``*``: any),
            beside the bound address and localhost (:mod:`ragnet.serve.hosts`).
        read_timeout: seconds a client has to send a request's headers, and again its body; past
            them the connection is closed (an idle connection holds no descriptor for long).
        docs: the folders the index was built from (``ragnet index``'s paths; a path or several):
            ``GET /files/<path as indexed>`` sends the indexed files found in them, and every
            citation links to its place there (:mod:`ragnet.serve.files`). Empty: no file is
            sent and citations carry no link; serving the documents is a choice made here.
        folder: a folder of documents whose index the server builds, keeps in step with it and
            swaps in after each change (:mod:`ragnet.serve.library`); None: serve ``index`` as it is.
        watch: how ``folder`` is watched: ``auto`` (watchdog's events, else polling), ``watchdog``,
            ``poll`` or ``off`` (:mod:`ragnet.serve.watch`).
        watch_every: seconds between two looks at ``folder`` when polling.
    """

    index: str | Path | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    lm: Any = None
    strategy: str = "auto"
    timeout: float = 120.0
    concurrency: int = 1
    queue: int = 32
    max_body_bytes: int = 64_000
    max_question_chars: int = MAX_QUESTION_CHARS
    max_k: int = 50
    reload_every: float = 2.0
    allowed_hosts: tuple[str, ...] = ()
    read_timeout: float = 10.0
    docs: tuple[str | Path, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    folder: str | Path | None = None
    watch: str = "auto"
    watch_every: float = 2.0

    def __post_init__(self) -> None:
        from ragnet.serve.watch import MODES

        if self.index is None:
            if self.folder is None:
                raise InputError("give the index to serve, or a folder of documents", argument="index")
            from ragnet.serve.folder import cache_index

            object.__setattr__(self, "index", cache_index(self.folder))
        if self.watch not in MODES:
            raise InputError(f"choose one of {', '.join(MODES)}, got {self.watch!r}", argument="watch")
        _positive(self.watch_every, "watch-every", number=float, low=0.01)
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise InputError(f"must be between 1 and 65535, got {self.port!r}", argument="port")
        _positive(self.timeout, "timeout", number=float, low=0.001)
        _positive(self.concurrency, "concurrency")
        _positive(self.queue, "queue", low=0)
        _positive(self.max_body_bytes, "max-body-bytes", low=256)
        _positive(self.max_question_chars, "max-question-chars")
        _positive(self.max_k, "max-k")
        _positive(self.reload_every, "reload-every", number=float, low=0)
        _positive(self.read_timeout, "read-timeout", number=float, low=0.001)
        if isinstance(self.allowed_hosts, str) or not all(isinstance(h, str) and h.strip() for h in self.allowed_hosts):
            raise InputError(f"must be host names, got {self.allowed_hosts!r}", argument="allowed-host")
        docs = (self.docs,) if isinstance(self.docs, (str, os.PathLike)) else self.docs
        if not isinstance(docs, (tuple, list)):
            raise InputError(f"must be a folder or a list of folders, got {docs!r}", argument="docs")
        object.__setattr__(self, "docs", tuple(docs))
        for folder in self.docs:
            if not isinstance(folder, (str, os.PathLike)) or not Path(folder).is_dir():
                shown = repr(os.fspath(folder)) if isinstance(folder, (str, os.PathLike)) else repr(folder)
                raise InputError(f"must be the folder the index was built from, got {shown}: not a folder",
                                 argument="docs")
        if self.api_key is not None and (not isinstance(self.api_key, str) or len(self.api_key) < 8):
            raise InputError("the API key must be a string of at least 8 characters", argument="api-key-env")


    def served_docs(self) -> tuple[str | Path, ...]:
        """The folders whose indexed files ``GET /files/...`` sends: ``docs``, and a served
        ``folder`` (serving a folder serves its files, so its citations open)."""
        if self.folder is None or any(Path(d).resolve() == Path(self.folder).resolve() for d in self.docs):
            return self.docs
        return (*self.docs, self.folder)