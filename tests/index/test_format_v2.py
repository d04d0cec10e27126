"""Index format 2: a format-1 folder is refused with a rebuild hint, shards write the same index as
one build, and the compressed on-disk IVF-PQ kind searches, re-scores and refuses damage."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ragnet.corpus.types import Document
from ragnet.errors import IndexFormatError, InputError
from ragnet.index import DenseOptions, Index
from ragnet.index.file_array import FileArray
from ragnet.index.ivfpq import IVFPQParams
from ragnet.index.passages import passage_text

DATA = "hotpotqa_dev_distractor/questions.jsonl"


def _downgrade_to_v1(folder):
    """Make ``folder`` look exactly like a format-1 index: no sidecars, no catalog, no vocab table."""
    m = json.loads((folder / "manifest.json").read_text())
    for name in list(m["files"]):
        if name.startswith(("chunks.", "catalog/")) and name != "chunks.jsonl" or name.endswith("vocab.sorted.index.npy"):
            (folder / name).unlink()
            del m["files"][name]
    shutil.rmtree(folder / "catalog", ignore_errors=True)
    m["format_version"] = 1
    for key in ("vectors", "ivfpq", "embedder_backend"):
        m.pop(key, None)
    (folder / "manifest.json").write_text(json.dumps(m))


def _search_ids(index, queries, **kw):
    return [[(c.id, round(c.score, 5)) for c in index.search(q, **kw)] for q in queries]


QUERIES = ["capital of France", "largest desert", "programming language memory safety", "instrument with strings"]


def test_a_format_1_folder_is_refused_in_one_line_naming_it_and_saying_to_rebuild(built, tmp_path):
    v1 = tmp_path / "v1"
    shutil.copytree(built.path, v1)
    _downgrade_to_v1(v1)
    with pytest.raises(IndexFormatError) as err:
        Index.load(v1)
    message = str(err.value)
    assert "\n" not in message and str(v1) in message
    assert "format_version 1" in message and message.endswith("rebuild it with `ragnet index`")
    # the folder is still recognised as ragnet's, so the rebuild may replace it
    chunks = list(built.chunks)
    Index.build_from_shards([(chunks, built.vectors([c.id for c in chunks]))], v1, count=len(chunks),
                            show_progress=False)
    assert _search_ids(Index.load(v1), QUERIES, k=5) == _search_ids(built, QUERIES, k=5)


@pytest.mark.parametrize("drop", ["chunks.ids.npy", "catalog/info.npy"])
def test_a_format_2_folder_missing_a_part_is_refused_with_a_rebuild_hint(built, tmp_path, drop):
    copy = tmp_path / "copy"
    shutil.copytree(built.path, copy)
    m = json.loads((copy / "manifest.json").read_text())
    del m["files"][drop]
    (copy / drop).unlink()
    (copy / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexFormatError, match=f"manifest lists no {drop}; rebuild with `ragnet index`"):
        Index.load(copy)


def test_shards_write_the_same_index_as_one_build(built, tmp_path):
    chunks = list(built.chunks)
    vectors = built.vectors([c.id for c in chunks])
    shards = [(chunks[i:i + 7], vectors[i:i + 7]) for i in range(0, len(chunks), 7)]
    sharded = Index.build_from_shards(shards, tmp_path / "sharded", count=len(chunks), show_progress=False)
    assert len(sharded) == len(built)
    assert _search_ids(sharded, QUERIES, k=5, bm25_weight=0.4) == _search_ids(built, QUERIES, k=5, bm25_weight=0.4)
    assert [c.id for c in sharded.bm25_search("capital", k=8)] == [c.id for c in built.bm25_search("capital", k=8)]


def test_a_shard_that_does_not_fit_is_refused_and_nothing_is_written(built, tmp_path):
    chunks = list(built.chunks)
    vectors = built.vectors([c.id for c in chunks])
    with pytest.raises(InputError, match="vectors of shape"):
        Index.build_from_shards([(chunks[:5], vectors[:4])], tmp_path / "bad", count=5, show_progress=False)
    with pytest.raises(InputError, match="announced"):
        Index.build_from_shards([(chunks[:5], vectors[:5])], tmp_path / "bad", count=6, show_progress=False)
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


@pytest.fixture(scope="module")
def hotpot_docs(data_dir):
    docs, seen = [], set()
    with open(data_dir / DATA, encoding="utf-8") as fh:
        for line in fh:
            for para in json.loads(line)["context"]:
                title = para["title"]
                if title not in seen:
                    seen.add(title)
                    docs.append(Document(id=title, title=title, text="".join(para["sentences"])))
            if len(docs) >= 700:
                break
    return docs


@pytest.fixture(scope="module")
def flat_and_ivfpq(hotpot_docs, tmp_path_factory):
    root = tmp_path_factory.mktemp("ivfpq")
    flat = Index.build(hotpot_docs, root / "flat", dense=DenseOptions(kind="flat"), sentences=False,
                       show_progress=False)
    chunks = list(flat.chunks)
    vectors = flat.vectors([c.id for c in chunks])
    params = IVFPQParams(nlist=8, m=48, nprobe=4)
    pq = Index.build_from_shards([(chunks[:300], vectors[:300]), (chunks[300:], vectors[300:])], root / "pq",
                                 count=len(chunks), dense=DenseOptions(kind="ivfpq", ivfpq=params), show_progress=False)
    return flat, pq


@pytest.mark.slow
def test_ivfpq_is_compressed_on_disk_and_rescored_exactly(flat_and_ivfpq):
    flat, pq = flat_and_ivfpq
    m = pq.manifest
    assert m["faiss_index"] == "ivfpq" and m["vectors"] == {"file": "vectors.f16.npy", "dtype": "float16"}
    assert m["ivfpq"]["nlist"] == 8 and m["ivfpq"]["m"] == 48 and m["ivfpq"]["nprobe"] == 4
    # float16 re-scoring rows are read from disk per query (pread), never loaded or kept mapped
    assert isinstance(pq._emb, FileArray) and pq._emb.dtype == np.float16 and pq._emb.shape == (len(pq), 384)
    codes = (pq.path / "dense.ivfdata").stat().st_size
    assert codes < 0.25 * len(pq) * 384 * 4  # the dense index is under a quarter of the float32 vectors
    assert not (pq.path / "embeddings.npy").exists() and not (pq.path / ".ivfpq-shards").exists()
    questions = [d.title for d in flat.chunks[:40:2]]
    agree = 0
    for q in questions:
        a, b = flat.search(q, k=5), pq.search(q, k=5)
        agree += len({c.id for c in a} & {c.id for c in b})
        # the candidates' cosines are re-scored from the float16 vectors, not from PQ codes
        for c in b:
            exact = float(flat.vectors([c.id])[0] @ flat.embed_query(q))
            assert c.dense_score == pytest.approx(exact, abs=2e-3)
    assert agree / (5 * len(questions)) >= 0.9
    reloaded = Index.load(pq.path)
    assert _search_ids(reloaded, questions[:5], k=5) == _search_ids(pq, questions[:5], k=5)


@pytest.mark.slow
def test_ivfpq_damage_is_refused(flat_and_ivfpq, tmp_path):
    _, pq = flat_and_ivfpq
    copy = tmp_path / "copy"
    shutil.copytree(pq.path, copy)
    data = copy / "dense.ivfdata"
    raw = bytearray(data.read_bytes())
    raw[100] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(IndexFormatError, match=r"dense\.ivfdata checksum mismatch"):
        Index.load(copy)
    data.unlink()
    with pytest.raises(IndexFormatError, match=r"dense\.ivfdata is missing"):
        Index.load(copy)


def test_ivfpq_settings_are_checked():
    with pytest.raises(InputError, match="must divide the dimension"):
        IVFPQParams(m=50).resolve(10_000, 384)
    with pytest.raises(InputError, match="nprobe"):
        IVFPQParams(nprobe=0).resolve(10_000, 384)
    assert IVFPQParams().resolve(12_800, 384).nlist == 200  # 2*sqrt(n) -> 256, capped at n / 64
    with pytest.raises(InputError, match="dense.kind"):
        Index.build([Document(id="a", title="a", text="x")], "/tmp/never", dense=DenseOptions(kind="pq"))


def test_passage_text_is_what_shards_index(built):
    chunk = built.chunks[0]
    assert passage_text(chunk).endswith(chunk.text)


def test_a_build_killed_mid_shard_leaves_the_previous_index(built, tmp_path):
    import subprocess
    import sys

    target = tmp_path / "idx"
    shutil.copytree(built.path, target)
    before = Index.load(target).search("capital of France", k=3)
    script = f"""
import time
from ragnet.index import Index
idx = Index.load({str(built.path)!r})
chunks = list(idx.chunks)
vecs = idx.vectors([c.id for c in chunks])
def shards():
    yield chunks[:10], vecs[:10]
    print("first shard written", flush=True)
    time.sleep(120)
    yield chunks[10:], vecs[10:]
Index.build_from_shards(shards(), {str(target)!r}, count=len(chunks), show_progress=False)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "first shard written"
    finally:
        proc.kill()
        proc.wait()
    assert [p.name for p in tmp_path.iterdir() if p.name != "idx"]  # the killed build's half-written folder
    assert Index.load(target).search("capital of France", k=3) == before  # the previous index is intact
    chunks = list(built.chunks)
    Index.build_from_shards([(chunks, built.vectors([c.id for c in chunks]))], target, count=len(chunks),
                            show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]  # the next build cleaned up after it
