"""ragnet: retrieval strategies that beat plain top-k RAG, as optimizable DSPy programs.

Heavy pieces (torch, FAISS, DSPy) load lazily on first use of the names that need them,
so ``import ragnet`` stays fast and ``ragnet.core`` works with numpy alone.

Example:
    >>> import ragnet
    >>> ragnet.Document(id="d1", title="t", text="x").id
    'd1'
"""

from __future__ import annotations

from ragnet._lazy import lazy_getattr, listed_dir
from ragnet.corpus.types import Chunk, Document
from ragnet.errors import IndexFormatError, InputError, RagnetError

__version__ = "0.1.0"

# name -> module that defines it; resolved on first attribute access.
_LAZY = {
    "load_documents": "ragnet.corpus.loader",
    "chunk_documents": "ragnet.corpus.chunking",
    "Index": "ragnet.index.hybrid",
    "Embedder": "ragnet.index.embedder",
    "DenseOptions": "ragnet.index.options",
    "BuildEngine": "ragnet.index.options",
    "configure": "ragnet.lm.config",
    "LMOptions": "ragnet.lm.config",
    "RAG": "ragnet.programs.rag",
    "FollowUp": "ragnet.programs.conversation",
    "BasicRAG": "ragnet.programs",
    "OneShotRAG": "ragnet.programs",
    "IterativeRAG": "ragnet.programs",
    "ReflectiveRAG": "ragnet.programs",
    "CombinedRAG": "ragnet.programs",
    "RouterRAG": "ragnet.programs",
    "Pack": "ragnet.programs",
    "Search": "ragnet.programs",
    "Hops": "ragnet.programs",
    "Loop": "ragnet.programs",
    "Reflection": "ragnet.programs",
    "LMSteps": "ragnet.programs",
    "AnswerStep": "ragnet.signatures",
}

__all__ = ["Chunk", "Document", "IndexFormatError", "InputError", "RagnetError", "__version__", *_LAZY]


__getattr__ = lazy_getattr(globals(), _LAZY)
__dir__ = listed_dir(__all__)
