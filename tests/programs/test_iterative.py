"""Control flow of IterativeRAG, ReflectiveRAG and CombinedRAG with a scripted LM."""

from __future__ import annotations

import math
import re

import pytest

from ragnet.corpus.tokens import count_tokens
from ragnet.errors import InputError
from ragnet.programs import BasicRAG, CombinedRAG, IterativeRAG, LMSteps, Loop, Pack, Reflection, ReflectiveRAG
from tests.programs.scripted import ProgramLM

Q = "Which city had more hospital beds in 2022, Aldermoor or Brightwater?"
NO_DELETE = LMSteps(delete=False)  # the no-delete preset


def events(pred, step):
    return [e for e in pred.trace if e["step"] == step]


def refine_anew(p, n):
    """A verdict that names a new missing fact each turn, so the loop runs to its cap (a verdict
    that repeats itself stops it: tests/programs/test_agent_footing.py)."""
    return {"verdict": "Refine", "confidence": 0.3, "missing": f"fact {n}"}


def sufficient_at(turn):
    return lambda p, n: {"verdict": "Sufficient" if n >= turn else "Refine", "confidence": 0.9 if n >= turn else 0.2,
                         "missing": "" if n >= turn else "beds in Brightwater"}


def test_fallback_only_on_first_turn(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3))(question=Q)
    fallbacks = [e for e in events(pred, "search") if e["fallback"]]
    assert len(fallbacks) == 1 and fallbacks[0]["turn"] == 1 and fallbacks[0]["query"] == Q
    with run_with(ProgramLM()):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3, fallback=False))(question=Q)
    assert not [e for e in events(pred, "search") if e["fallback"]]


def test_dedup_never_reshows_an_id(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=refine_anew)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=5), lm_steps=NO_DELETE)(question=Q)
    retrieved = [cid for e in events(pred, "search") for cid in e["retrieved"]]
    assert len(retrieved) == len(set(retrieved)) == 6 * 5  # 5 turns + the fallback, k=5 each


def test_without_dedup_searches_can_repeat_ids(yearbook_index, run_with):
    # Two different queries (the second adds a term, so it is neither a repeat nor an echo) that hit the same chunks.
    overlapping = lambda p, n: {"queries": [{"query": "hospital beds Aldermoor 2022" if n == 1
                                             else "Aldermoor 2022 hospital beds count", "probability": 1.0}]}
    searches = {}
    for dedup in (False, True):
        with run_with(ProgramLM(rewrite=overlapping)):
            pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=2, dedup=dedup, fallback=False))(question=Q)
        searches[dedup] = events(pred, "search")
        assert [e["query"] for e in searches[dedup]] == ["hospital beds Aldermoor 2022",
                                                         "Aldermoor 2022 hospital beds count"]
    first, second = (set(e["retrieved"]) for e in searches[False])
    assert first & second, "without dedup the second search must be free to return chunks already seen"
    first, second = (set(e["retrieved"]) for e in searches[True])
    assert first and second and not first & second, "with dedup the second search must exclude seen ids"


def test_max_turns_is_respected(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=refine_anew)) as lm:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3))(question=Q)
    assert max(e["turn"] for e in events(pred, "search")) == 3
    # Asked after turns 1 and 2 only: on the last allowed turn a verdict could change nothing.
    assert lm.steps().count("sufficiency") == 2
    assert [e["turn"] for e in events(pred, "sufficiency")] == [1, 2]
    assert events(pred, "stop")[-1]["reason"] == "max_turns"


def test_sufficient_verdict_stops_the_loop(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=sufficient_at(2))) as lm:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=5))(question=Q)
    assert max(e["turn"] for e in events(pred, "search")) == 2
    assert events(pred, "stop")[-1] == {**events(pred, "stop")[-1], "reason": "sufficient", "turn": 2}
    assert lm.steps()[-1] == "answer"


def replay_context(pred):
    """The working context rebuilt from the trace: searches add unseen ids, deletes remove ids."""
    context, deletes = [], []
    for e in pred.trace:
        if e["step"] == "search":
            context.extend(cid for cid in e["retrieved"] if cid not in context)
        if e["step"] == "delete":
            deletes.append((list(context), e["deleted"]))
            context = [cid for cid in context if cid not in e["deleted"]]
    return context, deletes


