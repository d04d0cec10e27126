"""Evidence metrics: which gold documents a context holds, stage by stage.

A record's gold documents are its ``gold_passage_ids`` (pooled-corpus sets linked by passage
id) or else its ``gold_titles``; :func:`gold_chunk_ids` maps them to the chunks of an index.
On top of that map: gold recall of a context (:func:`gold_recall`), gold documents present
after each pipeline stage of a program's trace (:func:`stage_retention`), and the redundancy
of a context (:func:`context_redundancy`). Where a set names the sentences that support an
answer, :func:`gold_sentences` reads them from the record's own paragraphs.

Example:
    >>> gold_recall({"gold_titles": ["Paris", "Rome"]}, ["Paris#0", "Oslo#1"])
    {'all': 0.0, 'fraction': 0.5, 'n_gold': 2}
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragnet._text import normalize_text
from ragnet.eval.run.records import get_field

__all__ = [
    "STAGES",
    "context_redundancy",
    "document_chunk_ids",
    "gold_chunk_ids",
    "gold_chunks",
    "gold_present",
    "gold_recall",
    "gold_sentence_texts",
    "gold_sentences",
    "stage_retention",
]

#: Pipeline stages read from a trace, in order (only those a program ran are reported).
STAGES = ("retrieved", "filter", "crop", "select", "delete", "noise", "final")


# --------------------------------------------------------------------------- gold mapping


# index -> (chunk count, by_doc, by_title): built once per index, rebuilt when its chunks change;
# weak keys, so a cached map never keeps an index alive.
_DOC_MAPS: "weakref.WeakKeyDictionary[Any, tuple[int, dict[str, list[str]], dict[str, list[str]]]]" = (
    weakref.WeakKeyDictionary())


def _doc_map(index: Any) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``doc_id -> chunk ids`` and ``casefolded title -> chunk ids`` (cached per index)."""
    try:
        cached = _DOC_MAPS.get(index)
    except TypeError:  # an index that cannot be weakly referenced or hashed: not cached
        cached = None
    if cached is not None and cached[0] == len(index.chunks):
        return cached[1], cached[2]
    by_doc: dict[str, list[str]] = {}
    by_title: dict[str, list[str]] = {}
    for c in index.chunks:
        by_doc.setdefault(c.doc_id, []).append(c.id)
        by_title.setdefault(normalize_text(c.title), []).append(c.id)
    try:
        _DOC_MAPS[index] = (len(index.chunks), by_doc, by_title)
    except TypeError:
        pass
    return by_doc, by_title


def document_chunk_ids(index: Any, key: str) -> list[str]:
    """The chunks of the document ``key`` names: those whose ``doc_id`` equals it, else those
    whose title equals it (case- and whitespace-insensitive); ``[]`` when none.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> index = NS(chunks=[NS(id="d1#0", doc_id="d1", title="Ed Wood"), NS(id="d1#1", doc_id="d1", title="Ed Wood")])
        >>> document_chunk_ids(index, "ED  wood"), document_chunk_ids(index, "Jaws")
        (['d1#0', 'd1#1'], [])
    """
    by_doc, by_title = _doc_map(index)
    key = str(key)
    return list(by_doc.get(key) or by_title.get(normalize_text(key)) or [])


def gold_chunk_ids(record: Any, index: Any) -> dict[str, list[str]]:
    """The chunks of each gold document of ``record``: ``{gold key: [chunk ids]}``.

    Gold documents are ``record.gold_passage_ids`` when the record has them (pooled-corpus
    sets linked by passage id), else ``record.gold_titles``. A key matches chunks whose
    ``doc_id`` equals it (pooled HotpotQA: the document id *is* the paragraph title, see
    ``ragnet.eval.run.datasets.pooled_documents``) and, failing that, chunks whose title equals
    it (case-insensitive). A gold document absent from the index maps to ``[]``.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> index = NS(chunks=[NS(id="d1#0", doc_id="d1", title="Ed Wood"), NS(id="d1#1", doc_id="d1", title="Ed Wood")])
        >>> gold_chunk_ids(NS(gold_passage_ids=None, gold_titles=["ed wood", "Jaws"]), index)
        {'ed wood': ['d1#0', 'd1#1'], 'Jaws': []}
    """
    keys = list(getattr(record, "gold_passage_ids", None) or []) or list(getattr(record, "gold_titles", None) or [])
    out: dict[str, list[str]] = {}
    for key in keys:
        key = str(key)
        if key not in out:
            out[key] = document_chunk_ids(index, key)
    return out


def _doc_of(chunk_id: str) -> str:
    """Document id of a chunk id ``"{doc_id}#{position}"``."""
    head, sep, tail = str(chunk_id).rpartition("#")
    return head if sep and tail.isdigit() else str(chunk_id)


