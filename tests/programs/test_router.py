"""RouterRAG: routes chosen from the first search without an LM, recorded in the trace and on the
Prediction; each route runs its own program; the registry builds it; save/load round-trips."""

from __future__ import annotations

import json

import pytest

from ragnet import Document, Index
from ragnet.core.routing import RouteRule
from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.programs import STRATEGIES, IterativeRAG, LMSteps, OneShotRAG, RouterRAG
from ragnet.programs.persist import load_program, save_program
from ragnet.programs.registry import BUDGETED, build_program, parse_spec, spec_options
from tests.programs.scripted import ProgramLM

NESTED = "Who is the spouse of the director of film West Of Shanghai?"
COMPARISON = "Were Scott Derrickson and Ed Wood of the same nationality?"
UNANCHORED = "Which drink is made from leaves?"
# At this budget the first context holds one or two chunks: the film's page, not its director's
TIGHT = 480


@pytest.fixture(scope="module")
def films(tmp_path_factory):
    docs = [
        Document(id="wos", title="West of Shanghai", text="West of Shanghai is a 1937 American drama film directed by "
                 "John Farrow. It stars Boris Karloff as a Chinese warlord. The film was shot in California."),
        Document(id="jf", title="John Farrow", text="John Farrow was an Australian film director and screenwriter. "
                 "He was married to the actress Maureen O'Sullivan."),
        Document(id="sx", title="Shanghai Express", text="Shanghai Express is a 1932 film directed by Josef von "
                 "Sternberg. It was a box office success."),
        Document(id="ls", title="The Lady from Shanghai", text="The Lady from Shanghai is a 1947 film noir directed by "
                 "Orson Welles. It stars Rita Hayworth, his spouse at the time."),
        Document(id="sn", title="Shanghai Noon", text="Shanghai Noon is a 2000 western comedy film. The director was Tom Dey."),
        Document(id="cb", title="Casablanca", text="Casablanca is a 1942 romantic drama film directed by Michael Curtiz."),
        Document(id="ed", title="Ed Wood", text="Ed Wood was an American filmmaker born in 1924."),
        Document(id="sd", title="Scott Derrickson", text="Scott Derrickson is an American director born in 1966."),
    ]
    return Index.build(docs, tmp_path_factory.mktemp("films") / "index", show_progress=False)


def _route_event(pred):
    (event,) = [e for e in pred.trace if e["step"] == "route"]
    return event


def test_a_nested_question_whose_evidence_names_a_missing_document_takes_the_hard_route(films, run_with):
    with run_with(ProgramLM()) as lm:
        pred = RouterRAG(films, budget=TIGHT)(question=NESTED)
    event = _route_event(pred)
    assert pred.route == event["route"] == "hard" and event["rule"] == "nested+bridge"
    assert event["program"] == "oneshot:sentences+hops"
    assert event["signals"]["form"] == "nested" and event["signals"]["bridge_titles"][0] == "John Farrow"
    probe = [e for e in pred.trace if e.get("probe")]
    assert {e["step"] for e in probe} >= {"search", "select"} and pred.trace.index(probe[-1]) < pred.trace.index(event)
    assert not [e for e in pred.trace[pred.trace.index(event):] if e.get("probe")]  # the hard program's own are not
    first = [e for e in pred.trace if e["step"] == "select"][0]["kept"]
    assert "jf#0" not in first  # the first search's context lacks the director's page ...
    (hops,) = [e for e in pred.trace if e["step"] == "hops"]  # ... so the hard route searched for its director
    assert hops["queries"][0].startswith("John Farrow")
    assert [e["query"] for e in pred.trace if e["step"] == "search" and e["turn"] == 2][0] == hops["queries"][0]
    steps = [e["step"] for e in pred.trace]
    assert steps.index("route") < steps.index("hops")  # decided before the hard program ran
    assert lm.steps() == ["answer"] and pred.usage["lm_calls"] == 1


def test_the_same_question_stays_simple_when_the_first_search_already_holds_the_bridge(films, run_with):
    with run_with(ProgramLM()) as lm:
        pred = RouterRAG(films, budget=600)(question=NESTED)
    assert "jf#0" in pred.context
    assert pred.route == "simple" and _route_event(pred)["rule"] == "default"
    assert len([e for e in pred.trace if e["step"] == "search"]) == 1  # the first search is answered from, not repeated
    assert not [e for e in pred.trace if e.get("probe")]  # it was the simple route's own search
    assert lm.steps() == ["answer"]


