"""Tests for ragnet.core.knapsack: optimality vs brute force, feasibility, edge cases, validation."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragnet.core import knapsack
from ragnet.bench.core import synthetic_candidates
from ragnet.errors import InputError

SETTINGS = settings(max_examples=200, deadline=None)


def brute_force(v, w, budget) -> float:
    """Best total value over all subsets (the empty set counts, so the optimum is >= 0)."""
    v, w = np.asarray(v, float), np.asarray(w, np.int64)
    n = v.size
    if n == 0:
        return 0.0
    masks = ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1).astype(bool)
    feasible = masks @ w <= budget
    return float((masks @ v)[feasible].max())


@st.composite
def small_problems(draw, max_tokens=60, max_budget=300):
    n = draw(st.integers(0, 15))
    rel = draw(st.lists(st.floats(-1.0, 10.0, allow_nan=False), min_size=n, max_size=n))
    tok = draw(st.lists(st.integers(1, max_tokens), min_size=n, max_size=n))
    budget = draw(st.integers(0, max_budget))
    return rel, tok, budget


@st.composite
def large_budget_problems(draw):
    """n <= 15 with budgets so large that items x (budget + 1) exceeds the dense DP cell limit."""
    n = draw(st.integers(1, 15))
    rel = draw(st.lists(st.floats(0.0, 10.0, allow_nan=False), min_size=n, max_size=n))
    tok = draw(st.lists(st.integers(1, 2_000_000), min_size=n, max_size=n))
    frac = draw(st.floats(0.05, 0.95))
    budget = max(knapsack.DENSE_CELL_LIMIT, int(frac * sum(tok)))
    return rel, tok, budget


def check_feasible(result, rel, tok, budget):
    idx = result.indices
    tok = np.asarray(tok, np.int64)
    rel = np.asarray(rel, float)
    assert idx.dtype == np.int64
    assert len(set(idx.tolist())) == idx.size
    assert int(tok[idx].sum()) == result.tokens_used <= budget
    assert np.all(rel[idx] > 0)
    assert result.value == pytest.approx(float(rel[idx].sum()))
    assert result.upper_bound >= result.value - 1e-12
    assert np.all(np.diff(rel[idx]) <= 0), "indices must be sorted by relevance, descending"


# --------------------------------------------------------------------------- optimality


@SETTINGS
@given(small_problems())
def test_exact_equals_brute_force_on_small_budgets(problem):
    rel, tok, budget = problem
    result = knapsack.select_with_info(rel, tok, budget)
    check_feasible(result, rel, tok, budget)
    assert result.value == pytest.approx(brute_force(rel, tok, budget), abs=1e-9)
    assert result.optimal


@SETTINGS
@given(large_budget_problems())
def test_exact_equals_brute_force_on_large_budgets(problem):
    rel, tok, budget = problem
    result = knapsack.select_with_info(rel, tok, budget)
    check_feasible(result, rel, tok, budget)
    assert result.value == pytest.approx(brute_force(rel, tok, budget), abs=1e-9)


@st.composite
def scaled_problems(draw):
    """Large-budget problems with realistic (seeded random) data, for the scaled-weight path."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(2, 15))
    rng = np.random.default_rng(seed)
    rel = rng.random(n) + 0.01
    tok = rng.integers(10_000, 1_000_000, n)
    budget = max(knapsack.DENSE_CELL_LIMIT, int(rng.uniform(0.2, 0.8) * tok.sum()))
    return rel, tok, budget


@SETTINGS
@given(scaled_problems())
def test_scaled_path_within_half_percent_of_brute_force(problem):
    rel, tok, budget = problem
    # Disable the exact Pareto solver so the core falls through to dense DP on scaled weights.
    with mock.patch.object(knapsack, "PARETO_WORK_LIMIT", 0):
        result = knapsack.select_with_info(rel, tok, budget)
    check_feasible(result, rel, tok, budget)
    best = brute_force(rel, tok, budget)
    assert result.value >= best * (1 - 0.005) - 1e-12
    assert not result.optimal or result.value == pytest.approx(best)


@SETTINGS
@given(
    st.lists(st.integers(1, 10**6), min_size=1, max_size=15),
    st.integers(1, 10**7),
    st.integers(1, 4096),
)
def test_scaled_dp_always_fits(tok, budget, cell_limit):
    tok = np.asarray(tok, np.int64)
    rel = np.linspace(1.0, 2.0, tok.size)
    mask = knapsack._scaled_dp(rel, tok, budget, cell_limit)
    assert int(tok[mask].sum()) <= budget


@SETTINGS
@given(small_problems(max_tokens=10**5, max_budget=10**7))
def test_pareto_dp_is_exact(problem):
    rel, tok, budget = problem
    rel, tok = np.asarray(rel, float), np.asarray(tok, np.int64)
    keep = (rel > 0) & (tok <= budget)
    mask = knapsack._pareto_dp(rel[keep], tok[keep], budget, 1 << 20)
    assert mask is not None
    assert int(tok[keep][mask].sum()) <= budget
    assert float(rel[keep][mask].sum()) == pytest.approx(brute_force(rel, tok, budget), abs=1e-9)


# --------------------------------------------------------------------------- feasibility, greedy


@st.composite
def medium_problems(draw):
    n = draw(st.integers(0, 80))
    rel = draw(st.lists(st.floats(-0.5, 5.0, allow_nan=False), min_size=n, max_size=n))
    tok = draw(st.lists(st.integers(1, 2000), min_size=n, max_size=n))
    budget = draw(st.integers(0, 60_000))
    return rel, tok, budget


