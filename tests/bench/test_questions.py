"""The questions and paragraphs every benchmark runs on: dev questions only, in file order."""

from __future__ import annotations

from ragnet.bench.questions import benchmark_inputs, dev_questions, passage_texts
from ragnet.eval.run.datasets import load_questions
from tests.eval.tiny_set import write_tiny_set


def test_dev_questions_keep_file_order_and_skip_the_acceptance_split(tmp_path):
    root = write_tiny_set(tmp_path, dev=("q3", "q1"), acceptance=("q2",))
    path = root / "tiny" / "questions.jsonl"
    records = load_questions(path)
    assert [r.id for r in dev_questions(records, path)] == ["q1", "q3"]
    assert [r.id for r in dev_questions(records, path, limit=1)] == ["q1"]


def test_benchmark_inputs_give_pooled_paragraphs_and_dev_question_texts(tmp_path):
    root = write_tiny_set(tmp_path, dev=("q2", "q3"), acceptance=("q1",))
    docs, questions = benchmark_inputs("tiny", root, documents=4, questions=5)
    assert [d.title for d in docs] == ["Tokyo", "Paris", "Berlin", "Penicillin"]
    assert questions == ["Who discovered penicillin?", "Which river carries the most water?"]
    all_docs, none = benchmark_inputs("tiny", root)
    assert len(all_docs) == 9 and none == []
    texts = passage_texts(docs[:1])
    assert "Tokyo" in texts[0] and "capital of Japan" in texts[0]
