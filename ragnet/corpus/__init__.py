"""Document loading, token-aware chunking and rule-based chunk metadata."""

from ragnet._lazy import lazy_getattr
from ragnet.corpus.types import Chunk, Document

__all__ = ["Chunk", "Document", "load_documents", "chunk_documents", "extract_metadata"]

__getattr__ = lazy_getattr(globals(), {
    "load_documents": "ragnet.corpus.loader",
    "chunk_documents": "ragnet.corpus.chunking",
    "extract_metadata": "ragnet.corpus.metadata",
})
