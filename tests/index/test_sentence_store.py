"""The index's sentence store: built with the index, added later, verified, and scored."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ragnet.corpus.sentence_split import split_sentences
from ragnet.errors import IndexFormatError
from ragnet.index import Index
from ragnet.index.sentence_store import K1, B, SentenceStore, embedded_text
from tests.index.conftest import make_docs


def test_store_covers_every_chunk_in_order(built):
    store = built.sentences
    assert store is not None and len(store) == built.manifest["sentences"]["sentences"]
    for row, chunk in enumerate(built.chunks):
        texts = [store.text(chunk, s) for s in store.rows_of(row)]
        assert texts == (split_sentences(chunk.text) or [chunk.text])
    assert store.vectors.dtype == np.float16
    norms = np.linalg.norm(np.asarray(store.vectors, dtype=np.float32), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-2)


def test_sentence_vectors_are_title_prefixed_embeddings(built, embedder):
    store = built.sentences
    chunk = built.chunks[0]
    row = store.rows_of(0)[0]
    expected = embedder.encode([embedded_text(chunk.title, store.text(chunk, row))])[0]
    assert np.dot(np.asarray(store.vectors[row], dtype=np.float32), expected) > 0.999


def test_files_are_in_the_manifest_and_verified(index_copy):
    manifest = json.loads((index_copy / "manifest.json").read_text())
    assert "sentences/vectors.npy" in manifest["files"]
    with open(index_copy / "sentences" / "tokens.npy", "r+b") as fh:
        fh.seek(-1, 2)
        last = fh.read(1)
        fh.seek(-1, 2)
        fh.write(bytes([last[0] ^ 0xFF]))
    with pytest.raises(IndexFormatError, match="sentences/tokens.npy checksum mismatch"):
        Index.load(index_copy)


def test_add_sentences_to_an_index_built_without(tmp_path, embedder, built):
    path = tmp_path / "plain"
    plain = Index.build(make_docs(), path, chunk_tokens=64, overlap=8, embedder=embedder, show_progress=False,
                        sentences=False)
    assert plain.sentences is None and plain.manifest["sentences"] is None
    store = plain.add_sentences(show_progress=False)
    assert np.array_equal(store.spans, built.sentences.spans)
    assert np.allclose(np.asarray(store.vectors, dtype=np.float32), np.asarray(built.sentences.vectors, dtype=np.float32))
    reloaded = Index.load(path)  # checksums of the added files verify
    assert reloaded.sentences is not None and len(reloaded.sentences) == len(store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]  # no staging or lock left


def test_add_sentences_refuses_a_foreign_folder(tmp_path, embedder):
    path = tmp_path / "plain"
    plain = Index.build(make_docs()[:3], path, embedder=embedder, show_progress=False, sentences=False)
    (path / "sentences").mkdir()
    (path / "sentences" / "mine.txt").write_text("not ragnet's")
    with pytest.raises(Exception, match="not ragnet's sentence data"):
        plain.add_sentences(show_progress=False)
    assert (path / "sentences" / "mine.txt").read_text() == "not ragnet's"


def test_bm25_matches_a_direct_computation(built):
    store = built.sentences
    rows, chunk_of, position = store.gather([0, 1, 2])
    assert rows.tolist() == list(range(int(store.offsets[0]), int(store.offsets[3])))
    assert (position[chunk_of == 0] == np.arange((chunk_of == 0).sum())).all()
    query = "capital of France on the Seine"
    terms = built.query_terms(query)
    got = store.bm25(rows, terms, built.idf)
    for i, row in enumerate(rows):
        sent_terms = store.terms[store.term_offsets[row]:store.term_offsets[row + 1]].tolist()
        expected = 0.0
        for t in set(terms):
            tf = sent_terms.count(t)
            if tf:
                expected += built.idf[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(sent_terms) / store.mean_terms))
        assert got[i] == pytest.approx(expected)
    assert got.max() > 0


def test_cosines_rank_the_matching_sentence_first(built):
    store = built.sentences
    rows, chunk_of, _ = store.gather(range(len(built)))
    cos = store.cosines(rows, built.embed_query("Which organelle produces ATP?"))
    best = built.chunks[int(chunk_of[int(np.argmax(cos))])]
    assert best.title == "Mitochondria"


def test_stale_sentence_format_is_refused(index_copy):
    info = index_copy / "sentences" / "info.json"
    data = json.loads(info.read_text())
    data["splitter"] = "old-splitter"
    info.write_text(json.dumps(data))
    m = json.loads((index_copy / "manifest.json").read_text())
    import hashlib

    m["files"]["sentences/info.json"] = hashlib.sha256(info.read_bytes()).hexdigest()
    (index_copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="add-sentences"):
        _ = Index.load(index_copy).sentences
    shutil.rmtree(index_copy)


def test_add_sentences_replaces_data_of_an_older_splitter(tmp_path, embedder):
    import hashlib

    path = tmp_path / "idx"
    index = Index.build(make_docs()[:4], path, embedder=embedder, show_progress=False)
    m = json.loads((path / "manifest.json").read_text())
    m["sentences"]["splitter"] = "old-splitter"
    (path / "manifest.json").write_text(json.dumps(m))
    stale = Index.load(path)
    assert not stale.sentences_current()
    with pytest.raises(IndexFormatError, match=f"ragnet add-sentences {path}"):
        _ = stale.sentences
    store = stale.add_sentences(show_progress=False)
    assert stale.sentences_current() and len(store) == len(index.sentences)
    reloaded = Index.load(path)
    assert reloaded.sentences_current()
    files = json.loads((path / "manifest.json").read_text())["files"]
    assert files["sentences/spans.npy"] == hashlib.sha256((path / "sentences" / "spans.npy").read_bytes()).hexdigest()


@pytest.mark.parametrize("block", [1, 3, 10_000])
def test_written_block_by_block_equals_built_in_memory(tmp_path, built, embedder, block):
    chunks = list(built.chunks)
    assert len(chunks) > 3  # several blocks for block sizes 1 and 3
    SentenceStore.build(chunks, embedder, built.sparse).save(tmp_path / "built")
    info = SentenceStore.write(iter(chunks), embedder, built.sparse, tmp_path / "written", count=len(chunks),
                               block=block)
    assert sorted(p.name for p in (tmp_path / "written").iterdir()) == sorted(p.name for p in (tmp_path / "built").iterdir())
    assert info == json.loads((tmp_path / "built" / "info.json").read_text())
    for name in ("offsets", "spans", "tokens", "terms", "term_offsets"):
        assert np.array_equal(np.load(tmp_path / "written" / f"{name}.npy"), np.load(tmp_path / "built" / f"{name}.npy")), name
    written = np.load(tmp_path / "written" / "vectors.npy")
    assert written.dtype == np.float16 and written.shape == (info["sentences"], built.dimension)
    # blocks embed in other batches (and repeat a text shared across blocks): float noise only
    np.testing.assert_allclose(written.astype(np.float32), np.load(tmp_path / "built" / "vectors.npy").astype(np.float32),
                               atol=2e-3)
    store = SentenceStore.load(tmp_path / "written", len(chunks), built.dimension)
    assert len(store) == info["sentences"] and store.mean_terms == info["mean_terms"]


def test_writing_no_chunks_gives_an_empty_store_that_loads(tmp_path, built, embedder):
    info = SentenceStore.write([], embedder, built.sparse, tmp_path / "empty")
    assert info["chunks"] == info["sentences"] == 0
    store = SentenceStore.load(tmp_path / "empty", 0, built.dimension)
    assert len(store) == 0 and store.offsets.tolist() == [0]
