"""Chunks that only list where other text is: a table of contents or a back-of-book index.

A PDF manual's contents pages and its index name every topic of the manual, so they match almost
any question about it in search ("asn1Decoding program . . . . . 7" shares every word with a
question about asn1Decoding), yet they state nothing: a reader given one reads page numbers, and
a citation of one sends the user to a page that answers nothing. Their lines are entries ending
in dot leaders, with or without a page number; :func:`is_page_listing` tells such a chunk from
prose, option lists and tables by the share of those lines. LM-free.

Example:
    >>> is_page_listing("Contents\\n1 Intro . . . . . 1\\n2 Usage . . . . . 3\\n2.1 Setup . . . . 4\\n3 API . . . . . 9")
    True
    >>> is_page_listing("-s, --strict use strict DER decoding\\n-t use strict DER decoding . . . but not in time fields")
    False
"""

from __future__ import annotations

import re

__all__ = ["MIN_LISTING_LINES", "is_page_listing"]

#: Fewest leader lines a listing has: a chunk with fewer (a prose page quoting one entry) is text.
MIN_LISTING_LINES = 4

# an entry's dot leaders ("Title . . . . 12", "Title.......12", "Title . . . ."), at the line's end
_LEADER_LINE = re.compile(r"(?:\.[ \t]?){4,}[ \t]*\d{0,4}[ \t]*$")


def is_page_listing(text: str) -> bool:
    """Whether ``text`` is a table of contents or an index: at least :data:`MIN_LISTING_LINES`
    lines, and at least half of its non-empty lines, end in dot leaders (and a page number).

    Example:
        >>> is_page_listing("Index\\nasn1_create . . . . 12\\nasn1_delete . . . . 13\\nasn1_read . . . . . 15\\nDER . . . . 4")
        True
        >>> is_page_listing("The default is 7.\\nSee the table . . . . 4")
        False
    """
    lines = [line for line in text.splitlines() if line.strip()]
    leaders = sum(1 for line in lines if _LEADER_LINE.search(line))
    return leaders >= MIN_LISTING_LINES and 2 * leaders >= len(lines)
