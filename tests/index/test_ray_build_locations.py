"""A Ray build chunks documents in workers from JSON rows: their ``location`` and ``positions`` travel
with them, so its chunks carry the same ``metadata["location"]`` as a local build's (issue 38)."""

from __future__ import annotations

import json

from ragnet.corpus.chunking import chunk_documents
from ragnet.corpus.types import Document
from ragnet.index.ray_build import _chunk_rows


def test_ray_chunk_rows_keep_file_and_page():
    doc = Document(id="r.pdf", title="R", text="First page text.\n\nSecond page text.", source="/x/r.pdf",
                   location={"file": "r.pdf"}, positions=((0, {"page": 1}), (18, {"page": 2})))
    row = {"row": 0, "id": doc.id, "title": doc.title, "text": doc.text, "source": doc.source,
           "metadata": json.dumps(doc.metadata),
           "place": json.dumps({"location": doc.location, "positions": doc.positions})}
    rows = _chunk_rows(row, 16, 0, None)
    local = chunk_documents([doc], 16, 0)
    assert [json.loads(r["metadata"])["location"] for r in rows] == [c.metadata["location"] for c in local]
    assert json.loads(rows[0]["metadata"])["location"] == {"file": "r.pdf", "page": 1, "page_end": 2}
