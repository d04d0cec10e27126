"""Seeded train/validation splits: deterministic, disjoint, complete, grouped by question."""

from __future__ import annotations

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.optimize.compile import split_examples
from ragnet.optimize.split import seeded_order, train_val_split

IDS = [f"5a{i:04x}" for i in range(50)]


def test_split_is_deterministic_disjoint_and_complete():
    train, val = train_val_split(IDS, val_fraction=0.3, seed=7)
    assert (train, val) == train_val_split(list(reversed(IDS)), val_fraction=0.3, seed=7)  # input order is irrelevant
    assert not set(train) & set(val)
    assert sorted(train + val) == sorted(IDS)
    assert len(val) == 15 and len(train) == 35


def test_seed_changes_the_split_but_not_the_sizes():
    a = train_val_split(IDS, 0.3, seed=0)
    b = train_val_split(IDS, 0.3, seed=1)
    assert a[1] != b[1] and len(a[1]) == len(b[1])


def test_duplicates_are_ignored_and_both_parts_are_never_empty():
    train, val = train_val_split(["a", "a", "b"], val_fraction=0.01, seed=0)
    assert len(train) == 1 and len(val) == 1
    train, val = train_val_split(["a", "b", "c"], val_fraction=0.99, seed=0)
    assert len(train) == 1 and len(val) == 2


@pytest.mark.parametrize("kwargs, argument", [
    ({"val_fraction": 0.0}, "val_fraction"), ({"val_fraction": 1.0}, "val_fraction"),
    ({"val_fraction": "x"}, "val_fraction"), ({"seed": 1.5}, "seed"),
])
def test_bad_arguments_name_the_argument(kwargs, argument):
    with pytest.raises(InputError) as err:
        train_val_split(IDS, **{"val_fraction": 0.3, "seed": 0, **kwargs})
    assert err.value.argument == argument


def test_too_few_ids_is_refused():
    with pytest.raises(InputError, match="at least 2"):
        train_val_split(["only"], 0.5)


def test_seeded_order_depends_on_the_set_only():
    assert seeded_order(["b", "c", "a"], seed=3) == seeded_order(["a", "b", "c", "a"], seed=3)


def test_split_examples_keeps_cases_of_one_question_together():
    cases = [dspy.Example(id=f"q{i}:{label}", qid=f"q{i}", verdict=label) for i in range(10) for label in "SR"]
    train, val = split_examples(cases, 0.3, seed=0)
    train_q, val_q = {c.qid for c in train}, {c.qid for c in val}
    assert not train_q & val_q
    assert len(val_q) == 3 and len(val) == 6 and len(train) == 14
    assert split_examples(cases, 0.3, seed=0) == (train, val)
