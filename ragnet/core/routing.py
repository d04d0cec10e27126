"""Route a question to one search or to several, from signals that cost no LM call.

A one-shot search already finds every gold document of most multi-hop questions; the rest name
an entity only through another ("the spouse of the director of film West of Shanghai"), and the
document that holds the answer is one the first search could not aim at. Small local LMs decide
poorly whether to search again, so :class:`RouteRule` decides from three cheap signals of the
first search (:class:`RouteSignals`):

* the question's **form** (:func:`question_form`): ``"nested"`` when it describes an entity
  through another (a role ``of`` something, a possessive, "the woman who ...", "which film has
  the director ..."), ``"comparison"`` when it weighs named options ("both", "same", "A or B?",
  a yes/no question), ``"plain"`` otherwise;
* **anchoring**: how many documents of the first context the question names by title;
* the **evidence**: the names the first context gives and the question does not
  (:func:`ragnet.core.bridge_keys.bridge_entities`), and whether the best of them is a document the
  collection holds but the context lacks: the document a second search would fetch;

plus the score profile (the best chunk's cosine to the question, the hybrid-score gap between
the two best titles), recorded for analysis.

Example:
    >>> question_form("Who is the spouse of the director of film West Of Shanghai?")
    'nested'
    >>> question_form("Which film came out first, Jaws or Alien?"), question_form("Who directed Jaws?")
    ('comparison', 'plain')
    >>> signals = RouteSignals(form="nested", named=1, bridges=("John Farrow",), bridge_titles=("John Farrow",))
    >>> RouteRule()(signals)
    ('hard', 'nested+bridge')
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ragnet.errors import InputError

__all__ = ["FORMS", "ROUTES", "RouteRule", "RouteSignals", "question_form"]

FORMS = ("nested", "comparison", "plain")
ROUTES = ("simple", "hard")

# Nouns that name an attribute of the entity they govern, not another entity: "the place of birth
# of X" asks about X itself, "the director of X" about a second entity.
_ATTRIBUTES = frozenset(
    "place places date dates year years time day month age type types kind kinds sort sorts name names number numbers "
    "amount population height length size "
    "birth death burial birthplace nationality title part parts one ones most many some all none each any "
    "capital area city country language genre style version form rest end beginning middle start same".split())
_WORD = r"[a-z][a-z\-]*"
# "<role> of <...>": "director of film X", "the mother of the director of ..."
_ROLE_OF = re.compile(rf"\b({_WORD})\s+of\b")
# "<Name>'s <role>": "Murad I's father", "Margaretha Van Mechelen's husband"
_POSSESSIVE = re.compile(rf"\w['’]s\s+(?:{_WORD}\s+)?({_WORD})\b")
# "the <role> who|whose|that ...", "the football manager who recruited ..."
_DESCRIBED = re.compile(rf"\b(?:the|a|an)\s+(?:{_WORD}\s+){{0,2}}?({_WORD})\s+(?:who|whose|that)\b")
# "Which film has the director ...", "Which film whose director ...", "films have the directors ..."
_HAS_ROLE = re.compile(rf"\b(?:has|have|had|whose)\s+(?:the\s+)?({_WORD})\b")
_AUXILIARY = re.compile(r"^(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would)\b", re.I)
_CHOICE = re.compile(r"\b(?:both|same|either|neither|in common|between)\b|\s+or\s+[^?]+\?*\s*$", re.I)
# "Who is the mother of X?" asks who the described entity is: its name is on X's page
_ASKS_WHO = re.compile(r"^(?:who|whom)\s+(?:is|was|are|were)\b", re.I)


def _roles(pattern: re.Pattern[str], question: str) -> list[str]:
    return [m.group(1).lower() for m in pattern.finditer(question) if m.group(1).lower() not in _ATTRIBUTES]


def question_form(question: str) -> str:
    """``"nested"``, ``"comparison"`` or ``"plain"`` (see the module docstring).

    A nested comparison ("Which film has the director who died first, A or B?") is nested: each
    option's answer lies in a document the question does not name.

    Example:
        >>> question_form("Where was the place of burial of Ælfwine Of Deira's father?")
        'nested'
        >>> question_form("What is the place of birth of Marie Curie?")
        'plain'
        >>> question_form("Were Scott Derrickson and Ed Wood of the same nationality?")
        'comparison'
    """
    text = " ".join(str(question).split())
    lowered = text[:1].lower() + text[1:]  # a capitalised opening word is not a name
    roles = _roles(_ROLE_OF, lowered) + _roles(_POSSESSIVE, text.replace("'S ", "'s ")) + _roles(_DESCRIBED, lowered)
    if _CHOICE.search(text):
        roles += _roles(_HAS_ROLE, lowered)
    # two roles chain (the spouse of the director of ...); one is nested when the question asks
    # about the described entity (where was the director of ... born), not who it is
    if len(roles) >= 2 or (roles and not _ASKS_WHO.match(text)):
        return "nested"
    if _CHOICE.search(text) or _AUXILIARY.match(text):
        return "comparison"
    return "plain"


@dataclass(frozen=True)
class RouteSignals:
    """What the router reads from the first search (no LM call).

    Attributes:
        form: :func:`question_form` of the question.
        named: documents of the first context whose title the question names.
        bridges: the best names of the evidence that neither the question nor a context title
            names, best first (:func:`ragnet.core.bridge_keys.bridge_entities`).
        bridge_titles: those of ``bridges`` that are document titles in the collection: documents
            a second search would fetch.
        top_cosine: the best context chunk's cosine to the question (absolute relevance).
        title_gap: hybrid-score gap between the best chunks of the two best titles (0: a tie, or
            one title).
        titles: distinct titles in the first context.
    """

    form: str
    named: int
    bridges: tuple[str, ...] = ()
    bridge_titles: tuple[str, ...] = ()
    top_cosine: float | None = None
    title_gap: float = 0.0
    titles: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (tuples as lists, floats rounded), for the trace."""
        out = asdict(self)
        for key in ("bridge_titles", "bridges"):
            out[key] = list(out[key])
        for key in ("top_cosine", "title_gap"):
            out[key] = None if out[key] is None else round(float(out[key]), 4)
        return out


