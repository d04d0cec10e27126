"""Tests for ragnet.core.noise: hand-computed example, properties vs the naive formulas, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ragnet.core import noise
from ragnet.errors import InputError

SETTINGS = settings(max_examples=200, deadline=None)

# Query (1, 0); chunks at 0, ~53 and 90 degrees from it.
Q = np.array([1.0, 0.0])
C = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
# cos to query: 1, 0.6, 0; pairwise: c1.c2 = 0.6, c1.c3 = 0, c2.c3 = 0.8
RHO = np.array([1.0 - (0.6 + 0.0) / 2, 0.6 - (0.6 + 0.8) / 2, 0.0 - (0.0 + 0.8) / 2])  # 0.7, -0.1, -0.4


def naive_scores(q, c):
    def unit(x):
        n = np.linalg.norm(x)
        return x / n if n > 0 else x * 0.0

    q = unit(np.asarray(q, float))
    u = np.array([unit(np.asarray(row, float)) for row in c])
    n = len(u)
    rho = []
    for i in range(n):
        others = [u[i] @ u[j] for j in range(n) if j != i]
        rho.append(u[i] @ q - (sum(others) / (n - 1) if n > 1 else 0.0))
    return np.array(rho)


def naive_pairs(c):
    u = noise.normalize(c)
    n = len(u)
    return [float(u[i] @ u[j]) for i in range(n) for j in range(i + 1, n)]


# --------------------------------------------------------------------------- hand-computed example


def test_hand_computed_scores_and_weights():
    np.testing.assert_allclose(noise.scores(Q, C), RHO, atol=1e-12)
    expected = np.exp(5 * RHO) / np.exp(5 * RHO).sum()
    np.testing.assert_allclose(noise.weights(noise.scores(Q, C)), expected, rtol=1e-12)
    np.testing.assert_allclose(noise.weights(RHO, alpha=1.0), np.exp(RHO) / np.exp(RHO).sum(), rtol=1e-12)


def test_hand_computed_filter():
    assert noise.filter(Q, C).tolist() == [0, 1, 2]  # ceil(0.7 * 3) = 3
    assert noise.filter(Q, C, keep=0.5).tolist() == [0, 1]  # ceil(1.5) = 2
    assert noise.filter(Q, C, keep=0.1).tolist() == [0]  # at least one
    assert noise.filter(Q, C, keep=1).tolist() == [0]  # an int is a count
    assert noise.filter(Q, C, keep=1.0).tolist() == [0, 1, 2]  # a float is a fraction
    assert noise.filter(Q, C, keep=10).tolist() == [0, 1, 2]  # count capped at n


def test_hand_computed_redundancy():
    assert noise.redundancy_ratio(C) == pytest.approx((0.6 + 0.0 + 0.8) / 3)
    assert noise.redundant_pair_share(C) == 0.0
    assert noise.redundant_pair_share(C, threshold=0.7) == pytest.approx(1 / 3)
    assert noise.redundant_pair_share(C, threshold=0.0) == 1.0


def test_unnormalised_inputs_give_same_results():
    scaled_q, scaled_c = 7.0 * Q, C * np.array([[2.0], [5.0], [0.1]])
    np.testing.assert_allclose(noise.scores(scaled_q, scaled_c), RHO, atol=1e-12)
    assert noise.redundancy_ratio(scaled_c) == pytest.approx(noise.redundancy_ratio(C))


def test_keep_fraction_is_not_inflated_by_float_error():
    rng = np.random.default_rng(0)
    q, c = rng.normal(size=8), rng.normal(size=(100, 8))
    assert 0.55 * 100 > 55  # 55.00000000000001
    assert noise.filter(q, c, keep=0.55).size == 55
    assert noise.filter(q, c[:3], keep=0.7).size == 3  # ceil(2.1)


# --------------------------------------------------------------------------- small and degenerate inputs


def test_single_chunk_score_is_its_cosine():
    assert noise.scores([1.0, 0.0], [[1.0, 1.0]]).tolist() == pytest.approx([math.sqrt(0.5)])
    assert noise.filter([1.0, 0.0], [[1.0, 1.0]]).tolist() == [0]
    assert noise.redundancy_ratio([[1.0, 1.0]]) == 0.0
    assert noise.redundant_pair_share([[1.0, 1.0]]) == 0.0


def test_empty_inputs():
    assert noise.scores([1.0, 0.0], np.empty((0, 2))).size == 0
    assert noise.filter([1.0, 0.0], np.empty((0, 2))).tolist() == []
    assert noise.filter([1.0, 0.0], []).tolist() == []
    assert noise.weights([]).size == 0
    assert noise.redundancy_ratio(np.empty((0, 4))) == 0.0
    assert noise.redundant_pair_share([]) == 0.0


def test_zero_vectors_have_zero_cosine():
    c = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    rho = noise.scores([1.0, 0.0], c)
    # zero chunk: cos 0 to everything; the two identical chunks are penalised by each other only
    np.testing.assert_allclose(rho, [0.0, 1.0 - 0.5, 1.0 - 0.5])
    assert noise.redundancy_ratio(c) == pytest.approx(2 / 6)
    np.testing.assert_allclose(noise.scores([0.0, 0.0], c), [0.0, -0.5, -0.5])
    assert np.all(np.isfinite(noise.normalize(c)))


def test_identical_chunks_are_fully_redundant():
    c = np.tile([0.3, 0.4, 0.5], (4, 1))
    assert noise.redundancy_ratio(c) == pytest.approx(1.0)
    assert noise.redundant_pair_share(c) == 1.0


def test_float32_and_huge_values():
    rng = np.random.default_rng(1)
    q, c = rng.normal(size=16).astype(np.float32), rng.normal(size=(20, 16)).astype(np.float32)
    np.testing.assert_allclose(noise.scores(q, c), naive_scores(q, c), atol=1e-6)
    big = noise.scores(q.astype(float) * 1e200, c.astype(float) * 1e200)
    np.testing.assert_allclose(big, naive_scores(q, c), atol=1e-6)


def test_filter_prefers_the_distinct_chunk_and_drops_the_irrelevant():
    q = np.array([1.0, 0.0, 0.0])
    dup = [0.8, 0.6, 0.0]
    c = np.array([dup, dup, dup, [0.8, -0.6, 0.0], [0.0, 0.0, 1.0]])
    # Equal relevance 0.8, but chunk 3 overlaps the others far less (0.28) than the duplicates do (1.0).
    rho = noise.scores(q, c)
    np.testing.assert_allclose(rho, [0.8 - 2.28 / 4] * 3 + [0.8 - 0.84 / 4, 0.0], atol=1e-12)
    kept = noise.filter(q, c, keep=0.4).tolist()
    assert kept == [3, 0]


# --------------------------------------------------------------------------- properties

vectors = st.integers(1, 6).flatmap(
    lambda d: st.tuples(
        hnp.arrays(np.float64, (d,), elements=st.integers(-5, 5).map(float)),
        st.integers(0, 12).flatmap(
            lambda n: hnp.arrays(np.float64, (n, d), elements=st.integers(-5, 5).map(float))
        ),
    )
)


@SETTINGS
@given(vectors)
def test_scores_match_naive_formula(qc):
    q, c = qc
    np.testing.assert_allclose(noise.scores(q, c), naive_scores(q, c), atol=1e-9)


@SETTINGS
@given(vectors, st.floats(0.01, 1.0), st.floats(0.0, 20.0))
def test_filter_properties(qc, keep, alpha):
    q, c = qc
    n = c.shape[0]
    kept = noise.filter(q, c, alpha=alpha, keep=keep)
    assert kept.dtype == np.int64
    expected = 0 if n == 0 else min(n, max(1, math.ceil(keep * n - 1e-9)))
    assert kept.size == expected
    assert len(set(kept.tolist())) == kept.size
    w = noise.weights(noise.scores(q, c), alpha)
    assert np.all(np.diff(w[kept]) <= 0), "best first"
    if n:
        assert w.sum() == pytest.approx(1.0)
        assert np.all(w >= 0)
        dropped = np.setdiff1d(np.arange(n), kept)
        if dropped.size:
            assert w[dropped].max() <= w[kept].min()


@SETTINGS
@given(vectors)
@example((np.zeros(4), np.array([[1.0, -5.0, -5.0, -5.0], [-1.0, 1.0, -1.0, -4.0]])))  # cosine exactly 0.5
def test_redundancy_matches_naive(qc):
    _, c = qc
    pairs = naive_pairs(c)
    ratio = noise.redundancy_ratio(c)
    if len(pairs) == 0:
        assert ratio == 0.0
    else:
        assert ratio == pytest.approx(float(np.mean(pairs)), abs=1e-9)
        assert -1.0 - 1e-9 <= ratio <= 1.0 + 1e-9
        share = noise.redundant_pair_share(c, threshold=0.5)
        # a pair whose cosine is the threshold itself (e.g. 19/38) may round to either side
        surely = sum(p >= 0.5 + 1e-9 for p in pairs) / len(pairs)
        maybe = sum(p >= 0.5 - 1e-9 for p in pairs) / len(pairs)
        assert surely - 1e-9 <= share <= maybe + 1e-9


@SETTINGS
@given(st.lists(st.floats(-50, 50), max_size=20), st.floats(0.0, 10.0))
def test_weights_monotone_in_rho(rho, alpha):
    w = noise.weights(rho, alpha)
    assert w.shape == (len(rho),)
    if rho:
        assert w.sum() == pytest.approx(1.0)
        order = np.argsort(rho, kind="stable")
        assert np.all(np.diff(w[order]) >= -1e-15)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: noise.scores([1.0, 0.0, 0.0], C), "chunk_vecs"),  # dimension mismatch
        (lambda: noise.scores([float("nan"), 0.0], C), "query_vec"),
        (lambda: noise.scores([1.0, 0.0], [[1.0, float("inf")]]), "chunk_vecs"),
        (lambda: noise.scores([[1.0, 0.0], [0.0, 1.0]], C), "query_vec"),
        (lambda: noise.scores([1.0, 0.0], [1.0, 0.0]), "chunk_vecs"),
        (lambda: noise.scores(["x", "y"], C), "query_vec"),
        (lambda: noise.filter(Q, C, keep=0), "keep"),
        (lambda: noise.filter(Q, C, keep=0.0), "keep"),
        (lambda: noise.filter(Q, C, keep=1.5), "keep"),
        (lambda: noise.filter(Q, C, keep=-2), "keep"),
        (lambda: noise.filter(Q, C, keep=True), "keep"),
        (lambda: noise.filter(Q, C, keep="70%"), "keep"),
        (lambda: noise.filter(Q, C, alpha=float("nan")), "alpha"),
        (lambda: noise.weights([0.0, float("nan")]), "rho"),
        (lambda: noise.weights([[0.0]]), "rho"),
        (lambda: noise.redundant_pair_share(C, threshold=float("nan")), "threshold"),
        (lambda: noise.redundancy_ratio([[[1.0]]]), "chunk_vecs"),
    ],
)
def test_invalid_input_raises_input_error(call, argument):
    with pytest.raises(InputError) as info:
        call()
    assert info.value.argument == argument
