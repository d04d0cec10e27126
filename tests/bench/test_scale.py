"""``ragnet bench scale``: the exact-scan reference and the serving measurement (tiny index)."""

from __future__ import annotations

import numpy as np
import pytest

from ragnet.bench.scale import ExactScan, measure
from ragnet.errors import InputError

from .conftest import QUERIES


def test_exact_scan_finds_the_best_cosines_across_blocks():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 8)).astype(np.float32)
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    scores, ids = ExactScan(vectors, block=7).search(queries, 5)
    expected = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(ids, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(queries @ vectors.T, expected, 1), rtol=1e-5)


def test_measure_serves_from_the_stored_kind_or_an_exact_scan(built):
    questions = [{"question": q, "gold": {"g": [built.chunks[0].id]}} for q in QUERIES[:2]]
    stored = measure(str(built.path), questions)
    exact = measure(str(built.path), questions, exact=True)
    assert stored["dense"] == built.manifest["faiss_index"] and exact["dense"] == "exact-scan"
    assert exact["questions"] == 2 and exact["search_ms_p50"] > 0
    assert exact["oneshot_all_gold_at_4000"] == stored["oneshot_all_gold_at_4000"]  # a flat index is exact too


def test_replace_dense_refuses_an_index_that_does_not_cover_every_chunk(built):
    from ragnet.index import Index

    index = Index.load(built.path)
    with pytest.raises(InputError, match="expected"):
        index.replace_dense(lambda vectors: ExactScan(vectors[:1]))
    assert index.replace_dense(ExactScan).kind == "exact-scan"
    assert [c.id for c in index.search(QUERIES[0], k=3)] == [c.id for c in built.search(QUERIES[0], k=3)]