@dataclass(frozen=True)
class RouteRule:
    """The router's decision: ``"hard"`` (the multi-step program) when one clause fires, in this
    order, else ``"simple"`` (the first search's context is answered from):

    1. ``nested+bridge``: the question is nested and the best ``bridge_names`` names of the
       evidence include a document title the context lacks: the second document is one search
       away (0: off);
    2. ``unanchored``: the context holds no document the question names (the first search found
       no entity to stand on), unless the question is a comparison (``unanchored`` False: off);
    3. ``weak-search``: the best chunk's cosine is below ``min_cosine`` (None: off).

    Defaults chosen on the first 100 dev questions of 2WikiMultihopQA and HotpotQA, labelled by
    whether ``oneshot:sentences`` at 1,000 tokens lacks a gold document
    (``python -m benchmarks.studies.router_calibration``). Any callable
    ``(RouteSignals) -> (route, reason)`` can stand in for it.

    Example:
        >>> RouteRule()(RouteSignals(form="comparison", named=2, bridges=("Ann Hui",), bridge_titles=("Ann Hui",)))
        ('simple', 'default')
        >>> RouteRule()(RouteSignals(form="plain", named=0))
        ('hard', 'unanchored')
    """

    bridge_names: int = 1
    unanchored: bool = True
    min_cosine: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.bridge_names, bool) or not isinstance(self.bridge_names, int) or self.bridge_names < 0:
            raise InputError(f"must be an integer >= 0, got {self.bridge_names!r}", argument="bridge_names")
        cosine = self.min_cosine
        if cosine is not None and (isinstance(cosine, bool) or not isinstance(cosine, (int, float))):
            raise InputError(f"must be a number or None, got {self.min_cosine!r}", argument="min_cosine")

    def __call__(self, signals: RouteSignals) -> tuple[str, str]:
        if signals.form == "nested" and set(signals.bridges[: self.bridge_names]) & set(signals.bridge_titles):
            return "hard", "nested+bridge"
        if self.unanchored and signals.named == 0 and signals.form != "comparison":
            return "hard", "unanchored"
        if self.min_cosine is not None and signals.top_cosine is not None and signals.top_cosine < self.min_cosine:
            return "hard", "weak-search"
        return "simple", "default"