@dataclass
class _Keys:
    gold_passage_ids: list[str] | None
    gold_titles: list[str]


def gold_chunks(record: Any, index: Any = None) -> dict[str, set[str]]:
    """Gold documents of ``record`` and the chunk ids that hold them: ``{gold key: {chunk ids}}``.

    Gold documents are the gold places of a question over documents (``record.places``: the
    chunks located at each, :mod:`ragnet.eval.run.doc_questions`), else ``gold_passage_ids`` when
    given and present in the index, else ``gold_titles`` (matched against chunk ``doc_id``, then title; see :func:`gold_chunk_ids`).
    Without an index every set is empty and :func:`gold_present` matches the keys against the
    document part of chunk ids instead (exact for sets whose document id is the title or the
    passage id).

    Example:
        >>> gold_chunks({"gold_titles": ["Paris"]})
        {'Paris': set()}
    """
    places = getattr(record, "places", None)
    if places:  # a question over documents: its gold places (ragnet.eval.run.doc_questions)
        from ragnet.eval.run.doc_questions import place_chunk_ids

        return {p.key(): (set(place_chunk_ids(index, p)) if index is not None else set()) for p in places}
    passages = [str(p) for p in get_field(record, "gold_passage_ids", None) or []]
    titles = [str(t) for t in get_field(record, "gold_titles", None) or []]
    if index is None:
        return {k: set() for k in (passages or titles)}
    if passages:
        found = gold_chunk_ids(_Keys(passages, []), index)
        if any(found.values()) or not titles:
            return {k: set(v) for k, v in found.items()}
    return {k: set(v) for k, v in gold_chunk_ids(_Keys(None, titles), index).items()}


def gold_present(gold: dict[str, set[str]], chunk_ids: Sequence[str]) -> int:
    """How many gold documents have at least one chunk among ``chunk_ids``.

    A gold key with no known chunks (no index given) matches chunk ids of its document
    (``"Paris#0"`` for ``"Paris"``, case-insensitively).

    Example:
        >>> gold_present({"Paris": set(), "Rome": {"r#0"}}, ["paris#0", "r#1"])
        1
    """
    ids = set(chunk_ids)
    docs = None
    n = 0
    for key, chunks in gold.items():
        if chunks:
            n += bool(chunks & ids)
        else:
            if docs is None:
                docs = {normalize_text(_doc_of(c)) for c in ids}
            n += normalize_text(key) in docs
    return n


def gold_recall(record: Any, chunk_ids: Sequence[str], index: Any = None) -> dict[str, Any]:
    """Gold-evidence recall of a context: ``{"all": 0/1, "fraction": share, "n_gold": n}``.

    ``all`` and ``fraction`` are None for a record without gold documents.

    Example:
        >>> gold_recall({"gold_titles": ["Paris", "Rome"]}, ["Paris#0", "Oslo#1"])
        {'all': 0.0, 'fraction': 0.5, 'n_gold': 2}
    """
    gold = gold_chunks(record, index)
    if not gold:
        return {"all": None, "fraction": None, "n_gold": 0}
    present = gold_present(gold, chunk_ids)
    return {"all": float(present == len(gold)), "fraction": present / len(gold), "n_gold": len(gold)}


# --------------------------------------------------------------------------- along the pipeline


