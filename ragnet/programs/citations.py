"""Answers that cite: where each evidence chunk comes from and the sentences of it the reader saw.

Every program's Prediction carries ``citations`` (:func:`citations`), one plain dict per evidence
chunk in ``evidence`` order, as ``passages`` carries one per context chunk, so ``--json`` and a
program's caller read them without a ragnet type:

``id``, ``doc_id``, ``title``
    the chunk, its document and the document's title.
``file``, ``page``, ``page_end``, ``page_label``, ``page_label_end``, ``headings``, ``line``
    where in the source, each only when the index knows it (``chunk.metadata["location"]``,
    written at ingestion: the source file, the PDF page or page range (and the page numbers the
    PDF prints there, where they differ), the heading path of an
    HTML, DOCX or Markdown section, the line of a JSONL record). An index built before locations
    were recorded, or from documents made in Python, gives none of them.
``sentences``
    what of the chunk was in front of the reader: for a sentence-packed context exactly the
    selected sentences (sentence packing records them, :func:`shown_sentences`), otherwise the
    passage as shown (whole, or cropped by an LM) split with ragnet's one sentence splitter;
    the sentence that best supports the answer first (:func:`ragnet.core.support.support_scores`).
``states_answer``
    whether that first sentence states the answer (it occurs in it, as whole words).

Which chunks are cited is decided after the answer, without an LM (:func:`supported_evidence`):
the chunks whose sentences state the answer, best-supporting first (the reader's own cited ones
first among equals), at most :data:`MAX_CITED`, and always one of the reader's own among them
when one of those states it; when no sentence states it (a yes/no answer, a paraphrase), the
reader's cited chunks (all it read when it cited none), best-supporting first. A small reader
often cites a neighbour of the chunk that holds its answer, or a chunk where the answer's words
occur only by chance (a hex dump's ``[50:`` for the answer 50), and a user who checks the first
citation should find the sentence that states the answer there.

A failed answer has no evidence, so it cites nothing.

Example:
    >>> from ragnet.corpus.types import Chunk
    >>> chunk = Chunk(id="report#3", doc_id="report", title="Annual report", tokens=9,
    ...               text="Revenue rose in 2023. Costs fell.",
    ...               metadata={"location": {"file": "report.pdf", "page": 4, "page_end": 5,
    ...                                      "headings": ["Results", "Revenue"]}})
    >>> [cite] = citations(["report#3"], [chunk])
    >>> cite["page"], cite["headings"], cite["sentences"]
    (4, ['Results', 'Revenue'], ['Revenue rose in 2023.', 'Costs fell.'])
    >>> source_line(cite)
    'report.pdf › Results › Revenue, p. 4–5'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ragnet.core.support import STATES_ANSWER, question_share, support_scores
from ragnet.corpus.locations import SECTION_SEPARATOR
from ragnet.corpus.sentence_split import split_sentences
from ragnet.corpus.types import Chunk

__all__ = ["LOCATION_FIELDS", "MAX_CITED", "SHOWN_SENTENCES", "citation", "citations", "showing", "shown_sentences",
           "source_line", "supported_evidence"]

#: Most chunks cited for an answer that the context states (the reader's own and the others).
MAX_CITED = 3

#: The location fields a citation copies from ``chunk.metadata["location"]``, in output order.
LOCATION_FIELDS = ("file", "page", "page_end", "page_label", "page_label_end", "headings", "line")

#: The metadata key under which sentence packing records what it kept of a chunk:
#: ``{"text": the cropped text, "sentences": [the kept sentences, in document order]}``. Only
#: context chunks carry it (never the index's own chunks); the text is kept beside the sentences
#: so a later change of the chunk's text makes the record stale instead of wrong.
SHOWN_SENTENCES = "shown_sentences"


def showing(chunk: Chunk, text: str, tokens: int, sentences: Sequence[str]) -> Chunk:
    """A copy of ``chunk`` cut to ``text`` (``tokens`` long), the joined ``sentences``, recording
    them under :data:`SHOWN_SENTENCES` so its citation quotes them rather than a re-split of the
    joined text. The chunk keeps its metadata (location, rule fields) in a new dict: the index's
    own chunk is not touched.

    Example:
        >>> c = showing(Chunk(id="d#0", doc_id="d", title="T", text="A. B. C.", tokens=6), "A. … C.", 4, ["A.", "C."])
        >>> c.text, shown_sentences(c)
        ('A. … C.', ['A.', 'C.'])
    """
    record = {"text": text, "sentences": list(sentences)}
    return replace(chunk, text=text, tokens=tokens, metadata={**chunk.metadata, SHOWN_SENTENCES: record})


def shown_sentences(chunk: Chunk) -> list[str]:
    """The sentences of ``chunk`` that its text shows the reader.

    The sentences sentence packing recorded when they still make up the chunk's text; otherwise
    the text split with :func:`ragnet.corpus.sentence_split.split_sentences` (a text the splitter finds
    no boundary in is one sentence, as in the index's sentence store).

    Example:
        >>> shown = {"text": "Rome is old. … It has a river.", "sentences": ["Rome is old.", "It has a river."]}
        >>> c = Chunk(id="d#0", doc_id="d", title="T", text=shown["text"], tokens=9,
        ...           metadata={SHOWN_SENTENCES: shown})
        >>> shown_sentences(c)
        ['Rome is old.', 'It has a river.']
        >>> shown_sentences(c.with_text("Rome is old. It is big.", 7))  # the record no longer matches
        ['Rome is old.', 'It is big.']
    """
    record = chunk.metadata.get(SHOWN_SENTENCES) if isinstance(chunk.metadata, Mapping) else None
    if isinstance(record, Mapping) and record.get("text") == chunk.text:
        kept = record.get("sentences")
        if isinstance(kept, (list, tuple)) and all(isinstance(s, str) for s in kept):
            return list(kept)
    text = chunk.text or ""
    return split_sentences(text) or ([text.strip()] if text.strip() else [])


def _location(metadata: Any) -> dict[str, Any]:
    """The well-formed location fields of a chunk's metadata (ill-typed ones are left out, so a
    citation is always JSON-compatible)."""
    loc = metadata.get("location") if isinstance(metadata, Mapping) else None
    if not isinstance(loc, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key in LOCATION_FIELDS:
        value = loc.get(key)
        if key == "file":
            ok = isinstance(value, str) and value != ""
        elif key == "headings":
            ok = isinstance(value, (list, tuple)) and bool(value) and all(isinstance(h, str) for h in value)
            value = list(value) if ok else value
        elif key in ("page_label", "page_label_end"):
            ok = isinstance(value, str) and value != ""
        else:  # page, page_end, line: positive integers
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        if ok:
            out[key] = value
    return out


def _supporting_first(sentences: list[str], answer: str, question: str) -> tuple[list[str], float]:
    """``sentences`` with the one that best supports ``answer`` moved first, and its score."""
    if not sentences or not answer:
        return sentences, 0.0
    scores = support_scores(answer, question, sentences)
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    return [sentences[best]] + sentences[:best] + sentences[best + 1:], scores[best]


def citation(chunk: Chunk, answer: str = "", question: str = "") -> dict[str, Any]:
    """The citation of one context chunk (see the module docstring for its fields); with
    ``answer``, the sentence that best supports it comes first."""
    sentences, score = _supporting_first(shown_sentences(chunk), answer, question)
    out = {"id": chunk.id, "doc_id": chunk.doc_id, "title": chunk.title, **_location(chunk.metadata),
           "sentences": sentences}
    if answer:
        out["states_answer"] = score >= STATES_ANSWER
    return out


def citations(evidence: Sequence[str], context: Sequence[Chunk], answer: str = "",
              question: str = "") -> list[dict[str, Any]]:
    """One citation per evidence id, in ``evidence`` order, from the context chunk with that id
    (the chunk as the reader saw it), its sentence supporting ``answer`` first. An id with no
    context chunk is left out: the answer step keeps only cited ids that are in its context, so
    it does not happen in ragnet's programs."""
    by_id: dict[str, Chunk] = {}
    for chunk in context:
        by_id.setdefault(chunk.id, chunk)
    return [citation(by_id[cid], answer, question) for cid in evidence if cid in by_id]


