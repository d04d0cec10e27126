"""``load_eval_set``: corpus modes, splits, ``-n``, ``--ids``, corpus files, MuSiQue-style
paragraph gold, and clear errors (file:line or argument) for malformed input."""

from __future__ import annotations

import json

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.eval.run.datasets import (
    QARecord,
    load_eval_set,
    load_questions,
    parse_ids,
    pooled_documents,
    to_examples,
)
from tests.eval.tiny_set import QUESTIONS, record, write_tiny_set


@pytest.fixture
def data(tmp_path):
    return write_tiny_set(tmp_path / "data", dev=("q1", "q3"), acceptance=("q2",))


def test_pooled_mode_pools_every_question_of_the_file_whatever_the_split(data):
    ev = load_eval_set("tiny", data_dir=data, split="dev")
    assert [q.id for q in ev.questions] == ["q1", "q3"]
    assert ev.mode == "pooled" and ev.dedup == "title"
    assert sorted(d.id for d in ev.documents) == sorted({t for q in QUESTIONS for t in q[4]})  # 9 paragraphs
    assert all(d.id == d.title for d in ev.documents)


def test_per_question_mode_gives_each_question_its_own_paragraphs(data):
    ev = load_eval_set("tiny", data_dir=data, split="acceptance", mode="per-question")
    assert ev.documents is None
    (q2,) = ev.questions
    assert [d.id for d in ev.question_documents(q2)] == ["Penicillin", "Coffee", "Tea"]


def test_n_ids_and_id_files(data, tmp_path):
    assert [q.id for q in load_eval_set("tiny", data_dir=data, split=None, n=2).questions] == ["q1", "q2"]
    assert [q.id for q in load_eval_set("tiny", data_dir=data, split=None, ids="q3, q1").questions] == ["q1", "q3"]
    id_file = tmp_path / "ids.txt"
    id_file.write_text("q3  # the river one\nq1,\n")
    assert parse_ids(f"@{id_file}") == ["q3", "q1"]
    assert [q.id for q in load_eval_set("tiny", data_dir=data, ids=f"@{id_file}").questions] == ["q1", "q3"]


@pytest.mark.parametrize("kwargs, argument, message", [
    ({"ids": "q1,nope"}, "ids", "unknown question id(s) in tiny: nope"),
    ({"ids": "q2", "split": "dev"}, "ids", "not in split 'dev'"),
    ({"ids": "@/no/such/file"}, "ids", "no such id file"),
    ({"mode": "open"}, "mode", "unknown mode"),
    ({"split": "test"}, "split", "unknown split"),
    ({"n": 0}, "n", "positive integer"),
])
def test_bad_arguments_name_the_argument(data, kwargs, argument, message):
    with pytest.raises(InputError) as err:
        load_eval_set("tiny", data_dir=data, **{"split": None, **kwargs})
    assert err.value.argument == argument and message in str(err.value)


def test_empty_split_and_missing_split_file_are_errors(data):
    (data / "splits" / "tiny.dev.txt").write_text("")
    with pytest.raises(InputError, match="split 'dev' of tiny is empty"):
        load_eval_set("tiny", data_dir=data, split="dev")
    (data / "splits" / "tiny.dev.txt").unlink()
    with pytest.raises(InputError, match="no split file"):
        load_eval_set("tiny", data_dir=data, split="dev")


def test_a_users_own_file_without_splits_uses_all_questions_for_dev(tmp_path):
    own = tmp_path / "mine.jsonl"
    own.write_text("\n".join(json.dumps(record(*q)) for q in QUESTIONS) + "\n")
    ev = load_eval_set(own, split="dev")
    assert ev.name == "mine" and len(ev.questions) == 3 and len(ev.documents) == 9
    with pytest.raises(InputError, match="no split file"):
        load_eval_set(own, split="acceptance")


@pytest.mark.parametrize("mutate, line_message", [
    (lambda r: r.update(answers="x") or r, None),  # a bare string is accepted as one answer
    (lambda r: r.update(answers=[{"a": 1}]) or r, "'answers' must be a list of strings"),
    (lambda r: r.update(context=[{"title": "T"}]) or r, "has no 'text' or 'sentences'"),
    (lambda r: r.update(context="T") or r, "'context' must be a list"),
    (lambda r: r.update(question="  ") or r, "'question' must be a non-empty string"),
    (lambda r: r.update(id="q1") or r, "duplicate question id 'q1' (first on line 1)"),
    (lambda r: r.update(gold_paragraph_idxs=[7]) or r, "out of range"),
])
def test_malformed_question_lines_name_file_and_line(tmp_path, mutate, line_message):
    path = tmp_path / "questions.jsonl"
    bad = mutate(record(*QUESTIONS[1]))
    path.write_text(json.dumps(record(*QUESTIONS[0])) + "\n" + json.dumps(bad) + "\n")
    if line_message is None:
        assert load_questions(path)[1].answers == ["x"]
        return
    with pytest.raises(InputError) as err:
        load_questions(path)
    assert (err.value.path, err.value.line) == (str(path), 2) and line_message in str(err.value)


