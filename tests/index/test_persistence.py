"""Persistence: round trip, manifest, checksums, clear errors, atomic replacement, no pickle."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragnet.errors import IndexFormatError, InputError
from ragnet.index import DenseOptions, Embedder, Index
from ragnet.index.embedder import bundled_model_path

from .conftest import QUERIES, make_docs


def _results(index, **kw):
    return [[(h.id, h.score, h.dense_score, h.bm25_score) for h in index.search(q, **kw)] for q in QUERIES]


def test_round_trip_gives_identical_results(built):
    loaded = Index.load(built.path)
    assert len(loaded) == len(built)
    assert list(loaded.chunks) == list(built.chunks)
    np.testing.assert_array_equal(loaded.vectors([c.id for c in built.chunks]), built.vectors([c.id for c in built.chunks]))
    for kw in ({"k": 5}, {"k": 3, "bm25_weight": 0.0}, {"k": 3, "bm25_weight": 1.0}, {"k": 4, "exclude": ["doc04#0"]}):
        assert _results(loaded, **kw) == _results(built, **kw)


def test_manifest_contents(built):
    m = json.loads((built.path / "manifest.json").read_text())
    assert m == built.manifest
    assert m["format_version"] == 2
    assert m["vectors"] == {"file": "embeddings.npy", "dtype": "float32"} and m["ivfpq"] is None
    assert m["embedder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert m["dimension"] == 384 and m["normalize"] is True
    assert m["chunk_count"] == len(built) and m["chunk_tokens"] == 64 and m["overlap"] == 8
    assert m["tokenizer"] == "tiktoken:cl100k_base"
    assert m["faiss_index"] == "flat"
    assert m["ragnet_version"] and m["created"]
    on_disk = {p.relative_to(built.path).as_posix() for p in built.path.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(m["files"]) == on_disk
    assert {"chunks.jsonl", "chunks.offsets.npy", "chunks.ids.npy", "chunks.id_rows.npy", "embeddings.npy",
            "dense.faiss", "catalog/info.npy"} <= on_disk
    assert any(name.startswith("bm25/") for name in on_disk)
    for name, digest in m["files"].items():
        assert hashlib.sha256((built.path / name).read_bytes()).hexdigest() == digest


def test_chunks_jsonl_has_no_scores(built):
    lines = (built.path / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(built)
    record = json.loads(lines[0])
    assert not {"score", "dense_score", "bm25_score"} & set(record)
    assert record["id"] == built.chunks[0].id


def test_no_pickle_anywhere(built):
    for f in built.path.rglob("*"):
        if not f.is_file():
            continue
        assert f.suffix not in {".pkl", ".pickle", ".joblib"}, f
        assert not f.read_bytes()[:1] == b"\x80", f"{f} looks like a pickle"
        if f.suffix == ".npy":
            arr = np.load(f, allow_pickle=False)
            assert arr.dtype != object
    emb = np.load(built.path / "embeddings.npy", allow_pickle=False)
    assert emb.dtype == np.float32 and emb.shape == (len(built), 384)


def test_flipped_bytes_in_faiss_file_is_reported(index_copy):
    f = index_copy / "dense.faiss"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=r"corrupt: dense\.faiss checksum mismatch; rebuild with `ragnet index`"):
        Index.load(index_copy)


def test_truncated_chunks_file_is_reported(index_copy):
    f = index_copy / "chunks.jsonl"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    f.write_text("".join(lines[:-3]), encoding="utf-8")
    with pytest.raises(IndexFormatError, match=r"chunks\.jsonl checksum mismatch"):
        Index.load(index_copy)
    with pytest.raises(IndexFormatError, match=r"chunks\.jsonl ends at byte \d+, but it has \d+ bytes"):
        Index.load(index_copy, verify=False)


def test_missing_file_is_reported(index_copy):
    (index_copy / "embeddings.npy").unlink()
    with pytest.raises(IndexFormatError, match=r"embeddings\.npy is missing"):
        Index.load(index_copy)


def test_not_an_index(tmp_path):
    with pytest.raises(IndexFormatError, match=r"not a ragnet index \(no manifest\.json\)"):
        Index.load(tmp_path)
    with pytest.raises(IndexFormatError, match="does not exist"):
        Index.load(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(IndexFormatError, match="not an index folder"):
        Index.load(tmp_path / "file.txt")


def test_missing_manifest(index_copy):
    (index_copy / "manifest.json").unlink()
    with pytest.raises(IndexFormatError, match="no manifest.json"):
        Index.load(index_copy)


def test_unparsable_manifest(index_copy):
    (index_copy / "manifest.json").write_text("{not json")
    with pytest.raises(IndexFormatError, match="manifest.json is not valid JSON"):
        Index.load(index_copy)


def test_unknown_format_version(index_copy):
    m = json.loads((index_copy / "manifest.json").read_text())
    m["format_version"] = 99
    (index_copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="format_version 99.*reads format 2 only; rebuild it with `ragnet index`"):
        Index.load(index_copy)


def test_embedder_mismatch_names_both(built, tmp_path):
    other = tmp_path / "my-other-model"
    shutil.copytree(bundled_model_path(), other)
    emb = Embedder(other)
    assert emb.name == str(other.resolve())
    with pytest.raises(IndexFormatError) as err:
        Index.load(built.path, embedder=emb)
    message = str(err.value)
    assert "sentence-transformers/all-MiniLM-L6-v2" in message and str(other.resolve()) in message
    # the same check by name
    with pytest.raises(IndexFormatError, match="my-other-model"):
        Index.load(built.path, embedder=str(other))


def test_matching_embedder_is_accepted(built, embedder):
    assert Index.load(built.path, embedder=embedder).embedder is embedder
    assert Index.load(built.path, embedder=bundled_model_path()).embedder.name == embedder.name


@pytest.fixture(scope="module")
def model_128d(tmp_path_factory):
    """A real second sentence-transformers model: the bundled one plus a 384->128 Dense layer."""
    import torch
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Dense
    except ImportError:  # older sentence-transformers
        from sentence_transformers.models import Dense
    torch.manual_seed(0)
    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    model.append(Dense(384, 128))
    folder = tmp_path_factory.mktemp("models") / "minilm-128d"
    model.save(str(folder))
    return folder


def test_dimension_mismatch_is_reported(index_copy, model_128d):
    emb = Embedder(model_128d)
    assert emb.dimension == 128
    m = json.loads((index_copy / "manifest.json").read_text())
    m["embedder"] = emb.name  # pretend the index came from that model (vectors stay 384-d)
    (index_copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match="384-dimensional.*produces 128-dimensional"):
        Index.load(index_copy, embedder=emb)  # loaded embedder: checked at load
    lazy = Index.load(index_copy)  # embedder from the manifest: checked on first query
    with pytest.raises(IndexFormatError, match="384-dimensional.*minilm-128d.*produces 128-dimensional"):
        lazy.search("capital")


def test_failed_build_leaves_previous_index_intact(built, tmp_path, monkeypatch, embedder):
    target = tmp_path / "idx"
    shutil.copytree(built.path, target)
    before = {p.name: p.read_bytes() for p in target.rglob("*") if p.is_file()}

    def boom(self, path):
        raise RuntimeError("disk full")

    monkeypatch.setattr("ragnet.index.dense.DenseIndex.save", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        Index.build(make_docs()[:5], target, embedder=embedder, show_progress=False)
    after = {p.name: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # no temp folders left behind
    assert len(Index.load(target)) == len(built)


def test_rebuild_replaces_existing_index(tmp_path, embedder):
    target = tmp_path / "idx"
    Index.build(make_docs()[:4], target, embedder=embedder, show_progress=False)
    rebuilt = Index.build(make_docs()[:6], target, embedder=embedder, show_progress=False)
    assert len(Index.load(target)) == len(rebuilt) == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_build_refuses_to_overwrite_a_non_index_folder(tmp_path, embedder):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# precious\n")
    with pytest.raises(InputError, match="not a ragnet index"):
        Index.build(make_docs()[:2], folder, embedder=embedder, show_progress=False)
    assert (folder / "notes.md").read_text() == "# precious\n"


def test_build_input_errors(tmp_path, embedder):
    with pytest.raises(InputError, match="no documents"):
        Index.build([], tmp_path / "a", embedder=embedder)
    with pytest.raises(InputError, match="dense.kind"):
        Index.build(make_docs()[:2], tmp_path / "b", dense=DenseOptions(kind="lsh"), embedder=embedder)
    docs = make_docs()[:3]
    with pytest.raises(InputError, match="duplicate document id 'doc00'"):
        Index.build(docs + docs[:1], tmp_path / "c", embedder=embedder, show_progress=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()


def test_hnsw_above_threshold_matches_flat(built, tmp_path, embedder):
    index = Index.build(make_docs(), tmp_path / "h", chunk_tokens=64, overlap=8, embedder=embedder,
                        show_progress=False, dense=DenseOptions(hnsw_from=10))
    assert index.manifest["faiss_index"] == "hnsw"
    loaded = Index.load(tmp_path / "h")
    for q in QUERIES:
        assert [h.id for h in loaded.search(q, k=5)] == [h.id for h in built.search(q, k=5)]


def test_duplicate_passages_are_embedded_once(tmp_path, embedder, monkeypatch):
    from ragnet.corpus.types import Document

    calls = []
    original = Embedder.encode

    def spy(self, texts, **kw):
        calls.append((kw.get("desc", "Embedding"), list(texts)))
        return original(self, texts, **kw)

    monkeypatch.setattr(Embedder, "encode", spy)
    docs = [Document(id=f"d{i}", title="Same", text="Identical text body.") for i in range(4)]
    index = Index.build(docs, tmp_path / "dup", embedder=embedder, show_progress=False)
    chunk_calls = [texts for desc, texts in calls if desc == "Embedding"]
    sentence_calls = [texts for desc, texts in calls if desc == "Embedding sentences"]
    assert len(chunk_calls) == 1 and len(chunk_calls[0]) == 1
    assert sentence_calls == [["Same: Identical text body."]]  # four identical sentences, one forward pass
    vecs = index.vectors([c.id for c in index.chunks])
    assert vecs.shape == (4, 384) and np.allclose(vecs, vecs[0])


def test_index_path_attribute(built):
    assert isinstance(built.path, Path) and (built.path / "manifest.json").is_file()


def test_index_files_get_usual_permissions(built):
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    assert (built.path.stat().st_mode & 0o777) == 0o777 & ~mask
    assert ((built.path / "dense.faiss").stat().st_mode & 0o777) == 0o666 & ~mask


def test_a_renamed_manifest_embedder_is_reported_as_the_index_problem(index_copy):
    m = json.loads((index_copy / "manifest.json").read_text())
    m["embedder"] = "someone/renamed-model-that-does-not-exist"
    (index_copy / "manifest.json").write_text(json.dumps(m))
    index = Index.load(index_copy)
    with pytest.raises(IndexFormatError, match=r"built with embedder 'someone/renamed-model.*\(manifest\.json\)"):
        index.search("capital")


def test_bm25_params_replaced_with_valid_checksums_is_refused_clearly(index_copy):
    import hashlib

    params = index_copy / "bm25" / "params.index.json"
    params.write_text("{}")
    m = json.loads((index_copy / "manifest.json").read_text())
    m["files"]["bm25/params.index.json"] = hashlib.sha256(params.read_bytes()).hexdigest()
    (index_copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match=r"BM25 files in .* are missing or unreadable"):
        Index.load(index_copy)
