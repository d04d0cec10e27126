"""Save/load of compiled programs: JSON only, identical behaviour after a round trip, and one clear
error naming the file for anything that is not a matching compiled program."""

from __future__ import annotations

import json

import pytest

import ragnet
from ragnet.errors import InputError
from ragnet.optimize.cases import sufficiency_cases
from ragnet.programs.persist import load_program, read_header, save_program
from ragnet.optimize.steps import compile_step
from ragnet.programs import BasicRAG, IterativeRAG, LMSteps, Loop, Pack, ReflectiveRAG
from tests.optimize.conftest import (  # noqa: F401 - fixtures shared with the optimize tests
    FakeIndex,
    OptimizeLM,
    _fail_on_unrecognised_prompts,
    demo_dependent_sufficiency,
    records,
    scripted,
)


@pytest.fixture
def compiled(records, scripted, tmp_path):
    """An IterativeRAG whose sufficiency step was compiled (bootstrap), saved to compiled.json."""
    program = IterativeRAG(FakeIndex(records), loop=Loop(max_turns=2))
    with scripted(OptimizeLM(sufficiency=demo_dependent_sufficiency)):
        compile_step(program, "sufficiency", sufficiency_cases(records), progress=False, log=lambda m: None)
    path = save_program(program, tmp_path / "compiled.json", optimization={"optimizer": "bootstrap"})
    return program, path


def _run(program, question, scripted):
    with scripted(OptimizeLM(sufficiency=demo_dependent_sufficiency)) as lm:
        pred = program(question=question)
    events = [{k: v for k, v in e.items() if k not in ("seconds", "t")} for e in pred.trace]  # minus timings
    return pred.answer, pred.context, events, lm.calls


def test_round_trip_reproduces_identical_predictions_and_prompts(compiled, records, scripted):
    program, path = compiled
    loaded = load_program(IterativeRAG(FakeIndex(records), loop=Loop(max_turns=2)), path)
    assert loaded.sufficiency.predict.demos == json.loads(path.read_text())["sufficiency.predict"]["demos"]
    question = records[3].question
    original = _run(program, question, scripted)
    again = _run(loaded, question, scripted)
    assert original == again
    sufficiency_prompts = [p for s, p in again[3] if s == "sufficiency"]
    assert sufficiency_prompts and all(p.count("[[ ## verdict ## ]]") > 2 for p in sufficiency_prompts)  # demos shown
    fresh = _run(IterativeRAG(FakeIndex(records), loop=Loop(max_turns=2)), question, scripted)
    assert [p for s, p in fresh[3] if s == "sufficiency"] != sufficiency_prompts  # loading did change the prompt


def test_saved_file_is_plain_json_with_a_ragnet_header(compiled, tmp_path):
    _, path = compiled
    state = json.loads(path.read_text())
    header = read_header(path)
    assert header == state["metadata"]["ragnet"]
    assert header["program"] == "IterativeRAG" and header["version"] == ragnet.__version__
    assert header["signatures"]["sufficiency"] == "question, context -> verdict, confidence, missing"
    assert header["optimization"] == {"optimizer": "bootstrap"}
    assert "dependency_versions" in state["metadata"]  # DSPy's own save format
    assert [p.name for p in tmp_path.iterdir()] == ["compiled.json"]  # no temp files left behind


def test_a_killed_saves_scratch_is_cleaned_up_by_the_next_save(compiled, tmp_path):
    """DSPy's own save goes to a scratch folder named like every ragnet temporary, so one left by a
    killed process (here pid 99999999, not running) goes with the next save, and nothing else does."""
    program, path = compiled
    stale = tmp_path / ".compiled.json.99999999.abcd1234.tmp"
    stale.mkdir()
    (stale / "state.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    save_program(program, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compiled.json", "notes.txt"]


def _load_error(path, program) -> str:
    with pytest.raises(InputError) as err:
        load_program(program, path)
    assert err.value.path == str(path)
    return str(err.value)


def test_wrong_program_is_refused(compiled, records):
    _, path = compiled
    message = _load_error(path, ReflectiveRAG(FakeIndex(records)))
    assert "compiled for IterativeRAG, not ReflectiveRAG" in message


def test_other_ragnet_version_with_the_same_steps_loads(compiled, records):
    _, path = compiled
    state = json.loads(path.read_text())
    state["metadata"]["ragnet"]["version"] = "0.0.1"
    path.write_text(json.dumps(state))
    loaded = load_program(IterativeRAG(FakeIndex(records)), path)
    assert loaded.sufficiency.predict.demos == state["sufficiency.predict"]["demos"]


