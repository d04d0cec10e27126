"""Indexes cached by content hash: one build per corpus, reused under any name, refused when
the folder does not match its key."""

from __future__ import annotations

import json

import pytest

from ragnet.corpus.types import Document
from ragnet.errors import IndexFormatError
from ragnet.eval.run.index_cache import cached_index, content_key, index_dir

DOCS = [Document(id="a", title="Alpha", text="Alpha is the first letter."),
        Document(id="b", title="Beta", text="Beta comes second in the Greek alphabet.")]


def test_key_depends_on_content_its_places_the_reading_code_embedder_and_chunking_only(monkeypatch):
    key = content_key(DOCS)
    assert key == content_key([Document(id=d.id, title=d.title, text=d.text, source="elsewhere") for d in DOCS])
    assert key != content_key([DOCS[0], Document(id="b", title="Beta", text="changed")])
    # the same text read with sections (a .txt whose numbered headings became them) is another index
    sectioned = Document(id="b", title="Beta", text=DOCS[1].text, positions=((0, {"headings": ["1 Beta"]}),))
    assert key != content_key([DOCS[0], sectioned])
    assert key != content_key([DOCS[0], Document(id="b", title="Beta", text=DOCS[1].text, location={"file": "b.txt"})])
    # and so is the same corpus read by other reading or chunking code
    monkeypatch.setattr("ragnet.eval.run.index_cache.code_fingerprint", lambda: "0" * 64)
    assert key != content_key(DOCS)
    monkeypatch.undo()
    assert key != content_key(list(reversed(DOCS)))
    assert key != content_key(DOCS, chunk_tokens=128)
    assert key != content_key(DOCS, overlap=0)
    assert key != content_key(DOCS, embedder="some/other-model")
    assert index_dir("set-pooled", key, "/r").as_posix() == f"/r/set-pooled-{key[:12]}"
    assert index_dir("odd/name q?", key, "/r").name == f"odd_name_q-{key[:12]}"


def test_builds_once_then_loads_and_refuses_a_mismatched_folder(tmp_path, monkeypatch):
    from ragnet.index import Index

    first = cached_index(DOCS, "letters-pooled", root=tmp_path, show_progress=False)
    assert first.path == tmp_path / f"letters-pooled-{content_key(DOCS)[:12]}"
    assert first.manifest["doc_count"] == 2

    def no_build(*a, **k):
        raise AssertionError("rebuilt a cached index")

    monkeypatch.setattr(Index, "build", no_build)
    again = cached_index(list(DOCS), "letters-pooled", root=tmp_path, show_progress=False)
    assert again.path == first.path and len(again) == len(first)

    manifest = json.loads((first.path / "manifest.json").read_text())
    manifest["doc_count"] = 5
    (first.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="does not match its key"):
        cached_index(DOCS, "letters-pooled", root=tmp_path, show_progress=False)
