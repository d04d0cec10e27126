"""Definition items in manuals: the sentence that names an option, a command or a variable.

A manual documents its options as a definition list: a term line (``'-s'``, ``--separate``,
`` `-D DIR, --directory=DIR` ``, ``logfile = FILE``, ``LESSEDIT``) and a description of one or
more sentences under it. The description's later sentences no longer say which term they
describe ("This GNU sed extension allows the user to consider them as separate files"), so a
reader shown such a sentence without its term cannot answer "which option does this?", and
picks a neighbouring option's name instead. :func:`item_openers` marks the sentences whose
first line is a term and, for every sentence, the opener of the item it belongs to, so
sentence selection (:mod:`ragnet.core.sentence_values`) can keep the term with its description.

Example:
    >>> texts = ["'-s'\\n'--separate'\\nBy default, files are one stream.",
    ...          "This extension treats them as separate files.",
    ...          "'--sandbox'\\nIn sandbox mode, e/w/r commands are rejected."]
    >>> item_openers(texts, [0, 0, 0]).tolist()
    [0, 0, 2]
    >>> item_openers(["Plain prose.", "More prose."], [0, 0]).tolist()
    [-1, -1]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = ["MAX_ITEM_SENTENCES", "is_term_line", "item_openers", "opens_item"]

# A whole line that names one thing a manual defines (short, with no sentence inside):
_TERM_LINE = re.compile(
    r"""^\s*(?:
        `[^`\n]{1,60}`                                    # a code span: `-D DIR, --directory=DIR`
      | ['‘][^'’\n]{1,60}['’]                              # texinfo's quoted item: '--sandbox', 'e command'
      | -{1,2}[A-Za-z0-9?!#][^\s,]*(?:[ ,=][^\n]{0,40})?  # a bare option line: -N or --LINE-NUMBERS
      | [a-z][a-z0-9_]*[ \t]*=[ \t]*[^\s=][^\n]{0,30}     # a configuration line: logfile = FILE
      | \$?[A-Z][A-Z0-9_]{2,}(?:,[ \t]*\$?[A-Z][A-Z0-9_]{2,})*  # an environment variable: LESSEDIT
    )\s*$""",
    re.VERBOSE,
)
MAX_ITEM_SENTENCES = 6  # a description longer than this is prose after the list, not the item's


def is_term_line(line: str) -> bool:
    """Whether ``line`` is a definition list's term (see the module docstring).

    Example:
        >>> [is_term_line(x) for x in ["'--sandbox'", "`-f`", "logfile = FILE", "LESSEDIT", "The default"]]
        [True, True, True, True, False]
    """
    return bool(_TERM_LINE.match(line)) and not line.rstrip().endswith((".", ":", ";"))


def opens_item(sentence: str) -> bool:
    """Whether ``sentence`` starts with a term line (the term alone, or the term and the first
    sentence of its description below it)."""
    return is_term_line(sentence.split("\n", 1)[0])


def item_openers(texts: Sequence[str], chunk_of: Sequence[int]) -> np.ndarray:
    """For every sentence, the index of the sentence that opens its definition item, or -1.

    Args:
        texts: sentences, grouped by chunk and in document order inside each chunk.
        chunk_of: each sentence's chunk; an item never spans two chunks.

    Returns:
        int64 array: an opener points at itself; a sentence up to :data:`MAX_ITEM_SENTENCES` after
        an opener of its chunk (and before the next one) points at that opener; any other is -1.
    """
    owner = np.full(len(texts), -1, dtype=np.int64)
    current, since = -1, 0
    for i, text in enumerate(texts):
        if i > 0 and chunk_of[i] != chunk_of[i - 1]:
            current = -1
        if opens_item(text):
            current, since = i, 0
        elif current >= 0:
            since += 1
            if since > MAX_ITEM_SENTENCES:
                current = -1
        owner[i] = current
    return owner
