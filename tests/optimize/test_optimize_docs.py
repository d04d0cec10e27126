"""`ragnet optimize --docs FOLDER --data questions.jsonl`: a user compiles a step against the
questions they wrote about their own documents (the file `ragnet eval --docs` reads). The
answer step's cases are the gold quotes with other questions' quotes as distractors; whole
programs search the folder's real index. A scripted reader answers in the short form only once
it has demos, so compiling has a measurable effect."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from tests.optimize.conftest import every_lm_is, OptimizeLM, _field, _last_user, _n_demos

runner = CliRunner()
TOPICS = ["retries", "timeouts", "workers", "log days", "cache size", "port", "batch size", "threads",
          "queue depth", "buffer", "keepalive", "backoff"]


@pytest.fixture
def folder(tmp_path):
    docs = tmp_path / "manual"
    docs.mkdir()
    questions = []
    for i, topic in enumerate(TOPICS):
        value = 10 + i
        (docs / f"part{i}.md").write_text(f"# Part {i}\n\n## Settings\n\nThe default number of {topic} is {value}. "
                                          f"Change it in the configuration file.\n")
        questions.append({"id": f"q{i}", "question": f"What is the default number of {topic}?",
                          "answers": [str(value)], "kind": "numeric",
                          "gold": [{"file": f"part{i}.md", "section": [f"Part {i}", "Settings"],
                                    "quote": f"The default number of {topic} is {value}."}]})
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in questions))
    return docs, data


def short_once_taught(prompt: str, n: int, request) -> dict:
    """With demos: the number of the question's own topic, read from the context; without: a sentence."""
    user = _last_user(request)
    topic = re.search(r"default number of (.+?)\?", _field(user, "question")).group(1)
    match = re.search(rf"default number of {re.escape(topic)} is (\d+)", _field(user, "context"))
    if _n_demos(request) < 1 or match is None:
        return {"answer": "It can be changed in the configuration file", "evidence_ids": ["c1"]}
    return {"answer": match.group(1), "evidence_ids": ["c1"]}


short_once_taught.wants_request = True


@pytest.fixture
def engine(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    with every_lm_is(OptimizeLM(answer=short_once_taught), monkeypatch, tmp_path) as lm:
        yield lm


def test_the_answer_step_compiles_on_the_gold_quotes_of_your_questions(folder, engine, tmp_path):
    docs, data = folder
    out = tmp_path / "answer.json"
    result = runner.invoke(app, ["optimize", "--docs", str(docs), "--data", str(data), "--program",
                                 "oneshot:sentences+hops", "--step", "answer", "--lm", "scripted",
                                 "--val-fraction", "0.5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = json.loads(out.read_text())["metadata"]["ragnet"]["optimization"]
    assert run["docs"] == str(docs) and run["data"] == "questions.jsonl"
    assert len(run["train_questions"]) == len(run["val_questions"]) == 6
    assert run["before"] == 0.0 and run["after"] == 1.0  # the demos teach the short form
    contexts = [_field(_last_user(r), "context") for r in engine.requests if "default number" in _last_user(r)]
    assert contexts and all("part" in c and "› Settings" in c for c in contexts)  # quotes titled by their place
    assert all(c.count("[c") == 2 for c in contexts)  # the gold quote and one other question's quote


def test_whole_programs_compile_over_the_folders_index(folder, engine, tmp_path):
    docs, data = folder
    out = tmp_path / "basic.json"
    result = runner.invoke(app, ["optimize", "--docs", str(docs), "--data", str(data), "--program", "basic",
                                 "--lm", "scripted", "-n", "8", "--val-fraction", "0.5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = json.loads(out.read_text())["metadata"]["ragnet"]["optimization"]
    assert run["n_questions"] == 8 and run["metric"] == "f1"
    prompts = [_last_user(r) for r in engine.requests]
    assert any("The default number of" in p for p in prompts)  # the reader saw the folder's chunks


@pytest.mark.parametrize(("args", "argument"), [
    (["--step", "rewrite", "--program", "iterative"], "step"),
    (["--metric", "recall"], "metric"),
])
def test_what_needs_document_titles_is_refused_over_docs(folder, engine, tmp_path, args, argument):
    docs, data = folder
    result = runner.invoke(app, ["optimize", "--docs", str(docs), "--data", str(data), "--lm", "scripted",
                                 "--out", str(tmp_path / "x.json"), *args])
    assert result.exit_code == 2
    assert argument in result.output and "gold is a place" in result.output


def test_a_missing_folder_is_named(folder, engine, tmp_path):
    _, data = folder
    result = runner.invoke(app, ["optimize", "--docs", str(tmp_path / "nope"), "--data", str(data), "--lm",
                                 "scripted", "--out", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and "nope" in result.output and "not a folder" in result.output