def test_a_comparison_of_named_documents_is_answered_from_the_first_search(films, run_with):
    with run_with(ProgramLM()):
        pred = RouterRAG(films, budget=TIGHT)(question=COMPARISON)
    event = _route_event(pred)
    assert pred.route == "simple" and event["program"] == "oneshot:sentences"
    assert event["signals"]["form"] == "comparison" and event["signals"]["named"] == 2
    assert {"sd#0", "ed#0"} <= set(pred.context)
    searches = [e for e in pred.trace if e["step"] == "search"]
    assert len(searches) == 1 and not [e for e in pred.trace if e["step"] == "hops"]
    assert pred.answer == "scripted answer"


def test_a_question_naming_no_document_of_its_first_context_is_unanchored(films, run_with):
    with run_with(ProgramLM()):
        pred = RouterRAG(films, budget=TIGHT)(question=UNANCHORED)
    event = _route_event(pred)
    assert (pred.route, event["rule"], event["signals"]["named"]) == ("hard", "unanchored", 0)
    assert RouterRAG(films, budget=TIGHT, rule=RouteRule(unanchored=False)).route(UNANCHORED)[:2] == ("simple", "default")


def test_the_hard_route_runs_the_agent_and_the_simple_route_makes_one_call(films, run_with):
    router = build_program("router:iterative", films, budget=TIGHT)
    with run_with(ProgramLM()) as lm:
        hard = router(question=NESTED)
    assert hard.route == "hard" and _route_event(hard)["program"] == "iterative:no-rewrite+no-delete+sentences"
    assert "rewrite" not in lm.steps() and lm.steps().count("answer") == 1 and len(lm.steps()) > 1  # the agent's steps
    with run_with(ProgramLM()) as lm:
        simple = router(question=COMPARISON)
    assert simple.route == "simple" and lm.steps() == ["answer"]


def test_a_callable_rule_decides_and_its_reason_is_recorded(films, run_with):
    seen = []

    def always_hard(signals):
        seen.append(signals)
        return "hard", "my rule"

    with run_with(ProgramLM()):
        pred = RouterRAG(films, budget=TIGHT, rule=always_hard)(question=COMPARISON)
    assert pred.route == "hard" and _route_event(pred)["rule"] == "my rule" and seen[0].form == "comparison"
    assert RouterRAG(films, budget=TIGHT, rule=lambda s: "simple").route(NESTED)[:2] == ("simple", "<lambda>")
    with pytest.raises(InputError, match="returned route 'maybe'") as err:
        RouterRAG(films, budget=TIGHT, rule=lambda s: ("maybe", "?")).route(NESTED)
    assert err.value.argument == "rule"
    with pytest.raises(InputError, match="RouteRule or a callable") as err:
        RouterRAG(films, rule=0.5)
    assert err.value.argument == "rule"


# -- registry ------------------------------------------------------------------------------------


def test_the_registry_builds_the_router_with_its_presets_and_budget():
    assert "router" in STRATEGIES and "router" in BUDGETED
    assert parse_spec("router:iterative+cot") == ("router", ("iterative", "cot"))
    assert spec_options("router:hops")[1] == {"hard": "oneshot:sentences+hops"}
    router = build_program("router:iterative", NoIndex(), budget=1000)
    assert isinstance(router.simple, OneShotRAG) and router.simple.pack.sentences and router.simple.budget == 1000
    assert isinstance(router.hard, IterativeRAG) and router.hard.budget == 1000 and not router.hard.rewrite.enabled
    default = build_program("router", NoIndex())
    assert default.hard.hops.searches == 3 and default.hard.pack.sentences and default.budget == 4000
    with pytest.raises(InputError, match="set hard to"):
        parse_spec("router:hops+iterative")


