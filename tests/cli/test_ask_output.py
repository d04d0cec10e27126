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


# -- citations: where each evidence chunk is from and the sentences the reader saw ---------------
ESC_SENTENCE = "The river \x1b[31mSeine\x1b[0m runs through it."
ATLAS = ("Paris is the capital of France. It holds [bold]x[/bold] in its name. " + ESC_SENTENCE +
         " Paris has many museums. Paris hosts a marathon. Paris has old bridges.")
ATLAS_LOCATION = {"file": "maps/atlas.pdf", "page": 3, "page_end": 4, "headings": ["Europe", "France"]}


@pytest.fixture(scope="module")
def located_index(tmp_path_factory):
    from tests.located import build_located_index

    docs = [Document(id="atlas", title="World atlas", text=ATLAS),
            Document(id="rome", title="Rome", text="Rome is the capital of Italy.")]
    return build_located_index(docs, tmp_path_factory.mktemp("ask_cite") / "idx", {"atlas#0": ATLAS_LOCATION})


def test_evidence_says_where_it_is_from_and_quotes_its_sentences_as_plain_text(located_index, tmp_path, highlighted):
    with FaultServer("ok", reply=_reply("Paris")) as server:
        result = _ask(located_index, server, tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("  atlas#0  maps/atlas.pdf › Europe › France, p. 3–4")
    assert lines[at + 1:at + 6] == [
        "      “Paris is the capital of France.”",
        "      “It holds [bold]x[/bold] in its name.”",  # rich markup prints as written
        "      “The river \\x1b[31mSeine\\x1b[0m runs through it.”",  # the ESC shows, the terminal never gets it
        "      “Paris has many museums.”",
        "      … and 2 more sentences (--json lists them all)",
    ]
    assert "\x1b" not in result.stdout and "rome#0" not in result.stdout
    assert not any("[bold]x" in text or "Seine" in text for text in highlighted)


def test_a_long_sentence_wraps_under_its_indent_and_prints_whole(tmp_path, highlighted):
    from tests.located import build_located_index

    sentence = "The committee " + "reviewed the quarterly figures again and " * 12 + "approved the budget."
    index = build_located_index([Document(id="minutes", title="Minutes", text=sentence)], tmp_path / "idx", {})
    with FaultServer("ok", reply=_reply("approved")) as server:
        result = runner.invoke(app, ["ask", "What did the committee approve?", "--index", str(index.path),
                                     "--strategy", "basic", "--lm", "openai/test-model", "--api-base", server.url,
                                     "--api-key", "k", "--timeout", "5"],
                               env={"RAGNET_CACHE_DIR": str(tmp_path / "cache")})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("  minutes#0  Minutes")  # no location: the title alone, as before
    quoted = []
    for line in lines[at + 1:]:
        if not line.startswith("      "):
            break
        quoted.append(line)
    assert len(quoted) > 1 and all(len(line) <= 150 for line in quoted)  # wrapped, every line indented
    assert " ".join(line.strip() for line in quoted) == f"“{sentence}”"


def test_the_json_prediction_carries_the_citations(located_index, tmp_path):
    with FaultServer("ok", reply=_reply("Paris")) as server:
        result = _ask(located_index, server, tmp_path, "--json")
    assert result.exit_code == 0, result.output
    pred = json.loads(result.stdout)
    assert pred["evidence"] == ["atlas#0"]
    assert pred["citations"] == [{"id": "atlas#0", "doc_id": "atlas", "title": "World atlas", **ATLAS_LOCATION,
                                  "sentences": ["Paris is the capital of France.",
                                                "It holds [bold]x[/bold] in its name.", ESC_SENTENCE,
                                                "Paris has many museums.", "Paris hosts a marathon.",
                                                "Paris has old bridges."], "states_answer": True}]


def test_a_failed_answer_cites_nothing_in_the_json_prediction(located_index, tmp_path):
    with FaultServer("error500") as server:
        result = _ask(located_index, server, tmp_path, "--json")
    assert result.exit_code == 3, result.output
    pred = json.loads(result.stdout)
    assert pred["citations"] == [] and pred["context"]


@pytest.mark.parametrize("confidence, low", [(0.86, False), (0.31, True)])
def test_the_confidence_line_flags_a_low_confidence(capsys, confidence, low):
    import dspy

    from ragnet.cli.ask import _print

    pred = dspy.Prediction(answer="512-byte blocks", confidence=confidence, citations=[], context=[],
                           usage={"lm_calls": 1, "cached_calls": 0, "input_tokens": 10, "output_tokens": 3,
                                  "searches": 1, "seconds": 0.1})
    _print(pred, False, strategy="auto", budget=2000, failed=False)
    out = capsys.readouterr().out
    assert f"confidence: {confidence:.2f} (the reader's probability of this answer" in out
    assert ("low: check the cited lines" in out) is low


def test_search_takes_bm25_weight_and_its_old_name_lam(index):
    runs = {name: runner.invoke(app, ["search", "capital of France", "--index", str(index.path), "-k", "3", name,
                                      "1.0", "--json"]) for name in ("--bm25-weight", "--lam")}
    assert all(r.exit_code == 0 for r in runs.values()), [r.output for r in runs.values()]
    ids = {name: [h["id"] for h in json.loads(r.stdout)] for name, r in runs.items()}
    assert ids["--bm25-weight"] == ids["--lam"] and ids["--bm25-weight"][0] == "paris#0"
    bad = runner.invoke(app, ["search", "x", "--index", str(index.path), "--bm25-weight", "2"])
    assert bad.exit_code == 2 and "bm25-weight" in bad.output
