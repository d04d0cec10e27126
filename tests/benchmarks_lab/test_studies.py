"""The study scripts behind docs/results (``benchmarks/studies``, outside the package) import against
today's library and answer ``--help``."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import benchmarks.studies as studies


def test_every_study_module_is_listed():
    found = {m.name for m in pkgutil.iter_modules(studies.__path__)}
    assert found == set(studies.STUDIES)


@pytest.mark.parametrize("name", studies.STUDIES)
def test_study_imports_and_prints_its_help(name, capsys):
    module = importlib.import_module(f"benchmarks.studies.{name}")
    with pytest.raises(SystemExit) as stop:
        module.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert f"python -m benchmarks.studies.{name}" in out and module.__doc__.split("\n")[0][:30] in out


def test_studies_find_the_results_folder():
    assert (studies.RESULTS / "README.md").is_file()


def test_result_rows_read_a_plain_or_a_compressed_results_file(tmp_path, monkeypatch):
    import gzip

    monkeypatch.setattr(studies, "RESULTS", tmp_path)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "results.jsonl").write_text('{"strategy": "basic", "id": "q1"}\n\n', encoding="utf-8")
    (tmp_path / "packed").mkdir()
    with gzip.open(tmp_path / "packed" / "results.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write('{"strategy": "basic", "id": "q2"}\n')
    assert studies.result_rows("plain") == [{"strategy": "basic", "id": "q1"}]
    assert studies.result_rows("packed") == [{"strategy": "basic", "id": "q2"}]


def test_print_speeds_gives_texts_per_second_and_the_speed_up_over_torch(capsys):
    studies.print_speeds({"torch": [2.0, 2.4, 2.2], "int8": [1.0, 1.1]}, {"int8": (0.99, 0.995)}, 1000,
                         rounds=True)
    torch_line, int8_line = capsys.readouterr().out.splitlines()
    assert "454.5 texts/s  x1.00  cos (1, 1)" in torch_line
    assert int8_line.startswith("int8 ") and "952.4 texts/s  x2.10  cos (0.99, 0.995)  rounds [1.0, 1.1]" in int8_line


def test_pending_resumes_a_study_at_the_questions_of_its_half_not_yet_written(tmp_path):
    out = tmp_path / "new" / "rows.jsonl"
    items = [{"id": f"rd-00{i}"} for i in range(1, 6)]
    assert [x["id"] for x in studies.pending(out, items, "odd")] == ["rd-001", "rd-003", "rd-005"]
    assert out.parent.is_dir()  # the study appends to it next
    out.write_text('{"id": "rd-003"}\n{"id": "rd-004"}\n', encoding="utf-8")
    assert [x["id"] for x in studies.pending(out, items, "all")] == ["rd-001", "rd-002", "rd-005"]
