"""Control flow of BasicRAG and OneShotRAG with a scripted LM over a real index."""

from __future__ import annotations

import pytest

from ragnet.corpus.tokens import count_tokens
from ragnet.errors import InputError
from ragnet.programs import BasicRAG, Hops, LMSteps, OneShotRAG, Pack, Search
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"
NOTES = LMSteps(contextualize=True)  # the notes preset
RECHECK = LMSteps(recheck=True)  # the recheck preset


def test_basic_rag_searches_once_and_maps_cited_ids(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        pred = BasicRAG(yearbook_index, k=4)(question=Q)
    searches = [e for e in pred.trace if e["step"] == "search"]
    assert len(searches) == 1 and len(searches[0]["retrieved"]) == 4
    assert pred.context == searches[0]["retrieved"]
    assert pred.evidence == [pred.context[0]]  # the scripted answer cites c1
    assert pred.answer == "scripted answer"
    assert lm.steps() == ["answer"]
    assert pred.usage["lm_calls"] == 1 and pred.usage["searches"] == 1
    assert pred.usage["input_tokens"] > 0


def test_retrieve_makes_no_lm_calls_by_default(yearbook_index, run_with):
    with run_with(ProgramLM()) as lm:
        chunks = OneShotRAG(yearbook_index, budget=2000).retrieve(Q)
    assert chunks and lm.calls == []


@pytest.mark.parametrize("budget", [700, 1500, 4000])
@pytest.mark.parametrize("method", ["protected", "exact", "greedy", "rank"])
def test_final_prompt_respects_budget(yearbook_index, run_with, budget, method):
    with run_with(ProgramLM()) as lm:
        pred = OneShotRAG(yearbook_index, budget, pack=Pack(method=method))(question=Q)
    (prompt,) = [p for s, p in lm.calls if s == "answer"]
    select = [e for e in pred.trace if e["step"] == "select"][0]
    assert select["tokens"] <= budget
    assert count_tokens(prompt) <= budget
    assert pred.context == select["kept"] and len(pred.context) >= 1


def test_bigger_budget_holds_more_evidence(yearbook_index, run_with):
    with run_with(ProgramLM()):
        small = OneShotRAG(yearbook_index, budget=1000).retrieve(Q)
        large = OneShotRAG(yearbook_index, budget=4000).retrieve(Q)
    assert sum(c.tokens for c in large) > sum(c.tokens for c in small)


def test_metadata_filter_drop_and_add_are_traced(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = OneShotRAG(yearbook_index, budget=3000)(question=Q)
    (event,) = [e for e in pred.trace if e["step"] == "filter" and e["kind"] == "rules"]
    assert event["dropped"], "chunks from other years/cities must be dropped"
    assert all("mismatch" in d["reason"] for d in event["dropped"])
    for cid in pred.context:
        meta = yearbook_index.chunk(cid).metadata
        assert meta["doc"]["year"] == 2021 and meta["doc"]["city"] == "Aldermoor"


def test_rules_off_keeps_contradicting_chunks(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = OneShotRAG(yearbook_index, 3000, search=Search(rules=False))(question=Q)
    assert not [e for e in pred.trace if e["step"] == "filter"]
    years = {yearbook_index.chunk(cid).metadata["doc"]["year"] for cid in pred.context}
    assert len(years) > 1


def test_budget_smaller_than_every_chunk_is_a_clear_error(yearbook_index, run_with):
    with run_with(ProgramLM()), pytest.raises(InputError) as err:
        OneShotRAG(yearbook_index, budget=300)(question=Q)
    assert err.value.argument == "budget" and "at least" in str(err.value)


def test_crop_runs_before_selection_and_shrinks_chunks(yearbook_index, run_with):
    def crop(prompt, n):
        # Return the first sentence of the chunk verbatim.
        chunk = prompt.rsplit("[[ ## chunk ## ]]", 1)[1].split("[[ ##")[0].strip()
        return {"relevant_text": chunk.split(". ")[0] + "."}

    with run_with(ProgramLM(crop=crop)) as lm:
        pred = OneShotRAG(yearbook_index, 1200, lm_steps=LMSteps(crop=True, max_crops=6))(question=Q)
    steps = lm.steps()
    assert 1 <= steps.count("crop") <= 6 and steps[-1] == "answer"  # max_crops caps the LM calls
    names = [e["step"] for e in pred.trace]
    assert names.index("crop") < names.index("select")  # cropping happens before the budget is filled
    (event,) = [e for e in pred.trace if e["step"] == "crop"]
    assert event["cropped"] and all(c["tokens_after"] < c["tokens_before"] for c in event["cropped"])
    cropped = {c["id"]: c["tokens_after"] for c in event["cropped"]}
    kept_cropped = [cid for cid in pred.context if cid in cropped]
    assert kept_cropped, "cropped chunks should be selected: they are cheaper for the same relevance"


def test_invalid_arguments_name_the_argument(yearbook_index):
    for make, name in [(lambda: OneShotRAG(yearbook_index, budget=0), "budget"),
                       (lambda: Pack(method="fast"), "pack.method"), (lambda: Pack(transform="log"), "pack.transform"),
                       (lambda: OneShotRAG(yearbook_index, search=Search(pool=0)), "search.pool"),
                       (lambda: OneShotRAG(yearbook_index, 1000, pack=Pack(budget=2000)), "budget"),
                       (lambda: OneShotRAG(yearbook_index, hops=3), "hops"),
                       (lambda: OneShotRAG(yearbook_index, lm_steps=LMSteps(delete=False)), "lm_steps.delete")]:
        with pytest.raises(InputError) as err:
            make()
        assert err.value.argument == name
    with pytest.raises(InputError):
        BasicRAG(yearbook_index)(question="  ")


def test_bridge_hops_add_second_hop_chunks_at_half_weight_without_an_lm_call(tmp_path):
    import dspy

    from ragnet import Document, Index
    from ragnet.programs.stages import HOP_WEIGHT
    from ragnet.programs.trace import Trace

    docs = [Document(id="film", title="Kiss and Tell", text="Kiss and Tell is a film starring Shirley Temple."),
            Document(id="st", title="Shirley Temple", text="Shirley Temple was a United States ambassador."),
            Document(id="gh", title="Ghana", text="Ghana is a country in West Africa."),
            Document(id="ot", title="Other", text="Another film starred another actress.")]
    index = Index.build(docs, tmp_path / "i", show_progress=False)
    question = "Which government post did the star of Kiss and Tell hold?"
    with dspy.context(adapter=dspy.JSONAdapter()):  # no LM configured: any LM call would fail
        trace = Trace()
        hops = OneShotRAG(index, 480, pack=Pack(sentences=True), search=Search(pool=1, rules=False),
                          hops=Hops(2, k=1))
        picked = hops.retrieve(question, trace)
    hop_events = trace.of("hops")
    assert len(hop_events) == 1 and hop_events[0]["queries"][0] == f"Shirley Temple {question}"
    assert hop_events[0]["added"] == ["st#0"] and "st#0" in [c.id for c in picked]
    hop_search = [e for e in trace.of("search") if e["turn"] == 2][0]
    assert hop_search["retrieved"] == ["st#0"]
    plain = index.search(hop_events[0]["queries"][0], k=1, exclude={"film#0"})[0]
    assert [c.score for c in picked if c.id == "st#0"] == [plain.score * HOP_WEIGHT]
    assert OneShotRAG(index, hops=Hops(3)).max_lm_calls() == 1


def test_notes_are_written_from_the_selected_chunks_read_whole_and_fit_the_budget(yearbook_index, run_with):
    """One Contextualize call reads the first pack's chunks whole; the answer reads its notes above a
    pack filled again around them, so the answer prompt stays inside the budget."""
    fact = "- Aldermoor had 41,200 residents in 2021."
    with run_with(ProgramLM(contextualize=lambda p, n: {"new_notes": fact})) as lm:
        plain = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True)).retrieve(Q)
        prog = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True), lm_steps=NOTES)
        pred = prog(question=Q)
    assert lm.steps() == ["contextualize", "answer"] and prog.max_lm_calls() == 2
    (event,) = [e for e in pred.trace if e["step"] == "notes"]
    assert event["read"] and set(event["read"]) <= {c.id for c in plain}
    contextualize_prompt, answer_prompt = (p for _, p in lm.calls)
    first_read = yearbook_index.chunk(event["read"][0])
    assert first_read.text[:200] in contextualize_prompt  # read whole, not as the pack's cropped sentences
    assert fact in answer_prompt and pred.notes == fact
    assert count_tokens(answer_prompt) <= 1000
    select = [e for e in pred.trace if e["step"] == "select"]
    assert len(select) == 1 and select[0]["tokens"] <= 1000  # the first pack is not traced


