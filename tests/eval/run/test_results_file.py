"""``results.jsonl``, written and read only by ``ragnet.eval.run.results_file``: rows appended one
line each, read back to resume (a truncated last line cut, a corrupt one named), and read from a
finished run folder for ``ragnet eval report`` (plain or gzipped, never changed)."""

from __future__ import annotations

import gzip
import json

import pytest

from ragnet.errors import InputError
from ragnet.eval.run.results_file import RESULTS, RESULTS_GZ, read_finished_rows, read_rows
from ragnet.eval.run.run_folder import RunFolder


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_rows_are_appended_one_line_each_and_read_back(tmp_path):
    folder = RunFolder(tmp_path / "out", key=("id",))
    folder.start({"lm": "a"})
    with folder.writer() as write:
        write({"id": "q1", "answer": "Zoë"})
        write({"id": "q2", "answer": None})
    assert [r["id"] for r in folder.rows()] == ["q1", "q2"]
    assert _lines(folder.results_path)[0] == '{"id": "q1", "answer": "Zoë"}'
    assert json.loads(folder.run_path.read_text()) == {"lm": "a"}


def test_a_truncated_last_line_is_cut_with_a_warning_and_appending_continues(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "q1"}\n{"id": "q2", "answ')
    logs = []
    assert [r["id"] for r in read_rows(path, key=("id",), log=logs.append)] == ["q1"]
    assert logs and f"{path}:2: ignoring an incomplete last line" in logs[0]
    assert path.read_text() == '{"id": "q1"}\n'  # cut, so the next row starts on a fresh line
    folder = RunFolder(tmp_path, key=("id",))
    with folder.writer() as write:
        write({"id": "q2"})
    assert [r["id"] for r in folder.rows()] == ["q1", "q2"]


def test_a_complete_last_line_without_its_newline_is_kept(tmp_path):
    (tmp_path / "results.jsonl").write_text('{"id": "q1"}')
    folder = RunFolder(tmp_path, key=("id",))
    with folder.writer() as write:
        write({"id": "q2"})
    assert _lines(folder.results_path) == ['{"id": "q1"}', '{"id": "q2"}']


@pytest.mark.parametrize("middle", ["not json", "[1, 2]", '{"other": 1}'])
def test_a_bad_line_elsewhere_names_file_and_line(tmp_path, middle):
    path = tmp_path / "results.jsonl"
    path.write_text(f'{{"id": "q1"}}\n{middle}\n{{"id": "q3"}}\n')
    with pytest.raises(InputError) as err:
        read_rows(path, key=("id",))
    assert (err.value.path, err.value.line) == (str(path), 2) and "--fresh" in str(err.value)


def test_a_finished_folder_is_read_plain_or_gzipped_and_never_changed(tmp_path):
    data = '{"strategy": "basic", "id": "q1"}\nnot json\n[1]\n{"id": "q2"}\n{"strategy": "basic", "id": "q3", "f1'
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / RESULTS).write_text(data)
    (tmp_path / "packed").mkdir()
    (tmp_path / "packed" / RESULTS_GZ).write_bytes(gzip.compress(data.encode()))
    for name in ("plain", "packed"):
        logs = []
        assert [r["id"] for r in read_finished_rows(tmp_path / name, log=logs.append)] == ["q1"]
        assert [m.split("skipping ")[1] for m in logs] == [f"line {n} of the results (not a result row)"
                                                          for n in (2, 3, 4, 5)]
    assert (tmp_path / "plain" / RESULTS).read_text() == data  # a report reads; it never cuts a line


def test_a_finished_folder_without_rows_or_with_a_malformed_row_is_a_named_error(tmp_path):
    with pytest.raises(InputError, match="holds no results.jsonl"):
        read_finished_rows(tmp_path)
    (tmp_path / RESULTS_GZ).write_bytes(b"not gzip")
    with pytest.raises(InputError, match="cannot read") as err:
        read_finished_rows(tmp_path)
    assert err.value.path == str(tmp_path / RESULTS_GZ)
    (tmp_path / RESULTS).write_text(json.dumps({"strategy": "basic", "id": "q1"}) + "\n"
                                    + json.dumps({"strategy": "basic", "id": "q2", "context": 5}) + "\n")
    with pytest.raises(InputError, match="'context' must be an array of strings, got a number") as err:
        read_finished_rows(tmp_path)
    assert (err.value.path, err.value.line) == (str(tmp_path / RESULTS), 2)
