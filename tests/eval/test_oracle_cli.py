"""``ragnet eval --strategies oracle,...`` end to end through typer's CliRunner on the tiny set
with a scripted LM, and its spec errors as one line naming the argument."""

from __future__ import annotations

import json

from tests.eval.test_cli_eval import env, invoke  # noqa: F401 - the fixture is used by name

ORACLE_ROW_KEYS = {"oracle", "answer", "em", "f1", "gold_all", "usage", "trace"}


def test_eval_runs_the_oracle_beside_basic(env):  # noqa: F811
    data, tmp, engine, _ = env
    out = tmp / "out"
    result = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "oracle,basic", "--budget", "1000",
                    "--lm", "scripted", "--no-judge", "--out", str(out), "--no-plots")
    assert result.exit_code == 0, result.output
    assert "oracle@1000" in result.output
    summary = json.loads((out / "summary.json").read_text())
    oracle = summary["strategies"]["oracle@1000"]
    assert oracle["oracle"] == {"passages": 0, "sentences": 2, "documents": 0, "none": 0}
    assert oracle["gold_all"] == 1.0 and oracle["lm_calls"] == 1.0 and oracle["em"] == 0.5  # q1 exact, q2 "Fleming"
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(ORACLE_ROW_KEYS <= set(r) for r in rows if r["strategy"] == "oracle@1000")
    assert "oracle@1000: gold sentences 2, gold documents 0" in (out / "report.md").read_text()
    # the gold sentence is all the reader saw
    prompts = [p for step, p in engine.calls if step == "answer" and "capital of Japan" in p]
    assert any("[c1] Tokyo: Tokyo is the capital of Japan" in p and "Paris" not in p for p in prompts)


def test_an_oracle_preset_that_is_not_an_answer_preset_is_one_line(env):  # noqa: F811
    data, _tmp, _engine, _ = env
    result = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "oracle:sentences", "--lm", "scripted",
                    "--no-judge", "--no-plots")
    assert result.exit_code == 2
    assert "argument 'strategy': unknown preset 'sentences' in 'oracle:sentences'; the oracle takes the answer " \
           "presets only" in result.output
