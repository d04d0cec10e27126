"""Hybrid search semantics: ordering, bm25_weight extremes, exclude, batching, accessors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError

from .conftest import QUERIES


def test_search_returns_k_chunks_sorted_by_score(built):
    hits = built.search("What is the capital of Japan?", k=5)
    assert len(hits) == 5 and all(isinstance(h, Chunk) for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0].title == "Tokyo"
    assert all(h.dense_score is not None and h.bm25_score is not None for h in hits)
    assert all(0.0 <= h.score <= 1.0 for h in hits)


@pytest.mark.parametrize("query", QUERIES)
def test_top_hit_is_the_relevant_document(built, query):
    expected = {
        QUERIES[0]: "Tokyo", QUERIES[1]: "Mitochondria", QUERIES[2]: "Penicillin",
        QUERIES[3]: "Violin", QUERIES[4]: "Sahara", QUERIES[5]: "Rust language",
    }[query]
    assert built.search(query, k=1)[0].title == expected


def _brute_dense(index, query, k):
    cos = np.stack([index.vectors([c.id])[0] for c in index.chunks]) @ index.embed_query(query)
    return [index.chunks[i].id for i in np.lexsort((np.arange(len(cos)), -cos))[:k]]


def _brute_bm25(index, query, k):
    s = index._sparse.scores(query)
    rows = [i for i in np.lexsort((np.arange(len(s)), -s)) if s[i] > 0][:k]
    return [index.chunks[i].id for i in rows]


@pytest.mark.parametrize("query", QUERIES)
def test_lam_zero_is_pure_dense_and_lam_one_pure_bm25(built, query):
    dense = built.search(query, k=5, bm25_weight=0.0)
    assert [h.id for h in dense] == _brute_dense(built, query, 5)
    np.testing.assert_allclose([h.dense_score for h in dense], sorted((h.dense_score for h in dense), reverse=True))
    sparse_ids = _brute_bm25(built, query, 5)
    sparse = built.search(query, k=len(sparse_ids), bm25_weight=1.0)
    assert [h.id for h in sparse] == sparse_ids
    assert [h.id for h in built.dense_search(query, k=5)] == [h.id for h in dense]
    assert [h.id for h in built.bm25_search(query, k=5)] == sparse_ids


def test_hybrid_score_is_documented_formula(built):
    query, lam = "capital city on a river", 0.4
    hits = built.search(query, k=3, bm25_weight=lam, pool=len(built))
    cos = np.array([c for c in (built.vectors([c.id])[0] @ built.embed_query(query) for c in built.chunks)])
    bm = built._sparse.scores(query).astype(np.float64)
    norm = lambda x: (x - x.min()) / (x.max() - x.min())  # noqa: E731
    expected = lam * norm(bm) + (1 - lam) * norm(cos)
    rows = [built.rows([h.id])[0] for h in hits]
    np.testing.assert_allclose([h.score for h in hits], expected[rows], atol=1e-6)
    assert [h.id for h in hits] == [built.chunks[i].id for i in np.argsort(-expected, kind="stable")[:3]]


def test_degenerate_scores_normalise_to_zero(built):
    # no query term is in the vocabulary: BM25 is all zeros, so only cosine ranks
    hits = built.search("zzzqqq xxyyzz", k=5, bm25_weight=0.4)
    assert all(h.bm25_score == 0.0 for h in hits)
    assert [h.id for h in hits] == [h.id for h in built.search("zzzqqq xxyyzz", k=5, bm25_weight=0.0)]
    assert hits[0].score == pytest.approx(0.6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_exclude_is_never_returned_and_k_still_filled(built, data):
    ids = [c.id for c in built.chunks]
    excluded = data.draw(st.sets(st.sampled_from(ids), max_size=len(ids)))
    k = data.draw(st.integers(min_value=1, max_value=12))
    pool = data.draw(st.sampled_from([1, 3, 10, 100]))
    lam = data.draw(st.sampled_from([0.0, 0.4, 1.0]))
    query = data.draw(st.sampled_from(QUERIES))
    hits = built.search(query, k=k, exclude=excluded | {"not-an-id"}, bm25_weight=lam, pool=pool)
    assert not {h.id for h in hits} & excluded
    assert len(hits) == min(k, len(ids) - len(excluded))
    assert len({h.id for h in hits}) == len(hits)


def test_exclude_single_string_id(built):
    top = built.search(QUERIES[0], k=1)[0].id
    assert built.search(QUERIES[0], k=1, exclude=top)[0].id != top


def test_results_are_deterministic(built):
    a = built.search(QUERIES[1], k=8)
    b = built.search(QUERIES[1], k=8)
    assert [(h.id, h.score) for h in a] == [(h.id, h.score) for h in b]


def test_batched_search_equals_per_query(built):
    ids = [c.id for c in built.chunks]
    excludes = [None, ids[:3], set(ids[5:20]), (), None, ids[::2]]
    batch = built.search_batch(QUERIES, k=4, exclude=excludes, bm25_weight=0.4)
    for query, excl, got in zip(QUERIES, excludes, batch):
        want = built.search(query, k=4, exclude=excl or (), bm25_weight=0.4)
        assert [h.id for h in got] == [h.id for h in want]
        np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=1e-5)
    assert [[h.id for h in r] for r in built.search_batch(QUERIES[:2], k=2)] == [
        [h.id for h in built.search(q, k=2)] for q in QUERIES[:2]
    ]
    with pytest.raises(InputError, match="exclude"):
        built.search_batch(QUERIES, exclude=[None])
    assert built.search_batch([]) == []


def test_k_larger_than_index_and_k_zero(built):
    assert len(built.search(QUERIES[0], k=1000)) == len(built)
    assert built.search(QUERIES[0], k=0) == []


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"bm25_weight": 1.5}, "bm25_weight"), ({"bm25_weight": -0.1}, "bm25_weight"), ({"k": -1}, "k"),
     ({"pool": 0}, "pool"), ({"query": "  "}, "query")],
)
def test_bad_search_arguments(built, kwargs, argument):
    call = {"query": "capital", **kwargs}
    with pytest.raises(InputError) as err:
        built.search(**call)
    assert err.value.argument == argument


def test_lam_is_the_deprecated_name_of_bm25_weight(built):
    """One name per concept: ``bm25_weight``, as in the programs' ``Search``; ``lam`` still works for one
    release, with a DeprecationWarning, in ``search``, ``search_batch`` and a scoped view."""
    want = [c.id for c in built.search(QUERIES[0], k=4, bm25_weight=1.0)]
    assert want != [c.id for c in built.search(QUERIES[0], k=4, bm25_weight=0.0)]
    with pytest.warns(DeprecationWarning, match="bm25_weight"):
        assert [c.id for c in built.search(QUERIES[0], k=4, lam=1.0)] == want
    with pytest.warns(DeprecationWarning, match="bm25_weight"):
        assert [c.id for c in built.search_batch([QUERIES[0]], k=4, lam=1.0)[0]] == want
    scoped = built.scoped(*{c.doc_id for c in built.chunks})
    scoped_want = [c.id for c in scoped.search(QUERIES[0], k=4, bm25_weight=1.0)]
    with pytest.warns(DeprecationWarning, match="bm25_weight"):
        assert [c.id for c in scoped.search(QUERIES[0], k=4, lam=1.0)] == scoped_want
    with pytest.warns(DeprecationWarning), pytest.raises(InputError) as err:
        built.search(QUERIES[0], lam=2.0)
    assert err.value.argument == "bm25_weight"


def test_accessors(built, docs):
    assert len(built) == len(built.chunks) == len(docs)  # each short doc is one chunk
    first = built.chunks[0]
    assert built.chunk(first.id) == first
    assert built.get([first.id, built.chunks[2].id])[1] == built.chunks[2]
    vecs = built.vectors([first.id, built.chunks[1].id])
    assert vecs.shape == (2, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert built.embed_query("hello").shape == (384,)
    with pytest.raises(KeyError, match="no chunk with id 'nope'"):
        built.chunk("nope")
    with pytest.raises(KeyError, match="nope"):
        built.vectors(["nope"])
    assert built.vectors([]).shape == (0, 384)
    assert built.catalog is not None
    assert built.embedder.name == built.manifest["embedder"]


def test_passages_include_the_title(built):
    from ragnet.index.passages import passage_text

    chunk = built.chunk("doc20#0")
    assert passage_text(chunk).startswith("Python language\n")
    # "honeybee" (singular) occurs only in a title: the text says "Honeybees"
    hits = built.bm25_search("honeybee", k=3)
    assert [h.doc_id for h in hits] == ["doc13"]


def test_flat_scan_matches_faiss(built):
    qvecs = np.stack([built.embed_query(q) for q in QUERIES])
    ids, cos_all = built._dense_top(qvecs, 10)
    faiss_scores, faiss_ids = built._dense.search(qvecs, 10)
    np.testing.assert_array_equal(ids, faiss_ids)
    np.testing.assert_allclose(np.take_along_axis(cos_all, ids, axis=1), faiss_scores, atol=1e-5)
