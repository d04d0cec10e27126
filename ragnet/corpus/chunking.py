"""Token-aware chunking: documents become sentence-aligned, overlapping windows.

How a text is cut (``chunk_text``):

1. A text of at most ``chunk_tokens`` tokens is one chunk, unchanged.
2. Otherwise it is split into sentences (``.``/``!``/``?`` followed by a capitalised word,
   not after common abbreviations or initials; blank lines; Markdown block starts). A
   sentence longer than ``chunk_tokens`` is split between words; a single "word" longer than
   that (a URL, a base64 blob) is split between tokens, the only case where a cut falls
   inside a word.
3. Windows take whole sentences while they fit. Each chunk is the exact source substring
   from its first to its last word, so the original whitespace and every word are kept.
4. The next window starts ``overlap`` tokens (or a little less) before the previous one
   ended, at a word boundary, at a sentence start when one is close; the overlap shrinks
   when the next sentence would otherwise not fit.

A document with sections (heading paths in its ``positions``: PDF outlines and numbered
headings, HTML, DOCX and Markdown headings) is cut at every section start first, and each
section is chunked as above; a chunk's title is then its document's title followed by its
section path (:func:`ragnet.corpus.locations.section_title`), and the document's title stays
in its metadata under ``["doc"]["title"]``.

Token counts come from ``ragnet.corpus.tokens`` (tiktoken ``cl100k_base``). Each sentence is
counted once and every chunk once more to check it, so chunking is linear in the text.

Example:
    >>> text = " ".join(f"Sentence number {i} is here." for i in range(40))
    >>> chunks = chunk_text(text, chunk_tokens=32, overlap=8)
    >>> all(count_tokens(c) <= 32 for c in chunks), chunks[0][:27]
    (True, 'Sentence number 0 is here. ')
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Callable, Iterable, Iterator, Sequence

from ragnet.corpus.limits import cap_title
from ragnet.corpus.locations import Locator, check_positions, section_title
from ragnet.corpus.metadata import Gazetteer, _check_gazetteer, extract_with_title, title_parts
from ragnet.corpus.sentence_split import sentence_spans
from ragnet.corpus.tokens import MAX_TOKEN_CHARS, count_tokens, count_tokens_batch, count_within, token_prefix
from ragnet.corpus.types import Chunk, Document, check_documents
from ragnet.errors import InputError

__all__ = ["chunk_documents", "chunk_text", "MIN_CHUNK_TOKENS"]

#: Smallest allowed ``chunk_tokens``.
MIN_CHUNK_TOKENS = 16

_WORD_RE = re.compile(r"\S+")
_SPACE_RE = re.compile(r"\s")


# ------------------------------------------------------------------ validation


def _check_sizes(chunk_tokens: Any, overlap: Any) -> None:
    if isinstance(chunk_tokens, bool) or not isinstance(chunk_tokens, int):
        raise InputError(f"must be an integer, got {chunk_tokens!r}", argument="chunk_tokens")
    if chunk_tokens < MIN_CHUNK_TOKENS:
        raise InputError(f"must be at least {MIN_CHUNK_TOKENS}, got {chunk_tokens}", argument="chunk_tokens")
    if isinstance(overlap, bool) or not isinstance(overlap, int):
        raise InputError(f"must be an integer, got {overlap!r}", argument="overlap")
    if not 0 <= overlap < chunk_tokens:
        raise InputError(
            f"must be at least 0 and less than chunk_tokens ({chunk_tokens}), got {overlap}", argument="overlap"
        )


# ------------------------------------------------------------------ pieces


def _split_long_word(text: str, start: int, end: int, limit: int) -> list[tuple[int, int, int]]:
    """Cut ``text[start:end]`` (no whitespace inside) into pieces of at most ``limit`` tokens.

    Linear in the word's length: each piece is found by encoding a window a little longer than
    it (:func:`ragnet.corpus.tokens.token_prefix`), never by recounting the rest of the word.
    """
    pieces: list[tuple[int, int, int]] = []
    a, width = start, None
    while a < end:
        b, n = token_prefix(text, a, end, limit, width)
        pieces.append((a, b, n))
        a, width = b, (b - a) * 5 // 4 + 16  # the next piece is likely as long as this one
    return pieces


_COUNT_BLOCK = 20_000  # words counted per tiktoken batch (bounds memory on huge unbroken texts)


def _word_tokens(text: str, start: int, end: int, limit: int) -> Iterator[tuple[int, int, int]]:
    """``(start, end, tokens incl. the whitespace before)`` of each word of ``text[start:end]``,
    counted in tiktoken batches; a word longer than ``limit`` tokens comes in pieces."""
    block: list[tuple[int, int, int]] = []  # (previous word end, word start, word end)

    def counted() -> Iterator[tuple[int, int, int]]:
        # a word after blanks too long to fit is not counted with them: it comes as pieces
        too_long = limit * MAX_TOKEN_CHARS
        sizes = count_tokens_batch([text[prev:b] if b - prev <= too_long else "" for prev, _, b in block])
        for (prev, a, b), n in zip(block, sizes):
            if n > limit or b - prev > too_long:
                yield from _split_long_word(text, a, b, limit)
            else:
                yield a, b, n

    prev = start
    for m in _WORD_RE.finditer(text, start, end):
        if m.end() - m.start() > limit * MAX_TOKEN_CHARS:  # too long to fit: cut it, never count it whole
            if block:
                yield from counted()
                block = []
            yield from _split_long_word(text, m.start(), m.end(), limit)
            prev = m.end()
            continue
        block.append((prev, m.start(), m.end()))
        prev = m.end()
        if len(block) >= _COUNT_BLOCK:
            yield from counted()
            block = []
    if block:
        yield from counted()


def _split_long_sentence(text: str, start: int, end: int, limit: int) -> list[tuple[int, int, int]]:
    """Cut a sentence into runs of whole words of at most ``limit`` tokens each.

    Linear in the sentence's length: words are counted in batches and each run is counted
    once more (rarely a few times) to confirm it fits.
    """
    runs: list[tuple[int, int, int]] = []

    def close(words: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """Emit the longest prefix of ``words`` that fits as one run; return the rest."""
        a, j = words[0][0], len(words)
        n = count_within(text[a:words[j - 1][1]], limit)
        while n > limit and j > 1:
            j -= 1
            n = count_within(text[a:words[j - 1][1]], limit)
        runs.append((a, words[j - 1][1], n))
        return words[j:]

    current: list[tuple[int, int, int]] = []
    total = 0
    for word in _word_tokens(text, start, end, limit):
        if current and total + word[2] > limit:
            current = close(current)
            total = sum(w[2] for w in current)
        current.append(word)
        total += word[2]
    while current:
        current = close(current)
    return runs


def _units(text: str, limit: int) -> tuple[list[int], list[int], list[int], list[bool]]:
    """Sentences (over-long ones cut) as parallel lists: starts, ends, tokens, starts-a-sentence.

    A unit's token count includes the whitespace before it, as it sits in a chunk.
    """
    starts: list[int] = []
    ends: list[int] = []
    toks: list[int] = []
    heads: list[bool] = []
    prev = None
    for a, b in sentence_spans(text):
        n = count_within(text[a if prev is None else prev : b], limit)
        # Counted alone (at a window start) a sentence may take a token or two more.
        if n <= limit - 8 or (n <= limit and count_tokens(text[a:b]) <= limit):
            starts.append(a)
            ends.append(b)
            toks.append(n)
            heads.append(True)
        else:
            one_word = _SPACE_RE.search(text, a, b) is None  # unbroken text: its pieces are counted already
            parts = _split_long_word(text, a, b, limit) if one_word else _split_long_sentence(text, a, b, limit)
            for i, (x, y, m) in enumerate(parts):
                starts.append(x)
                ends.append(y)
                toks.append(m)
                heads.append(i == 0)
        prev = b
    return starts, ends, toks, heads


# ------------------------------------------------------------------ windows


def _overlap_start(
    text: str, starts: list[int], heads: list[bool], ends: list[int], first: int, last: int, budget: int, ratio: float
) -> tuple[int, int]:
    """Where the next window starts: (character offset or -1 for "no overlap", tokens repeated).

    Finds the furthest word back from the end of unit ``last`` (not before unit ``first``)
    whose suffix fits in ``budget`` tokens: a guess from ``ratio`` (tokens per character of
    the chunk), corrected by exact counts (two or three per window, not one per word).
    Prefers the furthest sentence start inside that suffix when it keeps half the budget.
    """
    end = ends[last]
    if budget <= 0:
        return -1, 0
    # the last `budget` words (no more can fit), furthest back first; sentence starts marked
    words: list[int] = []
    sentence_starts: set[int] = set()
    u = last
    while u >= first and len(words) < budget:
        found = [m.start() for m in _WORD_RE.finditer(text, starts[u], ends[u])]
        words[:0] = found[-(budget - len(words)) :]
        if heads[u] and words and words[0] == starts[u]:
            sentence_starts.add(starts[u])
        u -= 1
    if not words:
        return -1, 0
    k = 0
    while k < len(words) - 1 and (end - words[k]) * ratio > budget:
        k += 1
    n = count_within(text[words[k] : end], budget)
    while n > budget and k < len(words) - 1:  # guessed too far back
        k += 1
        n = count_within(text[words[k] : end], budget)
    if n > budget:
        return -1, 0  # the last word alone is longer than the budget
    while k > 0:  # guessed too short: take more words while they fit
        m = count_within(text[words[k - 1] : end], budget)
        if m > budget:
            break
        k, n = k - 1, m
    heads_in = [a for a in words[k:] if a in sentence_starts]
    if heads_in and heads_in[0] != words[k]:
        m = count_tokens(text[heads_in[0] : end])
        if 2 * m >= budget:
            return heads_in[0], m
    return words[k], n


def _windows(text: str, chunk_tokens: int, overlap: int,
             progress: Callable[[int], None] | None = None) -> list[tuple[int, int, int]]:
    """Chunks of a text longer than ``chunk_tokens``: (start, end, token count) spans of
    ``text``; ``progress`` receives the characters each new window advances by."""
    starts, ends, toks, heads = _units(text, chunk_tokens)
    n = len(starts)
    out: list[tuple[int, int, int]] = []
    prefix = [0]
    for t in toks:
        prefix.append(prefix[-1] + t)
    j = 0  # first unit not yet in any chunk
    lead, carried = starts[0], 0  # window start offset and the tokens repeated before unit j
    while j < n:
        # whole units after the carried overlap, while the estimate fits
        e = bisect.bisect_right(prefix, prefix[j] + chunk_tokens - carried) - 1
        e = max(e, j + 1)
        chunk = text[lead : ends[e - 1]]
        exact = count_within(chunk, chunk_tokens)
        while exact > chunk_tokens:
            if e - 1 > j:
                e -= 1
            elif lead < starts[j]:
                lead, carried = starts[j], 0  # the overlap cannot stay; drop it
            else:
                break  # unit j alone is too long (tokenised without its leading space)
            chunk = text[lead : ends[e - 1]]
            exact = count_within(chunk, chunk_tokens)
        if exact > chunk_tokens:  # pragma: no cover - _units guards against it
            out.extend(_split_long_sentence(text, starts[j], ends[j], chunk_tokens))
        else:
            out.append((lead, ends[e - 1], exact))
        if progress is not None:
            progress(ends[e - 1] - (ends[j - 1] if j else 0))
        if e >= n:
            break
        # leave room for the next unit so the next window always makes progress
        budget = min(overlap, chunk_tokens - toks[e])
        ratio = exact / max(1, len(chunk))
        offset, carried = _overlap_start(text, starts, heads, ends, j, e - 1, budget, ratio)
        lead = offset if offset >= 0 else starts[e]
        if offset < 0:
            carried = 0
        j = e
    return out


def _chunk_spans(text: str, chunk_tokens: int, overlap: int, total: int | None = None,
                 progress: Callable[[int], None] | None = None) -> list[tuple[int, int, int]]:
    """The chunks of ``text`` as (start, end, token count): each chunk is ``text[start:end]``."""
    if not text.strip():
        return []
    if total is None:
        total = count_within(text, chunk_tokens)
    if total <= chunk_tokens:
        if progress is not None:
            progress(len(text))
        return [(0, len(text), total)]
    return _windows(text, chunk_tokens, overlap, progress)


def chunk_text(text: str, chunk_tokens: int = 256, overlap: int = 32) -> list[str]:
    """Cut ``text`` into overlapping windows of at most ``chunk_tokens`` tokens.

    Args:
        text: the text; a text that fits is returned whole and unchanged.
        chunk_tokens: maximum tokens per chunk (at least 16).
        overlap: tokens repeated from the end of one chunk at the start of the next
            (``0 <= overlap < chunk_tokens``); a little less when sentences do not allow it.

    Returns:
        The chunks, each a substring of ``text`` (empty list for blank text).

    Raises:
        InputError: ``chunk_tokens`` or ``overlap`` out of range.

    Example:
        >>> chunk_text("Short text.", chunk_tokens=64, overlap=8)
        ['Short text.']
    """
    if not isinstance(text, str):
        raise InputError(f"must be a string, got {type(text).__name__}", argument="text")
    _check_sizes(chunk_tokens, overlap)
    return [text[a:b] for a, b, _ in _chunk_spans(text, chunk_tokens, overlap)]


# ------------------------------------------------------------------ documents


def _section_starts(doc: Document) -> list[int]:
    """Offsets where ``doc``'s heading path changes (its positions), the text's start first."""
    starts, current = [0], None
    for offset, place in doc.positions:
        headings = place.get("headings") if isinstance(place, dict) else None
        headings = list(headings) if isinstance(headings, (list, tuple)) else None
        if headings != current:
            current = headings
            if offset > starts[-1]:
                starts.append(offset)
    return starts


def _document_spans(doc: Document, chunk_tokens: int, overlap: int, total: int,
                    progress: Callable[[int], None] | None) -> list[tuple[int, int, int, int | None]]:
    """The chunks of a document as ``(start, end, tokens, at)``: sections (where its heading path
    changes) are chunked apart, so a chunk never runs from one section into the next and its
    title and citation name one section; a section that is a bare heading line joins the
    section after it, and ``at`` then names the offset whose section names the chunk (None:
    where it starts)."""
    starts = _section_starts(doc)
    if len(starts) == 1:
        return [(a, b, n, None) for a, b, n in _chunk_spans(doc.text, chunk_tokens, overlap, total, progress)]
    bounds = list(zip(starts, starts[1:] + [len(doc.text)]))
    out: list[tuple[int, int, int, int | None]] = []
    lead = None  # start of bare heading lines waiting for their section's text
    for a, b in bounds:
        body = doc.text[a:b].strip()
        if "\n" not in body and b < len(doc.text):  # a heading with no text of its own
            lead = a if lead is None else lead
            continue
        start = a if lead is None else lead
        segment = doc.text[start:b]
        spans = _chunk_spans(segment, chunk_tokens, overlap, None, progress)
        for i, (x, y, n) in enumerate(spans):
            out.append((start + x, start + y, n, a if i == 0 and lead is not None else None))
        lead = None
    return out


def _chunk_title(doc: Document, location: dict[str, Any] | None) -> str:
    # copied into every chunk: capped whatever the document's title and section path
    return cap_title(section_title(cap_title(doc.title), (location or {}).get("headings")))



def _declared_years(metadata: dict[str, Any]) -> set[int]:
    """Ints (or digit strings) under the document's ``year``/``years`` metadata keys."""
    found: set[int] = set()
    for key in ("year", "years"):
        value = metadata.get(key)
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, str) and v.strip().isdigit():
                v = int(v.strip())
            if isinstance(v, int) and not isinstance(v, bool) and 1000 <= v <= 2100:
                found.add(v)
    return found


