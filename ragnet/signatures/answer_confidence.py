"""The reader's confidence in its answer: the probability it gave the answer's own tokens.

A reader decoding greedily writes the most likely token at every step, yet how likely that token
was varies: "50" written at probability 0.98 and "Kibibytes" written at 0.3, with the right unit
second, look the same on the page. The product of the probabilities of the tokens that spell the
answer field is a signal no other step has, and it costs nothing to read when the LM reports token
logprobs (DSPy 3.4's ``logprobs`` request option; ragnet's llama.cpp engine reports them for
greedy decoding). :func:`reports_logprobs` says whether an LM does, so a step asks only those (a
provider without logprobs raises when asked); :func:`field_probability` finds the field in the
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
from typing import Any

__all__ = ["LOW_CONFIDENCE", "LOW_NOTE", "confidence_note", "field_probability", "reports_logprobs"]

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


def reports_logprobs(lm: Any) -> bool:
    """Whether ``lm`` (a ``dspy.LM``) decodes greedily on an engine that reports token logprobs when
    asked (a sampled answer's logprobs would not say how sure the reader was of it).

    Example:
        >>> import dspy
        >>> reports_logprobs(dspy.utils.DummyLM([{"answer": "x"}])), reports_logprobs(None)
        (False, False)
    """
    engine = getattr(lm, "engine", None)
    greedy = not (getattr(lm, "kwargs", None) or {}).get("temperature")
    return greedy and "logprobs" in getattr(engine, "supported_params", ())


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
