"""The router's LM-free rule: question forms and the clauses of RouteRule."""

from __future__ import annotations

import pytest

from ragnet.core.routing import RouteRule, RouteSignals, question_form
from ragnet.errors import InputError


@pytest.mark.parametrize("question, form", [
    ("Who is the spouse of the director of film West Of Shanghai?", "nested"),        # two roles chain
    ("Where was the director of film Bollywood Calling born?", "nested"),             # asks about the described one
    ("What nationality is Margaretha Van Mechelen's husband?", "nested"),             # a possessive role
    ("What government position was held by the woman who portrayed Corliss Archer?", "nested"),
    ("Which film has the director who died first, Three Violent People or Girls In White?", "nested"),
    ("Which film has the director born first, Shadows In Paradise or Dog Law?", "nested"),
    ("Who is the mother of Infante Antonio Pascual Of Spain?", "plain"),               # who the role is: X's page
    ("What is the place of birth of Marie Curie?", "plain"),                           # an attribute, not a role
    ("Which film was released first, On Body And Soul or Pearl Lust?", "comparison"),
    ("Which film was released more recently, An Empress And The Warriors or Die Screaming, Marianne?", "comparison"),
    ("Does Leslie Pietrzyk have the same nationality as Marianne Wiggins?", "comparison"),
    ("Are Ferocactus and Silene both types of plant?", "comparison"),
    ("Which song was released earlier, Wherever I Lay My Hat (That'S My Home) or Don'T Ya?", "comparison"),
    ("Who did Joan Ramon Ii, Count Of Cardona marry?", "plain"),
])
def test_question_forms(question, form):
    assert question_form(question) == form


def test_the_rule_fires_its_clauses_in_order_and_each_can_be_turned_off():
    bridged = RouteSignals(form="nested", named=1, bridges=("American", "John Farrow"), bridge_titles=("John Farrow",))
    assert RouteRule()(bridged) == ("simple", "default")  # the best name is no document
    assert RouteRule(bridge_names=2)(bridged) == ("hard", "nested+bridge")
    assert RouteRule(bridge_names=0, unanchored=False)(RouteSignals(form="plain", named=0)) == ("simple", "default")
    assert RouteRule()(RouteSignals(form="comparison", named=0)) == ("simple", "default")  # options, not an anchor
    weak = RouteSignals(form="plain", named=1, top_cosine=0.3)
    assert RouteRule()(weak) == ("simple", "default") and RouteRule(min_cosine=0.5)(weak) == ("hard", "weak-search")


def test_signals_are_json_ready_and_bad_thresholds_are_refused():
    s = RouteSignals(form="nested", named=1, bridges=("A",), bridge_titles=("A",), top_cosine=0.123456, title_gap=0.5)
    assert s.to_dict() == {"form": "nested", "named": 1, "bridges": ["A"], "bridge_titles": ["A"],
                           "top_cosine": 0.1235, "title_gap": 0.5, "titles": 0}
    with pytest.raises(InputError, match="'bridge_names': must be an integer >= 0"):
        RouteRule(bridge_names=-1)
    with pytest.raises(InputError, match="'min_cosine': must be a number or None"):
        RouteRule(min_cosine="high")
