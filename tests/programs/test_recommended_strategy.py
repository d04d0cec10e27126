"""The strategy ragnet recommends for a reader, and `ragnet ask --strategy auto` (the default)
using it: sentences in a 1,000-token prompt for a local reader (2,000 over documents with
sections), 4,000 tokens of whole chunks for any other, and whatever the user names otherwise."""

from __future__ import annotations

import dspy
import pytest
from typer.testing import CliRunner

import ragnet.lm.config
from ragnet.cli import app
from ragnet.index import Index
from ragnet.programs.registry import RECOMMENDED, recommended_strategy
from tests.programs.scripted import ProgramLM

runner = CliRunner()
Q = "What was the population of Aldermoor in 2021?"


def test_a_local_reader_gets_sentences_in_1000_tokens_and_any_other_the_4000_token_pack(monkeypatch):
    monkeypatch.delenv("RAGNET_LM", raising=False)
    assert recommended_strategy(None) == recommended_strategy("local") == ("oneshot:sentences+hops", 1000)
    assert recommended_strategy("local:/models/any.gguf") == RECOMMENDED["local"]
    assert recommended_strategy("ollama_chat/qwen2.5:7b") == recommended_strategy("openai/gpt-4o") == ("oneshot", 4000)
    assert recommended_strategy(dspy.LM("llamacpp/qwen2.5-coder-1.5b")) == RECOMMENDED["local"]
    assert recommended_strategy(dspy.LM("openai/gpt-4o-mini")) == RECOMMENDED["other"]
    monkeypatch.setenv("RAGNET_LM", "openai/gpt-4o-mini")  # None means the configured default
    assert recommended_strategy(None) == RECOMMENDED["other"]


@pytest.fixture
def ask(yearbook_index, monkeypatch, tmp_path):
    """``ask(*args)`` -> (result, prompts): `ragnet ask` over the yearbook index, every LM the
    scripted engine (the spec still decides what auto recommends)."""
    engine = ProgramLM()
    monkeypatch.setattr(ragnet.lm.config, "make_lm", lambda spec=None, **kwargs: engine.lm())
    monkeypatch.setattr(Index, "load", classmethod(lambda cls, path, **kwargs: yearbook_index))
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    saved = dspy.settings.lm

    def go(*args):
        start = len(engine.calls)
        result = runner.invoke(app, ["ask", Q, "--index", "unused", "--answer-lm", "none", *args])
        assert result.exit_code == 0, result.output
        return result, [prompt for step, prompt in engine.calls[start:] if step == "answer"]

    yield go
    dspy.configure(lm=saved)


def test_ask_auto_answers_a_local_reader_from_selected_sentences_in_1000_tokens(ask):
    result, (prompt,) = ask("--lm", "local")
    assert "strategy: oneshot:sentences+hops, 1,000-token answer budget" in result.stdout
    # OneShotRAG's default puts the question after the context
    assert prompt.rindex("[[ ## question ## ]]") > prompt.rindex("[[ ## context ## ]]")


def test_ask_auto_gives_another_reader_the_4000_token_pack_and_named_strategies_win(ask):
    result, _ = ask("--lm", "openai/gpt-4o-mini")
    assert "strategy: oneshot, 4,000-token answer budget" in result.stdout
    result, _ = ask("--lm", "local", "--budget", "1500")  # a budget given is kept
    assert "strategy: oneshot:sentences+hops, 1,500-token answer budget" in result.stdout
    result, (prompt,) = ask("--lm", "local", "--strategy", "basic")
    assert "strategy: basic\n" in result.stdout
    assert prompt.rindex("[[ ## question ## ]]") < prompt.rindex("[[ ## context ## ]]")


