"""``ragnet eval`` through typer's CliRunner: a run end to end on the tiny set with a scripted
LM, the acceptance warning, one-line errors naming the argument, and the subcommands intact."""

from __future__ import annotations

import json

import dspy
import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from tests.eval.tiny_set import tiny_lm, write_tiny_set


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Data dir, RAGNET_HOME in tmp, and `--lm scripted` answered by the tiny set's scripted LM."""
    data = write_tiny_set(tmp_path / "data", dev=("q1", "q2"), acceptance=("q3",))
    monkeypatch.setenv("RAGNET_HOME", str(tmp_path / "home"))
    engine = tiny_lm()
    seen = []

    def fake_configure(lm=None, **kwargs):
        seen.append(lm)
        return dspy.settings.lm

    monkeypatch.setattr("ragnet.lm.config.configure", fake_configure)
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        yield data, tmp_path, engine, seen


def invoke(*args):
    return CliRunner().invoke(app, ["eval", *args], catch_exceptions=False)


def test_eval_runs_strategies_and_writes_outputs(env):
    data, tmp, _engine, seen = env
    out = tmp / "out"
    result = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "basic,oneshot", "--lm", "scripted",
                    "--budgets", "1000,2000", "--out", str(out), "--no-plots")
    assert result.exit_code == 0, result.output
    assert seen == ["scripted"]
    assert "wrote" in result.output and "oneshot@2000" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["strategies"]) == ["basic", "oneshot@1000", "oneshot@2000"]
    assert summary["meta"]["questions"] == 2 and summary["meta"]["split"] == "dev"
    assert summary["strategies"]["basic"]["llm_match"] == 1.0  # q1 exact, q2 judged a match
    report = (out / "report.md").read_text()
    assert ("Command: `ragnet eval --data tiny --data-dir " + str(data) + " --strategies basic,oneshot "
            "--budgets 1000,2000 --out " + str(out) + " --no-plots --lm scripted`") in report
    assert len((out / "results.jsonl").read_text().splitlines()) == 6
    assert not list(out.glob("*.png"))
    # the pooled index went to the content-hash cache under $RAGNET_HOME
    (cached,) = (tmp / "home" / "indexes").iterdir()
    assert cached.name.startswith("tiny-pooled-") and len(cached.name) == len("tiny-pooled-") + 12

    again = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "basic", "--lm", "scripted",
                   "--out", str(out), "--no-plots", "--no-judge")
    assert again.exit_code == 2 and "use another --out, or --fresh" in again.output


def test_acceptance_split_warns_and_default_out_names_set_and_split(env, monkeypatch):
    data, tmp, _engine, _ = env
    monkeypatch.chdir(tmp)
    result = invoke("--data", "tiny", "--data-dir", str(data), "--split", "acceptance", "--strategies", "basic",
                    "--no-judge", "--no-plots")
    assert result.exit_code == 0, result.output
    assert "for final measurement only" in result.output
    summary = json.loads((tmp / ".ragnet-cache" / "eval" / "tiny-acceptance" / "summary.json").read_text())
    assert summary["meta"]["questions"] == 1 and summary["primary_metric"] == "em"


@pytest.mark.parametrize("args, message", [
    (["--budgets", "1000,x"], "argument 'budgets': expected comma-separated integers"),
    (["--strategies", "basic,nope"], "argument 'strategy': unknown strategy 'nope'"),
    (["--threads", "0"], "argument 'threads'"),
    (["--mode", "open"], "argument 'mode': unknown mode"),
    (["--ids", "q1,zzz"], "argument 'ids': unknown question id(s) in tiny: zzz"),
    (["--program", "basic=missing.json"], "missing.json: no such file"),
    (["--program", "missing.json"], "does not say which strategy it is for"),
    (["--split", "test"], "argument 'split'"),
])
def test_bad_input_is_one_line_with_exit_status_2(env, args, message):
    data, tmp, _, _ = env
    result = invoke("--data", "tiny", "--data-dir", str(data), "--out", str(tmp / "o"), "--no-plots", *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_subcommands_and_help_still_work(env):
    assert "Usage" in invoke().output  # no arguments: help
    result = invoke("retrieval", "--help")
    assert result.exit_code == 0 and "Gold-evidence recall" in result.output
    assert "--strategies" in invoke("--help").output


@pytest.mark.parametrize("command", [(), ("retrieval",)])
def test_out_holding_a_users_files_is_refused_and_left_untouched(env, command):
    data, tmp, _, _ = env
    proj = tmp / "proj"
    proj.mkdir()
    (proj / "report.md").write_text("# my own report\n")
    (proj / "ids.txt").write_text("mine\n")
    before = {p.name: p.read_bytes() for p in proj.iterdir()}
    options = ("--strategies", "basic", "--lm", "scripted", "--no-judge", "--no-plots") if not command else ()
    result = invoke(*command, "--data", "tiny", "--data-dir", str(data), *options, "--out", str(proj))
    assert result.exit_code == 2 and "holds no ragnet eval run (ids.txt, report.md)" in result.output
    assert "Traceback" not in result.output
    assert {p.name: p.read_bytes() for p in proj.iterdir()} == before


def test_a_second_run_on_the_same_out_is_refused_while_the_first_writes(env):
    import subprocess
    import sys
    import textwrap

    data, tmp, _, _ = env
    out = tmp / "busy"
    # another process holding the folder's lock, as a running `ragnet eval --out busy` does
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from ragnet._atomic import dir_lock
        with dir_lock({str(out)!r}):
            print("held", flush=True)
            sys.stdin.read()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        result = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "basic", "--lm", "scripted",
                        "--no-judge", "--out", str(out), "--no-plots")
        assert result.exit_code == 2 and "another ragnet process" in result.output
        assert not (out / "results.jsonl").exists()
    finally:
        holder.communicate("")


