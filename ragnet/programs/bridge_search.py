"""The bridge search: an agent's or a one-shot's follow-up query, chosen from the evidence without an LM.

Shared by the agents (the rewrite step's safe default, and their hops without one) and by
``OneShotRAG(hops=Hops(...))``; the name finding itself is :mod:`ragnet.core.bridge_keys`.
"""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Callable

from ragnet.core.bridge_keys import bridge_entities, bridge_query, section_references
from ragnet.corpus.locations import SECTION_SEPARATOR
from ragnet.corpus.types import Chunk
from ragnet.programs.index_protocol import ProgramIndex

__all__ = ["bridge_search", "bridge_searches", "section_searches", "title_test"]

_NUMBERED_HEADING = re.compile(r"(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+\S")
# index -> {section number: [(document title, heading)]}, from the index's chunk titles (built once)
_HEADINGS: "weakref.WeakKeyDictionary[ProgramIndex, dict[str, list[tuple[str, str]]]]" = weakref.WeakKeyDictionary()


def title_test(index: ProgramIndex | None) -> Callable[[str], bool] | None:
    """Whether a normalised name is a document title of ``index`` (its catalog's ``by_title``);
    None without an index (then no name is known to be one)."""
    if index is None:
        return None
    by_title = index.catalog.by_title
    return lambda key: key in by_title


def _numbered_headings(index: ProgramIndex | None) -> dict[str, list[tuple[str, str]]]:
    """The numbered section headings of ``index``'s chunk titles ("Doc › 2 Usage › 2.6 Files"),
    by number, with the document title they belong to (casefolded, as the catalog keeps titles)."""
    try:
        if index in _HEADINGS:
            return _HEADINGS[index]
    except TypeError:
        pass
    out: dict[str, list[tuple[str, str]]] = {}
    titles = index.catalog.by_title if index is not None else {}
    for title in titles:
        parts = str(title).split(SECTION_SEPARATOR.strip().casefold())
        if len(parts) < 2:
            continue
        doc = parts[0].strip()
        for heading in (p.strip() for p in parts[1:]):
            m = _NUMBERED_HEADING.match(heading)
            if m and (doc, heading) not in out.get(m.group(1), []):
                out.setdefault(m.group(1), []).append((doc, heading))
    try:
        _HEADINGS[index] = out
    except TypeError:
        pass
    return out


def section_searches(index: ProgramIndex | None, question: str, context: list[Chunk]) -> list[str]:
    """Follow-up searches for the sections the evidence points to ("see Section 2.6"), best-ranked
    evidence first: each reference resolved against the collection's numbered section titles (the
    referring chunk's own document first) and paired with the question. No LM call.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> index = NS(catalog=NS(by_title=["spec › 2 usage › 2.6 the icon files", "spec › 3 tools"]))
        >>> ref = Chunk(id="s#1", doc_id="s", title="Spec › 2 Usage", text="Icons are described in section 2.6.", tokens=8)
        >>> section_searches(index, "Where do icon names go?", [ref])
        ['2.6 the icon files Where do icon names go?']
    """
    numbers = [(num, chunk) for chunk in context for num in section_references(chunk.text) if num not in question]
    if not numbers:
        return []
    headings = _numbered_headings(index)
    out: list[str] = []
    for num, chunk in numbers:
        found = headings.get(num) or []
        doc = chunk.title.split(SECTION_SEPARATOR)[0].strip().casefold()
        found = sorted(found, key=lambda item: item[0] != doc)
        if found:
            out.append(bridge_query(found[0][1], question))
    return list(dict.fromkeys(out))


def bridge_search(index: ProgramIndex | None, question: str, context: list[Chunk], queries: list[str]) -> str | None:
    """The best follow-up search no query has run yet: a name the evidence gives and the question
    does not (:func:`ragnet.core.bridge_keys.bridge_entities`, preferring names that are document titles
    in ``index``), paired with the question; None when the evidence names nothing new. No LM call.

    Example:
        >>> from ragnet.corpus.types import Chunk
        >>> film = Chunk(id="k#0", doc_id="k", title="Kiss and Tell", text="Kiss and Tell stars Shirley Temple.", tokens=8)
        >>> bridge_search(None, "Who starred in Kiss and Tell?", [film], [])
        'Shirley Temple Who starred in Kiss and Tell?'
    """
    found = bridge_searches(index, question, context, queries, n=1)
    return found[0] if found else None


def bridge_searches(index: ProgramIndex | None, question: str, context: list[Chunk], queries: list[str],
                    n: int) -> list[str]:
    """Up to ``n`` follow-up searches no query has run yet, best first (as :func:`bridge_search`
    would give them one after another, from one pass over the evidence): the sections the
    evidence refers to (:func:`section_searches`), then the names and identifiers it gives.

    Example:
        >>> from ragnet.corpus.types import Chunk
        >>> film = Chunk(id="k#0", doc_id="k", title="Kiss and Tell", text="Kiss and Tell stars Shirley Temple "
        ...              "and Walter Abel.", tokens=12)
        >>> bridge_searches(None, "Who starred?", [film], ["Who starred?"], n=2)
        ['Shirley Temple Who starred?', 'Walter Abel Who starred?']
    """
    is_title = title_test(index)
    searched = {q.casefold() for q in queries}
    names = bridge_entities(question, [c.text for c in context], is_title=is_title,
                            exclude=[c.title for c in context], k=len(queries) + n + 2)
    candidates = [*section_searches(index, question, context), *(bridge_query(name, question) for name in names)]
    fresh = (q for q in dict.fromkeys(candidates) if q.casefold() not in searched)
    return list(itertools.islice(fresh, max(n, 0)))
