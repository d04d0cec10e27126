"""``ragnet optimize --step condense``: the follow-up rewrite compiled on a follow-ups file, scored
by the terms it restores, and saved as the ``FollowUp`` program that loads back."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from ragnet.errors import InputError
from ragnet.optimize.cases import condense_cases, load_followups
from tests.optimize.conftest import every_lm_is, OptimizeLM, _field

runner = CliRunner()
SUBJECTS = ["flex -d option", "grep -c option", "sed -n option", "wget --spider option", "find -xdev option",
            "bzip2 -k option", "tar -z option", "gzip -9 option", "ninja -j option", "make -k option"]


def _followups(path):
    rows = []
    for i, subject in enumerate(SUBJECTS * 2):
        asked = ["default", "long form"][i % 2]
        rows.append({"id": f"fu-{i:03d}", "question": f"And its {asked}?",
                     "history": [{"question": f"What does the {subject} do?"}],
                     "standalone_question": f"What is the {asked} of the {subject}?"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _condense(prompt: str, n: int) -> dict:
    """Leaves "its" unresolved unless a demo shows the form (then rewrites properly): a measurable
    effect of compiling, nothing about real models."""
    last = prompt.rsplit("[[ ## history ## ]]", 1)[-1]
    history, question = last, _field(last, "question")
    subject = history.rsplit("What does the ", 1)[-1].split(" do?")[0]
    asked = question.strip().removeprefix("And its ").removesuffix("?")
    if prompt.count("User: What does the ") > 1:  # demos shown (each with its own history)
        return {"standalone_question": f"What is the {asked} of the {subject}?"}
    return {"standalone_question": f"What is its {asked}?"}  # keeps what is asked, drops what "its" is


@pytest.fixture
def engine(monkeypatch, tmp_path):
    with every_lm_is(OptimizeLM(condense=_condense), monkeypatch, tmp_path) as lm:
        yield lm


def test_condense_cases_read_a_followups_file_and_refuse_a_bad_line(tmp_path):
    cases = condense_cases(load_followups(_followups(tmp_path / "f.jsonl")))
    assert len(cases) == 20 and cases[0].history == "User: What does the flex -d option do?"
    assert set(cases[0].inputs().keys()) == {"question", "history"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q?", "history": [], "standalone_question": "s?"}\n')
    with pytest.raises(InputError, match="line 1"):
        load_followups(bad)


def test_optimize_condense_step_saves_a_follow_up_program_that_loads(engine, tmp_path):
    from ragnet.programs.conversation import FollowUp
    from ragnet.programs.persist import load_program
    from ragnet.programs.registry import build_program
    from tests.optimize.conftest import FakeIndex

    out = tmp_path / "condense.json"
    result = runner.invoke(app, ["optimize", "--program", "basic", "--step", "condense", "--data",
                                 str(_followups(tmp_path / "f.jsonl")), "--lm", "scripted", "--out", str(out),
                                 "--val-fraction", "0.5"])
    assert result.exit_code == 0, result.output
    state = json.loads(out.read_text())
    header = state["metadata"]["ragnet"]
    assert header["program"] == "FollowUp" and header["optimization"]["step"] == "condense"
    run = header["optimization"]
    assert run["metric"] == "condense_terms" and run["after"] > run["before"]
    assert state["condense.predict"]["demos"] and "saved" in result.stdout and "FollowUp(" in result.stdout
    loaded = load_program(FollowUp(build_program("basic", FakeIndex([]))), out)
    assert loaded.condense.predict.demos