def chunk_documents(
    docs: Iterable[Document],
    chunk_tokens: int = 256,
    overlap: int = 32,
    *,
    gazetteer: Gazetteer | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Chunk]:
    """Chunk documents and attach rule-based metadata to every chunk.

    Chunk ids are ``f"{doc.id}#{i}"`` with ``i`` the 0-based position in the document, so
    the same documents and settings always give the same chunks. ``Chunk.metadata`` is
    ``ragnet.corpus.metadata.extract_metadata(chunk text, doc title, gazetteer)``, with
    integer ``year``/``years`` from the document's metadata merged into ``title_years``,
    plus the document's metadata under ``"doc"``, plus, when the document knows where it came
    from (its ``location`` or ``positions``, set by ``load_documents``), the chunk's place in the
    source under ``"location"`` (:mod:`ragnet.corpus.locations`: file, page, heading path, line).

    Args:
        docs: documents with unique ids and non-blank text.
        chunk_tokens: maximum tokens per chunk (at least 16).
        overlap: tokens shared by consecutive chunks (``0 <= overlap < chunk_tokens``).
        gazetteer: place names for the ``places`` metadata.
        progress: called with the number of characters chunked, as chunking advances (also
            inside a long document, window by window).

    Returns:
        The chunks, document by document, in order.

    Raises:
        InputError: bad sizes, a non-Document item, a duplicate document id or a blank text.

    Example:
        >>> doc = Document(id="d1", title="Paris 2024", text="Paris hosted the Olympics in 2024.")
        >>> [c] = chunk_documents([doc], chunk_tokens=64, overlap=8)
        >>> c.id, c.tokens, c.metadata["title_years"], c.metadata["entities"]
        ('d1#0', 9, [2024], ['olympics', 'paris'])
    """
    _check_sizes(chunk_tokens, overlap)
    _check_gazetteer(gazetteer)
    docs = list(docs) if not isinstance(docs, Sequence) else docs
    check_documents(docs)
    for doc in docs:
        if not isinstance(doc.text, str) or not doc.text.strip():
            where = doc.source or f"document {doc.id!r}"
            raise InputError(f"document {doc.id!r} has no text ({where})", argument="docs")
        check_positions(doc)

    # one plain call per text: faster than count_tokens_batch, whose thread pool costs more
    # than it saves on short texts
    totals = [count_within(doc.text, chunk_tokens) for doc in docs]  # exact when a text fits one chunk
    chunks: list[Chunk] = []
    for doc, total in zip(docs, totals):
        parts_of: dict[str, tuple] = {}
        doc_title = cap_title(doc.title)  # copied into every chunk: a few hundred characters at most
        declared = _declared_years(doc.metadata or {})
        locator = Locator(doc)
        for position, (start, end, tokens, at) in enumerate(_document_spans(doc, chunk_tokens, overlap, total,
                                                                            progress)):
            text = doc.text[start:end]
            location = locator.span(start, end, at) if locator else None
            title = _chunk_title(doc, location)
            if title not in parts_of:
                parts_of[title] = title_parts(title, gazetteer)
            meta = extract_with_title(text, parts_of[title], gazetteer)
            if declared:
                meta["title_years"] = sorted(declared.union(meta["title_years"]))
            meta["doc"] = dict(doc.metadata or {})
            if title != doc_title:  # the chunk is titled by its section; the document's title stays here
                meta["doc"]["title"] = doc_title
            if location is not None:
                meta["location"] = location
            chunks.append(
                Chunk(
                    id=f"{doc.id}#{position}",
                    doc_id=doc.id,
                    title=title,
                    text=text,
                    tokens=tokens,
                    position=position,
                    metadata=meta,
                )
            )
    return chunks