def test_notes_share_caps_the_notes_and_a_failed_step_answers_without_them(yearbook_index, run_with):
    many = "\n".join(f"- fact number {i} about Aldermoor and its many residents in 2021" for i in range(60))
    with run_with(ProgramLM(contextualize=lambda p, n: {"new_notes": many})):
        pred = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True, notes_share=0.1), lm_steps=NOTES)(question=Q)
    (cap,) = [e for e in pred.trace if e["step"] == "notes_cap"]  # as the agents record it
    assert cap["dropped"] > 0 and cap["max_tokens"] == 100 and 0 < count_tokens(pred.notes) <= 100
    with run_with(ProgramLM(contextualize=lambda p, n: {"wrong": "field"})) as lm:
        pred = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True), lm_steps=NOTES)(question=Q)
    assert pred.notes == "" and pred.answer == "scripted answer" and lm.steps()[-1] == "answer"
    assert [e for e in pred.trace if e["step"] == "lm_error"]
    with pytest.raises(InputError) as err:
        Pack(notes_share=1.5)
    assert err.value.argument == "pack.notes_share"


def test_recheck_asks_once_more_from_a_denser_pack_when_no_sentence_states_the_answer(yearbook_index, run_with):
    answers = iter(["Zanzibar", "2021"])  # the first answer is in no sentence, the second is

    def reader(prompt: str, n: int):
        return {"answer": next(answers), "evidence_ids": ["c1"]}

    with run_with(ProgramLM(answer=reader)) as lm:
        prog = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True), lm_steps=RECHECK)
        pred = prog(question=Q)
    assert lm.steps() == ["answer", "answer"] and prog.max_lm_calls() == 2
    first_prompt, second_prompt = (p for _, p in lm.calls)
    assert count_tokens(second_prompt) < count_tokens(first_prompt) <= 1000  # the denser pack
    (event,) = [e for e in pred.trace if e["step"] == "recheck"]
    assert event["first"] == "Zanzibar" and event["second"] == "2021" and event["kept"]
    assert pred.answer == "2021" and pred.context == event["context"]


