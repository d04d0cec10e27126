"""The OpenAI chat-completions shapes ``ragnet serve`` speaks: model names, the question of a
conversation, the reply with its citations, and the server-sent events of a streamed reply.

The model names a strategy: ``ragnet`` or ``ragnet-auto`` is the server's default strategy,
``ragnet-<spec>`` (``ragnet-oneshot:sentences+hops``) or a bare spec (``oneshot``) any other.
The question is the last user message; the user and assistant messages before it are the
conversation it follows (:func:`conversation_of`), which ragnet uses to make a follow-up such as
"and its default?" a standalone question before it searches the documents
(:class:`ragnet.programs.conversation.FollowUp`). The reply's message ends with a
Sources list, and the response carries the structured ``citations`` (file, page, section,
quoted sentences, and the ``url`` that opens each at its place when the server sends its files)
beside ``choices``.

Example:
    >>> strategy_of("ragnet-oneshot:sentences"), strategy_of("ragnet"), strategy_of("gpt-4o")
    ('oneshot:sentences', 'auto', None)
    >>> question_of([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who?"}])
    'Who?'
    >>> conversation_of([{"role": "user", "content": "What does -d do?"}, {"role": "assistant", "content": "Debug."},
    ...                  {"role": "user", "content": "And its long form?"}])
    ('And its long form?', [{'question': 'What does -d do?', 'answer': 'Debug.'}])
    >>> print(with_sources("Paris.", [{"title": "France", "source": "France — atlas.pdf, p. 3",
    ...                                  "url": "/files/atlas.pdf#page=3"}]))
    Paris.
    <BLANKLINE>
    Sources:
    [1] France — atlas.pdf, p. 3 — /files/atlas.pdf#page=3
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, Iterable, Sequence

from ragnet.errors import InputError

__all__ = ["chat_chunks", "completion", "conversation_of", "model_names", "question_of", "strategy_of",
           "with_sources"]

PREFIX = "ragnet"


def strategy_of(model: str) -> str | None:
    """The strategy spec a model name asks for ("auto" for the default), or None when it names
    no ragnet strategy."""
    from ragnet.programs import STRATEGIES

    name = model.strip()
    if name in (PREFIX, f"{PREFIX}-auto", "auto"):
        return "auto"
    if name.startswith(f"{PREFIX}-"):
        name = name[len(PREFIX) + 1:]
    return name if name.partition(":")[0] in STRATEGIES else None


def model_names() -> list[str]:
    """The model ids ``GET /v1/models`` lists: the default and every strategy and preset."""
    from ragnet.programs.registry import all_specs

    return [f"{PREFIX}-auto", *(f"{PREFIX}-{spec}" for spec in all_specs())]


def _text_of(message: Any) -> str:
    """A message's text: string content, or the text parts of a list (other parts left out)."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content
                            if isinstance(p, dict) and p.get("type") in ("text", "input_text"))
    return content.strip() if isinstance(content, str) else ""


def question_of(messages: Sequence[Any]) -> str:
    """The text of the last user message (string content, or the text parts of a list).

    Raises:
        InputError: no user message, or one with no text.
    """
    for message in reversed(list(messages)):
        if message.get("role") != "user":
            continue
        text = _text_of(message)
        if not text:
            raise InputError("the last user message has no text", argument="messages")
        return text
    raise InputError("no user message: the question is the last message with role 'user'", argument="messages")


def conversation_of(messages: Sequence[Any]) -> tuple[str, list[dict[str, str]]]:
    """The question (:func:`question_of`) and the turns before it, oldest first: each earlier user
    message with the assistant's reply after it (``{"question", "answer"}``). System and tool
    messages are not turns.

    Raises:
        InputError: as :func:`question_of`.
    """
    question = question_of(messages)
    messages = list(messages)
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    turns: list[dict[str, str]] = []
    for message in messages[:last]:
        role, text = message.get("role"), _text_of(message)
        if role == "user" and text:
            turns.append({"question": text, "answer": ""})
        elif role == "assistant" and text and turns and not turns[-1]["answer"]:
            turns[-1]["answer"] = text
    return question, turns


def with_sources(answer: str, citations: Iterable[dict[str, Any]]) -> str:
    """The answer, then a numbered Sources list (one line per cited passage, ending with the
    relative link that opens it at its place where the server sends files)."""
    lines = [f"[{i}] {c.get('source') or c.get('title') or c.get('id')}" + (f" — {c['url']}" if c.get("url") else "")
             for i, c in enumerate(citations, 1)]
    return answer if not lines else f"{answer}\n\nSources:\n" + "\n".join(lines)


def _usage(usage: dict[str, Any]) -> dict[str, int]:
    prompt, completion_ = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion_, "total_tokens": prompt + completion_}


def completion(model: str, content: str, citations: list[dict[str, Any]], usage: dict[str, Any],
               extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "system_fingerprint": None,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": _usage(usage), "citations": citations, **(extra or {})}


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def chat_chunks(model: str, completion_id: str, created: int) -> "ChunkWriter":
    """A writer of the ``chat.completion.chunk`` events of one streamed reply."""
    return ChunkWriter(model, completion_id, created)


class ChunkWriter:
    """Server-sent events of a streamed chat completion, in OpenAI's shape."""

    def __init__(self, model: str, completion_id: str, created: int) -> None:
        self.base = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                     "system_fingerprint": None}

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        return _event({**self.base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                                                 "logprobs": None}], **extra})

    def role(self) -> str:
        return self.chunk({"role": "assistant", "content": ""})

    def end(self, citations: list[dict[str, Any]], usage: dict[str, Any], **extra: Any) -> str:
        """The last chunk: ``finish_reason``, the citations, the usage (and ``extra`` fields)."""
        return self.chunk({}, "stop", citations=citations, usage=_usage(usage), **extra)

    @staticmethod
    def error(message: str, kind: str, code: str) -> str:
        """An ``error`` event (its message redacted as every error's: :func:`ragnet.serve.errors.error_body`)."""
        from ragnet.serve.errors import error_body

        return _event(error_body(message, kind, code))

    @staticmethod
    def done() -> str:
        return "data: [DONE]\n\n"
