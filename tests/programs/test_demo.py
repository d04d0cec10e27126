"""``ragnet demo`` end to end with a scripted LM: corpus and index built once, every strategy
answers every level, the table and the JSON records agree, and a second run is served by the
DSPy cache and the saved index (what the README promises). Real embedder and index; the
scripted LM only pins control flow, never quality."""

from __future__ import annotations

import json
import re

import dspy
import pytest

from ragnet.cli_demo import DEFAULT_STRATEGIES, run_demo
from ragnet.corpus.synthetic import choice_correct, demo_questions
from tests.programs.scripted import ProgramLM

pytestmark = pytest.mark.slow  # embeds the 210-chunk demo corpus once


@pytest.fixture
def isolated_dspy(tmp_path, ragnet_home, dspy_state, monkeypatch):
    """Own RAGNET_HOME and on-disk DSPy cache (run_demo configures it); DSPy state restored after."""
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "dspy_cache"))
    return tmp_path / "dspy_cache"


def _gold_answering_lm() -> ProgramLM:
    """Answers each demo question with its gold answer, so the accuracy column is exercised."""
    gold = {q.question: q.answers[0] for q in demo_questions(n_per_level=1)}

    def answer(prompt: str, n: int) -> dict:
        asked = re.findall(r"\[\[ ## question ## \]\]\s*\n(.*)", prompt)[-1].strip()
        return {"answer": str(gold[asked]), "evidence_ids": ["c1"]}

    return ProgramLM(answer=answer)


def test_demo_answers_every_level_with_every_strategy_and_reruns_from_the_cache(tmp_path, isolated_dspy, capsys):
    engine = _gold_answering_lm()
    cached_lm = dspy.LM("scripted/program", engine=engine, cache=True, num_retries=0)  # as configure() makes them
    workdir = tmp_path / "demo"
    rows = run_demo(workdir, lm=cached_lm)
    questions = demo_questions(n_per_level=1)

    assert [r.strategy for r in rows] == list(DEFAULT_STRATEGIES)
    for row in rows:
        assert len(row.correct) == len(questions) and sorted(row.by_level) == [1, 2, 3, 4]
        assert all(calls >= 1 for calls in row.lm_calls)
        assert row.correct == [1.0] * 4  # the scripted gold answers are scored right by every strategy
    basic, oneshot = rows[0], rows[1]
    assert basic.lm_calls == oneshot.lm_calls == [1, 1, 1, 1] and basic.errors == oneshot.errors == 0
    assert all(calls > 1 for row in rows[2:] for calls in row.lm_calls)  # the agents take several steps
    assert all(q.answers[0] and choice_correct(str(q.answers[0]), q) for q in questions)
    records = json.loads((workdir / "demo_results.json").read_text())
    assert len(records) == len(DEFAULT_STRATEGIES) * len(questions)
    assert {(r["strategy"], r["level"]) for r in records} == {(s, q.level) for s in DEFAULT_STRATEGIES for q in questions}
    assert all(r["context"] for r in records)
    # Within one run only CombinedRAG meets prompts already answered (IterativeRAG's first turns).
    assert {r["strategy"] for r in records if r["usage"]["cached_calls"]} <= {"combined"}
    total = sum(r["usage"]["lm_calls"] for r in records)
    cached = sum(r["usage"]["cached_calls"] for r in records)
    first_calls = len(engine.calls)
    assert first_calls == total - cached  # every other call reached the LM
    printed = capsys.readouterr().out
    assert all(name in printed for name in DEFAULT_STRATEGIES)
    assert f"{cached} of {total} LM calls were answered from the DSPy cache" in printed

    (manifest,) = workdir.glob("index-*/manifest.json")
    built_at = manifest.stat().st_mtime_ns
    again = run_demo(workdir, lm=cached_lm)
    assert len(engine.calls) == first_calls  # every LM call came from the DSPy cache
    assert list(workdir.glob("index-*/manifest.json")) == [manifest]
    assert manifest.stat().st_mtime_ns == built_at  # the saved index was loaded, not rebuilt
    assert [r.correct for r in again] == [r.correct for r in rows]
    printed = capsys.readouterr().out
    assert f"{total} of {total} LM calls were answered from the DSPy cache" in printed


def test_demo_rejects_bad_arguments_before_building_anything(tmp_path, isolated_dspy):
    from ragnet.errors import InputError

    with pytest.raises(InputError) as err:
        run_demo(tmp_path / "demo", lm=ProgramLM().lm(), per_level=0)
    assert err.value.argument == "per-level"
    with pytest.raises(InputError):
        run_demo(tmp_path / "demo", lm=ProgramLM().lm(), strategies=["basic", "bogus"])
    assert not (tmp_path / "demo").exists()