@pytest.mark.parametrize("kwargs, argument, words", [
    ({"simple": "oneshot:crop"}, "simple", "retrieval makes no LM call"),
    ({"simple": "iterative"}, "simple", "must be a oneshot spec"),
    ({"hard": "router"}, "hard", "cannot be another router"),
    ({"hard": "oneshot:sentences+cot"}, "hard", "give them to the router (e.g. router:cot)"),
    ({"hard": "nope"}, "hard", "unknown strategy 'nope'"),
    ({"hard": 3}, "hard", "expected a strategy spec"),
    ({"budget": 0}, "budget", "must be an integer >= 1"),
])
def test_bad_routes_are_refused_naming_the_argument(kwargs, argument, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")) as err:
        build_program("router", NoIndex(), **kwargs)
    assert err.value.argument == argument


def test_routes_given_as_programs_are_checked_too():
    index = NoIndex()
    with pytest.raises(InputError, match="retrieval makes no LM call") as err:
        RouterRAG(index, simple=OneShotRAG(index, lm_steps=LMSteps(crop=True)))
    assert err.value.argument == "simple"
    with pytest.raises(InputError, match="other than a router") as err:
        RouterRAG(index, hard=RouterRAG(index))
    assert err.value.argument == "hard"
    router = RouterRAG(index, hard=IterativeRAG(index, budget=1000))
    assert router.hard_spec == "IterativeRAG" and router.simple.pack.sentences


def test_both_routes_share_the_routers_answer_step():
    router = build_program("router:cot+qlast", NoIndex())
    assert router.answer is router.simple.answer is router.hard.answer
    assert router.answer.reasoning and router.answer.question_at == "last"
    default = build_program("router", NoIndex())  # one reader where both strategies place the question alike
    assert default.answer is default.simple.answer is default.hard.answer and default.answer.question_at == "auto"
    basic = build_program("router", NoIndex(), hard="basic")  # each route keeps its strategy's question place
    assert (basic.simple.answer.question_at, basic.hard.answer.question_at) == ("auto", "first")
    assert [name for name, _ in basic.named_predictors()].count("hard.answer.predict") == 1


# -- steps, optimize, save/load -----------------------------------------------------------------


def test_steps_reach_both_routes_and_a_compiled_step_goes_into_each_route_that_has_it():
    router = build_program("router:iterative", NoIndex())
    assert {"answer", "crop", "filter", "sufficiency", "rewrite", "contextualize", "delete"} <= set(router.steps())
    compiled = router.steps()["answer"].deepcopy()
    compiled.predict.demos = [{"question": "q", "answer": "a"}]
    router.set_step("answer", compiled)
    assert router.simple.answer.predict.demos == router.hard.answer.predict.demos == compiled.predict.demos
    verdicts = router.steps()["sufficiency"].deepcopy()
    verdicts.predict.demos = [{"question": "q", "verdict": "Refine"}]
    router.set_step("sufficiency", verdicts)  # only the agent has it
    assert router.hard.sufficiency.predict.demos == verdicts.predict.demos
    with pytest.raises(InputError, match="no judge step") as err:
        router.set_step("judge", compiled)
    assert err.value.argument == "step"
    router.retries = 3
    assert {s.retries for s in router.simple.steps().values()} | {s.retries for s in router.hard.steps().values()} == {3}
    assert router.max_lm_calls() == router.hard.max_lm_calls() > 1


def test_save_and_load_round_trip_the_compiled_steps_of_both_routes(tmp_path):
    router = build_program("router:iterative", NoIndex())
    demo = {"question": "Who?", "answer": "Ann", "context": "x"}
    router.simple.answer.predict.demos = [demo]
    router.hard.sufficiency.predict.demos = [{"question": "Who?", "verdict": "Refine"}]
    path = save_program(router, tmp_path / "router.json")
    state = json.loads(path.read_text())
    assert state["metadata"]["ragnet"]["program"] == "RouterRAG"
    loaded = load_program(build_program("router:iterative", NoIndex()), path)
    assert [dict(d) for d in loaded.simple.answer.predict.demos] == [demo]
    assert [dict(d) for d in loaded.hard.sufficiency.predict.demos] == [{"question": "Who?", "verdict": "Refine"}]
    with pytest.raises(InputError, match="hard.sufficiency") as err:  # a router with another hard route
        load_program(build_program("router", NoIndex()), path)
    assert str(path) in str(err.value)


def test_the_oracle_is_refused_outside_eval_with_the_reason():
    with pytest.raises(InputError, match="gold evidence, so it runs only in `ragnet eval") as err:
        parse_spec("oracle")
    assert err.value.argument == "strategy"
