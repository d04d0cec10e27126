"""BM25 wrapper: same tokens and scores as bm25s, no pickle on disk."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from ragnet.index.sparse import SparseIndex, top_positive

TEXTS = [
    "Paris is the capital of France.",
    "Berlin is the capital of Germany, a large city.",
    "The the the and of",
    "Cats and dogs are running; the dog runs fast.",
    "France exports wine and cheese. Paris, Paris!",
]


@pytest.fixture(scope="module")
def bm25():
    return SparseIndex.build(TEXTS, show_progress=False)


@pytest.mark.parametrize("query", ["capital of France", "Running DOGS", "nothing matches", "paris paris wine", "the"])
def test_scores_match_bm25s(bm25, query):
    tokens = bm25s.tokenize(query, stopwords="en", show_progress=False, return_ids=False)[0]
    assert bm25.tokenize(query) == tokens
    expected = bm25.retriever.get_scores(tokens) if bm25.token_ids(query) else np.zeros(len(TEXTS))
    np.testing.assert_allclose(bm25.scores(query), expected, rtol=1e-6)


def test_top_is_sorted_positive_and_tie_broken_by_row(bm25):
    rows, scores = bm25.top("capital", 5)
    assert list(rows) == [0, 1] and scores[0] >= scores[1] > 0
    rows, _ = top_positive(np.array([1.0, 3.0, 3.0, 0.0, 3.0], dtype=np.float32), 2)
    assert list(rows) == [1, 2]
    assert top_positive(np.zeros(4, dtype=np.float32), 3)[0].size == 0


def test_save_load_round_trip_without_pickle(bm25, tmp_path):
    bm25.save(tmp_path / "bm25")
    for f in (tmp_path / "bm25").iterdir():
        assert f.suffix in {".npy", ".json"}, f
        if f.suffix == ".npy":
            np.load(f, allow_pickle=False)
    loaded = SparseIndex.load(tmp_path / "bm25")
    np.testing.assert_array_equal(loaded.scores("capital of France"), bm25.scores("capital of France"))


def test_all_stopword_corpus_scores_zero():
    index = SparseIndex.build(["the and of", "a an the"], show_progress=False)
    assert index.scores("the capital").tolist() == [0.0, 0.0]
