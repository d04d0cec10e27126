"""The agents on the one-shot's footing: a small local reader gets every budgeted strategy at the
reader budget with sentence packing, the agents lay out the answer prompt per question, ReflectiveRAG
packs what it gathered with the agents' final pack, and every loop says why it stopped."""

from __future__ import annotations

import dspy
import pytest

from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Document
from ragnet.errors import InputError
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.index import Index
from ragnet.programs import CombinedRAG, IterativeRAG, LMSteps, Loop, Pack, Reflection, ReflectiveRAG, Search
from ragnet.programs.agent import STOP_REASONS
from ragnet.programs.registry import answer_layout, build_program, resolve_strategy
from tests.programs.scripted import ProgramLM

Q = "Which city had more hospital beds in 2022, Aldermoor or Brightwater?"
ONE_ENTITY_Q = "How many hospital beds did Aldermoor have in 2022?"
NO_DELETE = LMSteps(delete=False)  # the no-delete preset


def events(pred, step):
    return [e for e in pred.trace if e["step"] == step]


def refine_naming(missing):
    """A sufficiency step that always says Refine, naming ``missing(n)`` on its n-th call."""
    return lambda p, n: {"verdict": "Refine", "confidence": 0.3, "missing": missing(n)}


# -- the recommendation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reader", ["local", "local:/models/any.gguf", dspy.LM("llamacpp/qwen2.5-coder-1.5b")])
def test_a_local_reader_gets_every_budgeted_strategy_at_1000_tokens_of_sentences(reader):
    assert resolve_strategy("iterative", None, reader) == ("iterative:sentences", 1000)
    assert resolve_strategy("reflective", None, reader) == ("reflective:sentences", 1000)
    assert resolve_strategy("combined", None, reader) == ("combined:sentences", 1000)
    assert resolve_strategy("oneshot", None, reader) == ("oneshot:sentences", 1000)
    # the user's presets stay, and sentences is added once
    assert resolve_strategy("iterative:no-delete+qlast", None, reader) == ("iterative:no-delete+qlast+sentences", 1000)
    assert resolve_strategy("combined:sentences", None, reader) == ("combined:sentences", 1000)
    # no budget to give: as named
    assert resolve_strategy("basic:k10", None, reader) == ("basic:k10", None)


def test_a_budget_given_or_another_reader_keeps_the_strategy_as_named(monkeypatch):
    assert resolve_strategy("iterative", 2000, "local") == ("iterative", 2000)
    for reader in ("openai/gpt-4o-mini", dspy.LM("openai/gpt-4o-mini")):
        assert resolve_strategy("iterative", None, reader) == ("iterative", None)
        assert resolve_strategy("reflective", None, reader) == ("reflective", None)
        assert resolve_strategy("combined", None, reader) == ("combined", None)
    monkeypatch.setenv("RAGNET_LM", "openai/gpt-4o-mini")  # None: the configured default reader
    assert resolve_strategy("iterative", None, None) == ("iterative", None)
    monkeypatch.delenv("RAGNET_LM")
    assert resolve_strategy("iterative", None, None) == ("iterative:sentences", 1000)
    with pytest.raises(InputError) as err:
        resolve_strategy("iterative:no-such-preset", None, "local")
    assert err.value.argument == "strategy"


@pytest.mark.parametrize("strategy", ["iterative", "reflective", "combined"])
def test_what_the_recommendation_resolves_to_builds_a_sentence_pack_at_1000(yearbook_index, strategy):
    spec, budget = resolve_strategy(strategy, None, "local")
    program = build_program(spec, yearbook_index, budget=budget)
    assert (program.budget, program.pack.sentences) == (1000, True)


# -- the answer layout ------------------------------------------------------------------------------------

def test_the_agents_lay_out_the_answer_prompt_per_question_as_the_one_shot_does(yearbook_index, run_with):
    for spec in ("iterative", "reflective", "combined", "iterative:no-delete+sentences"):
        assert answer_layout(spec) == answer_layout("oneshot:sentences") == {"question_at": "auto", "reasoning": False, "evidence_order": "auto"}
        assert build_program(spec, yearbook_index, budget=1000).answer.question_at == "auto"
    for program in (IterativeRAG(yearbook_index, loop=Loop(max_turns=1, k=2)),
                    ReflectiveRAG(yearbook_index, reflection=Reflection(max_reflections=0))):
        with run_with(ProgramLM()) as lm:
            pred = program(question=ONE_ENTITY_Q)
        (prompt,) = [p for s, p in lm.calls if s == "answer"]
        assert prompt.rindex("[[ ## question ## ]]") > prompt.rindex("[[ ## context ## ]]")  # after the context
        assert "[[ ## question_preview ## ]]" not in prompt  # one entity named: no preview
        assert events(pred, "answer")[0]["question_at_rule"] == "auto"
    with run_with(ProgramLM()) as lm:  # a question that names two options gets the preview too
        IterativeRAG(yearbook_index, loop=Loop(max_turns=1, k=2))(question=Q)
    (prompt,) = [p for s, p in lm.calls if s == "answer"]
    assert "[[ ## question_preview ## ]]" in prompt


