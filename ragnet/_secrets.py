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
  the result-row writer of ``ragnet eval``), in every line a command prints
  (:class:`ragnet.cli.safe_text.SafeStream`), in every error ``ragnet serve`` answers
  (:func:`ragnet.serve.errors.error_body`) and in every log record (:func:`redact_logs`).

A URL's password (``https://user:password@host``), or its token when the userinfo has no
password (``https://token@host``), is remembered whatever its length and replaced where it
stands in a URL, with or without its scheme (``failed to connect to user:***@127.0.0.1:1``).

A file link's token (``?t=EXPIRY.SIGNATURE``, :mod:`ragnet.serve.links`) opens one file for an
hour without the key: a credential too, so it reads ``t=***`` wherever redaction applies (the
server's access log lines included), though no process remembers it.

Values shorter than :data:`MIN_SECRET_CHARS` are not remembered (replacing every "k" of a file
would destroy it); the command line is redacted whatever the value.

Example:
    >>> remember("sk-test-0123456789")
    >>> redact('{"error": "401: bad key sk-test-0123456789"}')
    '{"error": "401: bad key ***"}'
    >>> remember_url("http://me:pw@127.0.0.1:1/v1")
    >>> redact("failed to connect to me:pw@127.0.0.1:1")
    'failed to connect to me:***@127.0.0.1:1'
    >>> redact_argv(["ragnet", "eval", "--api-key", "k", "--api-base", "https://me:pw@host/v1"])
    ['ragnet', 'eval', '--api-key', '***', '--api-base', 'https://me:***@host/v1']
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "SECRET_OPTIONS", "redact", "redact_argv", "redact_logs", "remember",
           "remember_url"]

#: What a secret is replaced by.
REDACTED = "***"
#: Shortest value remembered as a secret.
MIN_SECRET_CHARS = 8
#: Command-line options whose value is a secret.
SECRET_OPTIONS = frozenset({"--api-key"})
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^/@:\s]*:)(?P<password>[^/@\s]+)(?P<tail>@)")
_URL_TOKEN = re.compile(r"[a-zA-Z][\w+.-]*://(?P<token>[^/@:\s]+)@")
_LINK_TOKEN = re.compile(r"(?P<head>[?&]t=)\d{1,12}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])")

_secrets: set[str] = set()
_in_urls: dict[str, str] = {}  # ":password@" or "token@" -> the same with the secret replaced
_guard = threading.Lock()
_logs_redacted = False


def remember(secret: object) -> None:
    """Redact ``secret`` from everything written from now on in this process (a value shorter
    than :data:`MIN_SECRET_CHARS`, or not a string, is ignored)."""
    if isinstance(secret, str) and len(secret.strip()) >= MIN_SECRET_CHARS:
        with _guard:
            _secrets.add(secret.strip())


def remember_url(url: object) -> None:
    """Remember the password of a URL (``https://user:password@host``), or its token
    (``https://token@host``), if it has one."""
    if not isinstance(url, str):
        return
    found = [(f":{m.group('password')}@", f":{REDACTED}@") for m in _URL_PASSWORD.finditer(url)]
    found += [(f"{m.group('token')}@", f"{REDACTED}@") for m in _URL_TOKEN.finditer(url)]
    for m in _URL_PASSWORD.finditer(url):
        remember(m.group("password"))
    with _guard:
        _in_urls.update(found)


def redact(text: str) -> str:
    """``text`` with every remembered secret replaced by :data:`REDACTED`, and every URL
    password (``scheme://user:password@``) and file link token (``?t=...``) too, remembered or not.

    Example:
        >>> redact("GET /files/sed.pdf?t=1767225600.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde HTTP/1.1")
        'GET /files/sed.pdf?t=*** HTTP/1.1'
    """
    if _secrets:
        for secret in sorted(_secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
    if _in_urls:
        for needle, replacement in sorted(_in_urls.items(), key=lambda item: len(item[0]), reverse=True):
            if needle in text:
                text = text.replace(needle, replacement)
    if "@" in text and "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED + m.group("tail"), text)
    if "t=" in text:
        text = _LINK_TOKEN.sub(lambda m: m.group("head") + REDACTED, text)
    return text


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a record whose arguments do not fit its format: left to logging
        return
    clean = redact(message)
    if clean != message:
        args = record.args
        if isinstance(args, tuple) and args:
            # each argument redacted in its place: a formatter that reads them (uvicorn's access lines) still can
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in args)
            try:
                kept = record.getMessage() == clean
            except Exception:  # noqa: BLE001 - formatting with the redacted arguments failed: the plain text below
                kept = False
            if not kept:  # a secret the format itself holds, or one split across arguments
                record.msg, record.args = clean, None
        else:
            record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        clean = redact(text)
        if clean != text:
            record.exc_text = clean  # what every formatter prints in place of the traceback


def redact_logs() -> None:
    """Redact remembered secrets from every log record from now on (its message and its
    traceback), whichever logger or handler it goes to. Called once by ``ragnet serve``; calling
    it again changes nothing."""
    global _logs_redacted
    with _guard:
        if _logs_redacted:
            return
        _logs_redacted = True
        make = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = make(*args, **kwargs)
        if _secrets or _in_urls:
            _redact_record(record)
        return record

    logging.setLogRecordFactory(factory)


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
