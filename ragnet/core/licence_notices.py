"""Licence and copyright notices: sentences every page of a manual's front matter carries.

GNU manuals, and most free-software documentation, open with "Copyright © 1999–2022 Free Software
Foundation, Inc." and "Permission is granted to copy, distribute and/or modify this document under
the terms of the GNU Free Documentation License…" (about 90 words). The front-matter chunk matches
questions about the manual by its title and version line, and the sentence knapsack's follow rule
(a manual's sentence keeps part of the value of the one before it) then brings the notice along: a
reader given it reads a licence, and a citation of it points at a page that answers nothing.
:func:`is_licence_notice` tells such a sentence from prose that mentions a licence; sentence
selection gives it no value unless :func:`asks_about_licence` (a question about the licence itself).
LM-free.

Example:
    >>> is_licence_notice("Copyright © 1998-2022 Free Software Foundation, Inc.")
    True
    >>> is_licence_notice("The --version option prints the copyright and licence of grep.")
    False
    >>> asks_about_licence("Under which licence may the sed manual be copied?"), asks_about_licence("What does -s do?")
    (True, False)
"""

from __future__ import annotations

import re

__all__ = ["asks_about_licence", "is_licence_notice"]

_NOTICE = re.compile(
    r"""(?:
        ^[^\w\n]*copyright\s*(?:c\s*)?(?:©|\(c\))?\s*\d{4}          # a line opening Copyright © 2001–2022, (C) 1998, c© 2001
      | \bpermission\s+is\s+(?:hereby\s+)?granted\b                  # Permission is granted to copy / make verbatim copies
      | \bwith\s+(?:no|the)\s+invariant\s+sections\b                 # the GFDL's cover-text clause
      | \ba\s+copy\s+of\s+the\s+licen[cs]e\s+is\s+included\b         # ...in the section entitled "GNU Free Documentation License"
      | \bwithout\s+any\s+warranty\b                                 # the GPL's disclaimer
      | \bis\s+free\s+software;?\s+you\s+can\s+redistribute\b        # This program is free software; you can redistribute it
      | \bspdx-license-identifier\b
    )""",
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
_ASKS = re.compile(r"\b(?:licen[cs]\w*|copyright\w*|copying|warrant\w*|redistribut\w*|gpl|gfdl|fdl)\b", re.IGNORECASE)


def is_licence_notice(sentence: str) -> bool:
    """Whether ``sentence`` is a copyright line or a licence's grant, disclaimer or clause (see the
    module docstring), not prose that names a licence.

    Example:
        >>> is_licence_notice("Permission is granted to make and distribute verbatim copies of this manual.")
        True
        >>> is_licence_notice("This program comes WITHOUT ANY WARRANTY; see the GNU General Public License.")
        True
        >>> is_licence_notice("grep is distributed under the GPL.")
        False
        >>> is_licence_notice("A 1932 film adapted from the play by Fred Ballard (Copyright 1931, Premier).")
        False
    """
    return bool(_NOTICE.search(sentence))


def asks_about_licence(question: str) -> bool:
    """Whether ``question`` asks about a licence, a copyright or a warranty, so notices may answer it.

    Example:
        >>> asks_about_licence("Who holds the copyright of the bc manual?"), asks_about_licence("Which file permissions does install set?")
        (True, False)
    """
    return bool(_ASKS.search(question))
