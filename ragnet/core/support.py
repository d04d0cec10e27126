"""Which sentences support an answer, without an LM: what a citation should point at.

A small reader often cites a neighbour of the chunk that states its answer, and a user who
checks the citation finds another page. After the answer, ragnet ranks the sentences the reader
saw by how well they support it: a sentence where the answer occurs (case, spacing, punctuation
and number formatting aside, as whole words) first, one holding it as written (case aside) ahead
of one holding only its words (``-wget@`` against a mere "wget"), then by the share of the
answer's words it holds, then of the question's. Scores are plain floats; no DSPy, no numpy.

Example:
    >>> sentences = ["Use -j to run jobs in parallel.", "The default is 2 jobs plus the CPU count.",
    ...              "Jobs are queued."]
    >>> [round(s, 2) for s in support_scores("2", "How many jobs run by default?", sentences)]
    [0.17, 3.67, 0.08]
    >>> states_answer("1,024 bytes", "The buffer holds 1024 bytes.")
    True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

__all__ = ["VERBATIM", "answer_key", "question_share", "states_answer", "support_scores"]

# Words joined by a thousands separator ("1,024") are one number; other punctuation separates words,
# so an option "-k" or an identifier "ASN1_MEM_ERROR" keeps its letters and underscores.
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)")
_WORD = re.compile(r"\w+")
# Spelled-out numbers a manual writes where an answer gives digits ("defaults to three"). "one" is
# left out: it is a pronoun at least as often ("the one that ...").
_NUMBER_WORDS = {word: str(n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if word != "one"}
_STOP = frozenset("a an the of to in on at by for and or is are was were be what which who how when where why "
                  "does do did it its this that with as from".split())
#: What a sentence that states the answer scores above any that does not.
STATES_ANSWER = 2.0


def answer_key(text: str) -> list[str]:
    """The words of ``text`` as support matching compares them: Unicode-normalised, case-folded,
    thousands separators dropped, split at punctuation, numbers from zero to twenty (but one) as digits.

    Example:
        >>> answer_key("The `--log-file` option (1,024 KB)"), answer_key("It defaults to three.")
        (['the', 'log', 'file', 'option', '1024', 'kb'], ['it', 'defaults', 'to', '3'])
    """
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    return [_NUMBER_WORDS.get(word, word) for word in _WORD.findall(_THOUSANDS.sub("", text))]


def _contains(words: list[str], part: list[str]) -> bool:
    n = len(part)
    return n > 0 and any(words[i:i + n] == part for i in range(len(words) - n + 1))


def states_answer(answer: str, sentence: str) -> bool:
    """Whether ``answer`` occurs in ``sentence`` as whole words (see :func:`answer_key`); a leading
    article of the answer is not required.

    Example:
        >>> states_answer("The magic-deleteall element", "A magic-deleteall element discards matches.")
        True
        >>> states_answer("8", "It uses 80 bytes.")
        False
    """
    part = answer_key(answer)
    while len(part) > 1 and part[0] in ("the", "a", "an"):
        part = part[1:]
    return _contains(answer_key(sentence), part)


#: What a sentence holding the answer as written (case aside) adds to one that holds only its words.
VERBATIM = 0.5


def _verbatim(answer: str, sentence: str) -> bool:
    text = unicodedata.normalize("NFKC", answer).casefold().strip()
    return bool(text) and text in unicodedata.normalize("NFKC", sentence).casefold()


def _share(words: set[str], of: list[str]) -> float:
    wanted = {w for w in of if w not in _STOP}
    return len(wanted & words) / len(wanted) if wanted else 0.0


def question_share(question: str, text: str) -> float:
    """The share of ``question``'s content words that ``text`` holds (see :func:`answer_key`).

    Example:
        >>> question_share("Which version added the minimum version check?", "Available since 1.2: a minimum.")
        0.25
    """
    return _share(set(answer_key(text)), answer_key(question))


def support_scores(answer: str, question: str, sentences: Sequence[str]) -> list[float]:
    """How well each sentence supports ``answer`` to ``question``: :data:`STATES_ANSWER` when the
    answer occurs in it (:data:`VERBATIM` more when as written, case aside), plus the share of the
    answer's words it holds, plus a third of the share of the question's content words.

    Example:
        >>> support_scores("Paris", "Capital of France?", ["Paris is the capital of France.", "Rome is old."])
        [3.8333333333333335, 0.0]
    """
    answer_words, question_words = answer_key(answer), answer_key(question)
    out = []
    for sentence in sentences:
        words = answer_key(sentence)
        present = set(words)
        score = STATES_ANSWER if states_answer(answer, sentence) else 0.0
        if score and _verbatim(answer, sentence):
            score += VERBATIM
        out.append(score + _share(present, answer_words) + _share(present, question_words) / 3)
    return out
