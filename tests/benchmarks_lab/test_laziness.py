"""``python -m benchmarks.laziness``: context building, rate aggregation, and the command end to end.

The LM is scripted (``tests.programs.scripted.ProgramLM``): it tests the control flow and
the bookkeeping, never a model's judgement.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from benchmarks import laziness_evaluator
from benchmarks.laziness import (
    STUDY_RATES,
    PaddingPool,
    app,
    build_cases,
    evidence_dependence,
    format_laziness_report,
    padding_trend,
    summarize_laziness,
    wilson_interval,
)
from ragnet.corpus.tokens import count_tokens
from ragnet.errors import InputError
from ragnet.eval.run.datasets import QARecord
from ragnet.eval.run.eval_indexes import NoIndex
from ragnet.programs.persist import save_program
from tests.programs.scripted import ProgramLM

_WORDS = ("river harbour meadow lantern orchard quarry glacier canyon beacon ferry mill "
          "chapel bridge valley summit forest marsh island tower garden").split()


def _filler(i: int) -> dict:
    """An irrelevant paragraph of 40 to 160 tokens."""
    words = [_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(30 + (i * 37) % 120)]
    return {"title": f"Filler {i}", "text": f"Filler {i} is known for its " + " ".join(words) + "."}


def _question(i: int) -> dict:
    a, b = f"Person{i} Alpha", f"Town{i} Beta"
    return {
        "id": f"q{i}",
        "question": f"In which region is the birthplace of {a}?",
        "answers": [f"Region{i} Gamma"],
        "gold_titles": [a, b],
        "context": [
            {"title": a, "text": f"{a} was born in {b}, a town known for its orchards and mills."},
            {"title": b, "text": f"{b} is a town in Region{i} Gamma, on the river Delta{i}."},
            {"title": f"Distractor {i}", "text": f"Distractor {i} is about lanterns and ferries."},
        ],
    }


def _records(n_questions: int = 4, n_filler: int = 150) -> list[QARecord]:
    recs = [QARecord(**{k: v for k, v in _question(i).items()}) for i in range(n_questions)]
    fillers = [_filler(i) for i in range(n_filler)]
    # Traps: paragraphs of other "questions" that mention q0's gold or answer, or reuse its title.
    fillers += [
        {"title": "Trap mention", "text": "Town0 Beta hosts a yearly fair."},
        {"title": "Trap answer", "text": "The hills of Region0 Gamma are green."},
        {"title": "Town0 Beta", "text": "A second article with the same title."},
    ]
    recs.append(QARecord(id="fillers", question="unused?", answers=["x"], gold_titles=[], context=fillers))
    recs.append(QARecord(id="single", question="One-hop?", answers=["y"], gold_titles=["Only Gold"],
                         context=[{"title": "Only Gold", "text": "Only Gold is the single gold paragraph."}]))
    return recs


RECORDS = _records()
QUESTIONS = [r for r in RECORDS if r.id.startswith("q")]
MAX_PARA = max(count_tokens(f"[c999] {p['title']}: {p['text']}") for r in RECORDS for p in r.context)


def _build(**kw):
    kw.setdefault("pads", [600, 1200])
    kw.setdefault("pool_records", RECORDS)
    return build_cases(QUESTIONS, **kw)


# ----------------------------------------------------------------------------- building contexts


def test_contexts_keep_part_of_the_gold_and_reach_the_target():
    cases, skipped = _build()
    assert skipped == []
    assert {(c.evidence, c.pad) for c in cases} == {("partial", 0), ("partial", 600), ("partial", 1200), ("full", 0)}
    for c in cases:
        q = next(r for r in QUESTIONS if r.id == c.question_id)
        titles = [ch.title for ch in c.chunks]
        text = c.context_text()
        assert c.context_tokens == count_tokens(text)
        gold_in = [t for t in titles if t in q.gold_titles]
        assert [titles[i] for i in c.gold_positions] == gold_in
        if c.evidence == "partial":
            assert len(gold_in) == 1 and gold_in == c.kept_titles
            (withheld,) = c.withheld_titles
            assert withheld not in titles  # never this question's other gold
            padding = " ".join(ch.text for ch in c.chunks if ch.title not in q.gold_titles)
            assert withheld not in padding and q.answers[0] not in padding
        else:
            assert sorted(gold_in) == sorted(q.gold_titles) and c.withheld_titles == []
        if c.pad:
            assert c.context_tokens <= c.pad
            assert c.pad - c.context_tokens < MAX_PARA  # reaches the target within one paragraph
            assert not {t for t in titles if t.startswith("Distractor") or t.startswith("Trap")}
        else:
            assert titles == gold_in


def test_padding_pool_screens_out_anything_relevant():
    pool = PaddingPool(RECORDS)
    titles = {p.title for p in pool.candidates(QUESTIONS[0])}
    assert "Trap mention" not in titles and "Trap answer" not in titles
    assert not {"Person0 Alpha", "Town0 Beta", "Distractor 0"} & titles
    assert "Person1 Alpha" in titles and "Filler 3" in titles  # other questions' paragraphs are fair game
    # The traps are only traps for q0.
    assert {"Trap mention", "Trap answer"} <= {p.title for p in pool.candidates(QUESTIONS[1])}


def test_contexts_are_deterministic_given_the_seed():
    def snapshot(seed, position="early"):
        cases, _ = _build(seed=seed, position=position)
        return [(c.key, c.context_text(), c.gold_positions) for c in cases]

    assert snapshot(0) == snapshot(0)
    assert snapshot(0) != snapshot(1)
    assert snapshot(3, "random") == snapshot(3, "random")


def test_early_position_nests_contexts_and_random_moves_the_gold():
    cases, _ = _build(pads=[400, 800, 1600])
    for qid in {c.question_id for c in cases}:
        levels = [c for c in cases if c.question_id == qid and c.evidence == "partial" and c.pad]
        texts = [c.context_text() for c in levels]
        assert all(texts[i + 1].startswith(texts[i]) for i in range(len(texts) - 1))
        assert len({tuple(c.gold_positions) for c in levels}) == 1
        assert levels[0].gold_depth >= levels[-1].gold_depth
    rand, _ = _build(pads=[400, 800, 1600], position="random", seed=2)
    positions = {tuple(c.gold_positions) for c in rand if c.evidence == "partial" and c.pad}
    assert len(positions) > 2


def test_full_gold_pads_and_no_controls():
    cases, _ = _build(pads=[600], full_gold_pads=[600], controls=False)
    assert [(c.evidence, c.pad) for c in cases[:2]] == [("partial", 600), ("full", 600)]
    full = cases[1]
    assert len(full.gold_positions) == 2 and full.gold_positions[1] == full.gold_positions[0] + 1


def test_questions_without_two_gold_paragraphs_are_skipped():
    single = next(r for r in RECORDS if r.id == "single")
    cases, skipped = build_cases([single, QUESTIONS[0]], pads=[600], pool_records=RECORDS)
    assert {c.question_id for c in cases} == {"q0"}
    assert skipped[0]["id"] == "single" and "at least 2" in skipped[0]["reason"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pads": [10]}, r"argument 'pads': 10 tokens cannot hold the kept gold paragraph\(s\) of question q\d "
                         r"\(\d+ tokens\); use sizes of at least \d+"),
        ({"pads": [600], "full_gold_pads": [30]}, r"argument 'full-gold-pads': 30 tokens cannot hold the full gold"),
        ({"pads": [-5]}, r"argument 'pads': pad sizes must be integers >= 0"),
        ({"pads": ["600"]}, r"argument 'pads'"),
        ({"position": "middle"}, r"argument 'position': must be one of early, random"),
        ({"pads": [], "controls": False}, r"argument 'pads': no pad sizes"),
    ],
)
def test_bad_arguments_are_clear(kwargs, message):
    with pytest.raises(InputError, match=message):
        _build(**kwargs)


# ----------------------------------------------------------------------------- aggregation


def _result(evidence, pad, follow_up, *, fallback=False, seconds=1.0, cached=False):
    return {"evidence": evidence, "pad": pad, "follow_up": follow_up, "fallback": fallback, "seconds": seconds,
            "cached": cached, "context_tokens": pad or 80, "gold_depth": 0.1, "confidence": 0.5,
            "prompt_tokens": pad + 500}


def test_rates_count_decisions_and_keep_lm_errors_apart():
    results = (
        [_result("partial", 3000, True)] * 3 + [_result("partial", 3000, False, seconds=5.0)]
        + [_result("partial", 3000, None, fallback=True, seconds=60.0)] * 2
        + [_result("partial", 12000, False, cached=True)] * 2
        + [_result("partial", 0, True)] * 4 + [_result("full", 0, True)] + [_result("full", 0, False)] * 3
    )
    rows = {(r["evidence"], r["pad"]): r for r in summarize_laziness(results)}
    r = rows[("partial", 3000)]
    assert (r["n"], r["decided"], r["follow_ups"], r["lm_errors"]) == (6, 4, 3, 2)
    assert r["rate"] == 0.75 and r["study_rate"] == STUDY_RATES[3000] == 0.95
    assert r["ci95"][0] < 0.75 < r["ci95"][1]
    assert r["median_seconds"] == 3.0  # fallbacks' time counts: it is what the step cost
    assert rows[("partial", 12000)]["rate"] == 0.0 and rows[("partial", 12000)]["median_seconds"] is None
    assert rows[("partial", 12000)]["cached"] == 2 and rows[("partial", 12000)]["study_rate"] == 0.25
    assert rows[("full", 0)]["study_rate"] is None
    assert [(x["evidence"], x["pad"]) for x in summarize_laziness(results)][0] == ("partial", 0)
    dep = evidence_dependence(list(rows.values()))
    assert dep == {"partial_rate": 1.0, "full_rate": 0.25, "gap": 0.75}


def test_padding_trend_reads_the_smallest_and_largest_padded_levels():
    def row(evidence, pad, rate, study=None):
        return {"evidence": evidence, "pad": pad, "rate": rate, "study_rate": study, "n": 10, "decided": 10,
                "follow_ups": round(10 * (rate or 0)), "lm_errors": 0, "ci95": None, "median_seconds": None,
                "median_context_tokens": pad}

    rows = [row("partial", 0, 1.0), row("partial", 3000, 0.9, 0.95), row("partial", 6000, None, 0.9),
            row("partial", 12000, 0.3, 0.25), row("full", 12000, 0.0)]
    trend = padding_trend(rows)
    assert (trend["first_pad"], trend["last_pad"]) == (3000, 12000)  # pad 0, no-rate and full rows skipped
    assert trend["change"] == pytest.approx(-0.6) and (trend["study_first"], trend["study_last"]) == (0.95, 0.25)
    report = format_laziness_report({"conditions": rows, "padding_trend": trend, "config": {}})
    assert ("follow-up rate 90% at 3,000 tokens → 30% at 12,000 (study: 95% → 25%): the agent stops "
            "searching more often as the context grows") in report
    flat = [row("partial", 3000, 0.5), row("partial", 9000, 0.6)]
    assert "no clear change with context size" in format_laziness_report(
        {"conditions": flat, "padding_trend": padding_trend(flat), "config": {}})
    assert padding_trend([row("partial", 3000, 0.5)]) is None


def test_all_errors_give_no_rate():
    (row,) = summarize_laziness([_result("partial", 6000, None, fallback=True)])
    assert row["rate"] is None and row["ci95"] is None and row["lm_errors"] == 1
    report = format_laziness_report({"conditions": [row], "config": {}})
    assert "| partial gold | 6,000 | 1 |" in report and "| — | — | 90% | 1 |" in report


def test_wilson_interval():
    assert wilson_interval(0, 0) is None
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-3) and high == pytest.approx(0.7634, abs=1e-3)


# ----------------------------------------------------------------------------- the command


@pytest.fixture
def dataset(tmp_path):
    folder = tmp_path / "data" / "toyhop"
    folder.mkdir(parents=True)
    rows = [_question(i) for i in range(5)]
    rows.append({"id": "fillers", "question": "unused?", "answers": ["x"], "gold_titles": [],
                 "context": [_filler(i) for i in range(200)]})
    rows.append({"id": "heldout", "question": "Acceptance?", "answers": ["z"], "gold_titles": ["A", "B"],
                 "context": [{"title": "A", "text": "a"}, {"title": "B", "text": "b"}]})
    (folder / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    splits = tmp_path / "data" / "splits"
    splits.mkdir()
    (splits / "toyhop.dev.txt").write_text("\n".join(r["id"] for r in rows if r["id"] != "heldout") + "\n")
    return folder


def _verdict_by_length(prompt: str, n: int) -> dict:
    """Refine on short contexts, Sufficient on long ones: a 'lazy' scripted agent."""
    context = prompt.split("[[ ## context ## ]]")[-1]
    verdict = "Refine" if len(context) < 3000 else "Sufficient"
    return {"verdict": verdict, "confidence": 0.8, "missing": "the region" if verdict == "Refine" else ""}


@pytest.fixture
def scripted(monkeypatch):
    engines = []

    def install(**responders):
        engine = ProgramLM(**responders)
        engines.append(engine)

        def fake_configure(lm, *, n_ctx, timeout, largest_prompt):
            engine.largest_prompt = largest_prompt
            return engine.lm(), {"lm": "scripted/program", "n_ctx": n_ctx, "timeout": timeout}

        monkeypatch.setattr(laziness_evaluator, "configure_lm", fake_configure)
        return engine

    return install


def _invoke(*args):
    return CliRunner().invoke(app(), [*map(str, args)], prog_name="python -m benchmarks.laziness")


def test_command_end_to_end(dataset, tmp_path, scripted):
    engine = scripted(sufficiency=_verdict_by_length)
    out = tmp_path / "run"
    res = _invoke("--data", dataset, "--split", "dev", "-n", 3, "--pads", "600,1200", "--seed", 0, "--out", out)
    assert res.exit_code == 0, res.output
    assert engine.steps() == ["sufficiency"] * 12  # 3 questions x (gold-only, 600, 1200, full gold)
    summary = json.loads((out / "summary.json").read_text())
    rows = {(r["evidence"], r["pad"]): r for r in summary["conditions"]}
    assert rows[("partial", 0)]["rate"] == 1.0 and rows[("partial", 1200)]["rate"] == 0.0
    assert rows[("partial", 600)]["n"] == 3 and rows[("partial", 600)]["lm_errors"] == 0
    assert summary["questions"] == 3 and summary["config"]["seed"] == 0
    assert summary["command"].startswith("python -m benchmarks.laziness --data")
    assert summary["evidence_dependence"]["gap"] == 0.0  # the scripted agent ignores the evidence
    assert engine.largest_prompt > 1200
    report = (out / "report.md").read_text()
    assert "| Evidence | Pad (tokens) | n |" in report
    assert re.search(r"\| partial gold \| 1,200 \| 3 \| [\d,]+ \| 0% \(0/3\) \|", report)
    assert "do not track the evidence" in report
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 12 and all(r["verdict"] in ("Refine", "Sufficient") for r in results)
    assert {r["id"] for r in results} == {"q0", "q1", "q2"}
    # Each prompt carries the context exactly as built.
    first = next(r for r in results if r["pad"] == 1200)
    assert first["context_tokens"] <= 1200 and first["withheld_titles"]

    # Rerun: everything is resumed from results.jsonl, and n can grow.
    res = _invoke("--data", dataset, "--split", "dev", "-n", 4, "--pads", "600,1200", "--seed", 0, "--out", out)
    assert res.exit_code == 0, res.output
    assert engine.steps() == ["sufficiency"] * 16
    assert "resuming: 12 of 16" in res.output

    # Other settings in the same folder are refused, unless --fresh.
    res = _invoke("--data", dataset, "--split", "dev", "-n", 3, "--pads", "600,1200", "--seed", 1, "--out", out)
    assert res.exit_code == 2 and "argument 'out'" in res.output and "seed: 0 -> 1" in res.output
    res = _invoke("--data", dataset, "-n", 1, "--pads", "600", "--seed", 1, "--out", out, "--fresh")
    assert res.exit_code == 0, res.output
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    # --fresh is the one way to discard a run: the old --overwrite spelling is gone.
    res = _invoke("--data", dataset, "-n", 1, "--pads", "600", "--seed", 2, "--out", out, "--overwrite")
    assert res.exit_code == 2 and "No such option: --overwrite" in res.output
    assert json.loads((out / "run.json").read_text())["seed"] == 1
    assert "--overwrite" not in _invoke("--help").output and "--fresh" in _invoke("--help").output


def test_lm_failures_are_counted_not_mapped_to_refine(dataset, tmp_path, scripted):
    def flaky(prompt, n):
        if "[[ ## context ## ]]" in prompt and len(prompt.split("[[ ## context ## ]]")[-1]) > 3000:
            return {"verdict": "maybe later", "confidence": 0.5, "missing": ""}
        return {"verdict": "Sufficient", "confidence": 0.9, "missing": ""}

    scripted(sufficiency=flaky)
    res = _invoke("--data", dataset, "-n", 2, "--pads", "1200", "--no-controls", "--out", tmp_path / "o")
    assert res.exit_code == 0, res.output
    (row,) = json.loads((tmp_path / "o" / "summary.json").read_text())["conditions"]
    assert (row["n"], row["decided"], row["lm_errors"], row["rate"]) == (2, 0, 2, None)
    results = [json.loads(line) for line in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert all(r["fallback"] and r["follow_up"] is None and r["lm_errors"] for r in results)


def test_compiled_program_sufficiency_prompt_is_used(dataset, tmp_path, scripted):
    from ragnet.programs import IterativeRAG, OneShotRAG

    prog = IterativeRAG(NoIndex())
    prog.sufficiency.predict.signature = prog.sufficiency.predict.signature.with_instructions("COMPILED-MARKER: decide carefully.")
    save_program(prog, tmp_path / "iter.json")
    engine = scripted()
    res = _invoke("--data", dataset, "-n", 1, "--pads", "600", "--no-controls", "--program", tmp_path / "iter.json")
    assert res.exit_code == 0, res.output
    assert engine.steps() == ["sufficiency"]  # one question, one padded context, no controls
    assert all("COMPILED-MARKER" in prompt for _, prompt in engine.calls)

    save_program(OneShotRAG(NoIndex()), tmp_path / "oneshot.json")
    res = _invoke("--data", dataset, "-n", 1, "--program", tmp_path / "oneshot.json")
    assert res.exit_code == 2 and "no sufficiency (search-again) step" in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pads", "3k,6k"], "argument 'pads': expected comma-separated token counts (integers), got '3k,6k'"),
        (["--pads", "20"], "argument 'pads': 20 tokens cannot hold the kept gold"),
        (["--full-gold-pads", "x"], "argument 'full-gold-pads': expected comma-separated"),
        (["-n", "0"], "argument 'n': must be at least 1"),
        (["--position", "middle"], "argument 'position': must be one of early, random"),
        (["--split", "acceptance"], "no split file"),
        (["--program", "missing.json"], "missing.json: no such file"),
    ],
)
def test_command_bad_arguments(dataset, scripted, args, message):
    engine = scripted()
    res = _invoke("--data", dataset, *args)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert engine.calls == []


def test_local_context_window_is_sized_or_refused():
    assert laziness_evaluator.needed_n_ctx(1000) == 8192
    need = laziness_evaluator.needed_n_ctx(12600)
    assert need >= 12600 * 1.15 and need % 512 == 0 and need <= 32768
    with pytest.raises(InputError, match=r"argument 'n-ctx': 8192 tokens cannot hold the largest prompt"):
        laziness_evaluator.configure_lm("local", n_ctx=8192, timeout=10, largest_prompt=12600)
    with pytest.raises(InputError, match=r"argument 'n-ctx': applies to the local model only"):
        laziness_evaluator.configure_lm("openai/gpt-4o-mini", n_ctx=8192, timeout=10, largest_prompt=100)


def test_gold_paragraph_indices_win_over_titles():
    from benchmarks.laziness import gold_paragraphs

    rec = QARecord(id="m", question="?", answers=["a"], gold_titles=["Same", "Same"],
                   context=[{"title": "Same", "text": "first"}, {"title": "Other", "text": "x"},
                            {"title": "Same", "text": "second"}])
    assert [p.text for p in gold_paragraphs(rec)] == ["first"]
    indexed = QARecord(**{**rec.__dict__, "gold_paragraph_idxs": [2, 0]})
    assert [p.text for p in gold_paragraphs(indexed)] == ["second", "first"]


def test_the_experiment_runs_from_python_with_an_lm_object(tmp_path):
    from benchmarks.laziness_evaluator import LazinessEvaluator

    engine = ProgramLM(sufficiency=_verdict_by_length)
    logs = []
    evaluator = LazinessEvaluator(RECORDS, n=2, pads=[600, 1200], lm=engine.lm(), show_progress=False,
                                  log=logs.append)
    assert [q.id for q in evaluator.questions] == ["q0", "q1"] and evaluator.skipped_in_split == 2
    summary = evaluator(tmp_path / "run")
    assert engine.steps() == ["sufficiency"] * 8 and summary["lm"]["lm"] == engine.lm().model
    metrics = evaluator.metrics(summary)
    assert metrics["partial@0/rate"] == 1.0 and metrics["partial@1200/rate"] == 0.0
    assert metrics["padding_change"] == summary["padding_trend"]["change"] and evaluator.primary_metric == "rate"
    again = LazinessEvaluator(RECORDS, n=2, pads=[600, 1200], lm=engine.lm(), show_progress=False, log=logs.append)
    assert again(tmp_path / "run")["resumed"] == 8 and len(engine.steps()) == 8
    assert any("resuming: 8 of 8 decisions" in line for line in logs)
    with pytest.raises(InputError, match="no question has two gold paragraphs"):
        LazinessEvaluator([r for r in RECORDS if r.id == "single"])
    with pytest.raises(InputError, match="argument 'position'"):
        LazinessEvaluator(RECORDS, position="middle")


def test_the_experiment_left_the_ragnet_command_and_runs_as_a_module():
    from ragnet.cli import app as ragnet_app

    res = CliRunner().invoke(ragnet_app, ["eval", "laziness", "--help"])
    assert res.exit_code == 2 and "No such command 'laziness'" in res.output

    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "benchmarks.laziness", "--help"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "python -m benchmarks.laziness" in done.stdout and "--full-gold-pads" in done.stdout
