"""The evaluation runner end to end on the tiny set with a scripted LM: rows, resume, crash
recovery, error rows, report and summary contents, threads, per-question mode, compiled
programs, and the ``dspy.Evaluate`` path."""

from __future__ import annotations

import contextlib
import json
import threading
import time

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.eval.metrics.program_metrics import program_metric
from ragnet.eval.run.datasets import load_eval_set, parse_ids, to_examples
from ragnet.eval.run.qa_evaluator import read_results, row_answer_prompt, run_eval
from ragnet.eval.run.strategy_plan import parse_program_args, plan_strategies
from ragnet.programs.basic import BasicRAG
from ragnet.signatures import AnswerStep
from tests.eval.tiny_set import ANSWERS, tiny_lm, write_tiny_set


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_set(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="module")
def index_root(tmp_path_factory):
    return tmp_path_factory.mktemp("indexes")


@pytest.fixture(scope="module")
def embedder():
    from ragnet.index import Embedder

    return Embedder()


@contextlib.contextmanager
def scripted(engine=None):
    engine = engine or tiny_lm()
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        yield engine


@pytest.fixture
def run(data, index_root, embedder):
    """``run(out, strategies, engine=None, **kwargs)`` -> (summary, engine, log lines)."""

    def go(out, strategies=("basic",), engine=None, n=None, **kwargs):
        ev = load_eval_set("tiny", data_dir=data, n=n, mode=kwargs.pop("mode", "pooled"))
        logs: list[str] = []
        with scripted(engine) as eng:
            summary = run_eval(ev, list(strategies), out_dir=out, index_root=index_root, embedder=embedder,
                               show_progress=False, log=kwargs.pop("log", logs.append), **kwargs)
        return summary, eng, logs

    return go


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_plan_labels_budgeted_strategies_per_budget():
    labels = [r.label for r in plan_strategies(["basic", "oneshot:no-filter", "combined", "basic"], budgets=[1000, 2000])]
    assert labels == ["basic", "oneshot:no-filter@1000", "oneshot:no-filter@2000", "combined@1000", "combined@2000"]
    assert [r.label for r in plan_strategies(["oneshot", "reflective"], budget=3000)] == ["oneshot@3000", "reflective@3000"]
    # IterativeRAG and ReflectiveRAG take a budget when one is given, and read everything they kept otherwise
    assert [r.label for r in plan_strategies(["iterative:no-delete"], budget=1000)] == ["iterative:no-delete@1000"]
    assert [(r.label, r.budget) for r in plan_strategies(["iterative"])] == [("iterative", None)]
    with pytest.raises(InputError, match="unknown strategy"):
        plan_strategies(["nope"])
    with pytest.raises(InputError) as err:
        plan_strategies(["oneshot"], budget=100, budgets=[1000])
    assert err.value.argument == "budgets"