# -- ReflectiveRAG's final pack ------------------------------------------------------------------------

def test_reflective_packs_what_it_gathered_into_the_answer_budget(yearbook_index, run_with):
    """With a budget the reflections run exactly as without one; noise removal's survivors are
    packed into it, best calibrated relevance first, as the agents pack theirs."""
    def run(budget=None, sentences=False):
        reflection = Reflection(max_reflections=2, tau=0.0)
        with run_with(ProgramLM(sufficiency=refine_naming(lambda n: f"fact {n}"))) as lm:
            program = ReflectiveRAG(yearbook_index, budget, pack=Pack(sentences=sentences), reflection=reflection)
            pred = program(question=Q)
        (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
        return pred, lm, answer_prompt

    full, full_lm, _ = run()
    assert not events(full, "select") and full.context == events(full, "noise")[0]["kept"]
    packed, packed_lm, prompt = run(budget=900)
    searched = lambda pred: [(e["turn"], e["query"], e["retrieved"]) for e in events(pred, "search")]
    assert searched(packed) == searched(full) and len(events(packed, "search")) == 3
    assert [c for c in packed_lm.calls if c[0] != "answer"] == [c for c in full_lm.calls if c[0] != "answer"]
    (select,) = events(packed, "select")
    assert select["budget"] == 900 and select["tokens"] <= 900 and count_tokens(prompt) <= 900
    assert packed.context == select["kept"] and 0 < len(packed.context) < len(full.context)
    assert set(packed.context) <= set(events(packed, "noise")[0]["kept"])  # noise removal, then the pack
    assert packed.context[0] == events(packed, "search")[0]["retrieved"][0]  # best calibrated relevance first

    sentences, _, prompt = run(budget=700, sentences=True)
    (select,) = events(sentences, "select")
    assert select["method"] == "sentences" and select["tokens"] <= 700 and count_tokens(prompt) <= 700
    assert events(sentences, "crop") and any(len(s["kept"]) < s["of"] for s in select["sentences"])
    with pytest.raises(InputError) as err:
        ReflectiveRAG(yearbook_index, pack=Pack(sentences=True))
    assert err.value.argument == "budget"
    with pytest.raises(InputError) as err:
        ReflectiveRAG(yearbook_index, budget=0)
    assert err.value.argument == "budget"


def test_reflective_and_iterative_pack_the_same_gathered_chunks_alike(yearbook_index, run_with):
    """One final pack for every agent: given the chunks ReflectiveRAG gathered, with the same
    per-cast relevance, IterativeRAG's pack picks the same context."""
    from ragnet.programs.agent import Gathered
    from ragnet.programs.trace import Trace

    trace, state = Trace(), Gathered()
    for query in (Q, "Brightwater hospital beds 2022"):
        hits = yearbook_index.search(query, k=5, exclude={c.id for c in state.context})
        trace.add("search", query=query, retrieved=[h.id for h in hits])
        state.take(hits, trace.of("search")[-1:], "exp", 0.1)
    for sentences in (False, True):
        packs = []
        for program in (ReflectiveRAG(yearbook_index, 800, pack=Pack(sentences=sentences)),
                        IterativeRAG(yearbook_index, 800, pack=Pack(sentences=sentences))):
            with dspy.context(adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
                chunks, _ = program._pack_final(Q, program._ranked_for_pack(state), "", Trace())
            packs.append([(c.id, c.text) for c in chunks])
        assert packs[0] == packs[1] and packs[0]


# -- why a loop stopped ---------------------------------------------------------------------------------

def test_a_sufficiency_step_that_repeats_itself_is_not_asked_again(yearbook_index, run_with):
    """A small step LM's constant "Refine, missing: more facts": the loop stops on the second one."""
    with run_with(ProgramLM()) as lm:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=5), lm_steps=NO_DELETE)(question=Q)
    assert lm.steps().count("sufficiency") == 2 and lm.steps()[-1] == "answer"
    assert max(e["turn"] for e in events(pred, "search")) == 2
    assert events(pred, "stop") == [{**events(pred, "stop")[0], "turn": 2, "reason": "verdict_unchanged"}]
    # the same words with other case, spacing and end punctuation are the same verdict
    wording = refine_naming(lambda n: ["Beds in Brightwater", "beds  in brightwater."][n % 2])
    with run_with(ProgramLM(sufficiency=wording)):
        pred = CombinedRAG(yearbook_index, 2000, loop=Loop(max_turns=5))(question=Q)
    assert [e["reason"] for e in events(pred, "stop")] == ["verdict_unchanged"]
    # a verdict that names a new fact each turn keeps the loop going, to the cap
    with run_with(ProgramLM(sufficiency=refine_naming(lambda n: f"fact {n}"))) as lm:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=4), lm_steps=NO_DELETE)(question=Q)
    assert lm.steps().count("sufficiency") == 3 and [e["reason"] for e in events(pred, "stop")] == ["max_turns"]
    # stop_on_repeat=False (the no-repeat-stop preset): asked every turn but the last, as in the study
    with run_with(ProgramLM()) as lm:
        pred = build_program("iterative:no-delete+no-repeat-stop", yearbook_index, max_turns=4)(question=Q)
    assert lm.steps().count("sufficiency") == 3 and [e["reason"] for e in events(pred, "stop")] == ["max_turns"]


