"""Bridge entities: the names a multi-hop question's second search should look up, without an LM.

"What government position was held by the woman who portrayed Corliss Archer in the film Kiss
and Tell?" needs a second document the question never names: the first search finds the film's
page, which names Shirley Temple, and Shirley Temple's own page holds the answer. Small LMs asked
for a follow-up query mostly restate the question, so the second search finds what the first
found (docs/design.md, "Agent loops"). This module proposes the follow-up from the evidence
itself: proper-name phrases of the texts found so far that the question does not name, ranked by
how early their text ranks, whether the collection holds a document of that title, and length.
:func:`bridge_query` pairs the name with the question, so the search keeps the question's terms
for the attribute asked about.

Example:
    >>> texts = ["Kiss and Tell is a 1945 American comedy film starring Shirley Temple as Corliss Archer."]
    >>> bridge_entities("Who portrayed Corliss Archer in the film Kiss and Tell?", texts, k=1)
    ['Shirley Temple']
    >>> bridge_query("Shirley Temple", "What position did she hold?")
    'Shirley Temple What position did she hold?'


A manual's links are identifiers rather than names: an option named in one section whose value
is in a table elsewhere, a function whose default another chapter states. :func:`identifiers`
finds them (long options, names with underscores, function calls, dotted code names,
environment variables), and :func:`section_references` the "see Section 2.6" pointers, which the
caller resolves against the collection's section titles.

Example:
    >>> identifiers("Set --log-file, or LOG_DIR; asn1_create_element() and fs.readFile read $HOME.")
    ['--log-file', 'LOG_DIR', 'asn1_create_element', 'fs.readFile', 'HOME']
    >>> section_references("The format is described in Section 2.6; see also section 3.")
    ['2.6', '3']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from ragnet.core.title_keys import MIN_TITLE_CHARS, title_key

__all__ = ["bridge_entities", "bridge_query", "identifiers", "name_phrases", "section_references"]

_CAPITAL = r"(?:(?:[A-Z]\.)+|[A-Z][\w'\-&]*)"  # a word, or initials ("J.R.R."); a full stop ends a name
# Capitalised words (a number may follow one: "Apollo 11"), joined by the lower-case particles names
# contain ("Bank of England", "Vincent van Gogh"); a name never spans a line break ("# Deploys\n\nA deploy ...")
_PHRASE = re.compile(rf"{_CAPITAL}(?:[ \t]+(?:(?:of|the|de|von|van|la|le|du|del|da|di)[ \t]+)*(?:{_CAPITAL}|\d+\b))*")
# Capitalised only because they open a sentence or a clause
_OPENERS = frozenset("The A An He She It They His Her Its In On At This That These Those There As After Before "
                     "During When While However Also Born Written Since Although Despite".split())
_MONTHS = frozenset("January February March April May June July August September October November December".split())
MIN_CHARS = MIN_TITLE_CHARS  # shorter names ("It", "Up", "USA") match by accident


# Identifiers in technical text, in one pass (earliest first): a long option, a call, a dotted code
# name, an environment variable, a name with an underscore. Each part of a dotted name has two
# characters at least and the parts after the first start lower case, so neither "e.g." nor a
# sentence run together ("television.Besides") is one; a call has no space before its "()", so a
# name before a Wikipedia page's emptied pronunciation ("Doctor Stranger () is ...") is not one.
_IDENTIFIER = re.compile(
    r"(?<![\w-])(--[A-Za-z][\w-]*\w)"  # --log-file
    r"|\b([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(\)"  # asn1_create_element(), os.path.join()
    r"|\b([a-z][A-Za-z0-9_]+(?:\.[a-z_][A-Za-z0-9_]+)+)\b(?!\()"  # fs.readFile, mime.cache
    r"|\$\{?([A-Za-z_][A-Za-z0-9_]*)"  # $HOME, ${XDG_DATA_HOME}
    r"|\b([A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9])\b"  # ASN1_SUCCESS, max_jobs
)
_SECTION_REFERENCE = re.compile(r"(?:\b[Ss]ection|\b[Cc]hapter|§)\s*(\d{1,2}(?:\.\d{1,2}){0,3})\b")


def identifiers(text: str) -> list[str]:
    """The identifiers of ``text`` in order of first mention, each once (see the module docstring).

    Example:
        >>> identifiers("Use --jobs (or -j) to set max_jobs, e.g. 4; see the jobs() call.")
        ['--jobs', 'max_jobs', 'jobs']
    """
    found = []
    for m in _IDENTIFIER.finditer(text):
        if m.group(3) and (text[m.start() - 1:m.start()] in "/@:" and m.start() > 0 or text[m.end():m.end() + 1] == "/"):
            continue  # a host or a file in a URL or an address ("example.org/view.php"), not code
        found.append(next(g for g in m.groups() if g))
    return list(dict.fromkeys(name.rstrip(".") for name in found if len(name) >= MIN_CHARS - 1))


def section_references(text: str) -> list[str]:
    """The section numbers ``text`` refers to ("see Section 2.6", "in chapter 3", "§ 4.1"), in order.

    Example:
        >>> section_references("As explained in Chapter 4 and § 4.2.")
        ['4', '4.2']
    """
    return list(dict.fromkeys(_SECTION_REFERENCE.findall(text)))


def name_phrases(text: str) -> list[str]:
    """Proper-name phrases of ``text``, in order: runs of capitalised words (and numbers) joined by
    name particles, without a sentence-opening word, a possessive or a leading month (a date).

    Example:
        >>> name_phrases("The Bank of England's governor met Vincent van Gogh on 3 March 1890 in Apollo 11.")
        ['Bank of England', 'Vincent van Gogh', 'Apollo 11']
    """
    out = []
    for match in _PHRASE.finditer(text):
        words = match.group(0).strip(" .").split()
        while words and (words[0] in _OPENERS or not words[0][0].isupper()):  # "In 1945 the Bank ..."
            words = words[1:]
        phrase = re.sub(r"'s$", "", " ".join(words))
        if len(phrase) < MIN_CHARS or phrase.replace(" ", "").isdigit() or phrase.split()[0] in _MONTHS:
            continue
        out.append(phrase)
    return out


def bridge_entities(
    question: str,
    texts: Sequence[str],
    *,
    is_title: Callable[[str], bool] | None = None,
    exclude: Iterable[str] = (),
    k: int = 3,
    title_weight: float = 1.0,
    multiword_weight: float = 0.3,
    identifier_weight: float = 1.0,
) -> list[str]:
    """The ``k`` best names to search next: named in ``texts`` (best-ranked first), not in the
    question, not in ``exclude``.

    A name scores ``1 / (1 + rank)`` for each text that names it, plus ``title_weight`` when
    ``is_title`` says the collection holds a document of that title, plus ``multiword_weight``
    for a name of several words, plus ``identifier_weight`` for an identifier
    (:func:`identifiers`: an option, a function, a constant, the links of a manual); ties keep
    the order of first mention.

    Args:
        question: the question (names it already contains are not bridges).
        texts: the evidence found so far, best-ranked first.
        is_title: whether a casefolded name is a document title in the collection (e.g.
            ``key in index.catalog.by_title``); None: no title bonus.
        exclude: names not to propose again (titles already in the context, earlier queries).
        k: how many names to return.
        title_weight: bonus for a name that is a document title.
        multiword_weight: bonus for a name of two or more words.
        identifier_weight: bonus for an identifier.
    """
    asked = question.casefold()
    skip = {title_key(e) for e in exclude}
    scores: dict[str, float] = {}
    for rank, text in enumerate(texts):
        codes = identifiers(str(text))
        for name in dict.fromkeys([*name_phrases(str(text)), *codes]):  # once per text
            key = title_key(name)
            if not key or key in skip or key in asked:
                continue
            if name not in scores:
                scores[name] = (title_weight if is_title is not None and is_title(key) else 0.0) + (
                    multiword_weight if " " in key else 0.0) + (identifier_weight if name in codes else 0.0)
            scores[name] += 1.0 / (1 + rank)
    ranked = sorted(scores, key=lambda name: -scores[name])  # stable: first mention breaks ties
    out: list[str] = []
    if k <= 0:
        return out
    for name in ranked:  # one spelling per name ("Ed Wood" / "ED WOOD")
        if title_key(name) not in {title_key(o) for o in out}:
            out.append(name)
        if len(out) == k:
            break
    return out


def bridge_query(name: str, question: str) -> str:
    """The follow-up search for a bridge ``name``: the name, then the question's words (hybrid
    search then weighs both the new entity and the attribute the question asks about)."""
    return f"{name} {question}".strip()