def test_pooled_run_writes_rows_report_summary_and_plots(run, tmp_path):
    out = tmp_path / "out"
    summary, engine, _ = run(out, ["basic", "oneshot"], budgets=[1000, 2000], command="ragnet eval --data tiny")
    rows = [json.loads(line) for line in _lines(out / "results.jsonl")]
    assert len(rows) == 9 and {(r["strategy"], r["id"]) for r in rows} == {
        (s, q) for s in ("basic", "oneshot@1000", "oneshot@2000") for q in ("q1", "q2", "q3")}
    for r in rows:
        assert r["error"] is None and r["answer"] == ANSWERS[r["id"]]
        gold = {"q1": "Tokyo", "q2": "Penicillin", "q3": "Amazon River"}[r["id"]]
        assert r["gold_all"] == float(any(c.split("#")[0] == gold for c in r["context"]))
        assert r["trace"][0]["step"] == "search" and r["usage"]["searches"] >= 1
        assert r["stages"]["final"]["chunks"] == len(r["context"])
    # q1 is an exact match (no judge call), q2 a paraphrase the judge accepts, q3 wrong
    basic = summary["strategies"]["basic"]
    assert basic["em"] == pytest.approx(1 / 3, abs=1e-6)
    assert basic["f1"] == pytest.approx((1 + 2 / 3 + 0) / 3, abs=1e-5)
    assert basic["llm_match"] == pytest.approx(2 / 3, abs=1e-6)
    assert basic["judge_calls"] == 2 and engine.steps().count("judge") == 6  # 2 per strategy
    assert summary["baseline"] == "basic" and summary["primary_metric"] == "llm_match"
    cmp = summary["vs_baseline"]["oneshot@1000"]
    assert (cmp["delta"], cmp["beats_baseline"]) == (0.0, False)
    assert [p["budget"] for p in summary["budget_curves"]["oneshot"]] == [1000, 2000]
    assert set(summary["by_type"]["basic"]) == {"bridge", "comparison"}
    assert summary["by_level"]["basic"]["hard"]["llm_match"] == 1.0

    saved = json.loads((out / "summary.json").read_text())
    assert saved["strategies"]["basic"]["em"] == basic["em"]
    ov = saved["overhead"]
    assert ov["rows"] == 9 and ov["program_s"] > 0 and ov["ratio"] is not None and ov["loop_ratio"] <= ov["ratio"]

    report = (out / "report.md").read_text()
    assert report.splitlines()[2] == "Command: `ragnet eval --data tiny`"
    for needle in ("| basic | 3 | 33.3 | 55.6 | 66.7 | (base) |", "does not beat basic: no difference",
                   "## By question type", "## By level", "## Chunk retention by stage", "## Cost",
                   "## Token budgets", "## Evaluation overhead", "![turns_hist](turns_hist.png)",
                   "(rows counted: basic 3/3"):
        assert needle in report
    for name in ("accuracy_vs_budget.png", "gold_recall_vs_budget.png", "turns_hist.png", "searches_hist.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_resume_skips_finished_rows_and_runs_only_new_questions(run, tmp_path):
    out = tmp_path / "out"
    run(out, ["basic"], n=2)
    summary, engine, logs = run(out, ["basic"], n=2)
    assert engine.calls == []
    assert summary["overhead"]["carried_over"] and summary["overhead"]["rows"] == 2  # figure of the first run
    assert "Measured by the earlier run" in (out / "report.md").read_text()
    summary, engine, logs = run(out, ["basic"])  # all three questions now
    assert summary["overhead"]["rows"] == 1 and engine.steps().count("answer") == 1
    assert any("resuming: 2 of 3 rows" in line for line in logs)
    assert len(_lines(out / "results.jsonl")) == 3 and summary["strategies"]["basic"]["n"] == 3
    assert _lines(out / "ids.txt") == ["q1", "q2", "q3"]  # rewritten for the set the report now covers


def test_resume_answers_again_the_rows_of_another_answer_prompt_layout(run, tmp_path):
    # Rows written while OneShotRAG showed the question first must not fill the column of a run
    # where it shows it last (its default on 2026-11-26), nor the other way round.
    out = tmp_path / "out"
    last = {"oneshot": {"answer": AnswerStep(question_at="last")}}
    run(out, ["basic", "oneshot"], n=2, overrides={"oneshot": {"answer": AnswerStep(question_at="first")}}, plots=False)
    first = {(r["strategy"], r["id"]): r["answer_prompt"] for r in map(json.loads, _lines(out / "results.jsonl"))}
    assert first[("oneshot", "q1")] == {"question_at": "first", "reasoning": False, "evidence_order": "auto"}
    assert first[("basic", "q1")] == {"question_at": "first", "reasoning": False, "evidence_order": "auto"}
    summary, engine, logs = run(out, ["basic", "oneshot"], n=2, overrides=last, plots=False)
    assert engine.steps().count("answer") == 2  # the two oneshot rows; basic's layout did not change
    assert any(line.startswith("2 oneshot rows") and "another answer prompt (question before the context, a manual's best chunk last)" in line
               and "this run's (question after the context, a manual's best chunk last)" in line for line in logs), logs
    # a row written before the evidence order was recorded was answered in rank order: asked again
    assert row_answer_prompt({"answer_prompt": {"question_at": "last", "reasoning": False}})["evidence_order"] == "rank"
    rows = [json.loads(line) for line in _lines(out / "results.jsonl")]
    assert [r["answer_prompt"]["question_at"] for r in rows if r["strategy"] == "oneshot"] == ["first", "first", "last", "last"]
    assert summary["strategies"]["oneshot"]["n"] == 2
    # OneShotRAG's default chooses per question: a layout of its own, so those rows are answered again
    _, engine, logs = run(out, ["basic", "oneshot"], n=2, plots=False)
    assert engine.steps().count("answer") == 2
    assert any(line.startswith("2 oneshot rows") and "(question after the context, a manual's best chunk last) than "
               "this run's (question after the context (and before it too when the question names two options), a "
               "manual's best chunk last)" in line
               for line in logs), logs
    # and the question on both sides is a layout of its own
    _, engine, logs = run(out, ["basic", "oneshot"], n=2, overrides={"oneshot": {"answer": AnswerStep(question_at="both")}}, plots=False)
    assert engine.steps().count("answer") == 2
    assert any(line.startswith("2 oneshot rows") and "names two options), a manual's best chunk last) than this "
               "run's (question before and after the context, a manual's best chunk last)" in line for line in logs), logs


def test_a_truncated_last_line_is_dropped_with_a_warning_and_recomputed(run, tmp_path):
    out = tmp_path / "out"
    run(out, ["basic"])
    lines = _lines(out / "results.jsonl")
    text = "\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2]  # crash mid-write
    (out / "results.jsonl").write_text(text, encoding="utf-8")
    summary, engine, logs = run(out, ["basic"])
    assert any("incomplete last line" in line and ":3:" in line for line in logs)
    assert summary["overhead"]["rows"] == 1 and engine.steps().count("answer") == 1
    rows = [json.loads(line) for line in _lines(out / "results.jsonl")]  # every line parses again
    assert sorted(r["id"] for r in rows) == ["q1", "q2", "q3"]


def test_a_corrupt_line_in_the_middle_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"strategy": "basic", "id": "q1"}\nnot json\n{"strategy": "basic", "id": "q2"}\n')
    with pytest.raises(InputError) as err:
        read_results(path)
    assert (err.value.line, err.value.path) == (2, str(path))


