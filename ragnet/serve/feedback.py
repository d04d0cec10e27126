"""``POST /feedback``: a person marks an answer right or wrong, and names the line that states the
right answer; the mark becomes a question row of ``INDEX/feedback.jsonl``
(:mod:`ragnet.serve.feedback_file`), in the format ``ragnet eval --docs`` reads
(:mod:`ragnet.eval.run.doc_questions`), so ``ragnet eval --docs FOLDER --data INDEX/feedback.jsonl``
and ``ragnet optimize --docs`` score strategies on a team's own marks.

The row stands alone: its ``question`` is the standalone question a follow-up was answered as
(the text asked is kept as ``asked``), its ``answers`` the right answer (for a "right" mark, the
answer as marked, or the short form the person gave; a "wrong" mark must give the right answer,
since a row without one cannot be scored, and is refused without it), its ``gold`` the place the
person picked: the cited file, its page (PDF; the one page of a passage's span that holds the line)
or section (HTML, DOCX, Markdown), and the line as ``quote``. Extra fields the loader passes over
say how it came: ``marked`` (right or wrong), ``given`` (the answer the reader gave), ``strategy``,
``created``, ``source``.

A row is checked before it is written, as ``ragnet eval --docs`` will check it: read by the same
reader of a record (:func:`ragnet.eval.run.doc_questions.doc_question`), its place against the
served index (a file it has, a page or section there; 400 naming ``place`` otherwise, with what
the file has). A line not found in the text indexed at its place (a pasted one) is written, and
the reply says so (``warnings``), as ``ragnet eval --docs`` warns of it.

Example:
    >>> row = mark_row(Mark(question="And its default?", standalone_question="What is the default port?",
    ...                     answer="Port 8000.", marked="right", right_answer="8000", strategy="basic"),
    ...                "And its default?", None, created="2026-01-01T00:00:00Z")
    >>> row["question"], row["asked"], row["answers"], row["marked"], row["id"]
    ('What is the default port?', 'And its default?', ['8000'], 'right', 'fb-f91b3e0989')
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from ragnet.errors import DiskFullError, InputError
from ragnet.serve.errors import ApiError
from ragnet.serve.feedback_file import FEEDBACK_FILE, FeedbackBusy, FeedbackFile, FeedbackFull, row_id
from ragnet.serve.routes import MAX_TURN_CHARS, service
from ragnet.serve.service import Service, public_error

__all__ = ["Mark", "Place", "checked", "mark_row", "router"]

router = APIRouter()

#: Longest short answer, quoted line, file path and heading of a mark.
MAX_ANSWER_CHARS = 2_000
MAX_QUOTE_CHARS = 4_000
MAX_FILE_CHARS = 1_024
MAX_HEADING_CHARS = 500
#: Pages of a cited passage's span searched for the one that holds the picked line.
MAX_SPAN = 20

Heading = Annotated[str, Field(max_length=MAX_HEADING_CHARS)]


class Place(BaseModel):
    """Where the right answer is stated: a cited passage's ``file``, ``page`` (and ``page_end``,
    where its passage spans pages) or ``section`` (its heading path), and the ``quote``: the
    line picked from its sentences, or pasted."""

    model_config = ConfigDict(extra="forbid")
    file: str = Field(min_length=1, max_length=MAX_FILE_CHARS)
    page: int | None = Field(default=None, ge=1, le=1_000_000)
    page_end: int | None = Field(default=None, ge=1, le=1_000_000)
    section: list[Heading] | None = Field(default=None, max_length=32)
    quote: str = Field(default="", max_length=MAX_QUOTE_CHARS)


class Mark(BaseModel):
    """``POST /feedback``: the question as asked (and the ``standalone_question`` a follow-up was
    answered as), the ``answer`` the reader gave, ``marked`` right or wrong, the ``right_answer``
    (a "right" mark's short form, optional; a "wrong" mark's correction, required), the ``place``
    that states it, and the ``strategy`` that answered."""

    model_config = ConfigDict(extra="forbid")
    question: str
    standalone_question: str | None = Field(default=None, max_length=MAX_TURN_CHARS)
    answer: str = Field(default="", max_length=MAX_TURN_CHARS)
    marked: Literal["right", "wrong"]
    right_answer: str = Field(default="", max_length=MAX_ANSWER_CHARS)
    place: Place | None = None
    strategy: str | None = Field(default=None, max_length=200)


def _gold(place: Place, index: Any) -> dict[str, Any]:
    """The gold place of ``place``: its file as the index keys it, the page of its span that
    holds the quote (PDF) or its section, the quote on one line."""
    from ragnet.corpus.locations import file_key

    quote = " ".join(place.quote.split())
    gold: dict[str, Any] = {"file": file_key(place.file.strip())}
    if place.page is not None:
        gold["page"] = _pinned_page(index, gold["file"], place.page, place.page_end, quote)
    elif place.section:
        gold["section"] = list(place.section)
    return {**gold, "quote": quote, "role": "answer"}


def _pinned_page(index: Any, file: str, first: int, last: int | None, quote: str) -> int:
    """The page of a passage's span ``first``..``last`` whose own chunks (those on that page
    alone) hold ``quote``; ``first`` when none does, or without an index or a quote."""
    from ragnet.eval.run.doc_questions import GoldPlace, place_chunk_ids, quote_shown

    if index is None or last is None or last <= first or not quote:
        return first
    for page in range(first, min(last, first + MAX_SPAN) + 1):
        chunks = [c for c in index.get(place_chunk_ids(index, GoldPlace(file, page=page)))
                  if _pages(c) == (page, page)]
        if chunks and quote_shown(quote, [c.text for c in chunks]):
            return page
    return first


def _pages(chunk: Any) -> tuple[Any, Any]:
    loc = chunk.metadata.get("location") if isinstance(chunk.metadata, dict) else None
    loc = loc if isinstance(loc, dict) else {}
    return loc.get("page"), loc.get("page_end") or loc.get("page")


def mark_row(mark: Mark, question: str, index: Any, created: str | None = None) -> dict[str, Any]:
    """The question row of ``mark`` (``question``: the asked text, checked), its place read
    against ``index`` (None: as given); see the module docstring.

    Raises:
        ApiError: a "wrong" mark without the right answer (400, ``right_answer``).
    """
    standalone = (mark.standalone_question or "").strip()
    asked_as = standalone or question
    given = mark.answer.strip()
    right = mark.right_answer.strip() or (given if mark.marked == "right" else "")
    if not right:
        raise ApiError(400, "a 'wrong' mark needs the right answer (right_answer): ragnet eval --docs scores a "
                            "question by its answers, so a row without one could not be scored; nothing was saved",
                       "right_answer_missing", param="right_answer")
    row: dict[str, Any] = {"id": row_id(asked_as), "question": asked_as, "answers": [right],
                           "gold": [_gold(mark.place, index)] if mark.place is not None else []}
    if asked_as != question:
        row["asked"] = question
    row.update({"marked": mark.marked, "given": given, "strategy": mark.strategy,
                "created": created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "source": "ragnet serve"})
    return row


def checked(row: dict[str, Any], index: Any) -> list[str]:
    """Check ``row`` as ``ragnet eval --docs`` reads it and its place against ``index``; the
    warnings (a quote not in the text indexed at its place).

    Raises:
        ApiError: 400 naming the field that is wrong.
    """
    from ragnet.eval.run.doc_questions import doc_question, place_chunk_ids, place_problem, quote_shown

    try:
        parsed = doc_question(row, FEEDBACK_FILE)
    except InputError as exc:
        param = "place" if "gold" in exc.message else "right_answer" if "answers" in exc.message else "question"
        raise ApiError(400, f"{param}: {exc.message}", "invalid_mark", param=param) from None
    warnings = []
    for place in parsed.places:
        problem = place_problem(index, place)
        if problem is not None:
            raise ApiError(400, f"place: {problem} (the served index's files and places are what a mark may name)",
                           "unknown_place", param="place")
        if place.quote and not quote_shown(place.quote, [c.text for c in index.get(place_chunk_ids(index, place))]):
            warnings.append(f"the line is not in the text indexed at {place.key()}; it was saved as given, and "
                            "ragnet eval --docs will warn of it too")
    return warnings


@router.post("/feedback")
async def feedback(body: Mark, request: Request, state: Service = Depends(service)) -> dict[str, Any]:
    question = state.check_question(body.question)
    index = state.holder.current.index
    row = await asyncio.to_thread(mark_row, body, question, index)
    warnings = await asyncio.to_thread(checked, row, index)
    marks: FeedbackFile = request.app.state.marks
    try:
        replaced, rows = await asyncio.to_thread(marks.add, row)
    except FeedbackBusy as exc:
        raise ApiError(503, str(exc), "index_busy", "server_error", headers={"Retry-After": "2"}) from None
    except FeedbackFull as exc:
        raise ApiError(507, str(exc), "feedback_full", "server_error") from None
    except (DiskFullError, OSError) as exc:
        raise ApiError(507 if isinstance(exc, DiskFullError) else 503,
                       f"the mark could not be written ({public_error(str(exc), state.holder.path)})",
                       "feedback_unwritable", "server_error") from None
    return {"id": row["id"], "file": FEEDBACK_FILE, "replaced": replaced, "rows": rows, "row": row,
            "warnings": warnings}
