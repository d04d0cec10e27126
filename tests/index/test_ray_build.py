"""The Ray Data build on a local 2-CPU cluster equals the one-process build."""

from __future__ import annotations

import numpy as np
import pytest

from ragnet.errors import InputError
from ragnet.index import BuildEngine, Index
from tests.required import skip_or_fail

QUERIES = ["capital of France", "largest desert", "programming language memory safety", "bowed string instrument"]


@pytest.fixture(scope="module")
def ray_cluster():
    try:
        import ray
    except ImportError:
        skip_or_fail("ray is not installed (pip install -e '.[scale]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def both(ray_cluster, docs, embedder, tmp_path_factory):
    root = tmp_path_factory.mktemp("ray")
    local = Index.build(docs, root / "local", chunk_tokens=64, overlap=8, embedder=embedder, show_progress=False)
    on_ray = Index.build(docs, root / "ray", chunk_tokens=64, overlap=8, embedder=embedder, show_progress=False,
                         engine=BuildEngine("ray", workers=2))
    return local, on_ray


@pytest.mark.slow
def test_ray_build_equals_the_local_build(both):
    local, on_ray = both
    ids = [c.id for c in local.chunks]
    assert [c.id for c in on_ray.chunks] == ids
    assert list(on_ray.chunks) == list(local.chunks)  # text, tokens, positions and metadata too
    np.testing.assert_allclose(on_ray.vectors(ids), local.vectors(ids), atol=1e-5)
    for q in QUERIES:
        np.testing.assert_array_equal(on_ray.sparse.scores(q), local.sparse.scores(q))
        assert [c.id for c in on_ray.search(q, k=5)] == [c.id for c in local.search(q, k=5)]
    assert on_ray.manifest["chunk_count"] == len(local)
    assert on_ray.build_stats["workers"] == 2


@pytest.mark.slow
def test_ray_build_writes_the_same_sentence_data(both):
    """The workers embed the sentences; spans, tokens, BM25 terms and vectors equal a local build's."""
    local, on_ray = both
    assert on_ray.manifest["sentences"] == local.manifest["sentences"] and len(local.sentences) > len(local)
    a, b = local.sentences, on_ray.sentences
    for name in ("offsets", "spans", "tokens", "terms", "term_offsets"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name), err_msg=name)
    np.testing.assert_allclose(np.asarray(b.vectors, dtype=np.float32), np.asarray(a.vectors, dtype=np.float32),
                               atol=2e-3)  # float16 rows of vectors equal up to float rounding
    assert on_ray.sentences_current


@pytest.mark.parametrize("extra", [-1, 1])
def test_sentence_vectors_must_match_the_sentences(docs, embedder, tmp_path, extra):
    """Vectors computed elsewhere (Ray workers) that do not line up with this process's
    sentence split, one row short or one too many, are refused, not stored misaligned."""
    from ragnet.errors import IndexFormatError
    from ragnet.index.sentence_store import SentenceStore, VectorSpill, chunk_sentences

    index = Index.build(docs[:2], tmp_path / "i", chunk_tokens=64, overlap=8, embedder=embedder, sentences=False,
                        show_progress=False)
    chunks = list(index.chunks)
    n = sum(len(chunk_sentences(c)[1]) for c in chunks)
    with VectorSpill(tmp_path) as spill:
        spill.append(np.zeros((n + extra, 384), dtype=np.float16))
        with pytest.raises(IndexFormatError, match=f"{n + extra} sentence vectors were given for the {n} sentences"):
            SentenceStore.write(chunks, embedder, index.sparse, tmp_path / "s", vectors=spill)


def test_spilled_vectors_come_back_in_order_and_leave_no_file(embedder, tmp_path):
    """The driver's sentence vectors wait in an unnamed file: read back in append order, across
    append boundaries, and nothing is left in the folder it was made in."""
    from ragnet.errors import IndexFormatError
    from ragnet.index.sentence_store import VectorSpill

    rng = np.random.default_rng(0)
    parts = [rng.standard_normal((k, 8)).astype(np.float16) for k in (5, 1, 7)]
    with VectorSpill(tmp_path) as spill:
        for part in parts:
            spill.append(part)
        assert list(tmp_path.iterdir()) == [] and spill.rows == 13
        got = np.concatenate([spill.take(4), spill.take(6), spill.take(100)])
        assert spill.remaining == 0
    np.testing.assert_array_equal(got, np.concatenate(parts))
    with VectorSpill(tmp_path) as spill, pytest.raises(IndexFormatError, match="dimension"):
        spill.append(np.zeros(3))


def test_unknown_engine_is_refused(docs, tmp_path):
    with pytest.raises(InputError, match="engine"):
        Index.build(docs, tmp_path / "x", engine=BuildEngine("spark"))