def test_a_failed_verdict_is_not_a_repeated_one(yearbook_index, run_with):
    """The step's fallback after an LM failure says nothing about the evidence: two of them do not stop the loop."""
    with run_with(ProgramLM(sufficiency=lambda p, n: {"confidence": "very"})):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3), lm_steps=NO_DELETE)(question=Q)
    assert [e["verdict"] for e in events(pred, "sufficiency")] == ["Refine", "Refine"]
    assert [e["reason"] for e in events(pred, "stop")] == ["max_turns"]


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory):
    docs = [Document(id=f"t{i}", title=title, text=text) for i, (title, text) in enumerate([
        ("Aldermoor", "Aldermoor had 410 hospital beds in 2022."),
        ("Brightwater", "Brightwater had 385 hospital beds in 2022."),
        ("Corvale", "Corvale is a river town with a small clinic."),
    ])]
    return Index.build(docs, tmp_path_factory.mktemp("tiny") / "idx", show_progress=False)


def test_a_turn_that_finds_nothing_new_stops_the_loop(tiny_index, run_with):
    varying = refine_naming(lambda n: f"fact {n}")
    # de-duplicated searches: the first turn takes the whole corpus, the second finds nothing left
    with run_with(ProgramLM(sufficiency=varying)) as lm:
        pred = IterativeRAG(tiny_index, loop=Loop(max_turns=5, k=5), lm_steps=NO_DELETE)(question=Q)
    assert [e["retrieved"] for e in events(pred, "search") if e["turn"] == 2] == [[]]
    assert events(pred, "stop") == [{**events(pred, "stop")[0], "turn": 2, "reason": "no_new_evidence"}]
    assert lm.steps().count("sufficiency") == 1 and len(pred.context) == 3  # nothing new: nothing more asked
    # without de-duplication the second search returns only what the first did
    with run_with(ProgramLM(sufficiency=varying)):
        loop = Loop(max_turns=5, k=5, dedup=False, fallback=False)
        pred = IterativeRAG(tiny_index, loop=loop, lm_steps=NO_DELETE)(question=Q)
    assert [e["reason"] for e in events(pred, "stop")] == ["no_new_evidence"]
    assert len(events(pred, "search")) == 2 and events(pred, "search")[1]["retrieved"]
    # ReflectiveRAG's refinement searches exclude what it holds: none left, it stops
    with run_with(ProgramLM(sufficiency=varying)):
        pred = ReflectiveRAG(tiny_index, loop=Loop(k=5), reflection=Reflection(max_reflections=3, tau=0.0))(question=Q)
    assert events(pred, "stop") == [{**events(pred, "stop")[0], "turn": 2, "reason": "no_new_evidence"}]


