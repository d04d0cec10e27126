"""The routes of ``ragnet serve`` but the chat completions (:mod:`ragnet.serve.chat`): the page,
``/health``, ``/v1/models``, ``/reload``, ``/library``, ``/search`` and ``/ask``, as FastAPI routers
that reach the server's :class:`~ragnet.serve.service.Service` through :func:`service`.

A served folder's file names are the folder owner's: ``/health`` (open to anyone) gives their
count and the times of the last sync only, ``/library`` (behind the API key) the names, what
the last update changed and the files left out with their reason.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from ragnet._secrets import redact
from ragnet.programs.conversation import MAX_TURNS
from ragnet.serve import page
from ragnet.serve.errors import ApiError
from ragnet.serve.openai_api import model_names
from ragnet.serve.service import MAX_ONLY, Service, cited, public_error, unless_gone

__all__ = ["MAX_ONLY", "OPEN", "index_routes", "pages", "service"]

#: The paths open without the API key: the page (which asks /health whether to show a key field).
OPEN = ("/", "/health", "/static/app.js", "/static/style.css", "/favicon.ico")

#: Characters of one earlier turn's question or answer (``/ask``'s ``history``).
MAX_TURN_CHARS = 16_000

pages = APIRouter()
index_routes = APIRouter()


def service(request: Request) -> Service:
    """The server's :class:`Service` (a FastAPI dependency)."""
    return request.app.state.service


class Turn(BaseModel):
    """An earlier turn of the conversation ``/ask``'s question follows: what was asked, what was
    answered, and the citations of that answer (the ``citations`` ``/ask`` returned, or their ids)."""

    model_config = ConfigDict(extra="forbid")
    question: str = Field(max_length=MAX_TURN_CHARS)
    answer: str = Field(default="", max_length=MAX_TURN_CHARS)
    citations: list[str | dict[str, Any]] = Field(default_factory=list, max_length=64)


class AskRequest(BaseModel):
    """``POST /ask``; ``history``: the earlier turns, oldest first (a follow-up question)."""

    model_config = ConfigDict(extra="forbid")
    question: str
    history: list[Turn] = Field(default_factory=list, max_length=MAX_TURNS)
    strategy: str | None = None
    budget: int | None = Field(default=None, ge=1)
    trace: bool = False
    only: list[str] | None = Field(default=None, max_length=MAX_ONLY)  # files to ask over (Index.scoped)


# -- open -------------------------------------------------------------------------------------
@pages.get("/", response_class=HTMLResponse, include_in_schema=False)
async def home() -> Response:
    return HTMLResponse(page.PAGE, headers={"Content-Security-Policy": page.CSP, "X-Frame-Options": "DENY"})


@pages.get("/static/app.js", include_in_schema=False)
async def script() -> Response:
    return Response(page.SCRIPT, media_type="text/javascript; charset=utf-8")


@pages.get("/static/style.css", include_in_schema=False)
async def style() -> Response:
    return Response(page.STYLE, media_type="text/css; charset=utf-8")


@pages.get("/health")
async def health(state: Service = Depends(service)) -> dict[str, Any]:
    from ragnet.programs import STRATEGIES

    reload_error = public_error(state.holder.last_error, state.holder.path)  # open to all: no absolute path
    library = state.library.summary() if state.library is not None else None  # counts only: no file name
    return {"status": "ok", "index": state.holder.current.describe(), "reload_error": reload_error,
            "auth": state.options.api_key is not None, "strategy": state.spec, "budget": state.budget,
            "strategies": ["auto", *STRATEGIES], "queue": state.answerer.status(), "library": library}


# -- behind the key ---------------------------------------------------------------------------
@index_routes.get("/v1/models")
async def models(state: Service = Depends(service)) -> dict[str, Any]:
    created = int(state.holder.current.loaded_at)
    return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "ragnet"}
                                       for name in model_names()]}


@index_routes.post("/reload")
async def reload(state: Service = Depends(service)) -> dict[str, Any]:
    try:
        snap = await state.reload(force=True)
    except Exception as exc:  # noqa: BLE001
        raise ApiError(503, f"the index could not be reloaded ({public_error(str(exc), state.holder.path)}); "
                            "still serving generation "
                            f"{state.holder.current.generation}", "reload_failed", "server_error") from None
    return {"status": "reloaded", "index": snap.describe()}


@index_routes.get("/library")
async def library(state: Service = Depends(service)) -> dict[str, Any]:
    """The served folder: its files, the last update and what it changed, the files left out
    (``{"folder": null}`` when the server answers from an index as it is)."""
    if state.library is None:
        return {"folder": None}
    return state.library.status()


@index_routes.get("/search")
async def search(q: str = Query(..., description="the query"), k: int = Query(5, ge=1),
                 bm25_weight: float | None = Query(None, ge=0.0, le=1.0, description="BM25's share of the hybrid score"),
                 lam: float | None = Query(None, ge=0.0, le=1.0, deprecated=True, description="bm25_weight's old name"),
                 only: list[str] | None = Query(None, description="files to search (repeatable)"),
                 state: Service = Depends(service)) -> dict[str, Any]:
    from ragnet.programs.citations import source_line
    from ragnet.serve.links import file_url

    q = state.check_question(q)
    if k > state.options.max_k:
        raise ApiError(400, f"k is {k}, more than the {state.options.max_k} allowed", "k_too_large", param="k")
    snap = state.holder.current
    await state.check_only(only)  # bounded, and compiled in a thread
    index = await asyncio.to_thread(state.answerer.scope, snap, only)
    if bm25_weight is not None and lam is not None:
        raise ApiError(400, "give bm25_weight or its old name lam, not both", "conflicting_parameters", param="lam")
    weight = next((w for w in (bm25_weight, lam) if w is not None), 0.4)
    hits = await asyncio.to_thread(index.search, q, k, (), weight)
    out = []
    for h in hits:
        loc = h.metadata.get("location") if isinstance(h.metadata, dict) else None
        entry = {"id": h.id, "doc_id": h.doc_id, "title": h.title, "text": h.text, "score": h.score,
                 "dense_score": h.dense_score, "bm25_score": h.bm25_score}
        if isinstance(loc, dict):
            entry.update({key: v for key, v in loc.items() if key in ("file", "page", "page_end", "headings", "line")})
        entry["source"] = source_line(entry)
        url = file_url(entry, state.links)
        out.append(entry if url is None else {**entry, "url": url})
    return {"query": q, "k": k, "index": snap.generation, "hits": out}


@index_routes.post("/ask")
async def ask(body: AskRequest, request: Request, state: Service = Depends(service)) -> dict[str, Any]:
    question = state.check_question(body.question)
    # a client that leaves stops its question and frees the slot, as a streamed answer's does
    history = [turn.model_dump() for turn in body.history]
    result = await unless_gone(request, state.answer(question, body.strategy, body.budget, body.only, history))
    pred = result.prediction
    out = {"answer": pred.answer, "standalone_question": pred.get("standalone_question"),
           "confidence": pred.get("confidence"), "citations": cited(pred, state.links),
           "evidence": list(pred.evidence or []),
           "strategy": result.spec, "budget": result.budget, "usage": dict(pred.usage),
           "index": result.generation, "queued_s": round(result.queued_s, 3)}
    if body.trace:  # an LM error recorded in it loses the secrets it echoed
        out["trace"] = json.loads(redact(json.dumps(list(pred.trace), default=str)))
    return out
