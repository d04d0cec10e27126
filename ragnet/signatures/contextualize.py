"""Contextualize: update a persistent notes cache with what matters from new chunks (Search-R1).

Notes are plain text, one fact per line. The validator enforces "never drop earlier facts":
any previous note line missing from the model's output is appended back (and recorded).

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet import Chunk
    >>> new = [Chunk(id="b#0", doc_id="b", title="X Corp", text="X Corp merged with Y in 1999.", tokens=9)]
    >>> with dspy.context(lm=DummyLM([{"updated_notes": "- X Corp merged with Y in 1999"}])):
    ...     out = run_contextualize(dspy.Predict(Contextualize), "When did X merge?", "- X Corp is a bank",
    ...                             new, trace=None)
    >>> out.notes
    '- X Corp merged with Y in 1999\\n- X Corp is a bank'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import dspy

from ragnet.signatures.formatting import format_chunks
from ragnet.signatures.step import run_step

__all__ = ["Contextualize", "contextualize_default", "contextualize_validator", "note_lines", "run_contextualize"]

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


class Contextualize(dspy.Signature):
    """Update the notes with the facts from the new chunks that help answer the question.

    Start from the previous notes and keep every one of them. Add each new fact from the new
    chunks that helps answer the question or one of its steps: who or what, with names, dates
    and numbers exactly as written. Write one short fact per line, starting with "- ". Do not add
    facts that are unrelated to the question and do not answer the question yourself. If the new
    chunks add nothing relevant, return the previous notes unchanged.
    """

    question: str = dspy.InputField(desc="the user's question")
    notes: str = dspy.InputField(desc="the notes so far (may be empty)")
    new_chunks: str = dspy.InputField(desc="newly retrieved chunks, each starting with a short id like [c1]")
    updated_notes: str = dspy.OutputField(desc="all previous notes plus the new relevant facts, one per line")


def _key(line: str) -> str:
    return " ".join(_BULLET.sub("", line).split()).casefold().rstrip(".")


def note_lines(notes: str) -> list[str]:
    """Non-empty, stripped lines of a notes text.

    Example:
        >>> note_lines("- a\\n\\n  - b ")
        ['- a', '- b']
    """
    return [line.strip() for line in str(notes or "").splitlines() if line.strip()]


def contextualize_default(notes: str) -> dict[str, Any]:
    """Fallback: the previous notes unchanged."""
    return {"notes": str(notes or ""), "updated_notes": str(notes or ""), "restored": []}


def contextualize_validator(previous: str) -> Callable[[dspy.Prediction], tuple[dspy.Prediction, list[str]]]:
    """Append previous note lines the output dropped; sets ``notes`` and ``restored``."""
    old = note_lines(previous)

    def validate(pred: dspy.Prediction) -> tuple[dspy.Prediction, list[str]]:
        problems: list[str] = []
        lines = note_lines(pred.updated_notes)
        text = " ".join(_key(line) for line in lines)
        restored = [line for line in old if _key(line) and _key(line) not in text]
        if restored:
            problems.append(f"restored {len(restored)} earlier note line(s) the model dropped")
            lines.extend(restored)
        pred.updated_notes = pred.notes = "\n".join(lines)
        pred.restored = restored
        return pred, problems

    return validate


def run_contextualize(
    predictor: Any,
    question: str,
    notes: str,
    new_chunks: Sequence[Any],
    *,
    trace: Any,
    retries: int = 1,
) -> dspy.Prediction:
    """Run Contextualize; returns ``notes`` (updated, never losing earlier lines), ``restored``, ``fallback``.

    No LM call is made when there are no new chunks.
    """
    text, id_map = format_chunks(new_chunks)
    if not id_map:
        return dspy.Prediction(**contextualize_default(notes), fallback=False)
    return run_step(
        predictor,
        step="contextualize",
        trace=trace,
        default=contextualize_default(notes),
        validate=contextualize_validator(notes),
        retries=retries,
        question=question,
        notes=str(notes or ""),
        new_chunks=text,
    )
