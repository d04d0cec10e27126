"""Where a citation opens: the link to its place in the source file, ``GET /files/<path as indexed>``
(:mod:`ragnet.serve.files`), and the short-lived token that lets a plain link through the API key.

The link of a citation (:func:`file_url`) is relative, to the server that answered:

* a PDF opens at the cited page, ``/files/guide/sed.pdf#page=9`` (the browsers' PDF viewers read
  ``#page=N``);
* an HTML, Markdown, text or JSON Lines file at the quoted sentence, as a text fragment
  (``#:~:text=The%20default%20is%208.``, its first words: Chromium and Safari scroll to it and
  mark it; another browser opens the file at its top). The index records no HTML element ids, so
  the quoted sentence stands in for a heading's anchor, and it points closer;
* a DOCX, which a browser downloads, has no place in its link.

A browser sends no ``Authorization`` header when it follows a link, so when the server has an
API key each link carries ``?t=EXPIRY.SIGNATURE`` (:class:`LinkSigner`): an HMAC-SHA256 of the
one path it opens and its expiry, under a key derived from the server's API key. The key itself
never appears in a URL; a token opens that one file, for :data:`LINK_TTL_S` seconds, and nothing
else (not another file, not ``/ask``); changing the server's key voids every token given out.
Tokens are redacted from log lines as secrets are (:func:`ragnet._secrets.redact`), and the
server's ``Referrer-Policy: no-referrer`` keeps them out of the ``Referer`` of what a file links to.

Example:
    >>> signer = LinkSigner("s3cret-key-0123", ttl=3600)
    >>> url = file_url({"file": "guide/sed manual.pdf", "page": 9}, signer, now=1_000_000)
    >>> url.split("?")[0], url.split("#")[1]
    ('/files/guide/sed%20manual.pdf', 'page=9')
    >>> token = url.split("?t=")[1].split("#")[0]
    >>> signer.refusal("guide/sed manual.pdf", token, now=1_000_100) is None
    True
    >>> signer.refusal("other.pdf", token, now=1_000_100).code  # made for another file
    'invalid_file_link'
    >>> signer.refusal("guide/sed manual.pdf", token, now=1_004_000).code  # past its hour
    'file_link_expired'
    >>> file_url({"file": "notes.md", "sentences": ["The Seine runs through Paris."]}, LinkSigner(None))
    '/files/notes.md#:~:text=The%20Seine%20runs%20through%20Paris.'
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import parse_qs, quote

from ragnet.serve.errors import ApiError

__all__ = ["FILES_PREFIX", "LINK_TTL_S", "TOKEN_PARAM", "LinkSigner", "file_url", "served_key"]

#: Where the source files are served: ``/files/<path as indexed>``.
FILES_PREFIX = "/files/"
#: Seconds a file link's token opens its file (an answer read an hour later is asked again).
LINK_TTL_S = 3600
#: The query parameter that carries a link's token.
TOKEN_PARAM = "t"
#: Words of the quoted sentence a text fragment gives (enough to be unique, few enough to match
#: a sentence the chunk's text and the rendered page write a little differently further on).
FRAGMENT_WORDS = 8
_CONTEXT = b"ragnet file links v1"  # the signing key is HMAC(api key, this): never the key itself
_MARK_ONLY = re.compile(r"^[#>*+\-=|`_~\d.)]+$")  # a line's Markdown marks ("##", "-", "1.") before its words
_NO_PLACE = (".docx",)  # downloaded, not shown: a link opens the file only


def served_key(path: str) -> str | None:
    """``path`` when it can name a file under a served folder (relative, forward slashes, no
    ``.``/``..`` part, no control character), else None. The index folder is untrusted: an index
    built in Python may record any ``location["file"]``, and none of these leaves its folder.

    Example:
        >>> [served_key(p) for p in ("guide/sed.pdf", "../etc/passwd", "/etc/passwd", "a\\\\b.md", "a/./b.md", "")]
        ['guide/sed.pdf', None, None, None, None, None]
    """
    if not isinstance(path, str) or not path or "\\" in path or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        return None
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..") for part in parts) or re.match(r"^[A-Za-z]:", path):
        return None
    return path


class LinkSigner:
    """Signs and checks the tokens of file links (see the module docstring).

    Args:
        key: the server's API key; None: links need no token (the server asks for no key).
        ttl: seconds a token is valid.
    """

    def __init__(self, key: str | None, ttl: int = LINK_TTL_S) -> None:
        self._secret = None if key is None else hmac.new(key.encode(), _CONTEXT, hashlib.sha256).digest()
        self.ttl = ttl

    def _signature(self, path: str, expiry: int) -> str:
        mac = hmac.new(self._secret, f"{expiry}\0{path}".encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def token(self, path: str, now: float | None = None) -> str | None:
        """The token that opens ``path`` (as indexed) for :attr:`ttl` seconds; None without a key."""
        if self._secret is None:
            return None
        expiry = int(now if now is not None else time.time()) + self.ttl
        return f"{expiry}.{self._signature(path, expiry)}"

    def refusal(self, path: str, token: str, now: float | None = None) -> ApiError | None:
        """None when ``token`` opens ``path`` now; else the error to answer: 401 for an expired
        link (ask again for a fresh one), 403 for a token that was not made for this path."""
        expiry, _, signature = token.partition(".")
        if self._secret is None or not expiry.isdigit() or len(expiry) > 12 or not hmac.compare_digest(
                signature.encode(), self._signature(path, int(expiry)).encode()):
            return ApiError(403, "the file link's token is not valid for this file: open the link a reply gave, or "
                                 "send 'Authorization: Bearer <key>'", "invalid_file_link", "authentication_error")
        if int(expiry) < (now if now is not None else time.time()):
            return ApiError(401, f"the file link expired (links open their file for {self.ttl // 60} minutes): "
                                 "ask again for a fresh link", "file_link_expired", "authentication_error",
                            headers={"WWW-Authenticate": "Bearer"})
        return None

    def admits(self, scope: Mapping[str, Any]) -> bool | ApiError | None:
        """What a request without the API key is, by its link token (the API key check's
        ``admit``, :class:`ragnet.serve.errors.Guard`): True when it is a GET or HEAD of a file
        whose token opens it, the refusal when its token does not, None when it carries none."""
        path = scope.get("path", "")
        if scope.get("method") not in ("GET", "HEAD") or not path.startswith(FILES_PREFIX):
            return None
        query = scope.get("query_string", b"").decode("latin-1")
        tokens = parse_qs(query).get(TOKEN_PARAM)
        if not tokens:
            return None
        refused = self.refusal(path[len(FILES_PREFIX):], tokens[-1])
        return True if refused is None else refused


def _fragment(cite: Mapping[str, Any]) -> str:
    """A text fragment of the citation's quoted sentence (its first words), or ``""``."""
    sentences = cite.get("sentences")
    quoted = sentences[0] if isinstance(sentences, list) and sentences and isinstance(sentences[0], str) else None
    if quoted is None and isinstance(cite.get("text"), str):  # a search hit: its text's first sentence
        from ragnet.corpus.sentence_split import split_sentences

        quoted = next(iter(split_sentences(cite["text"])), None)
    lines = [line for line in (quoted or "").splitlines() if line.strip()]
    words = lines[-1].split() if lines else []  # the sentence's own line: a heading above it is elsewhere
    while words and _MARK_ONLY.match(words[0]):
        words = words[1:]
    if not words:
        return ""
    # a text directive's own marks (",", "-", "&") must be escaped too; quote leaves "-" as it is
    return "#:~:text=" + quote(" ".join(words[:FRAGMENT_WORDS]), safe="").replace("-", "%2D")


def file_url(cite: Mapping[str, Any], signer: LinkSigner | None, now: float | None = None) -> str | None:
    """The relative link to a citation's (or a search hit's) place in its source file (see the
    module docstring), its token in it when ``signer`` has a key; None when the server serves
    no files (``signer`` None) or the citation names no file it could serve."""
    key = served_key(cite.get("file")) if signer is not None else None
    if key is None:
        return None
    url = FILES_PREFIX + quote(key, safe="/")
    token = signer.token(key, now)
    if token is not None:
        url += f"?{TOKEN_PARAM}={token}"
    suffix = PurePosixPath(key).suffix.lower()
    page = cite.get("page")
    if suffix == ".pdf":
        return url + (f"#page={page}" if isinstance(page, int) and not isinstance(page, bool) and page >= 1 else "")
    return url if suffix in _NO_PLACE else url + _fragment(cite)
