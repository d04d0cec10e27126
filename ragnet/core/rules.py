"""Chunk Filter: drop retrieved chunks whose metadata contradicts the question, add ones that match it.

Works on plain metadata dicts as produced by :mod:`ragnet.corpus.metadata`. It reads these keys
(all optional):

* ``years`` and ``title_years``;
* ``entities`` and ``title_entities``;
* ``places`` and ``title_places``;
* ``dates``;
* ``doc``: the document's own metadata. An int ``"year"`` (or a list ``"years"``) there counts as a
  title year, and a ``"place"`` (or ``"places"``) as a title place.

Rules:

* **Drop (years).** The question names years ``Q``: its ``years``, plus the years of its ``dates``.
  A chunk is dropped when its *declared* years ``T`` are non-empty and share nothing with ``Q``.
  ``T`` is the chunk's title years plus the document's year. Years merely mentioned in the body
  never cause a drop, since a 2019 report may well discuss 2018.
  Example reason: ``"year mismatch: question 2019, chunk 2018"``.
* **Drop (places).** The same test, with the question's places against the chunk's title and
  document places. When a chunk has none of those, its body places are used instead.
* **Add.** A catalog chunk is added when its title equals a question entity or place (a trailing
  parenthetical such as "(film)" is ignored), or when its title entities or title places contain
  one. Chunks that are already candidates are never added, and neither are chunks that would be
  dropped under the rules above.

Candidates for adding are ranked by:

1. the number of question terms they match, highest first;
2. the number of those terms that are the whole title;
3. their rank within their title: the first chunk of each matching document comes before the
   second chunk of any of them;
4. catalog order.

The top ``max_add`` are added.

Example:
    >>> q = {"years": [2019], "entities": ["acme"]}
    >>> cands = [("a#0", {"title_years": [2019]}), ("b#0", {"title_years": [2018]})]
    >>> catalog = MetadataCatalog.build([("c#0", {"title_entities": ["acme"]}, "Acme")])
    >>> r = apply(q, cands, catalog)
    >>> r.kept, [d.reason for d in r.dropped], [d.chunk_id for d in r.added]
    (['a#0'], ['year mismatch: question 2019, chunk 2018'], ['c#0'])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragnet._text import normalize_text
from ragnet.core.title_keys import title_keys
from ragnet.errors import InputError

__all__ = ["DROP_FIELDS", "MetadataCatalog", "RuleDecision", "RuleResult", "apply", "question_terms"]

#: Metadata fields a contradiction can be detected on.
DROP_FIELDS = ("years", "places")

@dataclass(frozen=True)
class RuleDecision:
    """One rule firing on one chunk.

    Attributes:
        chunk_id: the chunk concerned.
        action: ``"drop"`` or ``"add"``.
        reason: human-readable explanation naming the values involved.

    Example:
        >>> RuleDecision("d#0", "drop", "year mismatch: question 2019, chunk 2018").action
        'drop'
    """

    chunk_id: str
    action: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """JSON-compatible form (for traces)."""
        return {"chunk_id": self.chunk_id, "action": self.action, "reason": self.reason}


@dataclass(frozen=True)
class RuleResult:
    """Outcome of :func:`apply`.

    Attributes:
        kept: candidate ids that survived, in their original order.
        dropped: one decision per dropped candidate.
        added: one decision per chunk added from the catalog, best match first.

    Example:
        >>> r = RuleResult(kept=["a"], dropped=[], added=[RuleDecision("b", "add", "title matches")])
        >>> r.ids
        ['a', 'b']
    """

    kept: list[str] = field(default_factory=list)
    dropped: list[RuleDecision] = field(default_factory=list)
    added: list[RuleDecision] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """Kept candidates followed by added chunks: the filtered evidence list."""
        return [*self.kept, *(d.chunk_id for d in self.added)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (for traces)."""
        return {
            "kept": list(self.kept),
            "dropped": [d.to_dict() for d in self.dropped],
            "added": [d.to_dict() for d in self.added],
        }


