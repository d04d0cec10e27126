"""The reader's confidence in its answer: the probability it gave the answer's own tokens.

A reader decoding greedily writes the most likely token at every step, yet how likely that token
was varies: "50" written at probability 0.98 and "Kibibytes" written at 0.3, with the right unit
second, look the same on the page. The product of the probabilities of the tokens that spell the
answer field is a signal no other step has, and it costs nothing to read when the LM reports token
logprobs (DSPy 3.4's ``logprobs`` request option; ragnet's llama.cpp engine reports them for
greedy decoding, and so do OpenAI-compatible servers that DSPy's capability table lists with
``logprobs``). :func:`logprobs_request` gives the request options that make an LM report them, or
None, so a step asks only those that can (a provider without logprobs raises when asked);
:func:`field_probability` finds the field in the
reply the tokens spell (JSON or DSPy's ``[[ ## field ## ]]`` sections) and multiplies its tokens'
probabilities. How well it tells right answers from wrong ones is measured in docs/results.

Example:
    >>> tokens = [{"token": '{"answer": "', "logprob": -0.01}, {"token": "5", "logprob": -0.2},
    ...           {"token": "0", "logprob": -0.1}, {"token": '"}', "logprob": -0.01}]
    >>> round(field_probability({"content": tokens}, "answer"), 3)
    0.741
"""

from __future__ import annotations

import math
import re
import weakref
from typing import Any

__all__ = ["LOW_CONFIDENCE", "LOW_NOTE", "confidence_note", "field_probability", "logprobs_request", "note_refusal",
           "reports_logprobs"]

#: Below this confidence an answer is flagged as low for its reader: on the real-document dev set
#: answers below the median confidence were right far less often than those above it
#: (docs/results/README.md, the reader's confidence).
LOW_CONFIDENCE = 0.5
#: What ``ask`` and the page at ``/`` add to a confidence below :data:`LOW_CONFIDENCE`.
LOW_NOTE = "low: check the cited lines"


def confidence_note(confidence: float | None) -> str | None:
    """How ``ask`` and the page at ``/`` describe a confidence: the reader's probability, with a
    warning below :data:`LOW_CONFIDENCE`; None when the reader reported none.

    Example:
        >>> confidence_note(0.86)
        "0.86 (the reader's probability of this answer)"
        >>> confidence_note(0.31)
        "0.31 (the reader's probability of this answer; low: check the cited lines)"
        >>> confidence_note(None) is None
        True
    """
    if confidence is None:
        return None
    low = f"; {LOW_NOTE}" if confidence < LOW_CONFIDENCE else ""
    return f"{confidence:.2f} (the reader's probability of this answer{low})"


# LMs whose server refused a logprobs request: not asked again in this process (each question
# would otherwise cost a refused request and a retry without them)
_REFUSED: "weakref.WeakSet[Any]" = weakref.WeakSet()


def note_refusal(lm: Any, options: list[str]) -> bool:
    """Remember that ``lm``'s server refused the logprobs request ``options`` (as
    :func:`ragnet.signatures.step.run_step` reports them), so it is not asked for them again;
    returns whether it did.

    Example:
        >>> import dspy
        >>> lm = dspy.LM("openai/gpt-4o-mini", temperature=0.0)
        >>> note_refusal(lm, ["seed"])
        False
        >>> note_refusal(lm, ["logprobs", "top_logprobs"])
        True
        >>> logprobs_request(lm) is None
        True
    """
    refused = any("logprobs" in option for option in options)
    if refused and lm is not None:
        try:
            _REFUSED.add(lm)
        except TypeError:  # an LM that cannot be weakly referenced is asked again
            return False
    return refused


