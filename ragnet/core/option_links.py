"""Option links between sentences: the second place of a two-part answer in a manual.

A manual states the two parts of many answers in two places tied only by an option's name. The
question "which startup-file command does the same as the option that sends log messages to a
file?" is answered by "'-o LOGFILE' Log all messages to LOGFILE" in the chapter on invoking and by
"logfile = FILE Set logfile to FILE, the same as '-o FILE'" in the chapter on the startup file. The
second line shares few words with the question, so its value in the sentence knapsack is low and
the first line's option is the only thing that ties them. :func:`link_floor` gives such a line a
share of the value of the best sentence that names the same option, so the knapsack keeps the
two together. An option named by many candidate sentences (``-v`` in every list of options) ties
nothing in particular and is not followed; neither is a sentence of a document without sections
(Wikipedia's paragraphs name no options).

Example:
    >>> texts = ["'-o LOGFILE' Log all messages to LOGFILE.", "Tables are sorted.",
    ...          "logfile = FILE Set logfile to FILE, the same as '-o FILE'."]
    >>> sorted(option_names(texts[0])), sorted(option_names(texts[2]))
    (['-o'], ['-o'])
    >>> values = np.array([1.0, 0.2, 0.01])
    >>> link_floor(values, texts, sectioned=np.array([True, True, True])).tolist()
    [1.0, 0.2, 0.5]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["ANCHORS", "MAX_MENTIONS", "link_floor", "option_names"]

#: How many of the best sentences lend their options' value to the sentences that name them.
ANCHORS = 3
#: An option named by more candidate sentences than this links nothing (chosen on the
#: real-document dev set: docs/results/README.md, "option links").
MAX_MENTIONS = 12

# A command-line option as manuals write it: -o, -nd, --output-file (not "e-mail", not a dash
# in prose such as "on/off--the same", not a negative number).
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def option_names(text: str) -> set[str]:
    """The command-line options ``text`` names (``--output-file=LOGFILE`` as ``--output-file``).

    Example:
        >>> sorted(option_names("Use '-N' or --timestamping=on; not e-mail or -1."))
        ['--timestamping', '-N']
    """
    return {name.rstrip("-") for name in _OPTION.findall(text)}


def link_floor(values: np.ndarray, texts: Sequence[str], sectioned: np.ndarray, *, share: float = 0.5,
               anchors: int = ANCHORS, max_mentions: int = MAX_MENTIONS) -> np.ndarray:
    """``values`` with every sentence that names an option of one of the ``anchors`` most valuable
    sentences raised to at least ``share`` of that sentence's value.

    Args:
        values: the knapsack value of each candidate sentence.
        texts: the sentences.
        sectioned: for each sentence, whether its document has sections; only those link.
        share: the least share of an anchor's value a sentence naming its option keeps (0: off).
        anchors: how many of the most valuable sentences lend value.
        max_mentions: options named by more sentences than this are not followed.
    """
    values = np.asarray(values, dtype=np.float64)
    sectioned = np.asarray(sectioned, dtype=bool)
    if share <= 0 or values.size == 0 or not sectioned.any():
        return values
    names = [option_names(t) if s else set() for t, s in zip(texts, sectioned)]
    mentions = Counter(name for found in names for name in found)
    out = values.copy()
    for anchor in np.argsort(-values, kind="stable")[:anchors]:
        keys = {name for name in names[anchor] if mentions[name] <= max_mentions}
        if not keys:
            continue
        for j, found in enumerate(names):
            if j != anchor and found & keys:
                out[j] = max(out[j], share * values[anchor])
    return out
