"""The bridge search: an agent's or a one-shot's follow-up query, chosen from the evidence without an LM.

Shared by the agents (the rewrite step's safe default, and their hops without one) and by
``OneShotRAG(hops=...)``; the name finding itself is :mod:`ragnet.core.bridge`.
"""

from __future__ import annotations

import itertools
from typing import Any

from ragnet.core.bridge import bridge_entities, bridge_query
from ragnet.corpus.types import Chunk

__all__ = ["bridge_search", "bridge_searches"]


def bridge_search(index: Any, question: str, context: list[Chunk], queries: list[str]) -> str | None:
    """The best follow-up search no query has run yet: a name the evidence gives and the question
    does not (:func:`ragnet.core.bridge.bridge_entities`, preferring names that are document titles
    in ``index``), paired with the question; None when the evidence names nothing new. No LM call.

    Example:
        >>> from ragnet.corpus.types import Chunk
        >>> film = Chunk(id="k#0", doc_id="k", title="Kiss and Tell", text="Kiss and Tell stars Shirley Temple.", tokens=8)
        >>> bridge_search(None, "Who starred in Kiss and Tell?", [film], [])
        'Shirley Temple Who starred in Kiss and Tell?'
    """
    found = bridge_searches(index, question, context, queries, n=1)
    return found[0] if found else None


def bridge_searches(index: Any, question: str, context: list[Chunk], queries: list[str], n: int) -> list[str]:
    """Up to ``n`` follow-up searches no query has run yet, best first (as :func:`bridge_search`
    would give them one after another, from one pass over the evidence).

    Example:
        >>> from ragnet.corpus.types import Chunk
        >>> film = Chunk(id="k#0", doc_id="k", title="Kiss and Tell", text="Kiss and Tell stars Shirley Temple "
        ...              "and Walter Abel.", tokens=12)
        >>> bridge_searches(None, "Who starred?", [film], ["Who starred?"], n=2)
        ['Shirley Temple Who starred?', 'Walter Abel Who starred?']
    """
    by_title = getattr(getattr(index, "catalog", None), "by_title", None)
    is_title = (lambda key: key in by_title) if by_title is not None else None
    searched = {q.casefold() for q in queries}
    names = bridge_entities(question, [c.text for c in context], is_title=is_title,
                            exclude=[c.title for c in context], k=len(queries) + n + 2)
    fresh = (q for q in (bridge_query(name, question) for name in names) if q.casefold() not in searched)
    return list(itertools.islice(fresh, max(n, 0)))