class MetadataCatalog:
    """Inverted maps from title, title entity, title place and declared year to chunk ids.

    Build it once per index with :meth:`build`. It is cheap to rebuild on load, so it is never
    persisted.

    Attributes:
        by_title: normalised title (and the title without a trailing parenthetical) -> chunk ids.
        by_entity: normalised title entity -> chunk ids.
        by_place: normalised title place (including document-declared places) -> chunk ids.
        by_year: declared year (title years and document year) -> chunk ids.
        metadata: chunk id -> its metadata dict.
        titles: chunk id -> its title.

    Example:
        >>> cat = MetadataCatalog.build([("d#0", {"title_entities": ["ed wood"]}, "Ed Wood (film)")])
        >>> cat.by_title["ed wood"], cat.by_entity["ed wood"], len(cat)
        (['d#0'], ['d#0'], 1)
    """

    def __init__(self) -> None:
        self.by_title: dict[str, list[str]] = {}
        self.by_entity: dict[str, list[str]] = {}
        self.by_place: dict[str, list[str]] = {}
        self.by_year: dict[int, list[str]] = {}
        self.metadata: dict[str, Mapping[str, Any]] = {}
        self.titles: dict[str, str] = {}
        self._order: dict[str, int] = {}

    @classmethod
    def build(cls, items: Iterable[tuple[str, Mapping[str, Any], str]]) -> MetadataCatalog:
        """Index ``(chunk_id, metadata, title)`` triples (or objects with ``id``, ``metadata``, ``title``).

        Raises:
            InputError: an item is malformed or a chunk id repeats.

        Example:
            >>> MetadataCatalog.build([("a#0", {"title_years": [2019]}, "Budget 2019")]).by_year
            {2019: ['a#0']}
        """
        cat = cls()
        for n, item in enumerate(items):
            chunk_id, meta, title = _unpack_item(item, n)
            if chunk_id in cat._order:
                raise InputError(f"duplicate chunk id {chunk_id!r} (item {n})", argument="items")
            cat._order[chunk_id] = n
            cat.metadata[chunk_id] = meta
            cat.titles[chunk_id] = title
            for key in title_keys(title):
                cat.by_title.setdefault(key, []).append(chunk_id)
            for ent in _terms(meta.get("title_entities")):
                cat.by_entity.setdefault(ent, []).append(chunk_id)
            for place in _declared_places(meta):
                cat.by_place.setdefault(place, []).append(chunk_id)
            for year in _declared_years(meta):
                cat.by_year.setdefault(year, []).append(chunk_id)
        return cat

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._order

    def matches(self, question_meta: Mapping[str, Any]) -> list[tuple[str, int, str]]:
        """Catalog chunks matching the question's entities or places, best first.

        Returns:
            ``(chunk_id, score, reason)`` per matching chunk. ``score`` is the number of distinct
            question terms matched. Contradictions and candidates are *not* filtered here; see
            :func:`apply`.

        Example:
            >>> cat = MetadataCatalog.build([("d#0", {}, "Ed Wood")])
            >>> cat.matches({"entities": ["ed wood"]})
            [('d#0', 1, "title 'Ed Wood' matches question entity 'ed wood'")]
        """
        terms = question_terms(question_meta)
        title_hits: dict[str, list[str]] = {}
        other_hits: dict[str, list[str]] = {}
        for term in terms:
            for cid in self.by_title.get(term, ()):
                title_hits.setdefault(cid, []).append(term)
            for cid in (*self.by_entity.get(term, ()), *self.by_place.get(term, ())):
                if term not in title_hits.get(cid, ()) and term not in other_hits.get(cid, ()):
                    other_hits.setdefault(cid, []).append(term)
        found = set(title_hits) | set(other_hits)
        rank_in_title: dict[str, int] = {}
        seen_titles: dict[str, int] = {}
        for cid in sorted(found, key=self._order.__getitem__):
            key = normalize_text(self.titles[cid])
            rank_in_title[cid] = seen_titles.get(key, 0)
            seen_titles[key] = rank_in_title[cid] + 1

        def sort_key(cid: str) -> tuple[int, int, int, int]:
            t, o = len(title_hits.get(cid, ())), len(other_hits.get(cid, ()))
            return (-(t + o), -t, rank_in_title[cid], self._order[cid])

        out = []
        for cid in sorted(found, key=sort_key):
            parts = [
                f"title {self.titles[cid]!r} matches question {terms[t]} {t!r}" for t in title_hits.get(cid, ())
            ]
            others = other_hits.get(cid, ())
            if others:
                parts.append("title mentions question " + ", ".join(f"{terms[t]} {t!r}" for t in others))
            out.append((cid, len(title_hits.get(cid, ())) + len(others), "; ".join(parts)))
        return out


