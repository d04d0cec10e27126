"""FAISS wrapper: kinds, auto threshold, native save/load."""

from __future__ import annotations

import numpy as np
import pytest

from ragnet.errors import IndexFormatError, InputError
from ragnet.index.dense import DenseIndex


@pytest.fixture(scope="module")
def vectors():
    v = np.random.default_rng(0).standard_normal((500, 32)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_kinds_find_exact_neighbours(vectors, kind, tmp_path):
    index = DenseIndex.build(vectors, kind=kind)
    assert index.kind == kind and index.ntotal == 500
    scores, ids = index.search(vectors[:5], 3)
    assert ids[:, 0].tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)
    index.save(tmp_path / "d.faiss")
    loaded = DenseIndex.load(tmp_path / "d.faiss", kind)
    np.testing.assert_array_equal(loaded.search(vectors[:5], 3)[1], ids)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_a_search_with_allowed_rows_returns_the_best_of_them_only(vectors, kind):
    index = DenseIndex.build(vectors, kind=kind)
    allowed = np.arange(1, 500, 7)  # a scope that holds none of the queries' own rows
    scores, ids = index.search(vectors[:5:2], 4, allowed=allowed)
    assert np.isin(ids, allowed).all()
    best = allowed[np.argmax(vectors[:5:2] @ vectors[allowed].T, axis=1)]  # the scope's exact nearest
    assert ids[:, 0].tolist() == best.tolist()
    assert index.search(vectors[:1], 50, allowed=allowed[:3])[1].shape == (1, 3)  # no more than the scope


def test_auto_switches_at_threshold(vectors):
    assert DenseIndex.build(vectors, kind="auto", threshold=501).kind == "flat"
    assert DenseIndex.build(vectors, kind="auto", threshold=500).kind == "hnsw"


def test_unknown_kind_and_unreadable_file(vectors, tmp_path):
    with pytest.raises(InputError, match="faiss_index"):
        DenseIndex.build(vectors, kind="lsh")
    bad = tmp_path / "bad.faiss"
    bad.write_bytes(b"not a faiss index")
    with pytest.raises(IndexFormatError, match="unreadable"):
        DenseIndex.load(bad, "flat")
