"""The run folder every ``ragnet eval`` command writes: the settings check, the report files, the
marker; and the Evaluator interface built on it (its rows: ``test_results_file.py``)."""

from __future__ import annotations

import json

import pytest

from ragnet.errors import InputError
from ragnet.eval.run.evaluator import Evaluator
from ragnet.eval.run.run_folder import RunFolder


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_settings_must_match_to_resume_naming_the_differences(tmp_path):
    folder = RunFolder(tmp_path, key=("id",))
    folder.start({"lm": "a", "judge": True, "command": "x"}, compare=("lm", "judge"))
    with folder.writer() as write:
        write({"id": "q1"})
    folder.start({"lm": "a", "judge": True, "command": "y"}, compare=("lm", "judge"))  # not compared
    assert json.loads(folder.run_path.read_text())["command"] == "y"
    with pytest.raises(InputError) as err:
        folder.start({"lm": "b", "judge": False}, compare=("lm", "judge"))
    assert err.value.argument == "out"
    assert "lm: 'a' -> 'b'; judge: True -> False" in str(err.value) and "--fresh" in str(err.value)
    with pytest.raises(InputError, match="seed: None -> 1"):  # compare=None: every setting
        folder.start({"lm": "a", "judge": True, "command": "y", "seed": 1})
    folder.start({"lm": "b"}, fresh=True)
    assert folder.rows() == [] and json.loads(folder.run_path.read_text()) == {"lm": "b"}


def test_rows_without_settings_or_with_unreadable_settings_are_refused(tmp_path):
    folder = RunFolder(tmp_path, key=("id",))
    (tmp_path / "results.jsonl").write_text('{"id": "q1"}\n')
    with pytest.raises(InputError, match="no run.json"):
        folder.start({"lm": "a"})
    (tmp_path / "run.json").write_text("{oops")
    with pytest.raises(InputError) as err:
        folder.start({"lm": "a"})
    assert err.value.path == str(tmp_path / "run.json") and "--fresh" in str(err.value)
    folder.start({"lm": "a"}, fresh=True)


def test_a_file_is_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError) as err:
        RunFolder(tmp_path / "f")
    assert err.value.argument == "out"


def test_outputs_are_written_atomically(tmp_path):
    folder = RunFolder(tmp_path / "new")
    folder.write_outputs("# report\n", {"a": 1})
    assert (tmp_path / "new" / "report.md").read_text() == "# report\n"
    assert folder.previous_summary() == {"a": 1}
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["report.md", "summary.json"]


class Squares(Evaluator):
    """A resumable toy: one row per number, computed only when missing."""

    name, primary_metric, row_key = "squares", "mean", ("id",)

    def __init__(self, numbers, offset=0):
        super().__init__(log=lambda msg: None)
        self.numbers, self.offset, self.computed, self.calls = numbers, offset, [], []

    def prepare(self):
        self.calls.append("prepare")

    def settings(self):
        self.calls.append("settings")
        return {"offset": self.offset}

    def evaluate(self, folder):
        self.calls.append("evaluate")
        done = {r["id"]: r for r in folder.rows()} if folder is not None else {}
        rows = []
        writer = folder.writer() if folder is not None else None
        for n in self.numbers:
            row = done.get(str(n))
            if row is None:
                row = {"id": str(n), "value": n * n + self.offset}
                self.computed.append(n)
                if writer is not None:
                    writer.write(row)
            rows.append(row)
        if writer is not None:
            writer.close()
        return {"mean": sum(r["value"] for r in rows) / len(rows)}

    def format_report(self, summary):
        return f"mean {summary['mean']}\n"

    def metrics(self, summary):
        return {"mean": summary["mean"]}


def test_an_evaluator_checks_settings_before_it_runs_and_resumes(tmp_path):
    first = Squares([1, 2])
    assert first(tmp_path) == {"mean": 2.5} and first.calls == ["prepare", "settings", "evaluate"]
    again = Squares([1, 2, 3])
    assert again(tmp_path)["mean"] == pytest.approx(14 / 3) and again.computed == [3]
    assert (tmp_path / "report.md").read_text() == f"mean {14 / 3}\n"
    assert json.loads((tmp_path / "summary.json").read_text()) == {"mean": 14 / 3}
    other = Squares([1], offset=1)
    with pytest.raises(InputError, match="offset: 0 -> 1"):
        other(tmp_path)
    assert other.calls == ["prepare", "settings"]  # refused before any work
    assert Squares([1], offset=1)(tmp_path, fresh=True) == {"mean": 2.0}
    assert len(_lines(tmp_path / "results.jsonl")) == 1


def test_an_evaluator_without_a_folder_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    toy = Squares([3])
    assert toy() == {"mean": 9.0} and toy.calls == ["prepare", "evaluate"]
    assert list(tmp_path.iterdir()) == []


def test_a_folder_with_someone_elses_files_is_refused_untouched(tmp_path):
    (tmp_path / "report.md").write_text("mine")
    (tmp_path / "ids.txt").write_text("mine")
    with pytest.raises(InputError) as err:
        Squares([1])(tmp_path)
    assert err.value.argument == "out" and "holds no ragnet eval run (ids.txt, report.md)" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ids.txt", "report.md"]
    assert (tmp_path / "report.md").read_text() == "mine"


def test_an_empty_folder_is_marked_and_then_reused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    Squares([2])(out)
    assert (out / ".ragnet-eval").is_file()
    (out / "notes.txt").write_text("the user's, added later")  # a marked folder stays ragnet's
    assert Squares([2, 3])(out)["mean"] == 6.5
    assert (out / "notes.txt").read_text() == "the user's, added later"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # the lock is gone


def test_a_symlinked_marker_does_not_claim_a_folder(tmp_path):
    elsewhere = tmp_path / "marker"
    elsewhere.write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    (out / ".ragnet-eval").symlink_to(elsewhere)
    (out / "report.md").write_text("mine")
    with pytest.raises(InputError, match="holds no ragnet eval run"):
        Squares([1])(out)
    assert (out / "report.md").read_text() == "mine"