def stage_retention(trace: Sequence[dict[str, Any]], context: Sequence[str],
                    gold: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """Chunks and gold documents present after each pipeline stage of one run.

    Stages (those the trace shows, in order): ``retrieved`` (every chunk any search returned),
    ``filter`` (kept + added by the last filter event), ``crop`` (same chunks; ``cropped`` counts
    the shortened ones), ``select`` (the budgeted selection), ``delete`` (the previous stage minus
    every ``chunk_delete``; ``removed`` counts them), ``noise`` (noise-removal survivors) and
    ``final`` (the answer context). A router's ``probe`` events count only as searches.

    Example:
        >>> trace = [{"step": "search", "retrieved": ["A#0", "B#0", "C#0"]},
        ...          {"step": "delete", "deleted": ["A#0"]}]
        >>> stage_retention(trace, ["B#0", "C#0"], {"A": set(), "B": set()})["delete"]
        {'chunks': 2, 'gold': 1, 'removed': 1}
    """
    out: dict[str, dict[str, int]] = {}
    # a router's probe (its first search, before it chose the hard route) retrieved chunks, but its
    # filter, crop and selection were not the answer's: only its search counts
    trace = [e for e in trace if not e.get("probe") or e.get("step") == "search"]
    retrieved = list(dict.fromkeys(c for e in trace if e.get("step") == "search" for c in e.get("retrieved") or []))
    out["retrieved"] = {"chunks": len(retrieved), "gold": gold_present(gold, retrieved)}
    current = retrieved
    filters = [e for e in trace if e.get("step") == "filter"]
    if filters:
        last = filters[-1]
        added = [a["id"] if isinstance(a, dict) else a for a in last.get("added") or []]
        current = list(dict.fromkeys(list(last.get("kept") or []) + added))
        out["filter"] = {"chunks": len(current), "gold": gold_present(gold, current),
                         "added": len(added), "dropped": len(last.get("dropped") or [])}
    crops = [e for e in trace if e.get("step") == "crop"]
    if crops:
        cropped = [c for e in crops for c in e.get("cropped") or []]
        out["crop"] = {"chunks": len(current), "gold": gold_present(gold, current), "cropped": len(cropped),
                       "tokens_saved": sum(int(c.get("tokens_before", 0)) - int(c.get("tokens_after", 0))
                                           for c in cropped if isinstance(c, dict))}
    selects = [e for e in trace if e.get("step") == "select"]
    if selects:
        current = list(selects[-1].get("kept") or [])
        out["select"] = {"chunks": len(current), "gold": gold_present(gold, current)}
    deletes = [e for e in trace if e.get("step") == "delete"]
    if deletes:
        deleted = {c for e in deletes for c in e.get("deleted") or []}
        current = [c for c in current if c not in deleted]
        out["delete"] = {"chunks": len(current), "gold": gold_present(gold, current), "removed": len(deleted)}
    noise_events = [e for e in trace if e.get("step") == "noise"]
    if noise_events:
        current = list(noise_events[-1].get("kept") or [])
        out["noise"] = {"chunks": len(current), "gold": gold_present(gold, current),
                        "removed": len(noise_events[-1].get("removed") or [])}
    out["final"] = {"chunks": len(context), "gold": gold_present(gold, context)}
    return out


def context_redundancy(index: Any, chunk_ids: Sequence[str]) -> float | None:
    """Mean pairwise cosine of the context's chunk embeddings (``core.noise.redundancy_ratio``);
    None for fewer than two chunks (undefined, left out of averages).

    Example:
        >>> import numpy as np
        >>> from types import SimpleNamespace
        >>> vecs = {"a": [1.0, 0.0], "b": [0.6, 0.8]}
        >>> index = SimpleNamespace(vectors=lambda ids: np.array([vecs[i] for i in ids], dtype=np.float32))
        >>> context_redundancy(index, ["a", "b"]), context_redundancy(index, ["a"])
        (0.6, None)
    """
    ids = [c for c in dict.fromkeys(chunk_ids)]
    if index is None or len(ids) < 2:
        return None
    from ragnet.core.noise import redundancy_ratio

    try:
        vecs = index.vectors(ids)
    except KeyError:
        return None
    return round(float(redundancy_ratio(vecs)), 6)


# --------------------------------------------------------------------------- gold sentences


def gold_sentences(record: Any) -> list[tuple[str, int, str]]:
    """``(title, sentence index, text)`` of a record's gold supporting sentences, read from the
    sentence lists of its own context paragraphs (the dataset's split), in the record's order.

    Sentences whose title or index is not in the record's context, or whose text is blank, are
    left out; the text is the dataset's, stripped.

    Example:
        >>> from ragnet.eval.run.datasets import QARecord
        >>> r = QARecord(id="q", question="?", answers=["a"], gold_sentences=[["T", 1], ["T", 9]],
        ...              context=[{"title": "T", "sentences": ["One.", " Two  words."]}])
        >>> gold_sentences(r)
        [('T', 1, 'Two  words.')]
    """
    paragraphs = {p.get("title"): p for p in (getattr(record, "context", None) or []) if isinstance(p, dict)}
    out = []
    for item in getattr(record, "gold_sentences", None) or []:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            continue
        title, i = item
        sentences = (paragraphs.get(title) or {}).get("sentences") or []
        if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(sentences) and normalize_text(sentences[i]):
            out.append((title, i, str(sentences[i]).strip()))
    return out


def gold_sentence_texts(record: Any) -> list[tuple[str, str]]:
    """``(title, normalised sentence text)`` of a record's gold supporting sentences
    (:func:`gold_sentences`).

    Example:
        >>> from ragnet.eval.run.datasets import QARecord
        >>> r = QARecord(id="q", question="?", answers=["a"], gold_sentences=[["T", 1], ["T", 9]],
        ...              context=[{"title": "T", "sentences": ["One.", " Two  words."]}])
        >>> gold_sentence_texts(r)
        [('T', 'two words.')]
    """
    return [(title, normalize_text(text)) for title, _, text in gold_sentences(record)]
