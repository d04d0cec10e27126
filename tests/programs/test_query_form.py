"""The rewrite step's two forms in the agents: verbalized sampling (RewriteQuery) or one query
naming what to look up next (NextQuery), chosen by ``query_form`` / the ``one-query`` preset."""

from __future__ import annotations

import pytest

from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.programs.registry import build_program
from ragnet.signatures import NextQueryStep, RewriteStep


@pytest.mark.parametrize("strategy", ["iterative", "combined", "reflective"])
def test_the_one_query_preset_gives_the_one_query_step_under_the_rewrite_name(strategy):
    sampled = build_program(strategy, NoIndex(), budget=1000)
    one = build_program(f"{strategy}:one-query", NoIndex(), budget=1000)
    assert type(sampled.rewrite) is RewriteStep and isinstance(one.rewrite, NextQueryStep)
    assert one.steps()["rewrite"] is one.rewrite and one.loop.query_form == "one"


def test_an_unknown_form_is_refused_by_name():
    with pytest.raises(InputError, match="must be one of sampled, one") as err:
        build_program("iterative", NoIndex(), query_form="three")
    assert err.value.argument == "loop.query_form"
