"""Dense (sentence-transformers + FAISS) and sparse (bm25s) retrieval over chunks.

Example:
    >>> from ragnet.index import Index, Embedder
    >>> index = Index.build(docs, "my_index")          # doctest: +SKIP
    >>> index.search("who wrote Hamlet?", k=5)          # doctest: +SKIP
"""

from __future__ import annotations

from ragnet.index.embedder import Embedder
from ragnet.index.index import Index

__all__ = ["Embedder", "Index"]
