"""``ragnet demo`` end to end with a scripted LM: corpus and index built once, every strategy
answers every level, the table and the JSON records agree, and a second run is served by the
DSPy cache and the saved index (what the README promises). Real embedder and index; the
scripted LM only pins control flow, never quality."""

from __future__ import annotations

import inspect
import json
import re

import dspy
import pytest

from ragnet.demo.run import DEFAULT_ANSWERS, DEFAULT_STRATEGIES, run_demo, top_k_misses
from ragnet.demo.corpus import choice_correct, demo_questions
from ragnet.lm.config import LMOptions
from tests.programs.scripted import ProgramLM

pytestmark = pytest.mark.slow  # embeds the 210-chunk demo corpus once


@pytest.fixture
def isolated_dspy(tmp_path, ragnet_home, dspy_state, monkeypatch):
    """Own RAGNET_HOME and on-disk DSPy cache (run_demo configures it); DSPy state restored after."""
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "dspy_cache"))
    return tmp_path / "dspy_cache"


def _gold_answering_lm() -> ProgramLM:
    """Answers each demo question with its gold answer, so the accuracy column is exercised."""
    gold = {q.question: q.answers[0] for q in demo_questions(n_per_level=60)}

    def answer(prompt: str, n: int) -> dict:
        asked = re.findall(r"\[\[ ## question ## \]\]\s*\n(.*)", prompt)[-1].strip()
        return {"answer": str(gold[asked]), "evidence_ids": ["c1"]}

    return ProgramLM(answer=answer)


def _rows(workdir):
    return [json.loads(line) for line in (workdir / "results" / "results.jsonl").read_text().splitlines()]


def test_demo_shows_evidence_then_answers_and_reruns_from_the_cache(tmp_path, isolated_dspy, capsys):
    engine = _gold_answering_lm()
    cached_lm = dspy.LM("scripted/program", engine=engine, cache=True, num_retries=0)  # as configure() makes them
    workdir = tmp_path / "demo"
    summary = run_demo(workdir, lms=LMOptions(lm=cached_lm))

    # 1. evidence, no LM: the picked questions are those plain top-5 gets wrong
    from ragnet.demo.run import build_demo_index

    index, _ = build_demo_index(workdir, show_progress=False)
    picked = [q for q in demo_questions(n_per_level=60) if q.id in set(summary["questions"])]
    assert len(picked) == 12 and sorted({q.level for q in picked}) == [1, 2, 3, 4]
    missed = [q for q in picked if top_k_misses(index, q, k=5)]
    assert {q.level for q in missed} >= {3, 4} and len(missed) >= 6  # L3/L4 picks really confuse top-5
    evidence = summary["evidence"]
    assert list(evidence) == ["top-5 (basic)", "oneshot, whole chunks", "oneshot, sentences"]
    assert evidence["oneshot, sentences"]["facts"] > evidence["top-5 (basic)"]["facts"]
    assert all(row["tokens"] <= 1000 for name, row in evidence.items() if name.startswith("oneshot"))

    # 2. answers: the default strategies on three questions top-5 gets wrong, levels taking turns
    records = _rows(workdir)
    answered = [r["id"] for r in records if r["strategy"] == "basic"]
    assert set(answered) <= {q.id for q in missed} and len(set(answered)) == DEFAULT_ANSWERS == 3
    assert [r["level"] for r in records if r["strategy"] == "basic"] == [3, 4, 3]
    assert len(records) == len(DEFAULT_STRATEGIES) * 3 and DEFAULT_STRATEGIES == ("basic", "oneshot")
    for label, agg in summary["strategies"].items():
        assert agg["n"] == 3 and agg["errors"] == 0
        assert agg["correct"] == 1.0  # the scripted gold answers are scored right by every strategy
        assert 0 <= agg["gold_facts"] <= 1
    calls = {s: [r["usage"]["lm_calls"] for r in records if r["strategy"] == s] for s in DEFAULT_STRATEGIES}
    assert calls["basic"] == calls["oneshot"] == [1, 1, 1]
    assert all(r["context"] for r in records)
    total = sum(r["usage"]["lm_calls"] for r in records)
    cached = sum(r["usage"]["cached_calls"] for r in records)
    first_calls = len(engine.calls)
    assert first_calls == total - cached  # every other call reached the LM
    printed = capsys.readouterr().out
    assert "evidence in the reader's context" in printed and "left out to keep the demo to a few minutes" in printed
    assert "iterative, reflective, combined" in printed

    (manifest,) = workdir.glob("index-*/manifest.json")
    built_at = manifest.stat().st_mtime_ns
    again = run_demo(workdir, lms=LMOptions(lm=cached_lm))
    assert len(engine.calls) == first_calls  # every LM call came from the DSPy cache
    assert manifest.stat().st_mtime_ns == built_at  # the saved index was loaded, not rebuilt
    assert {k: v["correct"] for k, v in again["strategies"].items()} == {
        k: v["correct"] for k, v in summary["strategies"].items()}
    assert len(_rows(workdir)) == len(records)  # the second run replaced the rows, not appended
    printed = capsys.readouterr().out
    assert f"{total} of {total} LM calls were answered from the DSPy cache" in printed


def test_demo_runs_an_agent_strategy_on_request(tmp_path, isolated_dspy):
    lm = dspy.LM("scripted/program", engine=_gold_answering_lm(), cache=False, num_retries=0)
    summary = run_demo(tmp_path / "demo", lms=LMOptions(lm=lm), strategies=["combined"], answers=2)
    records = _rows(tmp_path / "demo")
    assert [r["strategy"] for r in records] == ["combined", "combined"]  # one L3 and one L4 question
    assert all(r["usage"]["lm_calls"] > 1 for r in records)  # the agent takes several steps
    assert summary["strategies"]["combined"]["correct"] == 1.0


def test_the_cli_defaults_are_the_demo_defaults():
    # The CLI spells its defaults as literals (importing ragnet.demo.run at start-up would load
    # the demo corpus for every ragnet command), so each one is pinned to run_demo's here.
    from ragnet.cli.demo import demo

    cli = inspect.signature(demo).parameters
    api = inspect.signature(run_demo).parameters
    shared = {"answers", "evidence_per_level", "budget", "max_turns"}
    assert shared <= cli.keys() & api.keys()
    assert {name: cli[name].default.default for name in shared} == {name: api[name].default for name in shared}
    assert cli["answers"].default.default == DEFAULT_ANSWERS


def test_demo_rejects_bad_arguments_before_building_anything(tmp_path, isolated_dspy):
    from ragnet.errors import InputError

    with pytest.raises(InputError) as err:
        run_demo(tmp_path / "demo", lms=LMOptions(lm=ProgramLM().lm()), answers=0)
    assert err.value.argument == "answers"
    with pytest.raises(InputError):
        run_demo(tmp_path / "demo", lms=LMOptions(lm=ProgramLM().lm()), strategies=["basic", "bogus"])
    assert not (tmp_path / "demo").exists()
