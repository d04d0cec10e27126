"""Document loading, token-aware chunking and rule-based chunk metadata."""

from ragnet.corpus.types import Chunk, Document

__all__ = ["Chunk", "Document", "load_documents", "chunk_documents", "extract_metadata"]


def __getattr__(name):
    if name == "load_documents":
        from ragnet.corpus.loader import load_documents

        return load_documents
    if name == "chunk_documents":
        from ragnet.corpus.chunking import chunk_documents

        return chunk_documents
    if name == "extract_metadata":
        from ragnet.corpus.metadata import extract_metadata

        return extract_metadata
    raise AttributeError(name)
