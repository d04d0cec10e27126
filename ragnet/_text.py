"""The one text fold ragnet compares strings under: white space runs made one space, case folded.

Titles, gold sentences, quotes and crop outputs are matched under it (``ragnet.core.title_keys``,
the evaluation and the metrics), so a document named ``"Ed  WOOD"`` in one place and ``"ed wood"``
in another is one document everywhere. It lives in the lowest layer so that light modules (the
HTML report, the metrics) use it without importing numpy. :func:`is_blank` says whether a text
shows nothing at all (a question of zero-width spaces is empty).

Example:
    >>> normalize_text("  Ed\\n WOOD ")
    'ed wood'
"""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["MAX_QUESTION_CHARS", "is_blank", "normalize_text", "question_problem"]

#: The longest question ragnet sends to an LM: ``ragnet serve`` answers 413 beyond it (its
#: ``--max-question-chars`` default) and ``ragnet eval`` refuses the record.
MAX_QUESTION_CHARS = 4_000

#: Letters and symbols that draw nothing (Hangul fillers, the blank Braille pattern).
_BLANK_GLYPHS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
#: Unicode categories that draw nothing: controls, format characters, separators, lone marks.
_BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me"})


def normalize_text(text: Any) -> str:
    """``str(text)`` with runs of white space made one space, trimmed, and casefolded."""
    return " ".join(str(text).split()).casefold()


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only white space, control and format characters (zero-width
    spaces and joiners, byte order marks, bidirectional controls), lone combining marks and blank
    glyphs. A question made of these is empty, however long.

    Example:
        >>> is_blank(" \\u200b\\u200b\\ufeff "), is_blank("\\u200bParis")
        (True, False)
    """
    return all(ch.isspace() or ch in _BLANK_GLYPHS or unicodedata.category(ch) in _BLANK_CATEGORIES for ch in text)


def question_problem(question: Any, limit: int = MAX_QUESTION_CHARS) -> str | None:
    """What is wrong with a question read from a file, or None: not text, empty (white space or
    invisible characters only), or longer than ``limit`` characters.

    Example:
        >>> question_problem("Who?"), question_problem("\u200b"), question_problem("x" * 4001)
        (None, 'empty', 'longer than 4,000 characters (4,001)')
    """
    if not isinstance(question, str):
        return "not a string"
    if is_blank(question):
        return "empty"
    if len(question) > limit:
        return f"longer than {limit:,} characters ({len(question):,})"
    return None