def test_changed_step_signature_is_refused_by_name(compiled, records):
    _, path = compiled
    state = json.loads(path.read_text())
    state["metadata"]["ragnet"]["version"] = "0.0.1"
    state["metadata"]["ragnet"]["signatures"]["contextualize"] = "question, notes, new_chunks -> updated_notes"
    path.write_text(json.dumps(state))
    message = _load_error(path, IterativeRAG(FakeIndex(records)))
    assert "compiled by ragnet 0.0.1" in message and "recompile" in message
    assert "contextualize ('question, notes, new_chunks -> updated_notes' saved, " \
           "'question, notes, new_chunks -> new_notes' now)" in message


def test_other_file_format_is_refused(compiled, records):
    _, path = compiled
    state = json.loads(path.read_text())
    state["metadata"]["ragnet"]["format"] = 99
    path.write_text(json.dumps(state))
    assert "program format 99" in _load_error(path, IterativeRAG(FakeIndex(records)))


def test_truncated_file_is_refused(compiled, records):
    _, path = compiled
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    assert "invalid JSON" in _load_error(path, IterativeRAG(FakeIndex(records)))


@pytest.mark.parametrize("content, expected", [
    ("hello, not json", "invalid JSON"),
    ("", "invalid JSON"),
    ("[1, 2, 3]", "no metadata.ragnet header"),
    ('{"answer": {}, "metadata": {}}', "no metadata.ragnet header"),
])
def test_not_a_compiled_program_is_refused(tmp_path, records, content, expected):
    path = tmp_path / "prog.json"
    path.write_text(content)
    assert expected in _load_error(path, BasicRAG(FakeIndex(records)))


def test_binary_file_is_refused(tmp_path, records):
    path = tmp_path / "prog.json"
    path.write_bytes(b"\x80\x81\x00\xff")
    assert "invalid JSON" in _load_error(path, BasicRAG(FakeIndex(records)))


def test_missing_steps_are_refused(compiled, records):
    _, path = compiled
    state = json.loads(path.read_text())
    del state["sufficiency.predict"]
    path.write_text(json.dumps(state))
    message = _load_error(path, IterativeRAG(FakeIndex(records)))
    assert "does not match IterativeRAG's steps" in message and "sufficiency" in message


def test_missing_file_and_wrong_suffix(tmp_path, records, compiled):
    assert "no such file" in _load_error(tmp_path / "nope.json", BasicRAG(FakeIndex(records)))
    _, path = compiled
    other = tmp_path / "compiled.txt"
    other.write_text(path.read_text())
    assert "ending in .json" in _load_error(other, IterativeRAG(FakeIndex(records)))
    with pytest.raises(InputError) as err:
        save_program(BasicRAG(FakeIndex(records)), tmp_path / "prog.pkl")
    assert err.value.argument == "out"


def test_a_whole_program_pickle_is_refused_and_json_state_still_saves(tmp_path):
    from ragnet.eval.run.eval_indexes import NoIndex
    from ragnet.programs import OneShotRAG

    program = OneShotRAG(NoIndex())
    with pytest.raises(InputError) as err:
        program.save(str(tmp_path / "whole"), save_program=True)
    assert err.value.argument == "save_program" and "never pickled" in str(err.value)
    assert not (tmp_path / "whole").exists()
    program.save(str(tmp_path / "state.json"))
    state = json.loads((tmp_path / "state.json").read_text())
    assert {"answer.predict", "filter.predict", "crop.predict"} <= set(state)  # every predictor's prompts and demos


def test_a_file_of_another_format_is_refused_with_recompile_as_the_fix(compiled, records, tmp_path):
    """One current program format: a file saved before steps were modules (format 2) is refused."""
    _, path = compiled
    state = json.loads(path.read_text())
    state["metadata"]["ragnet"]["format"] = 2
    path.write_text(json.dumps(state))
    message = _load_error(path, IterativeRAG(FakeIndex(records)))
    assert "program format 2" in message and "reads format 3" in message and "ragnet optimize" in message


def test_the_committed_showcase_loads():
    """docs/results/optimize-sufficiency/iterative-sufficiency.json, the compiled sufficiency step."""
    from pathlib import Path

    from ragnet.eval.run.eval_indexes import NoIndex

    from ragnet.signatures import AnswerStep

    path = Path(__file__).resolve().parents[2] / "docs/results/optimize-sufficiency/iterative-sufficiency.json"
    assert read_header(path)["format"] == 3
    # compiled when IterativeRAG's answer prompt put the question first; it now chooses per question,
    # so the file loads into the question-first layout it was compiled with (iterative:qfirst)
    loaded = load_program(IterativeRAG(NoIndex(), answer=AnswerStep(question_at="first")), path)
    demos = json.loads(path.read_text())["sufficiency.predict"]["demos"]
    assert demos and loaded.sufficiency.predict.demos == demos


