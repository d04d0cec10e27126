"""Sentence values and the header-aware sentence knapsack (numpy only)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ragnet.core import sentence_values as S


def test_lead_sentence_keeps_its_share_of_a_relevant_chunk():
    chunk_of = np.array([0, 0, 1, 1])
    lead = np.array([True, False, True, False])
    cos = np.array([0.0, 0.9, 0.0, 0.9])   # the leads match the question worst
    bm25 = np.zeros(4)
    v = S.values(np.array([1.0, 0.5]), chunk_of, lead, cos, bm25, S.SentenceWeights(lead=0.8))
    assert v[0] == pytest.approx(0.8)      # lead of the best chunk: at least `lead` of its relevance
    assert v[1] == pytest.approx(1.0)      # its best-matching sentence: the chunk's whole relevance
    assert v[2] < v[0] and v[3] < v[1]     # the weaker chunk's sentences are worth less


def test_values_follow_chunk_relevance_and_sentence_match():
    chunk_of = np.array([0, 0, 0])
    v = S.values(np.array([1.0]), chunk_of, np.array([False] * 3), np.array([0.1, 0.5, 0.3]), np.zeros(3),
                 S.SentenceWeights(match_weight=1.0, lead=0.0))
    assert np.argmax(v) == 1 and v[1] == pytest.approx(1.0) and v[0] < v[2] < v[1]


def test_empty_candidates():
    assert S.values(np.array([]), np.array([], dtype=int), np.array([], dtype=bool), np.array([]), np.array([])).size == 0
    assert S.pack(np.array([]), np.array([]), np.array([], dtype=int), np.array([]), 100).size == 0


def _brute_force(values, costs, chunk_of, headers, budget):
    best, best_set = 0.0, ()
    n = len(values)
    for r in range(n + 1):
        for subset in itertools.combinations(range(n), r):
            cost = sum(costs[i] for i in subset) + sum(headers[c] for c in {chunk_of[i] for i in subset})
            value = sum(values[i] for i in subset)
            if cost <= budget and value > best + 1e-12:
                best, best_set = value, subset
    return best


@pytest.mark.parametrize("seed", range(30))
def test_pack_fits_the_budget_with_headers_and_is_near_optimal(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 10))
    chunk_of = np.sort(rng.integers(0, 3, size=n))
    values = rng.random(n)
    costs = rng.integers(5, 40, size=n)
    headers = rng.integers(2, 12, size=3)
    budget = int(rng.integers(20, 150))
    picked = S.pack(values, costs, chunk_of, headers, budget)
    used = costs[picked].sum() + headers[np.unique(chunk_of[picked])].sum()
    assert used <= budget
    assert picked.tolist() == sorted(picked.tolist())  # document order within chunks
    # charging headers after the knapsack is a heuristic: it must stay close to the true optimum
    assert values[picked].sum() >= 0.8 * _brute_force(values, costs, chunk_of, headers, budget) - 1e-9


def test_pack_skips_worthless_sentences():
    picked = S.pack(np.array([0.0, 0.5]), np.array([5, 5]), np.array([0, 0]), np.array([3]), 100)
    assert picked.tolist() == [1]


def test_mention_bonus_links_titles_named_by_the_question_or_top_candidates():
    from ragnet.core.links import mention_bonus

    titles = ["Film A", "Jane Doe", "Unrelated Town", "Ed Wood (film)", "Ox"]
    texts = ["Film A was directed by Jane Doe.", "She is Canadian.", "A town.", "Ed Wood is a film.", "An ox."]
    bonus = mention_bonus(titles, texts, "Was Ed Wood older than the director of Film A?", top=1, bonus=0.3)
    assert bonus.tolist() == [0.3, 0.3, 0.0, 0.3, 0.0]  # "Ox" is too short to link
    # a candidate's own text does not link it; a candidate outside the top does not link others
    assert mention_bonus(["Jane Doe"], ["Jane Doe is here."], "who?").tolist() == [0.0]
    assert mention_bonus(titles, texts, "nothing", top=0).tolist() == [0.0] * 5
    # whole phrases only
    assert mention_bonus(["Rome"], ["x"], "Is Romeo in Verona?").tolist() == [0.0]


def test_a_definition_items_term_keeps_the_value_of_its_description():
    # chunk of a manual: '-s' item (opener + a later sentence that matches), then '--sandbox' item
    chunk_of = np.array([0, 0, 0, 0])
    item_of = np.array([-1, 1, 1, 3])
    cos = np.array([0.2, 0.0, 0.9, 0.1])  # the question matches the description's later sentence
    args = (np.array([1.0]), chunk_of, np.zeros(4, dtype=bool), cos, np.zeros(4))
    plain = S.values(*args, S.SentenceWeights(term=0.0), follows=np.array([True]), item_of=item_of)
    kept = S.values(*args, S.SentenceWeights(term=1.0), follows=np.array([True]), item_of=item_of)
    assert plain[1] < 0.1 and kept[1] == pytest.approx(kept[2])  # the term is worth its best sentence
    assert kept[[0, 2, 3]].tolist() == plain[[0, 2, 3]].tolist()  # nothing else moves
    # encyclopedic chunks (not following on) have no items
    prose = S.values(*args, S.SentenceWeights(term=1.0), follows=np.array([False]), item_of=item_of)
    assert prose[1] < 0.1
    # the term floor does not hang on the follow floor being on
    alone = S.values(*args, S.SentenceWeights(term=1.0, follow=0.0), follows=np.array([True]), item_of=item_of)
    assert alone[1] == pytest.approx(alone[2])
    # with a budget for two sentences, the knapsack takes the description with its term
    picked = S.pack(kept, np.array([10, 10, 10, 10]), chunk_of, np.array([3]), budget=23)
    assert picked.tolist() == [1, 2]
