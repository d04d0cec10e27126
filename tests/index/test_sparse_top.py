"""BM25 top-n with a threshold (``SparseIndex.top_and_scores_at``) is exact: the same rows,
ties and float32 values as ranking every scored document, in RAM and memory-mapped."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnet.index.sparse import SparseIndex, top_positive

# Zipf-like vocabulary: a few words in most documents, many rare ones, as in real text.
WORDS = [f"w{i:03d}" for i in range(120)]
WEIGHTS = 1.0 / np.arange(1, len(WORDS) + 1)
WEIGHTS /= WEIGHTS.sum()


def corpus(seed: int, docs: int) -> list[str]:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 25)), p=WEIGHTS)) for _ in range(docs)]
    texts[1::17] = [texts[0]] * len(texts[1::17])  # identical documents: tied scores
    return texts


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    built = SparseIndex.build(corpus(0, 400), show_progress=False)
    folder = tmp_path_factory.mktemp("bm25")
    built.save(folder)
    return built, SparseIndex.load(folder, mmap=True)


def check_exact(index: SparseIndex, query: str, n: int, rows: np.ndarray) -> None:
    full = index.scores(query)
    top_rows, top_scores, at = index.top_and_scores_at(query, n, rows)
    want_rows, want_scores = top_positive(full, n)
    np.testing.assert_array_equal(top_rows, want_rows)
    np.testing.assert_array_equal(top_scores, want_scores)
    np.testing.assert_array_equal(at, full[rows])
    assert top_scores.dtype == full.dtype and at.dtype == full.dtype


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    words=st.lists(st.sampled_from(WORDS + ["unknownword", "the"]), min_size=0, max_size=8),
    n=st.integers(0, 60),
    rows=st.lists(st.integers(0, 399), max_size=30, unique=True),
    mapped=st.booleans(),
)
def test_threshold_top_equals_ranking_every_document(indexes, words, n, rows, mapped):
    # repeated words (a term counted twice) and stopwords/unknown words are part of the draw
    index = indexes[1] if mapped else indexes[0]
    check_exact(index, " ".join(words), n, np.array(rows, dtype=np.int64))


@pytest.mark.parametrize("query", ["w000 w001 w100", "w000 w000 w119", "w118 w119", "w000", "the unknownword"])
def test_threshold_top_fixed_queries(indexes, query):
    for index in indexes:
        for n in (1, 5, 100, 1000):
            check_exact(index, query, n, np.arange(0, 400, 7))


def test_only_documents_above_the_threshold_are_ranked(indexes, monkeypatch):
    """The rarest terms' documents set a threshold, and the selection ranks only documents
    scoring at least that, not every document a common term reaches."""
    import ragnet.index.sparse as sparse_module

    index, query, n = indexes[0], "w119 w000", 3
    ranked: list[int] = []
    real = sparse_module.top_positive

    def counting(scores, k, rows=None):
        ranked.append(len(scores))
        return real(scores, k, rows)

    positive = int(np.count_nonzero(index.scores(query)))
    assert positive > 100  # the common term reaches most documents
    monkeypatch.setattr(sparse_module, "top_positive", counting)
    index.top_and_scores_at(query, n)
    monkeypatch.undo()
    assert ranked and ranked[0] < positive / 4
    check_exact(index, query, n, np.arange(400))