def test_a_question_that_raises_becomes_an_error_row(run, tmp_path, monkeypatch):
    out = tmp_path / "out"
    original = BasicRAG._run

    def flaky(self, question, trace):
        if "penicillin" in question:
            raise RuntimeError("index exploded")
        return original(self, question, trace)

    monkeypatch.setattr(BasicRAG, "_run", flaky)
    summary, _, logs = run(out, ["basic"])
    rows = {r["id"]: r for r in read_results(out / "results.jsonl")}
    assert rows["q2"]["error"] == "RuntimeError: index exploded" and "flaky" in rows["q2"]["traceback"]
    assert rows["q2"]["n_gold"] == 1
    basic = summary["strategies"]["basic"]
    assert (basic["n"], basic["errors"]) == (3, 1)
    assert basic["llm_match"] == pytest.approx(1 / 3, abs=1e-6)  # the error counts as wrong
    assert any("error: basic on q2" in line for line in logs)
    assert "| basic | 3 | 33.3 | 33.3 | 33.3 | (base) |" in (out / "report.md").read_text()

    monkeypatch.setattr(BasicRAG, "_run", original)
    summary, engine, _ = run(out, ["basic"])  # error rows count as finished ...
    assert engine.steps().count("answer") == 0 and summary["strategies"]["basic"]["errors"] == 1
    summary, _, _ = run(out, ["basic"], retry_errors=True)  # ... unless asked to retry them
    assert summary["overhead"]["rows"] == 1 and summary["strategies"]["basic"]["errors"] == 0
    assert summary["strategies"]["basic"]["llm_match"] == pytest.approx(2 / 3, abs=1e-6)


def test_results_of_other_settings_are_not_mixed(run, tmp_path):
    out = tmp_path / "out"
    run(out, ["basic"], n=1)
    with pytest.raises(InputError) as err:
        run(out, ["basic"], n=1, judge=False)
    assert err.value.argument == "out" and "judge: True -> False" in str(err.value)
    summary, _, _ = run(out, ["basic"], n=1, judge=False, fresh=True)
    assert summary["primary_metric"] == "em" and summary["strategies"]["basic"]["llm_match"] is None
    assert "no LLM judge" in (out / "report.md").read_text()


def test_threads_give_the_same_rows_as_a_serial_run(run, tmp_path):
    # (strategies whose scripted answers do not depend on the order of LM calls across threads)
    run(tmp_path / "serial", ["basic", "oneshot"], plots=False)
    parallel, engine, _ = run(tmp_path / "parallel", ["basic", "oneshot", "iterative"], threads=3, plots=False)

    def key(path):
        return sorted((r["strategy"], r["id"], r["answer"], r["em"], tuple(r["context"]))
                      for r in read_results(path) if r["strategy"] != "iterative")

    assert key(tmp_path / "serial" / "results.jsonl") == key(tmp_path / "parallel" / "results.jsonl")
    assert parallel["strategies"]["iterative"]["errors"] == 0 and parallel["strategies"]["iterative"]["n"] == 3
    # usage is metered per question even with questions in flight together
    its = [r for r in read_results(tmp_path / "parallel" / "results.jsonl") if r["strategy"] == "iterative"]
    assert sum(r["usage"]["lm_calls"] for r in its) == len(engine.calls) - engine.steps().count("judge") - 6
    assert parallel["overhead"]["threads"] == 3 and "threads > 1" in parallel["overhead"]["method"]
    assert parallel["strategies"]["iterative"]["stages"]["retrieved"]["chunks"] > 0


