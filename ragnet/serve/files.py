"""``GET /files/<path as indexed>``: the source files the index was built from, so that a citation
opens at its place (:func:`ragnet.serve.links.file_url`: a PDF's page, the quoted sentence).

What is sent, and only that:

* a file the served index names (``sources.json``'s files, else its chunks' ``location["file"]``),
  by the path citations give it, with a suffix ragnet reads (:data:`ragnet.corpus.loader.SUFFIXES`)
  and no hidden part, found in one of the folders ``ragnet serve --docs`` names (the first that
  has it). Serving documents is opt-in: without ``--docs`` every path is 404. Anything else is
  404 too: a path the index does not name, ``..`` or an absolute path (percent-encoded or not),
  a symbolic link that leads out of the folder, a folder, a device;
* the file that was indexed: its bytes' SHA-256 is compared with the one ``ragnet index``
  recorded (once per version of the file on disk), and a file gone from the folders or changed
  since gets 410 naming the indexed path ("run ragnet index again"), never other bytes in its
  place. An index built in Python records no file hashes; its files are sent as they are now;
* behind the API key like ``/ask`` (:class:`ragnet.serve.errors.Guard`), or with a file link's
  token (:class:`ragnet.serve.links.LinkSigner`), which a citation's link carries when the
  server has a key: a browser following a link sends no ``Authorization`` header.

Each file goes with its own type (``application/pdf``; Markdown, text and JSON Lines as
``text/plain; charset=utf-8``, which a browser shows and never runs; a DOCX as a download). An
HTML manual is shown as the page it is, its layout kept and its quoted sentence marked, but never
as a document of the server's origin: it is sent with ``Content-Security-Policy: sandbox`` (no
``allow-scripts``, no ``allow-same-origin``), so no script of it runs (inline, linked, event
handler or ``javascript:`` link), it has an opaque origin of its own (none of the server's
storage, and its requests carry no credentials), submits no form and opens no window; and
``default-src 'none'`` (its inline styles and ``data:`` images kept) so it fetches nothing from
anywhere. Sending HTML as text would lose the manual; as an attachment, the place a citation
links to. Every file but a PDF gets the same policy (a browser's PDF viewer does not run under a
sandbox, and a PDF runs no script in the page's origin), and every file ``X-Content-Type-Options:
nosniff``, so no browser reads a text file as HTML. HTTP Range requests, which PDF viewers make,
are answered (206) by Starlette's ``FileResponse``.

Example:
    >>> served_as("guide/sed.pdf")[:2], served_as("notes.md")[:2], served_as("guide.docx")[1]
    (('application/pdf', 'inline'), ('text/plain; charset=utf-8', 'inline'), 'attachment')
    >>> served_as("manual.html")[2]["content-security-policy"].startswith("sandbox;")
    True
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Sequence

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from ragnet.serve.errors import ApiError
from ragnet.serve.links import FILES_PREFIX, served_key

__all__ = ["SANDBOX", "Found", "SourceFiles", "router", "served_as"]

#: The policy of every file but a PDF: no script, an opaque origin, nothing fetched, no framing.
SANDBOX = ("sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_TYPES = {"pdf": "application/pdf", "html": "text/html", "markdown": "text/plain; charset=utf-8",
          "text": "text/plain; charset=utf-8", "jsonl": "text/plain; charset=utf-8",
          "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
_VERIFIED_MAX = 4096  # file versions whose hash is remembered (a version: device, inode, size, mtime)

router = APIRouter()


def served_as(key: str) -> tuple[str, str, dict[str, str]]:
    """The content type, disposition (``inline``: shown; ``attachment``: downloaded) and headers
    an indexed file ``key`` is sent with (see the module docstring)."""
    from ragnet.corpus.loader import SUFFIXES

    kind = SUFFIXES.get(PurePosixPath(key).suffix.lower())
    headers = {"x-content-type-options": "nosniff"}
    if kind != "pdf":
        headers["content-security-policy"] = SANDBOX
    shown = kind in ("pdf", "html", "markdown", "text", "jsonl")
    return _TYPES.get(kind, "application/octet-stream"), "inline" if shown else "attachment", headers


@dataclass(frozen=True)
class Found:
    """An indexed file found on disk: its path and the ``stat`` it was checked with."""

    path: Path
    stat: os.stat_result


class SourceFiles:
    """The files a server sends: the indexed ones, found in ``roots`` (see the module docstring).

    Args:
        roots: the folders the index was built from (``ServeOptions.docs``), first match first.
    """

    def __init__(self, roots: Sequence[str | os.PathLike]) -> None:
        self.roots = tuple(Path(root).resolve() for root in roots)
        self._indexed: tuple[Any, dict[str, str | None]] | None = None  # (index, indexed path -> sha256)
        self._verified: dict[tuple[int, int, int, int], str] = {}  # file version -> sha256 of its bytes
        self._lock = threading.Lock()

    def indexed(self, index: Any) -> dict[str, str | None]:
        """The files ``index`` names, by the path citations give them, each with the SHA-256 its
        bytes had when indexed (None where the index does not record it)."""
        held = self._indexed
        if held is not None and held[0] is index:
            return held[1]
        from ragnet.index.sources import Sources

        path = getattr(index, "path", None)
        sources = Sources.load(path) if path is not None else None
        if sources is not None and sources.files:
            files: dict[str, str | None] = dict(sources.file_hashes())
        else:  # an index built in Python: the files its chunks were read from, if it says
            from ragnet.corpus.locations import file_key

            files = {}
            for chunk in index.chunks:
                loc = chunk.metadata.get("location") if isinstance(chunk.metadata, Mapping) else None
                if isinstance(loc, Mapping) and isinstance(loc.get("file"), str) and loc["file"]:
                    files.setdefault(file_key(loc["file"]), None)
        self._indexed = (index, files)
        return files

    def find(self, path: str, index: Any) -> Found:
        """The file the indexed ``path`` names, as indexed; ApiError 404 (not served) or 410 (gone
        or changed since indexing) otherwise."""
        from ragnet.corpus.loader import SUFFIXES

        if not self.roots:
            raise ApiError(404, "this server sends no files: start it with --docs FOLDER (the folder given to "
                                "ragnet index) to open the files citations name", "files_not_served")
        key = served_key(path)
        indexed = self.indexed(index)
        if (key is None or key not in indexed or PurePosixPath(key).suffix.lower() not in SUFFIXES
                or any(part.startswith(".") for part in key.split("/"))):
            raise ApiError(404, f"no indexed file {path!r}: GET {FILES_PREFIX}<path> sends the files the index was "
                                "built from, by the path its citations give", "file_not_found")
        escaped = changed = False
        for root in self.roots:
            try:
                real = (root / key).resolve(strict=True)
                info = real.stat()
                if not real.is_relative_to(root):
                    escaped = True
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue
                if indexed[key] is None or self._digest(real, info) == indexed[key]:
                    return Found(real, info)
            except (OSError, RuntimeError):  # gone, unreadable, or a link loop: not here
                continue
            changed = True
        if changed:
            raise ApiError(410, f"{key!r} changed since it was indexed: run ragnet index again to cite (and open) "
                                "the file as it is now", "file_changed")
        if escaped:
            raise ApiError(404, f"{key!r} leads out of the served folders (a symbolic link): not sent",
                           "file_not_found")
        raise ApiError(410, f"{key!r} is indexed but no longer in the served folders (--docs): put it back, or run "
                            "ragnet index again", "file_gone")

    def _digest(self, path: Path, info: os.stat_result) -> str:
        """The SHA-256 of ``path``'s bytes, remembered for this version of it (device, inode,
        size, modification time), so a PDF viewer's many Range requests hash it once."""
        version = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        with self._lock:
            known = self._verified.get(version)
        if known is not None:
            return known
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        with self._lock:
            if len(self._verified) >= _VERIFIED_MAX:
                self._verified.clear()
            self._verified[version] = digest.hexdigest()
        return self._verified[version]


@router.api_route(FILES_PREFIX + "{path:path}", methods=["GET", "HEAD"], include_in_schema=False)
async def source_file(path: str, request: Request) -> Response:
    """One indexed file (see the module docstring); a Range request gets its part (206)."""
    files: SourceFiles = request.app.state.files
    snap = request.app.state.holder.current
    found = await asyncio.to_thread(files.find, path, snap.index)  # may hash the file: off the event loop
    media_type, disposition, headers = served_as(path)
    response = FileResponse(found.path, media_type=media_type, headers=headers, stat_result=found.stat,
                            filename=PurePosixPath(path).name, content_disposition_type=disposition)
    if media_type == "text/html":  # the page's own <meta charset> decides, as when it is opened from disk
        response.headers["content-type"] = media_type
    return response