def question_terms(question_meta: Mapping[str, Any]) -> dict[str, str]:
    """The question's normalised entities and places a catalog is searched with: ``term ->
    "entity" | "place"`` (an entity wins when a term is both).

    Example:
        >>> question_terms({"entities": ["Ed Wood"], "places": ["Texas", "ed wood"]})
        {'ed wood': 'entity', 'texas': 'place'}
    """
    terms: dict[str, str] = {}
    for ent in _terms(question_meta.get("entities")):
        terms.setdefault(ent, "entity")
    for place in _terms(question_meta.get("places")):
        terms.setdefault(place, "place")
    return terms


def apply(
    question_meta: Mapping[str, Any] | None,
    candidates: Sequence[tuple[str, Mapping[str, Any]]],
    catalog: MetadataCatalog | None = None,
    *,
    drop: bool = True,
    add: bool = True,
    max_add: int = 10,
    drop_on: Sequence[str] = DROP_FIELDS,
) -> RuleResult:
    """Run the Chunk Filter rules on retrieved candidates.

    Args:
        question_meta: the question's metadata (``extract_query_metadata``); None means none.
        candidates: ``(chunk_id, metadata)`` pairs in retrieval order.
        catalog: index-wide :class:`MetadataCatalog` to add matching chunks from; None disables adding.
        drop: apply the drop rules.
        add: apply the add rule.
        max_add: at most this many chunks are added.
        drop_on: which fields can contradict: any of ``"years"``, ``"places"``. The same fields
            also block contradicting chunks from being added.

    Returns:
        A :class:`RuleResult`; ``result.ids`` is the filtered evidence list.

    Raises:
        InputError: malformed candidates, negative ``max_add`` or unknown ``drop_on`` field.

    Example:
        >>> q = {"places": ["texas"]}
        >>> r = apply(q, [("a", {"title_places": ["ohio"]}), ("b", {"places": ["texas"]})])
        >>> r.kept, r.dropped[0].reason
        (['b'], 'place mismatch: question texas, chunk ohio')
    """
    if isinstance(max_add, bool) or not isinstance(max_add, int) or max_add < 0:
        raise InputError(f"max_add must be an int >= 0, got {max_add!r}", argument="max_add")
    fields = (drop_on,) if isinstance(drop_on, str) else tuple(drop_on)
    unknown = [f for f in fields if f not in DROP_FIELDS]
    if unknown:
        raise InputError(
            f"unknown drop_on field {unknown[0]!r}; use any of {', '.join(DROP_FIELDS)}", argument="drop_on"
        )
    q = question_meta or {}
    if not isinstance(q, Mapping):
        raise InputError(f"question_meta must be a dict, got {type(q).__name__}", argument="question_meta")
    q_years = _question_years(q)
    q_places = set(_terms(q.get("places")))

    kept: list[str] = []
    dropped: list[RuleDecision] = []
    present: set[str] = set()
    for n, cand in enumerate(candidates):
        chunk_id, meta = _unpack_candidate(cand, n)
        present.add(chunk_id)
        reason = _contradiction(q_years, q_places, meta, fields) if drop else None
        if reason:
            dropped.append(RuleDecision(chunk_id, "drop", reason))
        else:
            kept.append(chunk_id)

    added: list[RuleDecision] = []
    if add and catalog is not None and max_add > 0:
        for chunk_id, _score, reason in catalog.matches(q):
            if len(added) >= max_add:
                break
            if chunk_id in present or _contradiction(q_years, q_places, catalog.metadata[chunk_id], fields):
                continue
            added.append(RuleDecision(chunk_id, "add", reason))
            present.add(chunk_id)
    return RuleResult(kept=kept, dropped=dropped, added=added)


