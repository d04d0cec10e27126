"""Title keys: how a document title, or a name, is compared with a question, a text or another title.

Every place that asks "is this the same title?" or "does this text name that document?" uses
these functions, so the answer is decided once:

* :func:`normalize_text` (from :mod:`ragnet._text`) folds white space and case (``"Ed  WOOD"``
  and ``"ed wood"`` are one key);
* :func:`title_key` is a title's key without a trailing parenthetical (``"Ed Wood (film)"`` is
  named as ``"ed wood"``), and :func:`title_keys` the keys the metadata catalog files a title
  under (the whole title, and the title without its parenthetical);
* :func:`mention_pattern` finds a key in a casefolded text as a whole phrase;
* :data:`MIN_TITLE_CHARS`: shorter titles and names ("It", "Up") match by accident.

Two readings of "a trailing parenthetical" are in use, and both are kept as they were: they
differ only for a title whose last parenthetical holds another "(". The bridge links
(:mod:`ragnet.core.links`) and bridge names (:mod:`ragnet.core.bridge_keys`) strip from the first
unclosed "(" (:data:`PARENTHETICAL`); the catalog (:mod:`ragnet.core.rules`) and the router
strip only the innermost group (:data:`INNERMOST_PARENTHETICAL`, ``innermost=True``).

Example:
    >>> title_key("Ed Wood (film)"), title_keys("Ed  Wood (film)")
    ('ed wood', ['ed wood (film)', 'ed wood'])
    >>> title_key("A (b (c)"), title_key("A (b (c)", innermost=True)
    ('a', 'a (b')
    >>> bool(mention_pattern("ed wood").search("who directed ed wood?")), bool(mention_pattern("ed").search("edward"))
    (True, False)
"""

from __future__ import annotations

import re
from typing import Any

from ragnet._text import normalize_text

__all__ = [
    "INNERMOST_PARENTHETICAL",
    "MIN_TITLE_CHARS",
    "PARENTHETICAL",
    "mention_pattern",
    "normalize_text",
    "title_key",
    "title_keys",
]

#: A trailing parenthetical, from the first "(" that the final ")" closes over: "A (b (c)" -> "A".
PARENTHETICAL = re.compile(r"\s*\([^)]*\)\s*$")
#: A trailing parenthetical holding no other parenthesis: "A (b (c)" -> "A (b".
INNERMOST_PARENTHETICAL = re.compile(r"\s*\([^()]*\)\s*$")
MIN_TITLE_CHARS = 4  # shorter titles ("It", "Up") match by accident


def title_key(title: Any, *, innermost: bool = False) -> str:
    """The phrase searched for: the normalised title without a trailing parenthetical
    (:data:`PARENTHETICAL`, or :data:`INNERMOST_PARENTHETICAL` with ``innermost``).

    Example:
        >>> title_key("Ed Wood (film)")
        'ed wood'
    """
    pattern = INNERMOST_PARENTHETICAL if innermost else PARENTHETICAL
    return normalize_text(pattern.sub("", str(title)))


def title_keys(title: Any) -> list[str]:
    """The keys a title is filed under: the normalised title, then (when it differs and is not
    empty) the title without its innermost trailing parenthetical; ``[]`` for a blank title.

    Example:
        >>> title_keys("Ed Wood (film)"), title_keys("Paris"), title_keys("(film)"), title_keys(" ")
        (['ed wood (film)', 'ed wood'], ['paris'], ['(film)'], [])
    """
    full = normalize_text(title)
    if not full:
        return []
    short = title_key(title, innermost=True)
    return [full] if not short or short == full else [full, short]


def mention_pattern(key: str) -> re.Pattern[str]:
    """A pattern that finds ``key`` as a whole phrase (no word character just before or after)."""
    return re.compile(rf"(?<!\w){re.escape(key)}(?!\w)")