def test_ctrl_c_with_threads_keeps_the_rows_of_questions_already_running(run, tmp_path, monkeypatch):
    out = tmp_path / "out"
    original = BasicRAG._run
    q2_started = threading.Event()

    def interrupted(self, question, trace):
        if "Japan" in question:  # stands for Ctrl-C arriving while q2 is being answered
            assert q2_started.wait(10)
            raise KeyboardInterrupt
        if "penicillin" in question:
            q2_started.set()
            time.sleep(0.3)
        return original(self, question, trace)

    monkeypatch.setattr(BasicRAG, "_run", interrupted)
    logs: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        run(out, ["basic"], threads=2, plots=False, log=logs.append)
    kept = {r["id"]: r for r in read_results(out / "results.jsonl")}
    assert "q2" in kept and kept["q2"]["error"] is None and kept["q2"]["answer"] == ANSWERS["q2"]
    assert "q1" not in kept  # the interrupted question is not a row: it is asked again on resume
    assert any("interrupted: waiting for" in line for line in logs)

    monkeypatch.setattr(BasicRAG, "_run", original)
    summary, engine, _ = run(out, ["basic"], threads=2, plots=False)
    assert summary["strategies"]["basic"]["n"] == 3
    assert engine.steps().count("answer") == 3 - len(kept)  # only the questions without a row ran


def test_per_question_mode_retrieves_only_the_questions_own_paragraphs(run, tmp_path, index_root):
    out = tmp_path / "out"
    summary, _, _ = run(out, ["basic"], mode="per-question", plots=False)
    own = {"q1": {"Tokyo", "Paris", "Berlin"}, "q2": {"Penicillin", "Coffee", "Tea"},
           "q3": {"Sahara", "Amazon River", "Chess"}}
    for r in read_results(out / "results.jsonl"):
        assert {c.split("#")[0] for c in r["context"]} <= own[r["id"]]
    assert summary["strategies"]["basic"]["gold_all"] == 1.0  # 3 paragraphs, k=5: everything is retrieved
    assert len(list((index_root / "tiny-per-question").iterdir())) == 3
    assert summary["meta"]["mode"] == "per-question"


def test_a_compiled_program_is_loaded_for_its_strategy(run, tmp_path, data, index_root, embedder):
    from ragnet.eval.run.index_cache import cached_index
    from ragnet.programs.persist import save_program

    ev = load_eval_set("tiny", data_dir=data)
    index = cached_index(ev.documents, "tiny-pooled", root=index_root, embedder=embedder, show_progress=False)
    program = BasicRAG(index)
    program.answer.predict.signature = program.answer.predict.signature.with_instructions("COMPILED INSTRUCTIONS")
    saved = save_program(program, tmp_path / "basic.json")
    with pytest.raises(InputError, match="does not say which strategy"):
        parse_program_args([str(saved)], ["basic", "oneshot"])
    with pytest.raises(InputError, match="compiled for BasicRAG, not OneShotRAG"):
        parse_program_args([f"oneshot={saved}"], ["basic", "oneshot"])
    programs = parse_program_args([str(saved)], ["basic"])
    summary, engine, _ = run(tmp_path / "out", ["basic"], n=1, programs=programs, plots=False)
    answer_prompts = [p for s, p in engine.calls if s == "answer"]
    assert answer_prompts and all("COMPILED INSTRUCTIONS" in p for p in answer_prompts)
    assert summary["meta"]["programs"]["basic"]["file"] == str(saved)
    assert "Compiled programs: basic" in (tmp_path / "out" / "report.md").read_text()


