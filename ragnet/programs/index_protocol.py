"""What ragnet's programs ask of an index: :class:`ProgramIndex`, a ``typing.Protocol``.

``ragnet.Index`` (from ``Index.build`` or ``Index.load``) is one; anything with these members can
stand in for it (the tests' small fakes, an index behind a wrapper). The programs type their
``index`` with it and use its members directly. The one check a program makes when it is built is
that the index can ``search`` (``RAGProgram``), so a wrong argument fails there with its name.

The catalog and the gazetteer are always there; the gazetteer may be None (an index built without
one), and so may the sentence store (an index built without sentences: the sentence pack then
splits and embeds the chunks it packs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ragnet.corpus.types import Chunk

if TYPE_CHECKING:
    from ragnet.core.rules import MetadataCatalog
    from ragnet.corpus.metadata import Gazetteer
    from ragnet.index.embedder import Embedder
    from ragnet.index.sentence_store import SentenceStore
    from ragnet.index.sparse import SparseIndex

__all__ = ["ProgramIndex"]


class ProgramIndex(Protocol):
    """The index members ragnet's programs use (``ragnet.Index`` documents each)."""

    def search(self, query: str, k: int = 5, exclude: Iterable[str] = (), bm25_weight: float = 0.4) -> list[Chunk]:
        """Hybrid search: the ``k`` best chunks for ``query``, best first, never one of ``exclude``;
        ``bm25_weight`` is the BM25 weight (the programs' ``Search.bm25_weight``)."""
        ...

    def chunk(self, chunk_id: str) -> Chunk:
        """The chunk with id ``chunk_id`` (``KeyError`` for an unknown id)."""
        ...

    def get(self, ids: Iterable[str]) -> list[Chunk]:
        """The chunks of ``ids``, in that order."""
        ...

    def rows(self, ids: Iterable[str]) -> np.ndarray:
        """The row numbers of ``ids`` (into the sentence store's chunk rows)."""
        ...

    def vectors(self, ids: Iterable[str]) -> np.ndarray:
        """The stored, L2-normalised embeddings of ``ids``, ``(n, d)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """The L2-normalised ``(d,)`` embedding of a query."""
        ...

    def query_terms(self, text: str) -> list[int]:
        """The BM25 term ids of ``text``."""
        ...

    @property
    def idf(self) -> np.ndarray:
        """The BM25 IDF of every term of the vocabulary."""
        ...

    @property
    def embedder(self) -> Embedder:
        """The embedder of chunks and queries (the sentence pack embeds cropped chunks' sentences)."""
        ...

    @property
    def sparse(self) -> SparseIndex:
        """The BM25 index (its tokenizer scores cropped chunks' sentences)."""
        ...

    @property
    def sentences(self) -> SentenceStore | None:
        """The sentence store, or None for an index built without sentences."""
        ...

    @property
    def catalog(self) -> MetadataCatalog:
        """The rule filter's metadata catalog (``by_title``: which names are documents)."""
        ...

    @property
    def gazetteer(self) -> Gazetteer | None:
        """The place names the rule filter reads from questions, or None."""
        ...

    def __len__(self) -> int:
        ...

    def __contains__(self, chunk_id: object) -> bool:
        ...
