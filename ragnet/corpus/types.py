"""The two records ragnet passes around: a source ``Document`` and an indexed ``Chunk``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ragnet.errors import InputError


@dataclass(frozen=True)
class Document:
    """One source document.

    Attributes:
        id: stable identifier (from the JSONL ``id`` field, or derived from the file path).
        title: document title ("" when unknown).
        text: the full text.
        metadata: free-form JSON-compatible metadata from the source (e.g. ``{"year": 2019}``).
        source: where it was read from, ``"path"`` or ``"path:line"``; used in error messages.
        location: where the whole document sits, JSON-compatible: ``"file"`` (the path relative
            to the folder indexed) and, for a JSONL record, ``"line"``; empty when unknown.
        positions: where each part of ``text`` sits, as ``(character offset, place)`` pairs in
            ascending offset order; a place (``{"page": 3}`` in a PDF, ``{"headings": ["Intro",
            "Scope"]}`` in HTML, DOCX and Markdown) holds from its offset up to the next one.
            Chunking turns both into each chunk's ``metadata["location"]``
            (:class:`ragnet.corpus.locations.Locator`).

    Example:
        >>> Document(id="d1", title="Paris", text="Paris is the capital of France.").title
        'Paris'
        >>> d = Document(id="r", title="", text="Page one.\\n\\nPage two.", location={"file": "r.pdf"},
        ...              positions=((0, {"page": 1}), (11, {"page": 2})))
        >>> d.positions[1]
        (11, {'page': 2})
    """

    id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    location: dict[str, Any] = field(default_factory=dict)
    positions: tuple[tuple[int, dict[str, Any]], ...] = ()


def check_documents(docs: Sequence[Any], argument: str = "docs") -> None:
    """Refuse a list that holds anything but ``Document``s, or two documents of one id: what
    chunking, ``Index.build`` and ``Index.update`` are given. (Files read by the loader are
    checked as they are read, naming the file and line of each id.)

    Raises:
        InputError: the first bad item, by its 0-based position in ``docs``, and ``argument``.

    Example:
        >>> check_documents([Document(id="a", title="", text="x"), Document(id="a", title="", text="y")])
        Traceback (most recent call last):
        ...
        ragnet.errors.InputError: argument 'docs': duplicate document id 'a' (items 0 and 1); ids must be unique
    """
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InputError(f"item {i} is a {type(doc).__name__}, not a ragnet.Document", argument=argument)
        first = seen.setdefault(doc.id, i)
        if first != i:
            raise InputError(f"duplicate document id {doc.id!r} (items {first} and {i}); ids must be unique",
                             argument=argument)


@dataclass(frozen=True)
class Chunk:
    """A token-bounded passage of a ``Document``; what the index stores and search returns.

    Attributes:
        id: stable chunk id, ``"{doc_id}#{position}"``.
        doc_id: id of the parent document.
        title: the parent document's title, followed by the chunk's section path when the
            document has sections (``"GNU sed › 3.2 Commands"``,
            :func:`ragnet.corpus.locations.section_title`).
        text: chunk text.
        tokens: length of ``text`` in LM tokens (``ragnet.corpus.tokens.count_tokens``).
        position: 0-based index of the chunk within its document.
        metadata: rule-extracted metadata (see ``ragnet.corpus.metadata``) merged with the
            document's own metadata under the key ``"doc"`` and, when the source is known, where
            the chunk came from under ``"location"``: ``"file"``, ``"page"`` and ``"page_end"``
            (PDF, the latter only when the chunk spans pages), ``"headings"`` (HTML, DOCX,
            Markdown: the heading path, outermost first) and ``"line"`` (a JSONL record).
        score: hybrid retrieval score of the last search (0.0 when not retrieved).
        dense_score: raw cosine similarity to the query (None when not computed).
        bm25_score: raw BM25 score for the query (None when not computed).

    Example:
        >>> c = Chunk(id="d1#0", doc_id="d1", title="Paris", text="Paris is...", tokens=3)
        >>> c.with_scores(score=0.9).score
        0.9
    """

    id: str
    doc_id: str
    title: str
    text: str
    tokens: int
    position: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0
    dense_score: float | None = None
    bm25_score: float | None = None

    @property
    def headings(self) -> tuple[str, ...]:
        """The chunk's heading path, outermost first (empty for a document without sections:
        a JSONL record, a Wikipedia paragraph).

        Example:
            >>> Chunk(id="m#0", doc_id="m", title="sed", text="...", tokens=1,
            ...       metadata={"location": {"file": "sed.pdf", "headings": ["2 Usage", "2.1 Options"]}}).headings
            ('2 Usage', '2.1 Options')
        """
        location = self.metadata.get("location") if isinstance(self.metadata, dict) else None
        headings = location.get("headings") if isinstance(location, dict) else None
        return tuple(str(h) for h in headings) if isinstance(headings, (list, tuple)) else ()

    def with_scores(self, **scores: float | None) -> "Chunk":
        """Return a copy with retrieval scores (``score``, ``dense_score``, ``bm25_score``) set."""
        return replace(self, **scores)

    def with_text(self, text: str, tokens: int) -> "Chunk":
        """Return a copy whose text was replaced (e.g. after cropping)."""
        return replace(self, text=text, tokens=tokens)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict (used for persistence and ``--json`` output)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Chunk":
        """Inverse of ``to_dict``."""
        return cls(**data)