def test_questions_a_compiled_program_was_trained_on_are_left_out_of_every_column(run, tmp_path, data, index_root,
                                                                                  embedder):
    from ragnet.eval.run.index_cache import cached_index
    from ragnet.programs.persist import save_program

    ev = load_eval_set("tiny", data_dir=data)
    ids = [str(q.id) for q in ev.questions]
    index = cached_index(ev.documents, "tiny-pooled", root=index_root, embedder=embedder, show_progress=False)
    saved = save_program(BasicRAG(index), tmp_path / "basic.json",
                         optimization={"train_questions": [ids[0], "not-in-this-set"]})
    programs = parse_program_args([f"basic={saved}"], ["basic", "oneshot"])
    summary, _, logs = run(tmp_path / "out", ["basic", "oneshot"], programs=programs, plots=False)
    rows = read_results(tmp_path / "out" / "results.jsonl")
    assert {r["id"] for r in rows} == set(ids[1:])  # both columns, paired on the held-out questions
    assert {r["strategy"] for r in rows} == {"basic", "oneshot"}
    assert summary["meta"]["left_out_trained"] == 1 and summary["meta"]["questions"] == len(ids) - 1
    assert any("left out 1 of" in line for line in logs)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Left out: 1 questions that a compiled program was trained on" in report
    # ids.txt holds the questions the report covers, so `--ids @OUT/ids.txt` repeats exactly them
    assert _lines(tmp_path / "out" / "ids.txt") == ids[1:]
    assert f"question ids in `{tmp_path / 'out' / 'ids.txt'}`" in report
    assert parse_ids(f"@{tmp_path / 'out' / 'ids.txt'}") == ids[1:]


def test_dspy_evaluate_runs_a_program_on_the_examples(data, index_root, embedder):
    from ragnet.eval.run.index_cache import cached_index

    ev = load_eval_set("tiny", data_dir=data)
    index = cached_index(ev.documents, "tiny-pooled", root=index_root, embedder=embedder, show_progress=False)
    devset = to_examples(ev.questions)
    with scripted():
        result = dspy.Evaluate(devset=devset, metric=program_metric("em"), num_threads=1, display_progress=False)(BasicRAG(index))
    assert result.score == pytest.approx(100 / 3, abs=0.01)  # q1 exact, q2 and q3 not
    assert [float(score) for _, _, score in result.results] == [1.0, 0.0, 0.0]


def test_questions_over_a_given_index_with_a_scoring_hook_as_the_demo_needs(data, index_root, embedder, tmp_path):
    """The demo's shape: its own question objects, an index it built, its own program settings and
    correctness, a table by level, one printed line per answer, and no judge."""
    from dataclasses import dataclass

    from ragnet.eval.run.eval_settings import EvalSettings
    from ragnet.eval.run.index_cache import cached_index
    from ragnet.eval.run.qa_evaluator import QAEvaluator
    from ragnet.programs.registry import build_program

    @dataclass
    class DemoQ:  # like ragnet.demo.corpus.DemoQuestion: no gold_titles, its own gold_doc_ids
        id: str
        question: str
        answers: list
        level: int
        gold_doc_ids: list

    ev = load_eval_set("tiny", data_dir=data)
    index = cached_index(ev.documents, "tiny-pooled", root=index_root, embedder=embedder, show_progress=False)
    questions = [DemoQ("d1", "What is the capital of Japan?", ["Tokyo"], 1, ["Tokyo"]),
                 DemoQ("d2", "Who discovered penicillin?", ["Alexander Fleming"], 2, ["Penicillin"])]

    def correctness(q, pred, idx):
        docs = {idx.chunk(c).doc_id for c in pred.context}
        return {"correct": float(pred.answer in q.answers),
                "gold_doc_recall": sum(d in docs for d in q.gold_doc_ids) / len(q.gold_doc_ids)}

    built, printed = [], []

    def factory(run, idx):
        built.append(run.spec)
        return build_program(run.spec, idx, k=2)

    with pytest.raises(InputError) as err:
        QAEvaluator(questions, ["basic"])
    assert err.value.argument == "index"
    settings = EvalSettings(judge=False, scorers=[correctness], extra_metrics=("correct", "gold_doc_recall"),
                            primary_metric="correct", show_progress=False, plots=False)
    evaluator = QAEvaluator(questions, ["basic"], index=index, settings=settings, program_factory=factory,
                            on_row=printed.append)
    with scripted():
        summary = evaluator()  # no output folder: nothing written, nothing resumed
    assert built == ["basic"] and [r["id"] for r in printed] == ["d1", "d2"]
    basic = summary["strategies"]["basic"]
    assert summary["primary_metric"] == "correct" and basic["correct"] == 0.5
    assert basic["gold_doc_recall"] == pytest.approx(sum(r["gold_doc_recall"] for r in evaluator.rows) / 2)
    assert {k: v["correct"] for k, v in summary["by_level"]["basic"].items()} == {"1": 1.0, "2": 0.0}
    assert evaluator.metrics(summary)["basic/correct"] == 0.5
    assert "| strategy | n | EM | F1 | LLM match | correct | gold_doc_recall | Δ correct |" in (
        evaluator.format_report(summary))
    assert summary["meta"]["set"] == "questions" and summary["meta"]["index"] == str(index.path)