def test_recheck_keeps_the_first_answer_when_the_second_is_not_stated_either_or_fails(yearbook_index, run_with):
    answers = iter(["Zanzibar", "Atlantis"])
    with run_with(ProgramLM(answer=lambda p, n: {"answer": next(answers), "evidence_ids": []})):
        pred = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True), lm_steps=RECHECK)(question=Q)
    assert pred.answer == "Zanzibar" and [e["kept"] for e in pred.trace if e["step"] == "recheck"] == [False]
    calls = iter([{"answer": "Zanzibar", "evidence_ids": []}, {"wrong": "field"}, {"wrong": "field"}])
    with run_with(ProgramLM(answer=lambda p, n: next(calls))):
        pred = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True), lm_steps=RECHECK)(question=Q)
    # the failed second ask is recorded in the recheck event; the answer and its trace stand
    from ragnet.lm.failures import answer_failure

    assert pred.answer == "Zanzibar" and answer_failure(pred.trace) is None
    (event,) = [e for e in pred.trace if e["step"] == "recheck"]
    assert not event["kept"] and event["lm_errors"]


def test_recheck_is_not_asked_when_the_answer_is_stated(yearbook_index, run_with):
    with run_with(ProgramLM(answer=lambda p, n: {"answer": "2021", "evidence_ids": []})) as lm:
        pred = OneShotRAG(yearbook_index, 1000, pack=Pack(sentences=True), lm_steps=RECHECK)(question=Q)
    assert lm.steps() == ["answer"] and not [e for e in pred.trace if e["step"] == "recheck"]


def test_a_manuals_contents_page_never_reaches_the_reader(tmp_path, run_with):
    """A contents page shares every word with a question about its manual and states nothing:
    the rules stage drops it with its reason in the trace, and only the section is read."""
    from ragnet import Document, Index
    from ragnet.programs.stages import LISTING_REASON

    contents = "Contents\n" + "\n".join(f"3.{i} Invoking asn1Decoding option {i} . . . . . . . . {7 + i}"
                                        for i in range(6))
    docs = [Document(id="toc", title="Libtasn1", text=contents),
            Document(id="dec", title="Invoking asn1Decoding",
                     text="asn1Decoding decodes DER data. The -t option uses strict DER decoding but not in time fields.")]
    index = Index.build(docs, tmp_path / "i", show_progress=False)
    question = "Which asn1Decoding option skips strict decoding in time fields?"
    with run_with(ProgramLM()):
        pred = OneShotRAG(index, 1000, pack=Pack(sentences=True))(question=question)
        plain = OneShotRAG(index, 1000, pack=Pack(sentences=True), search=Search(rules=False))(question=question)
    (event,) = [e for e in pred.trace if e["step"] == "filter" and e["kind"] == "rules"]
    assert event["dropped"] == [{"id": "toc#0", "reason": LISTING_REASON}]
    assert "toc#0" not in event["kept"] and pred.context == ["dec#0"]
    assert "toc#0" in plain.context  # rules off: nothing drops it