def test_delete_only_removes_context_ids_and_never_empties(yearbook_index, run_with):
    subset = lambda p, n: {"delete_ids": ["c1", "c2", "c999", "bogus#1"]}
    with run_with(ProgramLM(delete=subset, sufficiency=refine_anew)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3, protect=0))(question=Q)  # the LM alone decides
    context, deletes = replay_context(pred)
    assert len(deletes) == 3
    for before, deleted in deletes:
        # c1 and c2 are the first two chunks shown; the unknown ids are dropped, never deleted.
        assert deleted == before[:2]
        assert "c999" not in deleted and "bogus#1" not in deleted
    unknown = [e for e in events(pred, "lm_error") if e["failed_step"] == "delete"]
    assert len(unknown) == 3 and all(e["action"] == "repaired" and "c999" in e["error"] for e in unknown)
    retrieved = {cid for e in events(pred, "search") for cid in e["retrieved"]}
    assert pred.context == context and len(pred.context) == len(retrieved) - 2 * 3
    assert pred.evidence and set(pred.evidence) <= set(pred.context)


def test_delete_of_every_chunk_is_refused(yearbook_index, run_with):
    delete_all = lambda p, n: {"delete_ids": [f"c{i}" for i in range(1, 40)] + ["c999", "bogus#1"]}
    with run_with(ProgramLM(delete=delete_all, sufficiency=refine_anew)) as lm:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3, protect=0))(question=Q)
    assert lm.steps().count("delete") == 3
    assert [e["deleted"] for e in events(pred, "delete")] == [[], [], []]
    retrieved = {cid for e in events(pred, "search") for cid in e["retrieved"]}
    assert len(retrieved) > 1 and set(pred.context) == retrieved


def test_answer_evidence_is_never_deleted(yearbook_index, run_with):
    delete_first = lambda p, n: {"delete_ids": ["c1"] if n == 1 else []}
    with run_with(ProgramLM(delete=delete_first)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=2, protect=0))(question=Q)
    ((doomed,),) = [e["deleted"] for e in events(pred, "delete") if e["deleted"]]
    # The answer now cites the deleted chunk by its real id, plus c1 (the first surviving chunk).
    cite_deleted = lambda p, n: {"answer": "scripted answer", "evidence_ids": [doomed, "c1"]}
    with run_with(ProgramLM(delete=delete_first, answer=cite_deleted)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=2, protect=0))(question=Q)
    assert [e["deleted"] for e in events(pred, "delete")] == [[doomed], []]
    assert doomed not in pred.context
    assert pred.evidence == [pred.context[0]] and doomed not in pred.evidence


def test_off_format_sufficiency_is_recorded_and_loop_continues(yearbook_index, run_with):
    broken = lambda p, n: {"confidence": "very"}  # no verdict field at all
    with run_with(ProgramLM(sufficiency=broken)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3))(question=Q)
    errors = [e for e in events(pred, "lm_error") if e["failed_step"] == "sufficiency"]
    assert [e["action"] for e in errors] == ["retried", "fallback"] * 2  # one retry, then the safe default
    assert all(e["error_type"] == "AdapterParseError" for e in errors)
    assert [e["verdict"] for e in events(pred, "sufficiency")] == ["Refine", "Refine"]
    assert max(e["turn"] for e in events(pred, "search")) == 3  # the loop went on after each failure
    assert pred.usage["lm_errors"] == len(events(pred, "lm_error"))


def test_notes_cache_feeds_the_answer(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=sufficient_at(1))) as lm:
        pred = IterativeRAG(yearbook_index)(question=Q)
    (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
    assert "note 1" in answer_prompt and pred.notes == "- note 1"


def test_reflective_stops_when_sufficient_and_removes_noise(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=sufficient_at(2))):
        pred = ReflectiveRAG(yearbook_index, loop=Loop(k=5))(question=Q)
    assert len(events(pred, "search")) == 2
    (noise,) = events(pred, "noise")
    assert len(noise["kept"]) == math.ceil(0.7 * 10) and pred.context == noise["kept"]
    assert 0 <= noise["redundancy_after"] <= 1


def test_reflective_caps_reflections(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=refine_anew)) as lm:
        pred = ReflectiveRAG(yearbook_index, reflection=Reflection(max_reflections=2, tau=0.0))(question=Q)
    assert len(events(pred, "search")) == 3
    assert events(pred, "stop")[-1]["reason"] == "max_turns"  # the turn budget, named as for every agent
    # One verdict per reflection; none after the last search, where it could change nothing.
    assert lm.steps().count("sufficiency") == 2 and lm.steps()[-1] == "answer"