def supported_evidence(answer: str, question: str, context: Sequence[Chunk], cited: Sequence[str]) -> list[str]:
    """The chunk ids an answer cites (see the module docstring): the chunks whose shown sentences
    state ``answer``, by support (their best sentence's, plus a third of the question-word share
    of their section path and all they show: a short "The default is 0." is about what its
    neighbours and headings name; the reader's ``cited`` ones first among equals), at most
    :data:`MAX_CITED`, with the best of the reader's own that state it always among them; else
    ``cited`` (all of ``context`` when empty) by support, best first.

    Example:
        >>> chunks = [Chunk(id="a#0", doc_id="a", title="Opts", text="Use -j N to run N jobs.", tokens=9),
        ...           Chunk(id="a#4", doc_id="a", title="Defaults", text="By default -j is 8.", tokens=7)]
        >>> supported_evidence("8", "How many jobs by default?", chunks, cited=["a#0"])
        ['a#4']
        >>> supported_evidence("yes", "Can it run jobs?", chunks, cited=[])
        ['a#0', 'a#4']
        >>> dump = Chunk(id="m#1", doc_id="m", title="Magic", text="Bytes: 4d 49 [50: 0a.", tokens=9)
        >>> rule = Chunk(id="m#2", doc_id="m", title="Rules", text="The default priority is 50.", tokens=7)
        >>> supported_evidence("50", "What priority by default?", [dump, rule], cited=["m#1"])
        ['m#2', 'm#1']
    """
    best: dict[str, float] = {}
    for chunk in context:
        if chunk.id not in best:
            shown = shown_sentences(chunk)
            # the chunk's question share, headings included, weighs as much as its best sentence's
            # own (support_scores), never as much as stating the answer as written (VERBATIM)
            best[chunk.id] = (_supporting_first(shown, answer, question)[1]
                              + question_share(question, " ".join([*chunk.headings, *shown])) / 3)
    order = {cid: i for i, cid in reversed(list(enumerate(best)))}
    holders = [cid for cid in best if best[cid] >= STATES_ANSWER]
    if holders:
        own = set(cited)
        ranked = sorted(holders, key=lambda cid: (-best[cid], cid not in own, order[cid]))
        kept = ranked[:MAX_CITED]
        mine = [cid for cid in ranked if cid in own]
        if mine and not own.intersection(kept):  # the reader's own reading stays cited, last
            kept[-1] = mine[0]
        return kept
    base = [cid for cid in dict.fromkeys(cited) if cid in best] or list(best)
    return sorted(base, key=lambda cid: (-best[cid], order[cid]))


