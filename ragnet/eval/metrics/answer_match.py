"""Answer metrics: SQuAD-normalised exact match and token F1, and a lenient "gold answer
contained in the prediction" match for short generated answers.

Normalisation is ``dspy.evaluate.metrics.normalize_text``'s: Unicode NFD, lower case,
punctuation and English articles dropped, whitespace collapsed. NFD makes a composed accent
("é", one code point) and a decomposed one ("e" + combining acute) the same text.

Example:
    >>> exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
    >>> round(f1("Paris, France", ["Paris"]), 3)
    0.667
    >>> exact_match("Jos\\u00e9", ["Jose\\u0301"]), contains_match("It was Alexander Fleming.", ["fleming"])
    (1.0, 1.0)

A gold answer made only of punctuation (a manual's ``||`` or ``^$``) would normalise to nothing,
so it is compared as written instead, whitespace aside:

    >>> contains_match("Use || for order-only dependencies", ["||"]), exact_match("'$'", ["||"]), f1("||", ["||"])
    (1.0, 0.0, 1.0)
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable

__all__ = ["contains_match", "exact_match", "f1", "normalize_answer", "strict_contains_match", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
# what separates words for the strict match: whitespace, list and clause punctuation, brackets, quotes
_STRICT_SPLIT = re.compile(r"[\s,;:()\[\]{}!?\"'`‘’“”]+")
# minus signs and hyphens that are a dash to a reader: the strict match reads them as "-"
_DASHES = str.maketrans({"\u2212": "-", "\u2010": "-", "\u2011": "-", "\u2013": "-"})
# quotes a reader may put around a verbatim answer ("'||'"), stripped before a punctuation-only gold is compared
_QUOTES = "'\"`‘’“”"


def normalize_answer(text: str) -> str:
    """SQuAD normalisation after Unicode NFD: lower-case, drop punctuation and articles,
    collapse whitespace (``dspy.evaluate.metrics.normalize_text``).

    Example:
        >>> normalize_answer("  The  Beatles, a band! ")
        'beatles band'
    """
    text = unicodedata.normalize("NFD", str(text)).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _verbatim_tokens(text: str) -> list[str]:
    """``text``'s whitespace-separated words, quotes around them stripped: how a punctuation-only
    gold answer is found in a prediction."""
    words = (w.rstrip(".,;:!?") or w for w in unicodedata.normalize("NFKC", str(text)).split())
    return [w.strip(_QUOTES) for w in words]


def _punctuation_only(gold: str) -> bool:
    return bool(str(gold).strip()) and not normalize_answer(gold)


def _verbatim_equal(prediction: str, gold: str) -> bool:
    return " ".join(_verbatim_tokens(prediction)) == " ".join(_verbatim_tokens(gold))


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer (a punctuation-only
    gold: the prediction as written, quotes and whitespace aside)."""
    pred = normalize_answer(prediction)
    return float(any(_verbatim_equal(prediction, g) if _punctuation_only(g) else pred == normalize_answer(g)
                     for g in golds))


def token_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    """Token-overlap F1 of two token lists (1.0 when both are empty).

    Example:
        >>> token_f1(["paris", "france"], ["paris"])
        0.6666666666666666
    """
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, golds: Iterable[str]) -> float:
    """Best token-level F1 of the prediction against any gold answer."""
    pred = normalize_answer(prediction).split()
    return max((float(_verbatim_equal(prediction, g)) if _punctuation_only(g)
                else token_f1(pred, normalize_answer(g).split()) for g in golds), default=0.0)


def contains_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when any normalised gold answer appears as a whole-word span of the normalised prediction
    (a punctuation-only gold: as one of the prediction's words, as written)."""
    pred = f" {normalize_answer(prediction)} "
    words = _verbatim_tokens(prediction)

    def found(gold: str) -> bool:
        if _punctuation_only(gold):
            return " ".join(_verbatim_tokens(gold)) in {" ".join(words[i:i + len(gold.split())]) for i in range(len(words))}
        return bool(normalize_answer(gold)) and f" {normalize_answer(gold)} " in pred

    return float(any(found(g) for g in golds))


def _strict_words(text: str) -> list[str]:
    """``text``'s words for :func:`strict_contains_match`: lower case, articles out, split at
    whitespace, brackets, quotes and ``, ; : ! ?``, a sentence's closing ``.`` dropped; a sign, a
    leading dash and an inner point stay ("-1", "--sandbox", "1.6", "10~5")."""
    text = unicodedata.normalize("NFKC", str(text)).translate(_DASHES).lower()
    words = (w.rstrip(".") for w in _STRICT_SPLIT.split(text))
    return [w for w in words if w and not _ARTICLES.fullmatch(w)]


def strict_contains_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when any gold answer's words occur in order in the prediction's, read strictly: the
    lenient :func:`contains_match` drops punctuation, so "1" contains "-1" and "s" contains "-s";
    here a sign, an option's dashes and a number's point must match too, while case, quotes and a
    sentence's punctuation still do not count.

    Example:
        >>> strict_contains_match("The default is -1.", ["-1"]), strict_contains_match("1", ["-1"])
        (1.0, 0.0)
        >>> strict_contains_match("Use the '--sandbox' option", ["--sandbox"]), contains_match("s", ["-s"])
        (1.0, 1.0)
        >>> strict_contains_match("s", ["-s"]), strict_contains_match("A NUM of \u22121 is infinity", ["-1"])
        (0.0, 1.0)
    """
    pred = _strict_words(prediction)
    for gold in golds:
        want = _strict_words(gold)
        if want and any(pred[i:i + len(want)] == want for i in range(len(pred) - len(want) + 1)):
            return 1.0
    return 0.0
