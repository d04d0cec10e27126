"""Ranked budget selections: budgets hold, and protected always keeps the strict rank prefix."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragnet.core import selection

tokens_st = st.lists(st.integers(1, 400), min_size=0, max_size=40)


@settings(max_examples=200, deadline=None)
@given(tokens=tokens_st, budget=st.integers(0, 3000), seed=st.integers(0, 10_000))
def test_selections_respect_budget_and_protected_keeps_the_prefix(tokens, budget, seed):
    tokens = np.array(tokens, dtype=np.int64)
    rel = np.sort(np.random.default_rng(seed).random(tokens.size))[::-1]
    prefix = selection.rank_prefix(tokens, budget)
    fill = selection.rank_fill(tokens, budget)
    prot = selection.protected(rel, tokens, budget)
    for picked in (prefix, fill, prot):
        assert tokens[picked].sum() <= budget
        assert len(set(picked.tolist())) == picked.size
    assert prot[: prefix.size].tolist() == prefix.tolist()
    assert set(prefix.tolist()) <= set(fill.tolist())
    # A candidate rank_fill skipped did not fit next to what it had taken before it.
    for i in set(range(tokens.size)) - set(fill.tolist()):
        assert tokens[i] + tokens[fill[fill < i]].sum() > budget


def test_hand_worked_example():
    tokens = np.array([50, 60, 30, 10])
    rel = np.array([1.0, 0.9, 0.5, 0.4])
    assert selection.rank_prefix(tokens, 100).tolist() == [0]
    assert selection.rank_fill(tokens, 100).tolist() == [0, 2, 3]
    assert selection.protected(rel, tokens, 100).tolist() == [0, 2, 3]  # prefix [0]; knapsack on 50 left
    assert selection.protected(rel, tokens, 120).tolist() == [0, 1, 3]  # prefix [0, 1] = 110; 10 left


@settings(max_examples=200, deadline=None)
@given(tokens=tokens_st, budget=st.integers(0, 3000), seed=st.integers(0, 10_000),
       method=st.sampled_from(selection.METHODS))
def test_select_dispatches_each_method_and_orders_best_first(tokens, budget, seed, method):
    from ragnet.core import knapsack

    tokens = np.array(tokens, dtype=np.int64)
    scores = np.sort(np.random.default_rng(seed).random(tokens.size))[::-1]
    rel = selection.relevance(scores, "exp", 0.1)
    picked = selection.select(tokens, budget, method, scores=scores, temperature=0.1, k=5)
    assert picked.tolist() == selection.select(tokens, budget, method, rel=rel, k=5).tolist()
    if method == "top":
        assert picked.tolist() == list(range(min(5, tokens.size)))
        return
    assert tokens[picked].sum() <= budget and len(set(picked.tolist())) == picked.size
    if method == "rank":
        assert picked.tolist() == selection.rank_fill(tokens, budget).tolist()
    elif method == "rank-prefix":
        assert picked.tolist() == selection.rank_prefix(tokens, budget).tolist()
    elif method == "protected":
        prefix = selection.rank_prefix(tokens, budget).tolist()
        assert sorted(picked.tolist()) == sorted(selection.protected(rel, tokens, budget).tolist())
        assert picked[: len(prefix)].tolist() == prefix
        rest = picked[len(prefix):].tolist()
        assert rest == sorted(rest, key=lambda i: (-rel[i], i))
    elif tokens.size and budget > 0:
        expected = knapsack.select(rel, tokens, budget, method=method).tolist()
        assert picked.tolist() == sorted(expected, key=lambda i: (-rel[i], i))


def test_select_refuses_unknown_methods_and_knapsacks_without_scores():
    import pytest

    from ragnet.errors import InputError

    with pytest.raises(InputError, match="unknown selection method 'best'") as err:
        selection.select(np.array([1]), 10, "best")
    assert err.value.argument == "method"
    with pytest.raises(InputError, match="needs scores"):
        selection.select(np.array([1]), 10, "exact")
    assert selection.select(np.array([5, 5]), 0, "protected", scores=np.array([1.0, 0.5])).tolist() == []
