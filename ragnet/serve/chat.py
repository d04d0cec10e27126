"""``POST /v1/chat/completions``: OpenAI's chat completions, answered by a ragnet strategy.

Without ``stream`` the reply is one ``chat.completion`` (:func:`ragnet.serve.openai_api.completion`).
With ``stream: true`` it is server-sent ``chat.completion.chunk`` events: the role, then the
answer as the reader writes it (its tokens, read off the answer step by
:mod:`ragnet.serve.streaming`), then the Sources list, then a last chunk with ``finish_reason``,
the ``citations``, the usage and ``ragnet`` (the strategy, the ``standalone_question`` a
follow-up was answered as, the ``answer`` without its Sources list, and ``streamed``), then
``[DONE]``. ``streamed`` says how the answer came: ``"tokens"`` as the reader generated it, or
``"whole"`` in one chunk once it was done (an answer from the LM cache, or an LM that does not
stream). A comment line every 10 seconds without text keeps proxies from closing a stream whose
answer is slow to start.

The answer step can retry a reply it could not read; then what was streamed is not the answer,
and the final answer follows it after a blank line. A failure after the stream started is an
``error`` event before ``[DONE]``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ragnet.serve import openai_api
from ragnet.serve.answering import Answer
from ragnet.serve.errors import ApiError
from ragnet.serve.routes import MAX_ONLY, service
from ragnet.serve.service import Service, cited, unless_gone

__all__ = ["ChatRequest", "router"]

router = APIRouter()
log = logging.getLogger("ragnet.serve")

#: Most messages one chat request may send (the newest turns are what a follow-up is read with).
MAX_MESSAGES = 200


class Message(BaseModel):
    """One chat message; the question is the last one with role ``user``, the user and
    assistant messages before it the conversation it follows."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class RagnetOptions(BaseModel):
    """A chat request's own ragnet options (the OpenAI client's ``extra_body={"ragnet": {...}}``)."""

    model_config = ConfigDict(extra="forbid")
    only: list[str] | None = Field(default=None, max_length=MAX_ONLY)  # files to ask over (Index.scoped)


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``; temperature, max_tokens, user ... are accepted and not used."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[Message] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    ragnet: RagnetOptions | None = None


@router.post("/v1/chat/completions")
async def chat(body: ChatRequest, request: Request, state: Service = Depends(service)) -> Any:
    strategy = openai_api.strategy_of(body.model)
    if strategy is None:
        raise ApiError(404, f"the model {body.model!r} does not exist: use 'ragnet-auto' or 'ragnet-<strategy>' "
                            "(GET /v1/models lists them)", "model_not_found", param="model")
    question, history = openai_api.conversation_of([m.model_dump() for m in body.messages])
    question = state.check_question(question)
    only = body.ragnet.only if body.ragnet is not None else None
    if not body.stream:
        result = await unless_gone(request, state.answer(question, strategy, None, only, history))
        pred = result.prediction
        citations = cited(pred, state.links)
        return openai_api.completion(body.model, openai_api.with_sources(pred.answer, citations), citations,
                                     pred.usage, {"ragnet": _about(result)})
    items = await state.stream(question, strategy, only, history)  # a bad spec or scope (400), a busy server (503): now
    writer = openai_api.chat_chunks(body.model, f"chatcmpl-{uuid.uuid4().hex}", int(time.time()))
    return StreamingResponse(_events(items, writer, state.links), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _about(result: Answer, streamed: str | None = None) -> dict[str, Any]:
    about = {"strategy": result.spec, "budget": result.budget, "index": result.generation,
             "confidence": result.prediction.get("confidence"),
             "standalone_question": result.prediction.get("standalone_question"),
             "answer": result.prediction.answer}  # without Sources: what a chat page keeps as the turn's answer
    return about if streamed is None else {**about, "streamed": streamed}


async def _events(items: AsyncIterator[str | None | Answer], writer: openai_api.ChunkWriter,
                  links: Any = None) -> AsyncIterator[str]:
    """The server-sent events of one streamed answer (see the module docs)."""
    yield writer.role()
    sent = ""
    async with contextlib.aclosing(items):
        try:
            async for item in items:
                if item is None:
                    yield ": still answering\n\n"  # a comment line: keeps proxies from closing the stream
                elif isinstance(item, str):
                    sent += item
                    yield writer.chunk({"content": item})
                else:
                    result = item
        except ApiError as exc:
            yield writer.error(exc.message, exc.kind, exc.code)
            yield writer.done()
            return
        except Exception as exc:  # noqa: BLE001 - the stream has started: the error is its last event
            log.exception("unexpected error in a streamed answer")
            yield writer.error(f"internal error: {type(exc).__name__}", "server_error", "internal_error")
            yield writer.done()
            return
    pred = result.prediction
    citations = cited(pred, links)
    message = openai_api.with_sources(pred.answer, citations)
    rest = message[len(sent):] if message.startswith(sent) else f"\n\n{message}"
    if rest:
        yield writer.chunk({"content": rest})
    yield writer.end(citations, pred.usage, ragnet=_about(result, "tokens" if sent else "whole"))
    yield writer.done()