def test_reflective_stops_on_a_repeated_verdict_and_names_the_cap_like_the_agents(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        pred = ReflectiveRAG(yearbook_index, reflection=Reflection(max_reflections=4, tau=0.0))(question=Q)
    assert lm.steps().count("sufficiency") == 2 and len(events(pred, "search")) == 2
    assert [(e["turn"], e["reason"]) for e in events(pred, "stop")] == [(2, "verdict_unchanged")]
    with run_with(ProgramLM(sufficiency=refine_naming(lambda n: f"fact {n}"))):
        pred = ReflectiveRAG(yearbook_index, reflection=Reflection(max_reflections=2, tau=0.0))(question=Q)
    assert [(e["turn"], e["reason"]) for e in events(pred, "stop")] == [(3, "max_turns")]


def _echo(p, n):
    return {"queries": [{"query": Q, "probability": 1.0}]}


CASES = {
    "iterative sufficient": (lambda i: IterativeRAG(i, loop=Loop(max_turns=4)),
                             {"sufficiency": lambda p, n: {"verdict": "Sufficient", "confidence": 0.9, "missing": ""}},
                             "sufficient"),
    "iterative repeat": (lambda i: IterativeRAG(i, loop=Loop(max_turns=4)), {}, "verdict_unchanged"),
    "iterative cap": (lambda i: IterativeRAG(i, loop=Loop(max_turns=2)), {}, "max_turns"),
    "iterative no sufficiency": (lambda i: IterativeRAG(i, loop=Loop(max_turns=3), lm_steps=LMSteps(sufficiency=False)),
                                 {}, "max_turns"),
    "iterative no query": (lambda i: IterativeRAG(i, loop=Loop(max_turns=3, bridge=False)), {"rewrite": _echo},
                           "no_query"),
    "combined repeat": (lambda i: CombinedRAG(i, loop=Loop(max_turns=4)), {}, "verdict_unchanged"),
    "combined no rewrite": (lambda i: CombinedRAG(i, loop=Loop(max_turns=1), lm_steps=LMSteps(rewrite=False)), {},
                            "max_turns"),
    "reflective none": (lambda i: ReflectiveRAG(i, reflection=Reflection(max_reflections=0)), {}, "max_turns"),
    "reflective converged": (lambda i: ReflectiveRAG(i, reflection=Reflection(max_reflections=4, tau=5.0)),
                             {"sufficiency": refine_naming(lambda n: f"fact {n}")}, "converged"),
    "reflective no query": (lambda i: ReflectiveRAG(i, loop=Loop(bridge=False),
                                                    reflection=Reflection(max_reflections=2)),
                            {"rewrite": _echo}, "no_query"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_loop_records_exactly_one_stop_with_a_known_reason(yearbook_index, run_with, case):
    make, responders, reason = CASES[case]
    with run_with(ProgramLM(**responders)):
        pred = make(yearbook_index)(question=Q)
    (stop,) = events(pred, "stop")
    assert stop["reason"] == reason and reason in STOP_REASONS
    # recorded at the turn the loop stopped in: the last turn any of its steps ran
    assert stop["turn"] == max(e["turn"] for e in pred.trace if e["step"] != "stop" and "turn" in e)


# -- the final pack from the one-shot's candidates (pool) ----------------------------------------------

def test_with_a_pool_the_final_pack_holds_what_the_one_shot_finds_beyond_the_turns_hits(yearbook_index, run_with):
    """The turns' searches take ``k`` chunks each, so evidence the question ranks below ``k`` never
    reached the agent's pack; the one-shot packs from 100 candidates. The pool gives the agent the
    one-shot's candidates at one more search and no more LM calls."""
    lean = dict(pack=Pack(sentences=True), loop=Loop(max_turns=1, k=1),
                lm_steps=LMSteps(rewrite=False, delete=False, contextualize=False, sufficiency=False))
    with run_with(ProgramLM()) as lm:
        turns_only = IterativeRAG(yearbook_index, 1000, **lean)(question=Q)
    with run_with(ProgramLM()) as lm_pool:
        pooled = IterativeRAG(yearbook_index, 1000, search=Search(pool=100), **lean)(question=Q)
    assert lm.steps() == lm_pool.steps() == ["answer"]
    assert len(turns_only.context) == 1  # the one chunk its one search took
    assert set(turns_only.context) < set(pooled.context)  # the pool adds what ranked below k ...
    searches = events(pooled, "search")
    assert [bool(e.get("pool")) for e in searches] == [False, True] and searches[1]["query"] == Q
    assert set(pooled.context) <= set(searches[1]["retrieved"]) | set(searches[0]["retrieved"])
    assert events(pooled, "filter")  # ... after the one-shot's metadata rules


def test_a_pool_needs_the_sentence_pack_and_is_a_preset():
    with pytest.raises(InputError) as err:
        IterativeRAG(NoIndex(), budget=1000, search=Search(pool=100))
    assert err.value.argument == "search.pool" and "sentences" in str(err.value)
    program = build_program("iterative:no-rewrite+no-delete+sentences+pool", NoIndex(), budget=1000)
    assert (program.search.pool, program.pack.sentences, program.rewrite.enabled) == (100, True, False)
