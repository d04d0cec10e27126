"""Secrets (API keys) are never written: every file ragnet writes has them redacted.

``ragnet eval --api-key sk-...`` wrote the key into ``run.json``, ``summary.json``, ``report.md``
and ``report.html`` (the command line is recorded there), and a server that echoes the key in an
error would have put it in ``results.jsonl``. Two guards:

* the command line is recorded with secret options' values replaced
  (:func:`redact_argv`: ``--api-key``, and the password in a URL such as ``--api-base``'s);
* every secret the process was given (:func:`remember`, called wherever an API key or a server
  URL is resolved: :meth:`ragnet.lm.config.LMOptions.connection`, :func:`ragnet.lm.config.make_lm`;
  ``--api-key-env``'s value too) is replaced by
  :data:`REDACTED` in whatever ragnet's writers write (:func:`redact`, applied by
  :func:`ragnet._atomic.write_text`, hence every JSON, report, page and compiled program, and by
  the result-row writer of ``ragnet eval``).

Values shorter than :data:`MIN_SECRET_CHARS` are not remembered (replacing every "k" of a file
would destroy it); the command line is redacted whatever the value.

Example:
    >>> remember("sk-test-0123456789")
    >>> redact('{"error": "401: bad key sk-test-0123456789"}')
    '{"error": "401: bad key ***"}'
    >>> redact_argv(["ragnet", "eval", "--api-key", "k", "--api-base", "https://me:pw@host/v1"])
    ['ragnet', 'eval', '--api-key', '***', '--api-base', 'https://me:***@host/v1']
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "SECRET_OPTIONS", "redact", "redact_argv", "remember", "remember_url"]

#: What a secret is replaced by.
REDACTED = "***"
#: Shortest value remembered as a secret.
MIN_SECRET_CHARS = 8
#: Command-line options whose value is a secret.
SECRET_OPTIONS = frozenset({"--api-key"})
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^/@:\s]*:)(?P<password>[^/@\s]+)(?P<tail>@)")

_secrets: set[str] = set()
_guard = threading.Lock()


def remember(secret: object) -> None:
    """Redact ``secret`` from everything written from now on in this process (a value shorter
    than :data:`MIN_SECRET_CHARS`, or not a string, is ignored)."""
    if isinstance(secret, str) and len(secret.strip()) >= MIN_SECRET_CHARS:
        with _guard:
            _secrets.add(secret.strip())


def remember_url(url: object) -> None:
    """Remember the password of a URL (``https://user:password@host``), if it has one."""
    if isinstance(url, str):
        for m in _URL_PASSWORD.finditer(url):
            remember(m.group("password"))


def redact(text: str) -> str:
    """``text`` with every remembered secret replaced by :data:`REDACTED`."""
    if _secrets:
        for secret in sorted(_secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
    return text


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with the values of :data:`SECRET_OPTIONS` (``--api-key VALUE`` and
    ``--api-key=VALUE``) and URL passwords replaced by :data:`REDACTED`."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        arg = str(arg)
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if name in SECRET_OPTIONS:
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(_URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED + m.group("tail"), redact(arg)))
    return out