def test_a_users_own_bare_predictor_round_trips(records, tmp_path):
    """A subclass's own ``dspy.Predict`` keeps its key through save and load."""
    import dspy

    class WithNote(BasicRAG):
        def __init__(self, index):
            super().__init__(index)
            self.note = dspy.Predict("question -> note")

    program = WithNote(FakeIndex(records))
    program.note.demos = [dspy.Example(question="q", note="n")]
    program.save(str(tmp_path / "state.json"))
    loaded = WithNote(FakeIndex(records))
    loaded.load(str(tmp_path / "state.json"))
    assert loaded.note.demos and loaded.note.demos[0]["note"] == "n"


def test_a_format_3_file_with_a_step_this_program_lacks_is_refused(compiled, records):
    _, path = compiled
    state = json.loads(path.read_text())
    state["metadata"]["ragnet"]["signatures"]["judge"] = "question -> match"
    path.write_text(json.dumps(state))
    message = _load_error(path, IterativeRAG(FakeIndex(records)))
    assert "judge ('question -> match' saved, 'absent' now)" in message


def test_a_compiled_reader_under_a_budget_says_what_its_demos_cost_the_evidence(records, tmp_path, recwarn):
    """The budget bounds the whole answer prompt, demos included: loading such a program warns
    with the demo tokens (the same as the packing overhead grows by) and the budget that keeps
    the evidence's room."""
    import dspy

    from ragnet.programs import OneShotRAG
    from ragnet.programs.packing import PromptBudget

    program = OneShotRAG(FakeIndex(records), budget=1000)
    program.answer.predict.demos = [dspy.Example(question="Who wrote Hamlet?", context="[c1] Hamlet: by Shakespeare.",
                                                 answer="Shakespeare", evidence_ids=["c1"])]
    path = save_program(program, tmp_path / "reader.json")
    loaded = load_program(OneShotRAG(FakeIndex(records), budget=1000), path)
    question = records[0].question
    grown = (PromptBudget(loaded.answer.predict, question, 1000).overhead
             - PromptBudget(OneShotRAG(FakeIndex(records)).answer.predict, question, 1000).overhead)
    assert grown > 20
    messages = [str(w.message) for w in recwarn.list if issubclass(w.category, UserWarning)]
    assert messages == [f"{path}: the compiled answer step's 1 demo takes {grown} of the 1000-token answer budget, so the "
                        f"evidence gets {grown} tokens fewer than an uncompiled program's; a budget of {1000 + grown} "
                        "gives it the same room"]


def test_no_demo_warning_without_answer_demos_or_without_a_budget(compiled, records, tmp_path, recwarn):
    from ragnet.programs import OneShotRAG

    load_program(IterativeRAG(FakeIndex(records), loop=Loop(max_turns=2)), compiled[1])  # demos on sufficiency only
    plain = save_program(OneShotRAG(FakeIndex(records), budget=1000), tmp_path / "plain.json")
    load_program(OneShotRAG(FakeIndex(records), budget=1000), plain)
    assert not [w for w in recwarn.list if "answer budget" in str(w.message)]


def test_a_committed_reader_saved_before_oneshots_notes_step_loads_unless_notes_are_on(records):
    """docs/results/hotpotqa-dev-compiled-reader-1.5b/oneshot-sentences-answer-800.json was saved before
    OneShotRAG had a Contextualize step: it loads while that step is off (the step keeps its own
    state), and is refused by name when the program would run the step it holds no state for."""
    from pathlib import Path

    from ragnet.programs import OneShotRAG
    from ragnet.signatures import AnswerStep

    path = (Path(__file__).resolve().parents[2]
            / "docs/results/hotpotqa-dev-compiled-reader-1.5b/oneshot-sentences-answer-800.json")
    assert "contextualize" not in read_header(path)["signatures"]
    demos = json.loads(path.read_text())["answer.predict"]["demos"]

    def reader(notes=False):  # the layout the file was compiled with (oneshot:sentences+qfirst)
        return OneShotRAG(FakeIndex(records), 1000, pack=Pack(sentences=True), lm_steps=LMSteps(contextualize=notes),
                          answer=AnswerStep(question_at="first"))

    with pytest.warns(UserWarning, match="answer budget"):
        loaded = load_program(reader(), path)
    assert demos and loaded.answer.predict.demos == demos and loaded.contextualize.predict.demos == []
    message = _load_error(path, reader(notes=True))
    assert "contextualize ('absent' saved, 'question, notes, new_chunks -> new_notes' now)" in message