def test_ask_gives_a_named_agent_the_readers_budget_and_sentences_for_a_local_reader(ask):
    """`ragnet ask --strategy iterative|reflective|combined` answers a local reader over the same
    1,000 tokens of selected sentences the one-shot gives it; another reader gets the strategy as named."""
    from ragnet.corpus.tokens import count_tokens

    for strategy in ("iterative", "reflective", "combined:no-rules"):
        result, (prompt,) = ask("--lm", "local", "--strategy", strategy)
        spec = strategy + ("+sentences" if ":" in strategy else ":sentences")
        assert f"strategy: {spec}, 1,000-token answer budget" in result.stdout
        assert count_tokens(prompt) <= 1000
        assert prompt.rindex("[[ ## question ## ]]") > prompt.rindex("[[ ## context ## ]]")
    result, _ = ask("--lm", "openai/gpt-4o-mini", "--strategy", "reflective")
    assert "strategy: reflective\n" in result.stdout
    result, _ = ask("--lm", "local", "--strategy", "iterative", "--budget", "1500")
    assert "strategy: iterative, 1,500-token answer budget" in result.stdout


MANUAL = """# Aldermoor handbook

## Population

The population of Aldermoor in 2021 was 52,400 people, up from 51,900 in 2020.

## Services

The library opens at 9 and the town hall at 8. See Population for the census figures.
"""


@pytest.fixture(scope="module")
def manual_index(tmp_path_factory):
    """A real index of a Markdown manual: every chunk carries its heading path."""
    from ragnet import load_documents

    folder = tmp_path_factory.mktemp("manual")
    (folder / "handbook.md").write_text(MANUAL, encoding="utf-8")
    return Index.build(load_documents([folder]), folder / "idx", show_progress=False)


def test_documents_with_sections_and_passages_get_the_same_local_budget(manual_index, yearbook_index):
    from ragnet.programs.registry import SECTIONED_LOCAL_BUDGET, has_sections, resolve_strategy

    assert has_sections(manual_index) and not has_sections(yearbook_index)
    assert recommended_strategy("local", manual_index) == ("oneshot:sentences+hops", SECTIONED_LOCAL_BUDGET) \
        == ("oneshot:sentences+hops", 1000)  # 2,000 did not pay for its time on the check split
    assert recommended_strategy("local", yearbook_index) == recommended_strategy("local") == RECOMMENDED["local"]
    assert recommended_strategy("openai/gpt-4o", manual_index) == RECOMMENDED["other"]  # a long-context reader
    assert resolve_strategy("auto", None, "local", manual_index) == ("oneshot:sentences+hops", 1000)
    assert resolve_strategy("reflective", None, "local", manual_index) == ("reflective:sentences", 1000)
    assert resolve_strategy("auto", 2000, "local", manual_index) == ("oneshot:sentences+hops", 2000)  # given: kept
    assert resolve_strategy("basic", None, "local", manual_index) == ("basic", None)


def test_has_sections_judges_a_large_index_on_an_even_sample():
    from types import SimpleNamespace

    from ragnet.programs.registry import has_sections

    class Rows(list):  # counts the rows read
        read: set = set()

        def __getitem__(self, row):
            Rows.read.add(row)
            return super().__getitem__(row)

    sectioned, flat = SimpleNamespace(headings=("2 Usage",)), SimpleNamespace(headings=())
    chunks = Rows([sectioned] * 6000 + [flat] * 4000)
    assert has_sections(SimpleNamespace(chunks=chunks))
    assert len(Rows.read) == 256 and min(Rows.read) == 0 and max(Rows.read) == 9999
    assert not has_sections(SimpleNamespace(chunks=Rows([sectioned] * 4000 + [flat] * 6000)))
    assert not has_sections(SimpleNamespace(chunks=[])) and not has_sections(None)


def test_ask_over_a_manual_answers_a_local_reader_within_1000_tokens(ask, manual_index, monkeypatch):
    from ragnet.corpus.tokens import count_tokens

    monkeypatch.setattr(Index, "load", classmethod(lambda cls, path, **kwargs: manual_index))
    result, (prompt,) = ask("--lm", "local")
    assert "strategy: oneshot:sentences+hops, 1,000-token answer budget" in result.stdout
    assert count_tokens(prompt) <= 1000
    result, _ = ask("--lm", "local", "--budget", "2000")
    assert "strategy: oneshot:sentences+hops, 2,000-token answer budget" in result.stdout
