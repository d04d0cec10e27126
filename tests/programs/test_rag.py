"""`ragnet.RAG`: the Python entry point builds the program `ragnet ask` runs for the same LM and
strategy (same spec, same budget, byte-identical answer prompt), and every prediction records
what ran."""

from __future__ import annotations

from pathlib import Path

import dspy
import pytest
from typer.testing import CliRunner

import ragnet
import ragnet.lm.config
from ragnet.cli import app
from ragnet.errors import InputError
from ragnet.index import Index
from ragnet.programs import OneShotRAG
from tests.programs.scripted import ProgramLM

runner = CliRunner()
Q = "What was the population of Aldermoor in 2021?"


@pytest.fixture
def engines(yearbook_index, monkeypatch, tmp_path):
    """``engines.append(ProgramLM())`` makes the newest scripted engine every LM (the spec still
    decides what auto recommends; a scripted engine keeps state, so each run gets a fresh one);
    the index loads as the yearbook index; DSPy's LM is restored afterwards."""
    engines = [ProgramLM()]
    monkeypatch.setattr(ragnet.lm.config, "make_lm", lambda spec=None, **kwargs: engines[-1].lm())
    monkeypatch.setattr(Index, "load", classmethod(lambda cls, path, **kwargs: yearbook_index))
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    saved = dspy.settings.lm
    dspy.configure(lm=None)
    yield engines
    dspy.configure(lm=saved)


def _answer_prompts(engine: ProgramLM) -> list[str]:
    return [prompt for step, prompt in engine.calls if step == "answer"]


@pytest.mark.parametrize(("lm", "strategy", "ran"), [
    ("local", "auto", "oneshot:sentences+hops@1000"),
    ("openai/gpt-4o-mini", "auto", "oneshot@4000"),
    ("local", "iterative", "iterative:sentences@1000"),
    ("local", "basic", "basic"),
])
def test_rag_answers_with_the_program_ask_runs(engines, yearbook_index, lm, strategy, ran):
    result = runner.invoke(app, ["ask", Q, "--index", "unused", "--lm", lm, "--answer-lm", "none",
                                 "--strategy", strategy, "--json"])
    assert result.exit_code == 0, result.output
    assert f'"strategy": "{ran}"' in result.stdout  # ask --json records what ran
    dspy.configure(lm=None)
    engines.append(ProgramLM())

    rag = ragnet.RAG("unused", lm=lm, strategy=strategy, answer_lm=None)
    pred = rag(question=Q)
    assert pred.strategy == rag.ran_as() == ran
    assert rag.index is yearbook_index
    assert _answer_prompts(engines[0])
    assert _answer_prompts(engines[-1]) == _answer_prompts(engines[0])  # byte-identical answer prompt


def test_rag_keeps_the_configured_lm_and_refuses_connection_options_without_one(engines, yearbook_index):
    dspy.configure(lm=engines[-1].lm())
    configured = dspy.settings.lm
    rag = ragnet.RAG(yearbook_index, answer_lm=None)
    assert dspy.settings.lm is configured
    assert (rag.spec, rag.budget) == ("oneshot", 4000)  # the scripted LM is no local model
    with pytest.raises(InputError, match="give them with lm="):
        ragnet.RAG(yearbook_index, timeout=5)
    with pytest.raises(InputError, match="strategy"):
        ragnet.RAG(yearbook_index, strategy=" ")


def test_a_program_built_directly_records_its_class_and_budget(yearbook_index, run_with):
    with run_with(ProgramLM()):
        pred = OneShotRAG(yearbook_index)(question=Q)
    assert pred.strategy == "OneShotRAG@4000"


def test_the_default_local_lm_object_gets_the_default_reader_as_its_spec_does(monkeypatch, tmp_path):
    """``configure("local")`` installs an LM object; ``answer_lm="auto"`` must pick the 1.5B reader
    for it as ``ask --lm local`` does for the spec."""
    models = {"steps": tmp_path / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "reader": tmp_path / "reader.gguf"}
    for path in models.values():
        path.write_bytes(b"gguf")
    monkeypatch.setattr(ragnet.lm.config, "default_model_path",
                        lambda name=None: models["reader"] if name else models["steps"])
    monkeypatch.delenv("RAGNET_GGUF", raising=False)
    monkeypatch.delenv("RAGNET_LM", raising=False)
    reader = ragnet.lm.config.default_answer_lm("local")
    assert reader == f"local:{ragnet.lm.config.DEFAULT_READER}"
    assert ragnet.lm.config.default_answer_lm(dspy.LM(f"llamacpp/{Path(models['steps']).stem}")) == reader
    assert ragnet.lm.config.default_answer_lm(dspy.LM("llamacpp/someone-elses-model")) is None
    assert ragnet.lm.config.default_answer_lm(dspy.LM("openai/gpt-4o-mini")) is None
