"""One pooled-index builder for every command, per-question indexes, and the index stand-in."""

from __future__ import annotations

import pytest

from ragnet.errors import InputError, RagnetError
from ragnet.eval.run.datasets import load_eval_set
from ragnet.eval.run.eval_indexes import EvalIndexes, NoIndex, load_pooled, pooled_index
from tests.eval.tiny_set import write_tiny_set


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_set(tmp_path_factory.mktemp("data"))


def test_pooled_index_is_cached_by_content_or_kept_in_a_given_folder(data, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    logs = []
    index, ev = load_pooled("tiny", data_dir=data, show_progress=False, log=logs.append)
    assert len(ev.questions) == 3 and ev.split is None and len(index) == 9
    assert index.path.parent == tmp_path / "home" / "indexes" and index.path.name.startswith("tiny-pooled-")
    assert logs and "building index" in logs[0]
    again, _ = load_pooled("tiny", data_dir=data, show_progress=False, log=logs.append)
    assert again.path == index.path and len(logs) == 1  # loaded, not rebuilt

    folder = tmp_path / "mine"
    built = pooled_index(ev, path=folder, show_progress=False, log=logs.append)
    assert built.path == folder and "building pooled index for tiny" in logs[-1]
    assert len(pooled_index(ev, path=folder, log=logs.append)) == 9 and len(logs) == 2


def test_per_question_mode_has_no_pooled_index_and_one_index_per_question(data, tmp_path):
    ev = load_eval_set("tiny", data_dir=data, mode="per-question")
    with pytest.raises(InputError) as err:
        pooled_index(ev)
    assert err.value.argument == "mode"
    indexes = EvalIndexes(ev, root=tmp_path, keep=2)
    first = indexes.get(ev.questions[0])
    assert {c.doc_id for c in first.chunks} == {"Tokyo", "Paris", "Berlin"} and indexes.get(ev.questions[0]) is first
    assert indexes.path == str(tmp_path / "tiny-per-question")
    with pytest.raises(InputError):
        EvalIndexes()


def test_no_index_refuses_to_search():
    assert len(NoIndex()) == 0
    with pytest.raises(RagnetError, match="built without an index"):
        NoIndex().search("q", k=5)
