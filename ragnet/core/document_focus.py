"""The one document a question is about, from where its best search hits come from. LM-free.

A question over a collection of manuals is almost always about one of them ("When bc is built with
readline, what is HISTORY's default?"), yet a sentence pack filled from the whole pool takes
sentences that merely share words with it from the others (Node.js's readline history, less's
LESSHISTSIZE), and a small reader answers from those. When most of the question's best hits come
from one document, :func:`focus_document` names it, and the pack can be filled from it alone. When
the hits are spread (a question about two manuals, or a collection of one-paragraph pages such as
Wikipedia's, where every hit is its own document) it names none and nothing changes.

Example:
    >>> focus_document(["bc", "bc", "node", "bc", "bc", "bc", "bc", "node", "less", "bc"])
    'bc'
    >>> focus_document(["a", "b", "c", "a", "d"]) is None
    True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

__all__ = ["FOCUS_SHARE", "FOCUS_TOP", "focus_document"]

#: The best hits looked at.
FOCUS_TOP = 10
#: The share of them one document must hold (more than half: a majority, not a plurality).
FOCUS_SHARE = 0.5


def focus_document(doc_ids: Sequence[str], *, top: int = FOCUS_TOP, share: float = FOCUS_SHARE) -> str | None:
    """The document of more than ``share`` of the first ``top`` of ``doc_ids`` (hits best
    first), or None.

    Example:
        >>> focus_document(["x"] * 4 + ["y"] * 4) is None, focus_document(["x"] * 3)
        (True, 'x')
    """
    best = list(doc_ids[:top])
    if not best:
        return None
    doc, count = Counter(best).most_common(1)[0]
    return doc if count > share * len(best) else None