# --------------------------------------------------------------------------- helpers


def _contradiction(q_years: set[int], q_places: set[str], meta: Mapping[str, Any], fields) -> str | None:
    if "years" in fields and q_years:
        years = _declared_years(meta)
        if years and not years & q_years:
            return f"year mismatch: question {_fmt(q_years)}, chunk {_fmt(years)}"
    if "places" in fields and q_places:
        places = _declared_places(meta) or set(_terms(meta.get("places")))
        if places and not places & q_places:
            return f"place mismatch: question {_fmt(q_places)}, chunk {_fmt(places)}"
    return None


def _fmt(values) -> str:
    return "/".join(str(v) for v in sorted(values))


def _terms(values: Any) -> list[str]:
    """Normalised, non-empty strings from a list (or a single string)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out = []
    for v in values:
        t = normalize_text(v)
        if t and t not in out:
            out.append(t)
    return out


def _years(values: Any) -> set[int]:
    if values is None:
        return set()
    if isinstance(values, (int, str)):
        values = [values]
    out = set()
    for v in values:
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.add(v)
        elif isinstance(v, str) and v.strip().isdigit():
            out.add(int(v.strip()))
    return out


def _doc(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    doc = meta.get("doc")
    return doc if isinstance(doc, Mapping) else {}


def _declared_years(meta: Mapping[str, Any]) -> set[int]:
    doc = _doc(meta)
    return _years(meta.get("title_years")) | _years(doc.get("year")) | _years(doc.get("years"))


# Document-declared metadata keys that name where a document is about.
PLACE_KEYS = ("place", "places", "city", "country", "region", "location")


def _declared_places(meta: Mapping[str, Any]) -> set[str]:
    doc = _doc(meta)
    places = set(_terms(meta.get("title_places")))
    for key in PLACE_KEYS:
        places |= set(_terms(doc.get(key)))
    return places


def _question_years(q: Mapping[str, Any]) -> set[int]:
    years = _years(q.get("years"))
    for d in _terms(q.get("dates")):
        if len(d) >= 4 and d[:4].isdigit():
            years.add(int(d[:4]))
    return years


def _unpack_item(item: Any, n: int) -> tuple[str, Mapping[str, Any], str]:
    if isinstance(item, (tuple, list)) and len(item) == 3:
        chunk_id, meta, title = item
    elif hasattr(item, "id") and hasattr(item, "metadata"):
        chunk_id, meta, title = item.id, item.metadata, getattr(item, "title", "")
    else:
        raise InputError(f"item {n} must be (chunk_id, metadata, title), got {item!r:.80}", argument="items")
    if not isinstance(chunk_id, str):
        raise InputError(f"item {n}: chunk id must be a string, got {chunk_id!r:.80}", argument="items")
    meta = {} if meta is None else meta
    if not isinstance(meta, Mapping):
        raise InputError(f"item {n} ({chunk_id}): metadata must be a dict", argument="items")
    return chunk_id, meta, "" if title is None else str(title)


def _unpack_candidate(cand: Any, n: int) -> tuple[str, Mapping[str, Any]]:
    if not (isinstance(cand, (tuple, list)) and len(cand) == 2):
        raise InputError(f"candidate {n} must be (chunk_id, metadata), got {cand!r:.80}", argument="candidates")
    chunk_id, meta = cand
    meta = {} if meta is None else meta
    if not isinstance(chunk_id, str) or not isinstance(meta, Mapping):
        raise InputError(f"candidate {n} must be (str, dict), got {cand!r:.80}", argument="candidates")
    return chunk_id, meta