def source_line(cite: Mapping[str, Any]) -> str:
    """Where a citation is from, in one line: ``file › Section › Subsection, p. 4–5`` where the
    source has sections, else ``Title — file, p. 4–5`` (each part only when known; the page
    numbers the document prints where it has them; ``line N`` for a JSONL record).

    Example:
        >>> source_line({"title": "Notes", "file": "notes.jsonl", "line": 12})
        'Notes — notes.jsonl, line 12'
        >>> source_line({"title": "Paris", "page": 2})
        'Paris — p. 2'
        >>> source_line({"title": "Paris"})
        'Paris'
    """
    place = []
    page, page_end = cite.get("page_label") or cite.get("page"), cite.get("page_label_end") or cite.get("page_end")
    if page:
        place.append(f"p. {page}–{page_end}" if page_end and page_end != page else f"p. {page}")
    if cite.get("line"):
        place.append(f"line {cite['line']}")
    title = str(cite.get("title") or "")
    if cite.get("headings"):
        head = str(cite["file"]) if cite.get("file") else title
        path = SECTION_SEPARATOR.join([part for part in (head, *map(str, cite["headings"])) if part])
        return ", ".join([path, *place])
    where = ", ".join(([str(cite["file"])] if cite.get("file") else []) + place)
    return " — ".join(part for part in (title, where) if part)