def test_corpus_sets_pool_their_corpus_file_and_report_bad_corpus_lines(tmp_path):
    folder = tmp_path / "data" / "openset"
    folder.mkdir(parents=True)
    q = {"id": "n1", "question": "Who wrote it?", "answers": ["Ann"], "gold_titles": ["Book"],
         "gold_passage_ids": ["p7"], "context": [{"id": "p7", "title": "Book", "text": "Ann wrote it."}]}
    (folder / "questions.jsonl").write_text(json.dumps(q) + "\n")
    (folder / "corpus.jsonl").write_text(
        json.dumps({"id": "p7", "title": "Book", "text": "Ann wrote it."}) + "\n"
        + json.dumps({"id": "p8", "title": "Other", "text": "Unrelated."}) + "\n")
    ev = load_eval_set(folder, split=None)
    assert ev.dedup == "corpus" and [d.id for d in ev.documents] == ["p7", "p8"]
    assert ev.questions[0].gold_passage_ids == ["p7"]
    per_q = load_eval_set(folder, split=None, mode="per-question")
    assert [d.id for d in per_q.question_documents(per_q.questions[0])] == ["p7"]  # corpus ids kept
    (folder / "corpus.jsonl").write_text(json.dumps({"id": "p7", "text": "x"}) + "\n{broken\n")
    with pytest.raises(InputError) as err:
        load_eval_set(folder, split=None)
    assert err.value.line == 2 and err.value.path.endswith("corpus.jsonl")


def test_per_question_mode_needs_context(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "?", "answers": ["x"], "context": None}) + "\n")
    with pytest.raises(InputError, match="no context paragraphs; use --mode pooled"):
        load_eval_set(path, split=None, mode="per-question")
    with pytest.raises(InputError, match="pooled mode needs context paragraphs or a corpus.jsonl"):
        load_eval_set(path, split=None)


def test_paragraph_gold_keeps_same_titled_paragraphs_apart(tmp_path):
    """MuSiQue reuses a title for different paragraphs; pooling by title would lose gold ones."""
    path = tmp_path / "questions.jsonl"
    q1 = {"id": "m1", "question": "?", "answers": ["x"], "gold_titles": ["T"], "gold_paragraph_idxs": [0],
          "context": [{"title": "T", "text": "first"}, {"title": "U", "text": "u"}]}
    q2 = {"id": "m2", "question": "?", "answers": ["y"], "gold_titles": ["T"], "gold_paragraph_idxs": [1],
          "context": [{"title": "U", "text": "u"}, {"title": "T", "text": "second"}]}
    path.write_text(json.dumps(q1) + "\n" + json.dumps(q2) + "\n")
    ev = load_eval_set(path, split=None)
    assert ev.dedup == "text"
    assert [(d.id, d.text) for d in ev.documents] == [("T", "first"), ("U", "u"), ("T (2)", "second")]
    assert [q.gold_passage_ids for q in ev.questions] == [["T"], ["T (2)"]]
    per_q = load_eval_set(path, split=None, mode="per-question")
    assert per_q.questions[1].gold_passage_ids == ["T"]  # its own paragraphs: "T" is unique there
    assert [d.id for d in pooled_documents(ev.questions)] == ["T", "U"]  # default dedup stays by title


def test_resolve_prefers_the_exact_set_name(tmp_path):
    data = write_tiny_set(tmp_path / "data")
    write_tiny_set(data, name="tiny_more")
    assert load_eval_set("tiny", data_dir=data).path == data / "tiny" / "questions.jsonl"
    with pytest.raises(InputError, match="several sets match"):
        load_eval_set("ti", data_dir=data)


def test_to_examples_carries_gold_fields_with_question_as_input():
    recs = [QARecord(id="q1", question="Capital?", answers=["Paris"], gold_titles=["Paris"], type="bridge")]
    (ex,) = to_examples(recs)
    assert isinstance(ex, dspy.Example)
    assert ex.inputs().toDict() == {"question": "Capital?"}
    assert (ex.id, ex.answers, ex.gold_titles, ex.type) == ("q1", ["Paris"], ["Paris"], "bridge")