def test_hops_reports_hop_recall_and_resumes(env):
    data, tmp, _, _ = env
    out = tmp / "hops"
    result = invoke("hops", "--data", "tiny", "--data-dir", str(data), "--budget", "440", "--searches", "1",
                    "-k", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    bridge = summary["policies"]["bridge"]
    assert bridge["questions"] == 2 and bridge["needs_hop"] <= 2 and "rewrite_calls" not in bridge
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["q1", "q2"] and all(r["policy"] == "bridge" for r in rows)
    assert "# Hop recall" in (out / "report.md").read_text()
    again = invoke("hops", "--data", "tiny", "--data-dir", str(data), "--budget", "440", "--searches", "1",
                   "-k", "1", "--out", str(out))
    assert again.exit_code == 0 and len((out / "results.jsonl").read_text().splitlines()) == 2  # resumed
    bad = invoke("hops", "--data", "tiny", "--data-dir", str(data), "--policies", "bridge,guess")
    assert bad.exit_code == 2 and "unknown policy guess" in bad.output


def test_baseline_chooses_what_the_others_are_compared_with(env):
    data, tmp, _, _ = env
    out = tmp / "vs-oneshot"
    result = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "basic,oneshot", "--lm", "scripted",
                    "--budget", "1000", "--no-judge", "--no-plots", "--baseline", "oneshot", "--out", str(out))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["baseline"] == "oneshot@1000" and list(summary["vs_baseline"]) == ["basic"]
    bad = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "basic", "--lm", "scripted",
                 "--no-judge", "--baseline", "combined", "--out", str(tmp / "never"))
    assert bad.exit_code == 2 and "'combined' names no strategy of this run" in bad.output
    assert not (tmp / "never").exists()  # refused before the folder, the index or the LM


SECRET = "sk-live-0123456789abcdef"


def test_the_api_key_is_written_to_no_file_of_the_run(env, monkeypatch):
    """Issue 47, item 7: `ragnet eval ... --api-key sk-...` stored the key in run.json,
    summary.json, report.md and report.html (the recorded command line), and an LM error or a
    trace echoing it would have gone into results.jsonl."""
    import ragnet.programs.basic as basic

    data, tmp, _engine, _ = env
    out = tmp / "out"
    real = basic.BasicRAG.forward

    def leaky(self, question, **kwargs):  # a server that echoes the key in its error message
        if "capital" in question.lower():
            raise RuntimeError(f"401 Unauthorized: invalid key {SECRET}")
        return real(self, question=question, **kwargs)

    monkeypatch.setattr(basic.BasicRAG, "forward", leaky)
    result = invoke("--data", "tiny", "--data-dir", str(data), "--strategies", "basic", "--lm", "scripted",
                    "--api-key", SECRET, "--api-base", "https://me:hunter2-password@llm.example/v1",
                    "--out", str(out), "--no-plots")
    assert result.exit_code == 0, result.output
    written = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {"run.json", "summary.json", "report.md", "report.html", "results.jsonl"} <= set(written)
    for name, content in written.items():
        assert SECRET.encode() not in content and b"hunter2-password" not in content, name
    assert "--api-key '***'" in (out / "report.md").read_text()  # it says a key was given, not which
    assert "invalid key ***" in (out / "results.jsonl").read_text()
