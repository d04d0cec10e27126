"""What ``ragnet ask`` prints: LM and document text exactly as given, in bounded time, and no
evidence list when the answer step failed.

The LM is a real OpenAI-compatible HTTP server on 127.0.0.1 (``tests/lm/fault_server.py``).
"""

from __future__ import annotations

import json

import pytest
from rich.highlighter import ReprHighlighter
from typer.testing import CliRunner

from ragnet.cli import app
from ragnet.corpus.types import Document
from ragnet.index import Index
from tests.lm.fault_server import FaultServer

runner = CliRunner()
QUESTION = "What is the capital of France?"
# one 80,000-character token: rich's highlighter took minutes on it
HUGE = "x" * 40_000 + "." + "y" * 39_999
MARKUP = "[bold]not bold[/bold] [/dim] [link=http://e.x]l[/link]"
TITLE = "[/dim][red]Paris[/red]"


def _reply(answer: str) -> str:
    return f'[[ ## answer ## ]]\n{answer}\n\n[[ ## evidence_ids ## ]]\n["c1"]\n\n[[ ## completed ## ]]'


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    docs = [Document(id="paris", title=TITLE, text="Paris is the capital of France."),
            Document(id="rome", title="Rome", text="Rome is the capital of Italy.")]
    return Index.build(docs, tmp_path_factory.mktemp("ask_output") / "idx", show_progress=False)


@pytest.fixture
def highlighted(monkeypatch):
    """The texts rich's default highlighter is applied to during the test."""
    seen: list[str] = []
    original = ReprHighlighter.highlight

    def record(self, text):
        seen.append(text.plain)
        return original(self, text)

    monkeypatch.setattr(ReprHighlighter, "highlight", record)
    return seen


def _ask(index, server, tmp_path, *extra):
    return runner.invoke(app, ["ask", QUESTION, "--index", str(index.path), "--strategy", "basic",
                               "--lm", "openai/test-model", "--api-base", server.url, "--api-key", "k",
                               "--timeout", "5", *extra], env={"RAGNET_CACHE_DIR": str(tmp_path / "cache")})


def test_a_huge_one_token_answer_prints_whole_and_unhighlighted(index, tmp_path, highlighted):
    with FaultServer("ok", reply=_reply(HUGE)) as server:
        result = _ask(index, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert HUGE in result.stdout.replace("\n", "")
    assert not any("x" * 1000 in text for text in highlighted), "the answer went through rich's highlighter"


def test_markup_in_the_answer_and_in_titles_prints_literally(index, tmp_path, highlighted):
    with FaultServer("ok", reply=_reply(MARKUP)) as server:
        result = _ask(index, server, tmp_path)
    assert result.exit_code == 0, result.output
    assert f"answer: {MARKUP}" in result.stdout
    assert f"paris#0  {TITLE}" in result.stdout
    assert not any(MARKUP in text or TITLE in text for text in highlighted)


def test_a_failed_answer_lists_no_evidence(index, tmp_path):
    with FaultServer("error500") as server:
        result = _ask(index, server, tmp_path)
    assert result.exit_code == 3, result.output
    assert "paris#0" not in result.stdout and "rome#0" not in result.stdout
    assert "evidence: none (no answer: the LM failed)" in result.stdout
    assert "error: no answer: the LM server failed (HTTP 5xx)" in result.stderr


def test_search_prints_titles_and_text_as_given(index):
    result = runner.invoke(app, ["search", "capital of France", "--index", str(index.path), "-k", "1"])
    assert result.exit_code == 0, result.output  # a title holding [/dim] raised MarkupError
    assert "[/dim][red]Paris[/red]" in result.output


def test_a_failed_answer_has_no_evidence_in_the_json_prediction_either(index, tmp_path):
    with FaultServer("error500") as server:
        result = _ask(index, server, tmp_path, "--json")
    assert result.exit_code == 3, result.output
    pred = json.loads(result.stdout)
    assert pred["evidence"] == [] and pred["context"]  # the context is kept, nothing claims to support no answer
