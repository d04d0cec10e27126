"""Benchmark question loader: bad lines are refused with file and line, splits filter ids."""

from __future__ import annotations

import json

import pytest

from ragnet.errors import InputError
from ragnet.eval.run.datasets import load_questions, pooled_documents

GOOD = {"id": "q1", "question": "Who?", "answers": ["A"], "gold_titles": ["T"],
        "context": [{"title": "T", "text": "A is here."}, {"title": "U", "text": "Other."}]}


def write(tmp_path, lines):
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("bad, message", [("{oops", "invalid JSON"), ("[1, 2]", "expected a JSON object"),
                                          ('{"id": "q2"}', "no 'question' field")])
def test_bad_line_names_file_and_line(tmp_path, bad, message):
    path = write(tmp_path, [json.dumps(GOOD), bad])
    with pytest.raises(InputError) as err:
        load_questions(path)
    assert err.value.line == 2 and err.value.path == str(path) and message in str(err.value)


def test_split_filters_ids_and_pooling_dedupes_titles(tmp_path):
    data = tmp_path / "myset"
    data.mkdir()
    other = {**GOOD, "id": "q2"}
    write(data, [json.dumps(GOOD), json.dumps(other)])
    (tmp_path / "splits").mkdir()
    (tmp_path / "splits" / "myset.dev.txt").write_text("q2\n")
    records = load_questions(data / "questions.jsonl", split="dev")
    assert [r.id for r in records] == ["q2"]
    docs = pooled_documents(load_questions(data / "questions.jsonl"))
    assert [d.id for d in docs] == ["T", "U"]


@pytest.mark.parametrize("name", ["/no/such/set", "hotpot*", "[x"])
def test_a_data_name_that_is_a_path_or_holds_wildcards_is_a_named_error(tmp_path, name):
    """An absolute path that does not exist made Path.glob raise NotImplementedError (a traceback,
    issue 47's probe of `ragnet eval --data`); a set name is a prefix, never a glob pattern."""
    from ragnet.eval.run.datasets import resolve_dataset

    for set_name in ("hotpotqa_dev", "hotpot_other"):
        (tmp_path / set_name).mkdir()
        (tmp_path / set_name / "questions.jsonl").write_text("{}\n")
    with pytest.raises(InputError, match=r"argument 'data': no dataset"):
        resolve_dataset(name, tmp_path)
    assert resolve_dataset("hotpotqa", tmp_path) == tmp_path / "hotpotqa_dev" / "questions.jsonl"
