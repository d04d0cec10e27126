"""The one text fold ragnet compares strings under: white space runs made one space, case folded.

Titles, gold sentences, quotes and crop outputs are matched under it (``ragnet.core.title_keys``,
the evaluation and the metrics), so a document named ``"Ed  WOOD"`` in one place and ``"ed wood"``
in another is one document everywhere. It lives in the lowest layer so that light modules (the
HTML report, the metrics) use it without importing numpy.

Example:
    >>> normalize_text("  Ed\\n WOOD ")
    'ed wood'
"""

from __future__ import annotations

from typing import Any

__all__ = ["normalize_text"]


def normalize_text(text: Any) -> str:
    """``str(text)`` with runs of white space made one space, trimmed, and casefolded."""
    return " ".join(str(text).split()).casefold()