def test_reflective_without_reflections_answers_after_one_search(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        pred = ReflectiveRAG(yearbook_index, reflection=Reflection(max_reflections=0))(question=Q)
    assert lm.steps() == ["answer"] and len(events(pred, "search")) == 1


def test_reflective_delta_rule_stops_on_convergence(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = ReflectiveRAG(yearbook_index, reflection=Reflection(max_reflections=4, tau=5.0))(question=Q)
    stop = events(pred, "stop")[-1]
    assert stop["reason"] == "converged" and stop["delta"] < 5.0
    assert len(events(pred, "search")) == 2


def test_combined_never_deletes_and_respects_budget(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        pred = CombinedRAG(yearbook_index, 2500, loop=Loop(max_turns=3))(question=Q)
    assert "delete" not in lm.steps() and not events(pred, "delete")
    (select,) = events(pred, "select")
    pooled = {cid for e in events(pred, "search") for cid in e["retrieved"]}
    assert set(select["kept"]) <= pooled and select["tokens"] <= 2500
    (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
    assert count_tokens(answer_prompt) <= 2500
    # The agent's working view stays short: sufficiency never sees the whole pool.
    # Asked after turns 1 and 2 (not on the last turn), each time on notes + the newest cast only:
    # turn 1's cast is at most 10 chunks (search + fallback), turn 2's at most 5 (the pool then holds 15).
    suff_prompts = [p for s, p in lm.calls if s == "sufficiency"]
    assert len(suff_prompts) == 2 and [e["turn"] for e in events(pred, "sufficiency")] == [1, 2]
    shown = [p.count("[c") for p in suff_prompts]
    assert 0 < shown[0] <= 10 and 0 < shown[1] <= 5


def _long_notes(prompt: str, n: int) -> dict:
    """Twenty distinct ~15-token facts a turn: far more notes than a quarter of a small budget."""
    return {"new_notes": "\n".join(f"- fact {n}.{i}: the yearbook of this city lists a figure worth noting here"
                                    for i in range(20))}


def _notes_in(answer_prompt: str) -> list[str]:
    return re.findall(r"^- fact \d+\.\d+:", answer_prompt, flags=re.M)


def test_combined_caps_the_notes_share_of_the_answer_budget(yearbook_index, run_with):
    """Uncapped, the notes of two turns crowd the chunks out of a 2,000-token answer prompt;
    capped at a quarter, the earliest lines stay and the evidence gets the room back."""
    def run(share: float):
        with run_with(ProgramLM(contextualize=_long_notes)) as lm:
            program = CombinedRAG(yearbook_index, 2000, pack=Pack(notes_share=share), loop=Loop(max_turns=2, k=3))
            pred = program(question=Q)
        (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
        (select,) = events(pred, "select")
        assert count_tokens(answer_prompt) <= 2000
        return pred, answer_prompt, select["kept"]

    pred, prompt, kept = run(0.25)  # the default
    shown = _notes_in(prompt)
    (cap,) = events(pred, "notes_cap")
    assert cap["max_tokens"] == 500 and cap["kept"] == len(shown) > 0 and cap["kept"] + cap["dropped"] == 40
    assert 0 < len(shown) < 40
    assert shown == [f"- fact {turn}.{i}:" for turn in (1, 2) for i in range(20)][:len(shown)]  # earliest first
    assert 0 < count_tokens("\n".join(line for line in prompt.splitlines() if line.startswith("- fact "))) <= 500

    pred_all, prompt_all, kept_all = run(1)  # never cut: all 40 lines, and fewer chunks fit
    assert len(_notes_in(prompt_all)) == 40 and not events(pred_all, "notes_cap")
    assert len(kept) > len(kept_all)
    pred_none, prompt_none, kept_none = run(0)  # no notes in the answer prompt
    assert _notes_in(prompt_none) == [] and events(pred_none, "notes_cap")[0]["kept"] == 0
    assert len(kept_none) >= len(kept)
    with pytest.raises(InputError) as err:
        CombinedRAG(yearbook_index, pack=Pack(notes_share=1.5))
    assert err.value.argument == "pack.notes_share"


def test_iterative_without_a_budget_reads_everything_it_kept(yearbook_index, run_with):
    with run_with(ProgramLM(sufficiency=refine_anew)) as lm:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3), lm_steps=NO_DELETE)(question=Q)
    retrieved = [cid for e in events(pred, "search") for cid in e["retrieved"]]
    assert not events(pred, "select") and pred.context == list(dict.fromkeys(retrieved))
    (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
    assert answer_prompt.count("[c") >= len(pred.context) == 20  # 3 turns + the fallback, k=5, dedup


def test_iterative_packs_what_it_kept_into_a_budget(yearbook_index, run_with):
    """With a budget the turns run exactly as without one; only the answer prompt is packed."""
    def run(budget=None, sentences=False):
        with run_with(ProgramLM()) as lm:
            pred = IterativeRAG(yearbook_index, budget, pack=Pack(sentences=sentences), loop=Loop(max_turns=3),
                                lm_steps=NO_DELETE)(question=Q)
        (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
        return pred, lm, answer_prompt

    full, full_lm, _ = run()
    packed, packed_lm, prompt = run(budget=1200)
    searched = lambda pred: [(e["turn"], e["query"], e["retrieved"]) for e in events(pred, "search")]
    assert searched(packed) == searched(full)
    assert [c for c in packed_lm.calls if c[0] != "answer"] == [c for c in full_lm.calls if c[0] != "answer"]
    (select,) = events(packed, "select")
    assert select["budget"] == 1200 and select["tokens"] <= 1200 and count_tokens(prompt) <= 1200
    assert packed.context == select["kept"] and 0 < len(packed.context) < len(full.context)
    assert set(packed.context) <= set(full.context)
    # best calibrated relevance first: the best hit of the first search leads
    assert packed.context[0] == events(packed, "search")[0]["retrieved"][0]

    sentences, _, prompt = run(budget=800, sentences=True)
    (select,) = events(sentences, "select")
    assert select["method"] == "sentences" and count_tokens(prompt) <= 800 and events(sentences, "crop")
    with pytest.raises(InputError) as err:
        IterativeRAG(yearbook_index, pack=Pack(sentences=True))
    assert err.value.argument == "budget"


def test_final_pack_scores_whole_chunks_by_relevance_and_sentences_by_hybrid_score(yearbook_index):
    """Calibrated relevance puts every cast's best hit level at the top; the sentence value model was
    calibrated on hybrid scores, so sentence selection gets (and is ordered by) those."""
    from ragnet.programs.agent import Turns

    a, b, c = yearbook_index.search(Q, k=3)
    state = Turns(context=[a, b, c], relevance={a.id: 0.5, b.id: 1.0, c.id: 0.9},
                  hybrid={a.id: 0.95, b.id: 0.4, c.id: 0.7})
    chunks = IterativeRAG(yearbook_index, budget=1000)._ranked_for_pack(state)
    assert [(x.id, x.score) for x in chunks] == [(b.id, 1.0), (c.id, 0.9), (a.id, 0.5)]
    sentences = IterativeRAG(yearbook_index, 1000, pack=Pack(sentences=True))._ranked_for_pack(state)
    assert [(x.id, x.score) for x in sentences] == [(a.id, 0.95), (c.id, 0.7), (b.id, 0.4)]


def test_iterative_caps_the_notes_only_under_a_budget(yearbook_index, run_with):
    def run(budget=None):
        with run_with(ProgramLM(contextualize=_long_notes)) as lm:
            pred = IterativeRAG(yearbook_index, budget, loop=Loop(max_turns=2, k=3), lm_steps=NO_DELETE)(question=Q)
        (answer_prompt,) = [p for s, p in lm.calls if s == "answer"]
        return pred, answer_prompt

    pred, prompt = run()
    assert len(_notes_in(prompt)) == 40 and not events(pred, "notes_cap")
    pred, prompt = run(budget=2000)
    (cap,) = events(pred, "notes_cap")
    assert cap["max_tokens"] == 500 and 0 < cap["kept"] == len(_notes_in(prompt)) < 40
    assert pred.notes.count("- fact ") == 40  # the program's notes stay whole; only the prompt is capped


def test_delete_cannot_remove_what_the_evidence_ranks_highest(yearbook_index, run_with):
    """The LM asks to delete every chunk but one; the best hit of each search and the two chunks
    closest to the question stay, and each refusal is recorded."""
    import numpy as np

    all_but_last = lambda p, n: {"delete_ids": [f"c{i}" for i in range(1, 40) if f"[c{i + 1}]" in p]}
    with run_with(ProgramLM(delete=all_but_last)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3))(question=Q)
    searches = events(pred, "search")
    for event in events(pred, "delete"):
        protected = set(event["protected"])
        assert not protected & set(event["deleted"])
        best_hits = {s["retrieved"][0] for s in searches if s["turn"] <= event["turn"] and s["retrieved"]}
        assert best_hits <= protected | set(pred.context) | {c for e in events(pred, "delete") for c in e["deleted"]}
    final = pred.context
    cos = yearbook_index.vectors(final) @ yearbook_index.embed_query(Q)
    assert {s["retrieved"][0] for s in searches} <= set(final)  # every search's best hit survived
    assert len(final) >= 2 and np.isfinite(cos).all()
    refused = [e for e in events(pred, "lm_error") if e["failed_step"] == "delete" and "protected" in e["error"]]
    assert refused and all(e["action"] == "repaired" for e in refused)
    # what BasicRAG reads (the question's top-5) all survives: gold recall never below basic's
    with run_with(ProgramLM()):
        basic = BasicRAG(yearbook_index)(question=Q)
    assert len(basic.context) == 5 and set(basic.context) <= set(final)
    assert set(basic.context) <= set(events(pred, "delete")[0]["protected"])


def test_unguarded_delete_can_remove_what_basic_reads(yearbook_index, run_with):
    """protect=0 is the study's loop: the same LM then deletes chunks of the question's top-5."""
    all_but_last = lambda p, n: {"delete_ids": [f"c{i}" for i in range(1, 40) if f"[c{i + 1}]" in p]}
    with run_with(ProgramLM(delete=all_but_last)):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3, protect=0))(question=Q)
    with run_with(ProgramLM()):
        basic = BasicRAG(yearbook_index)(question=Q)
    assert not set(basic.context) <= set(pred.context)
    assert all(e["protected"] == [] for e in events(pred, "delete"))


def _echo(p, n):  # what a small step LM mostly writes: the question again
    return {"queries": [{"query": Q, "probability": 1.0}]}


def test_an_echoing_rewrite_is_replaced_by_the_bridge_search(yearbook_index, run_with):
    with run_with(ProgramLM(rewrite=_echo, sufficiency=sufficient_at(99))):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=2), lm_steps=NO_DELETE)(question=Q)
    rewrites = events(pred, "rewrite")
    assert [r["source"] for r in rewrites] == ["question", "bridge"]  # turn 1: no new query, so the question
    turn2 = rewrites[1]["query"]
    assert turn2.endswith(Q) and turn2 != Q
    name = turn2[: -len(Q)].strip()
    assert name.casefold() not in Q.casefold()
    turn1_ids = {cid for e in events(pred, "search") if e["turn"] == 1 for cid in e["retrieved"]}
    assert any(name in " ".join(c.text.split()) for c in yearbook_index.get(sorted(turn1_ids)))  # the evidence gave it
    assert [e["query"] for e in events(pred, "search") if e["turn"] == 2] == [turn2]
    assert not [e for e in events(pred, "stop") if e["reason"] == "no_query"]


def test_without_the_bridge_an_echoing_rewrite_stops_the_loop(yearbook_index, run_with):
    with run_with(ProgramLM(rewrite=_echo, sufficiency=sufficient_at(99))):
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=3, bridge=False), lm_steps=NO_DELETE)(question=Q)
    assert [e["turn"] for e in events(pred, "stop") if e["reason"] == "no_query"] == [2]
    assert all(e["turn"] == 1 for e in events(pred, "search"))


def test_no_rewrite_hops_by_bridge_searches_without_an_lm_call(yearbook_index, run_with):
    from ragnet.programs.registry import build_program

    with run_with(ProgramLM(sufficiency=sufficient_at(99))) as lm:
        pred = build_program("iterative:no-rewrite+no-delete", yearbook_index)(question=Q)
    assert "rewrite" not in [step for step, _ in lm.calls]
    queries = [e["query"] for e in events(pred, "search") if e["turn"] > 1]
    assert queries and all(q.endswith(Q) and q != Q for q in queries)
    assert len(set(queries)) == len(queries)  # each hop a new name
