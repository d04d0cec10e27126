"""Dense (sentence-transformers + FAISS) and sparse (bm25s) retrieval over chunks.

Example:
    >>> import tempfile
    >>> from ragnet.corpus.types import Document
    >>> from ragnet.index import Index
    >>> docs = [Document(id="hamlet", title="Hamlet", text="Hamlet is a tragedy written by William Shakespeare."),
    ...         Document(id="tea", title="Tea", text="Tea is a drink made from leaves.")]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/my_index", show_progress=False)
    >>> [c.id for c in index.search("who wrote Hamlet?", k=1)]
    ['hamlet#0']

The dense index and the build engine are option groups, e.g.
``Index.build(docs, path, dense=DenseOptions(kind="hnsw"), engine=BuildEngine("ray", workers=4))``.

Where things live: :mod:`~ragnet.index.hybrid` (``Index``: load and search),
:mod:`~ragnet.index.build` (writing an index folder), :mod:`~ragnet.index.manifest` (the folder's
layout and the checks before it is read or replaced), :mod:`~ragnet.index.update` (incremental
updates), and the stores each folder holds (``chunk_store``, ``catalog_store``, ``sentence_store``,
``dense``/``ivfpq``, ``sparse``, ``sources``).
"""

from __future__ import annotations

from ragnet.index.embedder import Embedder
from ragnet.index.hybrid import Index
from ragnet.index.ivfpq import IVFPQParams
from ragnet.index.options import BuildEngine, DenseOptions

__all__ = ["BuildEngine", "DenseOptions", "Embedder", "IVFPQParams", "Index"]
