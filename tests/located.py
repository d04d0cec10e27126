"""A real index whose chunks know where they come from (``chunk.metadata["location"]``).

Chunking is wrapped to add the given locations by chunk id, as ingestion of PDF, HTML, DOCX and
JSONL files records them, so citation tests do not depend on a file reader; chunks given no
location have none (an old index, or documents made in Python).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import pytest

from ragnet.corpus.types import Document
from ragnet.index import Index


def build_located_index(docs: Sequence[Document], path: Path, locations: dict[str, dict[str, Any]],
                        **options: Any) -> Index:
    """``Index.build(docs, path)`` with ``locations[chunk id]`` as each chunk's location."""
    import ragnet.corpus.chunking as chunking

    real = chunking.chunk_documents

    def located(*args: Any, **kwargs: Any):
        out = []
        for chunk in real(*args, **kwargs):
            meta = {k: v for k, v in chunk.metadata.items() if k != "location"}
            if chunk.id in locations:
                meta["location"] = locations[chunk.id]
            out.append(replace(chunk, metadata=meta))
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunking, "chunk_documents", located)
        index = Index.build(list(docs), path, show_progress=False, **options)
    for cid, where in locations.items():  # the index stores them: a load gives them back
        assert index.chunk(cid).metadata["location"] == where
    return index