def test_a_bridge_search_does_not_bring_a_listing_back(tmp_path):
    """The hops' searches leave out what the rules leave out of the first search: a page of
    leaders that names the bridge entity is recorded under ``listings``, not added."""
    import dspy

    from ragnet import Document, Index
    from ragnet.programs.trace import Trace

    index_page = "Index\n" + "\n".join(f"Shirley Temple, post {i} . . . . . . . . {20 + i}" for i in range(6))
    docs = [Document(id="film", title="Kiss and Tell", text="Kiss and Tell is a film starring Shirley Temple."),
            Document(id="st", title="Shirley Temple", text="Shirley Temple was a United States ambassador."),
            Document(id="idx", title="Shirley Temple", text=index_page),
            Document(id="gh", title="Ghana", text="Ghana is a country in West Africa.")]
    index = Index.build(docs, tmp_path / "i", show_progress=False)
    question = "Which government post did the star of Kiss and Tell hold?"
    with dspy.context(adapter=dspy.JSONAdapter()):  # no LM configured: any LM call would fail
        trace = Trace()
        picked = OneShotRAG(index, 480, pack=Pack(sentences=True), search=Search(pool=1, rules=True),
                            hops=Hops(2, k=3)).retrieve(question, trace)
    (hops,) = trace.of("hops")
    assert hops["listings"] == ["idx#0"] and "idx#0" not in hops["added"] and "st#0" in hops["added"]
    assert "idx#0" not in [c.id for c in picked]


BC_QUESTION = "What is the default number of history lines bc keeps when built with readline?"


def _bc_and_node(tmp_path, last_line: str, node_text: str):
    """A bc manual whose eight sections share the question's words and whose ``last_line`` states
    the default, beside a Node.js readline page (``node_text``) that shares them too."""
    from ragnet import Document, Index

    bc = Document(id="bc", title="bc", text="\n\n".join(
        f"Section {i}. The bc calculator keeps a history of lines when built with readline; note {i}."
        for i in range(8)) + "\n\n" + last_line)
    node = Document(id="node", title="Readline", text=node_text)
    return Index.build([bc, node], tmp_path / "i", chunk_tokens=40, overlap=0, show_progress=False)


def test_focus_fills_the_pack_from_the_document_most_best_hits_come_from(tmp_path, run_with):
    """Preset ``focus``: the bc manual holds most of the best hits, so the Node.js page that
    shares the question's words stays out of the pack; the event names the document."""
    from ragnet.programs.registry import build_program

    index = _bc_and_node(tmp_path, "HISTORY is the number of lines of history bc retains; -1 is the default.",
                         "The readline history option sets how many history lines a Node.js interface keeps by default.")
    with run_with(ProgramLM()):
        focused = build_program("oneshot:sentences+focus", index, budget=2000)(question=BC_QUESTION)
        plain = build_program("oneshot:sentences", index, budget=2000)(question=BC_QUESTION)
    (event,) = [e for e in focused.trace if e["step"] == "focus"]
    assert event["document"] == "bc" and event["dropped"] >= 1
    assert {cid.split("#")[0] for cid in focused.context} == {"bc"}
    assert "node#0" in plain.context and not [e for e in plain.trace if e["step"] == "focus"]


def test_focus_keeps_the_bridge_hops_hits_to_its_document_and_traces_what_it_dropped(tmp_path, run_with):
    """With ``focus`` and the bridge hops, a hop's hit from another document stays out of the pack,
    and a second ``focus`` event (turn 2) counts it."""
    from ragnet.programs.registry import build_program

    index = _bc_and_node(tmp_path, "The history_size variable sets the lines bc retains; see history_size for the default.",
                         "The history_size option of a Node.js readline interface defaults to 30 lines.")
    with run_with(ProgramLM()):
        pred = build_program("oneshot:sentences+hops+focus", index, budget=2000)(question=BC_QUESTION)
    first, hops = [e for e in pred.trace if e["step"] == "focus"]
    assert first["turn"] == 1 and hops["turn"] == 2 and hops["document"] == "bc"
    (hop_event,) = [e for e in pred.trace if e["step"] == "hops"]
    from_node = [cid for cid in hop_event["added"] if cid.startswith("node")]
    assert from_node and hops["dropped"] >= len(from_node)
    assert {cid.split("#")[0] for cid in pred.context} == {"bc"}
