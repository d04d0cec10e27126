"""AnswerStep(lm=...): the answer step runs on its own LM; every other step on the configured one."""

from __future__ import annotations

import dspy

from ragnet.programs import CombinedRAG, IterativeRAG, Loop, OneShotRAG
from ragnet.signatures import AnswerStep
from ragnet.lm.config import LazyLM as AnswerLM
from tests.programs.scripted import ProgramLM

Q = "What was the population of Aldermoor in 2021?"


def _reader():
    return ProgramLM(answer=lambda p, n: {"answer": "from the reader", "evidence_ids": ["c1"]})


def test_answer_step_uses_the_answer_lm_and_the_agent_steps_do_not(yearbook_index, run_with):
    reader = _reader()
    with run_with(ProgramLM()) as steps:
        pred = IterativeRAG(yearbook_index, loop=Loop(max_turns=2), answer=AnswerStep(lm=reader.lm()))(question=Q)
    assert pred.answer == "from the reader"
    assert [s for s, _ in reader.calls] == ["answer"]
    assert "answer" not in steps.steps() and "rewrite" in steps.steps()
    (event,) = [e for e in pred.trace if e["step"] == "answer"]
    assert event["lm"] == "scripted/program"


def test_budgets_are_measured_with_the_readers_adapter(yearbook_index, run_with):
    """A llama.cpp reader gets JSON prompts: the budget must count the prompt it will really read."""
    from ragnet.corpus.tokens import count_tokens

    reader = _reader()
    lm = reader.lm()
    lm.model = "llamacpp/test-reader"  # resolve_adapter gives llama.cpp models the JSONAdapter
    with run_with(ProgramLM()):
        pred = OneShotRAG(yearbook_index, budget=900, answer=AnswerStep(lm=lm))(question=Q)
        combined = CombinedRAG(yearbook_index, 900, loop=Loop(max_turns=1), answer=AnswerStep(lm=lm))(question=Q)
    for p in (pred, combined):
        (select,) = [e for e in p.trace if e["step"] == "select"]
        assert select["tokens"] <= 900
    prompts = [text for step, text in reader.calls if step == "answer"]
    assert len(prompts) == 2 and all(count_tokens(t) <= 900 for t in prompts)
    assert all('"answer"' in t for t in prompts)  # JSON adapter field names in the prompt


def test_copies_share_one_answer_lm_and_saving_stores_no_lm(yearbook_index, tmp_path):
    import copy
    import json

    from ragnet.programs.persist import save_program

    program = OneShotRAG(yearbook_index, answer=AnswerStep(lm=_reader().lm()))
    clone = copy.deepcopy(program)
    assert clone.answer.lm is program.answer.lm and isinstance(program.answer.lm, AnswerLM)
    path = save_program(program, tmp_path / "p.json")
    state = json.loads(path.read_text())
    assert all(v.get("lm") is None for k, v in state.items() if isinstance(v, dict) and "demos" in v)


def test_an_answer_lm_spec_is_built_once_on_first_use(monkeypatch):
    import ragnet.lm.config as config

    built = []

    def fake_make_lm(spec, **options):
        built.append((spec, options))
        return dspy.utils.DummyLM([])

    monkeypatch.setattr(config, "make_lm", fake_make_lm)
    reader = AnswerLM("openai/whatever", timeout=5.0)
    assert reader.name == "openai/whatever" and built == []  # nothing built until used
    first, second = reader.lm, reader.lm
    assert first is second and built == [("openai/whatever", {"timeout": 5.0})]


def test_the_default_reader_is_the_fetched_1_5b_model_for_the_default_local_lm_only(ragnet_home):
    from ragnet.lm.config import DEFAULT_READER, default_answer_lm, resolve_answer_lm
    from ragnet.lm.models import default_model_path

    assert resolve_answer_lm("auto", "local") is None  # 1.5B not fetched: the answer step uses --lm
    reader = default_model_path(DEFAULT_READER)
    reader.parent.mkdir(parents=True, exist_ok=True)
    reader.write_bytes(b"GGUF")
    assert resolve_answer_lm("auto", "local") == f"local:{DEFAULT_READER}"
    assert resolve_answer_lm("auto", None) == f"local:{DEFAULT_READER}"
    assert resolve_answer_lm("AUTO", "openai/gpt-4o-mini") is None  # a user's own LM answers itself
    assert default_answer_lm("local:/elsewhere/own.gguf") is None
    assert resolve_answer_lm("none", "local") is None and resolve_answer_lm(None, "local") is None
    assert resolve_answer_lm("openai/gpt-4o", "local") == "openai/gpt-4o"