@SETTINGS
@given(medium_problems())
def test_budget_never_exceeded_and_greedy_not_better(problem):
    rel, tok, budget = problem
    exact = knapsack.select_with_info(rel, tok, budget, method="exact")
    greedy = knapsack.select_with_info(rel, tok, budget, method="greedy")
    check_feasible(exact, rel, tok, budget)
    check_feasible(greedy, rel, tok, budget)
    assert greedy.value <= exact.value + 1e-9
    assert exact.upper_bound == pytest.approx(greedy.upper_bound)
    assert greedy.value >= 0.5 * exact.value - 1e-9  # greedy + best single item is a 1/2-approximation


@SETTINGS
@given(small_problems())
def test_select_matches_select_with_info(problem):
    rel, tok, budget = problem
    for method in knapsack.METHODS:
        info = knapsack.select_with_info(rel, tok, budget, method)
        np.testing.assert_array_equal(knapsack.select(rel, tok, budget, method), info.indices)
        assert info.method == method


@pytest.mark.parametrize("n", [200, 500, 1000])
@pytest.mark.parametrize("kind", ["calibrated", "uniform"])
def test_large_random_within_half_percent_of_lp_bound(n, kind):
    for seed in range(5):
        rel, tok = synthetic_candidates(n, seed)
        if kind == "uniform":
            rel = np.random.default_rng(seed).random(n)
        budget = int(0.3 * tok.sum())
        result = knapsack.select_with_info(rel, tok, budget)
        check_feasible(result, rel, tok, budget)
        assert result.upper_bound == pytest.approx(knapsack.upper_bound(rel, tok, budget))
        assert result.gap <= 0.005
        assert result.value >= (1 - 0.005) * result.upper_bound


def test_exact_matches_full_dp_on_realistic_instance():
    rel, tok = synthetic_candidates(400, seed=3)
    budget = 12_000
    optimum = float(rel[knapsack._dense_dp(rel, tok, budget)].sum())
    result = knapsack.select_with_info(rel, tok, budget)
    assert result.value == pytest.approx(optimum, rel=1e-3)
    assert result.value <= optimum + 1e-12



def test_optimum_is_the_brute_force_best():
    rel, tok = synthetic_candidates(12, seed=5)
    budget = int(0.4 * tok.sum())
    assert knapsack.optimum(rel, tok, budget) == pytest.approx(brute_force(rel, tok, budget))
    assert knapsack.optimum([1.0], [50], 10) == 0.0


# --------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("method", knapsack.METHODS)
def test_edge_cases(method):
    def sel(rel, tok, budget):
        return knapsack.select(rel, tok, budget, method=method).tolist()

    assert sel([], [], 100) == []
    assert sel([1.0, 2.0], [10, 10], 0) == []
    assert sel([1.0, 2.0], [101, 200], 100) == []  # every item is larger than the budget
    assert sel([0.0, -1.0, 0.5], [1, 1, 1], 10) == [2]  # zero/negative relevance never selected
    assert sel([0.0, -3.0], [1, 1], 10) == []
    assert sel([0.7], [10], 10) == [0]  # single item, exact fit
    assert sel([0.7], [11], 10) == []
    assert sel([1.0, 5.0, 3.0], [1, 1, 1], 10) == [1, 2, 0]  # all fit: sorted by relevance
    assert sel([2.0, 1.0], [5, 5], 5.9) == [0]  # float budget rounds down
    assert sel([1.0, 2.0], [5, 5], 10**30) == [1, 0]  # budget beyond int64


def test_empty_result_info():
    info = knapsack.select_with_info([], [], 10)
    assert info.indices.size == 0 and info.value == 0.0 and info.tokens_used == 0
    assert info.upper_bound == 0.0 and info.optimal and info.gap == 0.0


def test_greedy_takes_best_single_item_when_better():
    # Density favours the small item, but the big one alone is worth more.
    rel, tok = [1.0, 10.0], [1, 100]
    assert knapsack.select(rel, tok, 100, method="greedy").tolist() == [1]


def test_exact_beats_greedy_on_classic_instance():
    rel, tok = [0.9, 0.6, 0.5], [300, 200, 200]
    assert knapsack.select(rel, tok, 400).tolist() == [1, 2]
    assert knapsack.select(rel, tok, 400, method="greedy").tolist() == [0]


def test_accepts_numpy_and_whole_float_tokens():
    rel = np.array([0.5, 0.4], dtype=np.float32)
    assert knapsack.select(rel, np.array([10.0, 20.0]), np.int64(30)).tolist() == [0, 1]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("rel", "tok", "budget", "method", "argument"),
    [
        ([1.0, 2.0], [1], 10, "exact", "tokens"),
        ([1.0, float("nan")], [1, 1], 10, "exact", "relevance"),
        ([1.0, float("inf")], [1, 1], 10, "exact", "relevance"),
        ([1.0, 2.0], [1, 0], 10, "exact", "tokens"),
        ([1.0, 2.0], [1, -5], 10, "greedy", "tokens"),
        ([1.0], [1.5], 10, "exact", "tokens"),
        ([1.0], [1], -1, "exact", "budget"),
        ([1.0], [1], float("nan"), "exact", "budget"),
        ([1.0], [1], "10", "exact", "budget"),
        ([1.0], [1], 10, "dp", "method"),
        ([[1.0]], [1], 10, "exact", "relevance"),
        (["a"], [1], 10, "exact", "relevance"),
    ],
)
def test_invalid_input_raises_input_error(rel, tok, budget, method, argument):
    with pytest.raises(InputError) as info:
        knapsack.select(rel, tok, budget, method=method)
    assert info.value.argument == argument
    assert argument in str(info.value)


def test_error_names_offending_item():
    with pytest.raises(InputError, match="item 2"):
        knapsack.select([1, 1, 1], [5, 5, 0], 10)