def logprobs_request(lm: Any) -> dict[str, Any] | None:
    """The request options that make ``lm`` (a ``dspy.LM``) report the token logprobs of a greedy
    answer, or None when it cannot (a sampled answer's logprobs would not say how sure the reader
    was of it).

    An LM with an engine object (ragnet's llama.cpp engine) is asked when the engine lists
    ``logprobs`` among its supported parameters. A served LM (litellm: OpenAI, vLLM, Ollama,
    llama.cpp's server) is asked when DSPy's capability table lists ``logprobs`` for its model, with
    ``top_logprobs=1`` as well: some OpenAI-compatible servers, llama.cpp's among them, return
    logprobs only when asked for alternatives too.

    Example:
        >>> import dspy
        >>> logprobs_request(dspy.LM("openai/gpt-4o-mini", temperature=0.0))
        {'logprobs': True, 'top_logprobs': 1}
        >>> logprobs_request(dspy.LM("openai/gpt-4o-mini", temperature=0.7)) is None
        True
        >>> logprobs_request(dspy.utils.DummyLM([{"answer": "x"}])), logprobs_request(None)
        (None, None)
    """
    if lm is None or (getattr(lm, "kwargs", None) or {}).get("temperature"):
        return None
    try:
        if lm in _REFUSED:
            return None
    except TypeError:
        pass
    engine = getattr(lm, "engine", None)
    if engine is not None and not isinstance(engine, str):  # an engine object; "auto": litellm's
        return {"logprobs": True} if "logprobs" in getattr(engine, "supported_params", ()) else None
    try:
        params = set(getattr(lm, "supported_params", ()) or ())
    except Exception:  # noqa: BLE001 - a capability lookup that fails means: do not ask
        return None
    return {"logprobs": True, "top_logprobs": 1} if {"logprobs", "top_logprobs"} <= params else None


def reports_logprobs(lm: Any) -> bool:
    """Whether ``lm`` reports a greedy answer's token logprobs when asked (:func:`logprobs_request`).

    Example:
        >>> import dspy
        >>> reports_logprobs(dspy.utils.DummyLM([{"answer": "x"}])), reports_logprobs(None)
        (False, False)
    """
    return logprobs_request(lm) is not None


def _field_span(text: str, field: str) -> tuple[int, int] | None:
    """Where ``field``'s value is in a reply ``text``: a JSON string value, else a ``[[ ## field ## ]]``
    section; None when neither is there."""
    match = re.search(r'"' + re.escape(field) + r'"\s*:\s*"', text)
    if match:
        start = end = match.end()
        while end < len(text) and text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        return start, min(end, len(text))
    match = re.search(r"\[\[ ## " + re.escape(field) + r" ## \]\]\s*", text)
    if match:
        rest = re.search(r"\s*\[\[ ## ", text[match.end():])
        return match.end(), match.end() + (rest.start() if rest else len(text) - match.end())
    return None


def field_probability(logprobs: Any, field: str = "answer") -> float | None:
    """The probability of the tokens that spell ``field``'s value in the reply, from DSPy's
    ``pred.logprobs`` (``{"content": [{"token", "logprob"}, ...]}``); None when there are none or
    the field is not found. A token that straddles the value's edge counts.

    Example:
        >>> field_probability(None), field_probability({"content": [{"token": "hi", "logprob": -1.0}]})
        (None, None)
        >>> sections = [{"token": "[[ ## answer ## ]]\\n", "logprob": 0.0}, {"token": "Paris", "logprob": -0.1},
        ...             {"token": "\\n\\n[[ ## completed ## ]]", "logprob": -0.5}]
        >>> round(field_probability({"content": sections}), 3)
        0.905
    """
    content = logprobs.get("content") if isinstance(logprobs, dict) else getattr(logprobs, "content", None)
    if not content:
        return None
    tokens = [(str(t["token"]), float(t["logprob"])) for t in content]
    text = "".join(token for token, _ in tokens)
    span = _field_span(text, field)
    if span is None or span[0] == span[1]:
        return None
    total, at = 0.0, 0
    for token, logprob in tokens:
        if at < span[1] and at + len(token) > span[0]:
            total += logprob
        at += len(token)
    return math.exp(total)
