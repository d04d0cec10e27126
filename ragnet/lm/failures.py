"""Name what went wrong with an LM call, from the ``lm_error`` events a program's trace holds.

Programs never crash on LM failures: each step retries, then falls back to a safe default and
records ``lm_error`` events (``failed_step``, ``error``, ``error_type``, ``cause``). Whoever
reports to a person (``ragnet ask``, ``ragnet eval``) turns those events into one line that
names the cause, so a missing API key, a dead server or a timeout is not mistaken for a wrong
answer.

Example:
    >>> events = [{"step": "lm_error", "failed_step": "answer", "error": "LMTransportError: Connection refused",
    ...            "error_type": "LMTransportError", "cause": "ConnectError", "action": "fallback"}]
    >>> answer_failure(events)
    'the LM could not be reached (connection refused or no server at that address): LMTransportError: Connection refused'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["OUTAGE_KINDS", "answer_failure", "failure_kind", "kind_message"]

#: Failure kinds that mean the LM service, not the model's answer, failed.
OUTAGE_KINDS = frozenset({"auth", "rate", "connection", "timeout", "server", "response"})

_MESSAGES = {
    "auth": "the LM refused the credentials (no or wrong API key)",
    "connection": "the LM could not be reached (connection refused or no server at that address)",
    "timeout": "the LM did not answer in time (timeout)",
    "server": "the LM server failed (HTTP 5xx)",
    "rate": "the LM provider refused the request (rate limit or quota)",
    "context": "the prompt is longer than the LM's context window",
    "response": "the LM server sent a malformed response (bad JSON or no choices)",
    "format": "the LM's answer did not follow the output format",
    "other": "the LM call failed",
}


def failure_kind(event: Mapping[str, Any]) -> str:
    """``auth``, ``rate``, ``connection``, ``timeout``, ``server``, ``response``, ``context``,
    ``format`` or ``other``, from the exception names DSPy (``LMServerError``, ``LMTimeoutError``,
    ...), litellm and httpx use and the error text.

    Example:
        >>> failure_kind({"error_type": "LMTimeoutError", "error": "LMTimeoutError: [openai/x] timed out"})
        'timeout'
    """
    names = f"{event.get('error_type', '')} {event.get('cause', '')}".casefold()
    text = str(event.get("error", "")).casefold()
    if "contextwindow" in names or "context window" in text or "context length" in text:
        return "context"
    if "lmauth" in names or "authentication" in names or "api key" in text or "api_key" in text:
        return "auth"
    if "ratelimit" in names or "lmbilling" in names:
        return "rate"
    if "timeout" in names or "timed out" in text:
        return "timeout"
    if "lmtransport" in names or any(k in names for k in ("connecterror", "connectionerror", "apiconnection",
                                                          "remotedisconnected", "serverdisconnected")) \
            or "connection refused" in text or "connection error" in text:
        return "connection"
    if "lmserver" in names or "internalserver" in names or "serviceunavailable" in names:
        return "server"
    if any(k in names for k in ("lmunexpected", "streamassembly", "jsondecode", "apiresponsevalidation")) \
            or "empty or null response" in text:
        return "response"
    if "adapterparse" in names or "stepoutput" in names or "empty answer" in text:
        return "format"
    return "other"


def kind_message(kind: str) -> str:
    """The human sentence for a :func:`failure_kind`."""
    return _MESSAGES.get(kind, _MESSAGES["other"])


def answer_failure(trace: Iterable[Mapping[str, Any]]) -> str | None:
    """One line naming why the answer step fell back, or None when it produced an answer.

    The answer step failed when its last ``answer``/``lm_step`` event says ``fallback``; the
    cause is read from the last ``lm_error`` of the answer step.
    """
    events = list(trace)
    steps = [e for e in events if e.get("step") == "lm_step" and e.get("name") == "answer"]
    answers = [e for e in events if e.get("step") == "answer"]
    failed = (steps and steps[-1].get("outcome") == "fallback") or (answers and answers[-1].get("fallback"))
    errors = [e for e in events if e.get("step") == "lm_error" and e.get("failed_step") == "answer"]
    if not failed and not (errors and errors[-1].get("action") == "fallback"):
        return None
    if not errors:
        return kind_message("other")
    last = errors[-1]
    return f"{kind_message(failure_kind(last))}: {last.get('error', '')}".rstrip(": ")
