"""Answers that cannot be right, told without an LM: a section number, a heading, a title, the question's words.

A small reader shown a manual's passages under their headings often answers with the place
instead of what the place says: "7.7" (the section number) where the section's first sentence
states the value, the whole heading path, the manual's title, or a phrase copied from the
question. None of these is ever the answer to a question that does not ask for a place, so the
answer step rejects them and asks once more (:class:`ragnet.signatures.answer.AnswerStep`).
Each rule is narrow on purpose: an answer the document's text also states as content (a term
that is both a heading and a word of a sentence) is kept.

Example:
    >>> headings = ["2.7 Core options", "2.7.3. Error-related Options"]
    >>> rejection("2.7.3", "Which option stops on the first error?", headings=headings)
    'a section number'
    >>> rejection("Error-related Options", "Which option stops on the first error?", headings=headings)
    'a heading'
    >>> rejection("--fatal", "Which option stops on the first error?", headings=headings) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["SECTION_NUMBER", "heading_name", "rejection"]

#: A heading's leading number: "2.7.3.", "7", "A.1", "Appendix B", "Chapter 4".
SECTION_NUMBER = re.compile(
    r"^\s*(?:(?:appendix|chapter|section|part)\s+)?(?:\d+|[A-Z])(?:\.\d+)*\.?(?=\s|$)\s*", re.I)
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_YES_NO = {"yes", "no", "true", "false"}
# a question that asks for a place: the section, chapter or heading is then the answer
_ASKS_PLACE = re.compile(r"\b(?:section|chapter|heading|appendix|part|page)s?\b", re.I)
# words a question may share with a right answer without the answer being a copy of it
_FUNCTION_WORDS = {"a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "it", "by", "with", "as",
                   "at", "be", "what", "which", "who", "when", "how", "does", "do"}


def heading_name(heading: str) -> str:
    """A heading without its leading section number.

    Example:
        >>> heading_name("2.7.3. Error-related Options"), heading_name("Appendix A Licence"), heading_name("Usage")
        ('Error-related Options', 'Licence', 'Usage')
    """
    text = " ".join(str(heading).split())
    name = SECTION_NUMBER.sub("", text, count=1).strip()
    return name or text


def _fold(text: str) -> str:
    return " ".join(_WORD.findall(str(text).casefold()))


def _is_section_number(answer: str, headings: Sequence[str]) -> bool:
    """A dotted number ("7.7", "2.7.3.") that numbers a heading shown; a plain integer may be a value."""
    bare = answer.strip().rstrip(".")
    if not re.fullmatch(r"(?:\d+|[A-Z])(?:\.\d+)+", bare):
        return False
    numbers = set()
    for heading in headings:
        match = SECTION_NUMBER.match(heading)
        if match:
            numbers.add(match.group(0).split()[-1].rstrip("."))
    return bare in numbers


def _is_heading(answer: str, headings: Sequence[str], body: str) -> bool:
    folded = _fold(answer)
    if not folded:
        return False
    if "›" in answer and any(_fold(heading_name(h)) in folded for h in headings):
        return True  # a heading path copied whole
    names = {_fold(h) for h in headings} | {_fold(heading_name(h)) for h in headings}
    return folded in names and f" {folded} " not in f" {_fold(body)} "


def _echoes_question(answer: str, question: str) -> bool:
    words = [w for w in _WORD.findall(answer.casefold()) if w not in _FUNCTION_WORDS]
    asked = set(_WORD.findall(question.casefold()))
    return len(words) >= 2 and all(w in asked for w in words)


def rejection(answer: str, question: str, *, headings: Iterable[str] = (), titles: Iterable[str] = (),
              body: str = "") -> str | None:
    """Why ``answer`` cannot answer ``question`` (None when nothing rules it out).

    Args:
        answer: the reader's answer.
        question: the question it answers.
        headings: every heading of the sections the reader was shown (numbered as the document numbers them).
        titles: the titles of the documents the reader was shown.
        body: the text the reader was shown outside its headings: a heading that the text also
            states as content is a possible answer.

    Returns:
        ``"a section number"``, ``"a heading"``, ``"a document title"`` or ``"the question's own words"``.
    """
    answer = " ".join(str(answer or "").split())
    if not answer or _fold(answer) in _YES_NO:
        return None
    headings = [" ".join(str(h).split()) for h in headings if str(h).strip()]
    if _ASKS_PLACE.search(question or ""):
        return None
    if headings and _is_section_number(answer, headings):
        return "a section number"
    if headings and _is_heading(answer, headings, body):
        return "a heading"
    folded = _fold(answer)
    if folded and any(folded == _fold(t) for t in titles) and f" {folded} " not in f" {_fold(body)} ":
        return "a document title"
    if " or " not in (question or "") and _echoes_question(answer, question or ""):
        return "the question's own words"
    return None
