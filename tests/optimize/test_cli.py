"""`ragnet optimize` end to end with a scripted LM (typer's CliRunner), and `ragnet ask --program`
refusing files made for another program or ragnet version."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from tests.optimize.conftest import every_lm_is, FakeIndex, OptimizeLM, demo_dependent_sufficiency, make_records

runner = CliRunner()


@pytest.fixture
def dataset(tmp_path):
    """A toy benchmark folder: data/toyset/questions.jsonl plus data/splits/toyset.{dev,acceptance}.txt."""
    records = make_records(24)
    root = tmp_path / "data"
    (root / "toyset").mkdir(parents=True)
    (root / "splits").mkdir()
    lines = [json.dumps({k: v for k, v in asdict(r).items() if v is not None}) for r in records]
    (root / "toyset" / "questions.jsonl").write_text("\n".join(lines) + "\n")
    (root / "splits" / "toyset.dev.txt").write_text("\n".join(r.id for r in records[:20]) + "\n")
    (root / "splits" / "toyset.acceptance.txt").write_text("\n".join(r.id for r in records[20:]) + "\n")
    return root, records


@pytest.fixture
def engine(monkeypatch, tmp_path):
    """Every LM spec the CLI resolves becomes the scripted engine; DSPy settings restored after."""
    with every_lm_is(OptimizeLM(sufficiency=demo_dependent_sufficiency), monkeypatch, tmp_path) as lm:
        yield lm


def _optimize(root, out, *extra):
    return runner.invoke(app, ["optimize", "--program", "iterative", "--step", "sufficiency", "--data", "toyset",
                               "--data-dir", str(root), "--lm", "scripted", "--out", str(out), *extra])


def test_optimize_sufficiency_step_saves_a_compiled_program_with_its_record(dataset, engine, tmp_path):
    root, records = dataset
    out = tmp_path / "iterative-suff.json"
    result = _optimize(root, out, "-n", "16", "--val-fraction", "0.5", "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "expected LM calls: up to" in result.stderr
    assert "[1/3]" in result.stderr and "[3/3]" in result.stderr
    assert "Bootstrapped" in result.stderr and "Bootstrapped" not in result.stdout  # progress off stdout
    assert "verdict_accuracy" in result.stdout and "verdict=Refine" in result.stdout
    assert f"saved {out} (IterativeRAG)" in result.stdout

    state = json.loads(out.read_text())
    assert state["sufficiency.predict"]["demos"]  # the compiled step is in the saved program
    header = state["metadata"]["ragnet"]
    assert header["program"] == "IterativeRAG" and header["spec"] == "iterative"
    run = header["optimization"]
    assert run["optimizer"] == "bootstrap" and run["effort"] == "light" and run["seed"] == 3
    assert run["metric"] == "verdict_accuracy" and run["step"] == "sufficiency"
    assert len(run["train_questions"]) == len(run["val_questions"]) == 8
    assert not set(run["train_questions"]) & set(run["val_questions"])
    dev = {r.id for r in records[:20]}
    assert set(run["train_questions"]) | set(run["val_questions"]) <= dev  # never acceptance questions
    assert (run["before"], run["after"]) == (0.5, 1.0)
    assert run["breakdown"]["Refine"] == {"n": 4, "before": 0.0, "after": 1.0}
    assert 0 < run["lm_calls"] <= run["expected_lm_calls"]["total"] and run["seconds"] >= 0
    assert run["val_ids"] and all(i.split(":")[0] in run["val_questions"] for i in run["val_ids"])

    again = tmp_path / "again.json"
    assert _optimize(root, again, "-n", "16", "--val-fraction", "0.5", "--seed", "3").exit_code == 0
    rerun = json.loads(again.read_text())["metadata"]["ragnet"]["optimization"]
    assert rerun["train_ids"] == run["train_ids"] and rerun["val_ids"] == run["val_ids"]  # deterministic


def test_run_optimize_takes_the_option_groups_the_cli_builds(dataset, engine, tmp_path):
    from ragnet.lm.config import LMOptions
    from ragnet.optimize import CompileSettings, DevQuestions, run_optimize

    root, _ = dataset
    result = run_optimize("iterative", questions=DevQuestions("toyset", n=16, val_fraction=0.5, data_dir=root),
                          settings=CompileSettings(step="sufficiency", seed=3), lms=LMOptions(lm="scripted"),
                          out=tmp_path / "direct.json", progress=False, log=lambda m: None)
    cli_out = tmp_path / "cli.json"
    assert _optimize(root, cli_out, "-n", "16", "--val-fraction", "0.5", "--seed", "3").exit_code == 0
    cli = json.loads(cli_out.read_text())["metadata"]["ragnet"]["optimization"]
    direct = json.loads((tmp_path / "direct.json").read_text())["metadata"]["ragnet"]["optimization"]
    assert direct == result.record
    for key in ("train_ids", "val_ids", "effort", "optimizer", "step", "seed", "before", "after"):
        assert direct[key] == cli[key], key


@pytest.mark.parametrize("cap", [None, "0"])
def test_optimize_answer_step_caps_its_demos_and_records_the_cap(dataset, engine, tmp_path, cap):
    root, _ = dataset
    out = tmp_path / "basic-answer.json"
    extra = ["--demo-tokens", cap] if cap else []
    result = runner.invoke(app, ["optimize", "--program", "basic", "--step", "answer", "--data", "toyset",
                                 "--data-dir", str(root), "--lm", "scripted", "-n", "16", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    state = json.loads(out.read_text())
    run = state["metadata"]["ragnet"]["optimization"]
    assert run["demo_tokens"] == (300 if cap is None else 0)  # the answer step's default cap, or the one given
    kept = run["demos"]["predict"]
    assert kept["kept"] == len(state["answer.predict"]["demos"]) and kept["tokens"] <= run["demo_tokens"]
    assert f"cap {run['demo_tokens']}" in result.stdout
    if cap == "0":
        assert state["answer.predict"]["demos"] == [] and kept["tokens"] == 0


@pytest.mark.parametrize("extra, message", [
    (["--split", "acceptance"], "acceptance split is for final measurement only"),
    (["--optimizer", "adam"], "unknown optimizer 'adam'"),
    (["--effort", "huge"], "argument 'effort': unknown effort 'huge'"),
    (["--metric", "f1"], "the metric is the step's own"),
    (["--step", "crop"], "iterative has no crop step; programs with it: oneshot"),
    (["--program", "basic"], "basic has no sufficiency step"),
    (["-n", "1"], "argument 'n'"),
    (["--demo-tokens", "-1"], "argument 'demo-tokens'"),
])
def test_bad_options_fail_with_one_clear_line(dataset, engine, tmp_path, extra, message):
    root, _ = dataset
    result = _optimize(root, tmp_path / "x.json", *extra)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "x.json").exists()
    assert engine.calls == []  # refused before any LM call


def test_out_must_be_json(dataset, engine, tmp_path):
    root, _ = dataset
    result = _optimize(root, tmp_path / "prog.pkl")
    assert result.exit_code == 2 and "ending in .json" in result.stderr


@pytest.fixture
def ask_env(monkeypatch, engine, records):
    """`ragnet ask` over a fake index (no embedder) with the scripted LM."""
    import ragnet.index

    monkeypatch.setattr(ragnet.index.Index, "load", classmethod(lambda cls, path, **kw: FakeIndex(records)))


def _ask(program_file, strategy="iterative"):
    return runner.invoke(app, ["ask", "What links fact one and fact two of q1?", "--index", "unused",
                               "--strategy", strategy, "--lm", "scripted", "--program", str(program_file)])


def test_ask_loads_a_compiled_program_and_refuses_other_programs_and_changed_steps(dataset, engine, ask_env, tmp_path):
    root, _ = dataset
    out = tmp_path / "suff.json"
    assert _optimize(root, out, "-n", "12").exit_code == 0
    demos = json.loads(out.read_text())["sufficiency.predict"]["demos"]
    assert demos

    def ask_prompts(*args):
        start = len(engine.calls)
        result = _ask(*args) if args else runner.invoke(app, ["ask", "What links fact one and fact two of q1?",
                                                              "--index", "unused", "--strategy", "iterative",
                                                              "--lm", "scripted"])
        assert result.exit_code == 0, result.output
        assert "answer:" in result.stdout
        return [p for s, p in engine.calls[start:] if s == "sufficiency"]

    compiled = ask_prompts(out)
    assert compiled and all(p.count("[[ ## verdict ## ]]") > 2 for p in compiled)  # the saved demos are shown
    assert all(d["question"] in compiled[0] for d in demos)
    stock = ask_prompts()  # the same question without --program: no demos
    assert stock and all(p.count("[[ ## verdict ## ]]") <= 2 for p in stock)
    assert not any(d["question"] in stock[0] for d in demos)

    wrong_program = _ask(out, strategy="reflective")
    assert wrong_program.exit_code == 2
    assert f"{out}: compiled for IterativeRAG, not ReflectiveRAG" in wrong_program.stderr

    state = json.loads(out.read_text())
    state["metadata"]["ragnet"]["version"] = "0.0.1"
    state["metadata"]["ragnet"]["signatures"]["answer"] = "question, context -> answer"
    old = tmp_path / "old.json"
    old.write_text(json.dumps(state))
    changed = _ask(old)
    assert changed.exit_code == 2 and "compiled by ragnet 0.0.1" in changed.stderr
    assert "answer ('question, context -> answer' saved" in changed.stderr

    truncated = tmp_path / "cut.json"
    truncated.write_text(out.read_text()[:100])
    bad = _ask(truncated)
    assert bad.exit_code == 2 and "invalid JSON" in bad.stderr and "Traceback" not in bad.output


def test_the_old_budget_flag_is_gone(dataset, engine, tmp_path):
    root, _ = dataset
    out = tmp_path / "old-flag.json"
    result = _optimize(root, out, "--budget", "light")
    assert result.exit_code == 2 and "No such option: --budget" in result.output
    assert not out.exists() and engine.calls == []


def test_the_api_key_is_not_written_into_the_compiled_program(dataset, engine, tmp_path):
    """Issue 47, item 7: optimize records its command line in the compiled program's header."""
    root, _ = dataset
    out = tmp_path / "suff.json"
    secret = "sk-live-optimize-0123456789"
    result = _optimize(root, out, "-n", "8", "--val-fraction", "0.5", "--api-key", secret)
    assert result.exit_code == 0, result.output
    saved = out.read_text()
    assert secret not in saved
    assert "--api-key '***'" in json.loads(saved)["metadata"]["ragnet"]["optimization"]["command"]
