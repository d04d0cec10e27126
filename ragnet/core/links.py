"""Bridge links: a candidate whose title is named by the question or by a top-ranked candidate.

Multi-hop questions are answered by a chain: "Which country is the director of *Sinister*
from?" needs the *Sinister* passage, which names its director, and then the director's own
passage, which shares few words with the question and ranks low. In collections whose
documents are titled by what they describe (encyclopedias, product or people directories,
wikis), the second hop is found by its title appearing in the first hop's text. This module
scores that signal without an LM: a candidate gets ``bonus`` added to its retrieval score
when its title (without a trailing parenthetical such as "(film)") is mentioned, as a whole
phrase, in the question or in one of the ``top`` best other candidates.

With sentence selection on the pooled HotpotQA dev corpus, the bonus (``top=5, bonus=0.4``,
chosen on dev questions) puts all the gold supporting sentences in context for many more
questions (``ragnet eval retrieval``, docs/results/README.md).

Example:
    >>> titles = ["Sinister (film)", "Paris", "Scott Derrickson"]
    >>> texts = ["Sinister is a 2012 horror film directed by Scott Derrickson.", "Paris is big.", "He is American."]
    >>> mention_bonus(titles, texts, "Who directed Sinister?").tolist()
    [0.4, 0.0, 0.4]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragnet.core.title_keys import MIN_TITLE_CHARS, mention_pattern, title_key

__all__ = ["mention_bonus", "title_key"]


def mention_bonus(
    titles: Sequence[str],
    texts: Sequence[str],
    question: str,
    *,
    top: int = 5,
    bonus: float = 0.4,
) -> np.ndarray:
    """``bonus`` for each candidate (in rank order) whose title the question or a top-``top``
    other candidate mentions, else 0.

    Args:
        titles: candidate titles, best-ranked first.
        texts: candidate texts, in the same order.
        question: the question.
        top: how many of the best other candidates may link to a candidate.
        bonus: score added to a linked candidate (retrieval scores are in [0, 1]).
    """
    n = len(titles)
    out = np.zeros(n, dtype=np.float64)
    if n == 0 or bonus == 0:
        return out
    question = question.casefold()
    heads = [str(t).casefold() for t in texts[:top]]
    for i, title in enumerate(titles):
        key = title_key(title)
        if len(key) < MIN_TITLE_CHARS:
            continue
        pattern = mention_pattern(key)
        sources = [question] + [h for j, h in enumerate(heads) if j != i]
        if any(pattern.search(s) for s in sources):
            out[i] = bonus
    return out
