"""compile() and compile_step() with scripted LMs: they run in seconds, change the saved prompts or
demos, score before and after on a held-out part, and stay within their LM-call estimates."""

from __future__ import annotations

import json

import dspy
import pytest

from ragnet.errors import InputError
from ragnet.eval.metrics.program_metrics import program_metric
from ragnet.optimize.cases import qa_examples, sufficiency_cases
from ragnet.optimize.compile import best_capped_candidate, compile, expected_lm_calls, lm_calls_per_example
from ragnet.optimize.step_metrics import verdict_metric
from ragnet.optimize.steps import SufficiencyStep, compile_step, install_step
from ragnet.programs import BasicRAG, CombinedRAG, IterativeRAG, LMSteps, Loop, OneShotRAG, Reflection, ReflectiveRAG
from ragnet.programs.persist import save_program
from tests.optimize.conftest import FakeIndex, OptimizeLM, demo_dependent_sufficiency

STOCK = SufficiencyStep().predict.signature.instructions


def _state(program, path):
    save_program(program, path)
    return json.loads(path.read_text())


def test_bootstrap_step_compile_changes_only_the_step_and_improves_it(records, scripted, tmp_path):
    program = IterativeRAG(FakeIndex(records))
    before_state = _state(program, tmp_path / "before.json")
    cases = sufficiency_cases(records, paragraphs=4)
    with scripted(OptimizeLM(sufficiency=demo_dependent_sufficiency)):
        result = compile_step(program, "sufficiency", cases, optimizer="bootstrap", effort="light",
                              val_fraction=0.4, progress=False, log=lambda m: None)
    after_state = _state(result.program, tmp_path / "after.json")

    assert result.program is program and result.step == "sufficiency"
    assert before_state["sufficiency.predict"]["demos"] == []
    demos = after_state["sufficiency.predict"]["demos"]
    assert 2 <= len(demos) <= 4 and all(d["verdict"] in ("Sufficient", "Refine") for d in demos)
    for name in ("answer.predict", "rewrite.predict", "contextualize.predict", "delete.predict"):  # other steps untouched
        assert after_state[name] == before_state[name]
    # scored on the held-out questions only: no labelled demo comes from them
    val_questions = {cid.split(":")[0] for cid in result.val_ids}
    assert {d["qid"] for d in demos if "qid" in d}.isdisjoint(val_questions)
    assert not set(result.train_ids) & set(result.val_ids)
    assert (result.before, result.after) == (0.5, 1.0)
    assert result.breakdown("verdict")["Refine"] == {"n": 4, "before": 0.0, "after": 1.0}
    assert 0 < result.usage["lm_calls"] <= result.expected.total
    table = result.table("verdict")
    assert "0.500" in table and "1.000" in table and "+0.500" in table and "verdict=Refine" in table
    assert "warning" not in table
    change = result.change()  # paired per validation example: 4 Refine cases gained, nothing lost
    assert change["n"] == len(result.val_ids) and change["mean"] == 0.5 and change["low"] > 0
    assert change["resolvable_n"] is None and "95% interval" in table and "cannot tell" not in table


def test_a_compile_that_scores_worse_says_so(scripted):
    """A reader that copies its demos' style answers wrong once it has demos: the table warns."""
    import re

    from ragnet.optimize.cases import answer_cases
    from tests.optimize.conftest import _n_demos, make_records

    def worse_with_demos(prompt, n, request=None):
        number = int(re.findall(r"fact two of q(\d+)", prompt)[-1])
        return {"answer": f"answer {number}" if _n_demos(request) == 0 else "yes", "evidence_ids": ["c1"]}

    worse_with_demos.wants_request = True  # OptimizeLM then passes the request, whose messages hold the demos

    records = make_records(12)
    with scripted(OptimizeLM(answer=worse_with_demos)):
        result = compile_step(BasicRAG(FakeIndex(records)), "answer", answer_cases(records[:8]),
                              valset=answer_cases(records[8:]), progress=False, log=lambda m: None)
    assert result.before == 1.0 and result.after == 0.0
    assert "warning: the compiled program scores 1.000 below the uncompiled one" in result.table()


def _worst_with_one_demo(prompt, n, request=None):
    """A reader right with no demos on even questions, right on all with two or more, wrong with one."""
    import re

    from tests.optimize.conftest import _n_demos

    number = int(re.findall(r"fact two of q(\d+)", prompt)[-1])
    shown = _n_demos(request)
    right = shown >= 2 or (shown == 0 and number % 2 == 0)
    return {"answer": f"answer {number}" if right else "yes", "evidence_ids": ["c1"]}


_worst_with_one_demo.wants_request = True


def test_random_search_chooses_among_capped_candidates(scripted):
    """Uncapped, the search's winner has several demos; capped to one it answers wrong. The choice is
    made after capping, so the demo-free candidate wins and the compile costs nothing."""
    from ragnet.optimize.cases import answer_cases
    from ragnet.optimize.demos import demo_tokens
    from tests.optimize.conftest import make_records

    records = make_records(16)
    step = BasicRAG(FakeIndex(records))
    with scripted(OptimizeLM(answer=_worst_with_one_demo)):
        uncapped = compile_step(step.deepcopy(), "answer", answer_cases(records[:10]), valset=answer_cases(records[10:]),
                                effort="medium", progress=False, log=lambda m: None)
        demos = uncapped.program.answer.predict.demos
        assert len(demos) >= 2 and uncapped.after == 1.0  # what the search picks without a cap
        cap = max(demo_tokens(uncapped.program.answer.predict))  # room for one demo, not two
        assert cap < sum(sorted(demo_tokens(uncapped.program.answer.predict))[:2])
        logs: list[str] = []
        capped = compile_step(step.deepcopy(), "answer", answer_cases(records[:10]), valset=answer_cases(records[10:]),
                              effort="medium", demo_tokens=cap, progress=False, log=logs.append)
    assert capped.program.answer.predict.demos == []
    assert capped.before == capped.after == 0.5  # the old order (search, then cap) gave 0.0 here
    assert any("those the cap shortens are scored again" in line for line in logs)
    import re

    chose = [re.search(r"scoring ([\d.]+) on 5 search examples once capped \(demo-free: ([\d.]+)\)", line)
             for line in logs]
    assert [m.groups() for m in chose if m] == [("60.0", "60.0")]  # 3 of the 5 inner examples are even
    assert 0 < capped.usage["lm_calls"] <= capped.expected.total
    assert "warning" not in capped.table()


def test_best_capped_candidate_rescores_only_what_the_cap_shortens():
    import dspy

    from ragnet.signatures import AnswerStep

    def with_demos(*lengths):
        step = AnswerStep()
        step.predict.demos = [dspy.Example(question="Who?", context="[c1] A: " + "word " * n, answer="A") for n in lengths]
        return step

    candidates = [{"score": 50.0, "program": with_demos()}, {"score": 90.0, "program": with_demos(200, 200)},
                  {"score": 70.0, "program": with_demos(10)}]
    scored: list[int] = []

    def score(program):
        scored.append(len(program.predict.demos))
        return 40.0

    program, report, value = best_capped_candidate(candidates, 300, score)
    assert scored == [1]  # only the candidate the cap cut (two demos to one) was run again
    assert value == 70.0 and len(program.predict.demos) == 1 and report["predict"]["dropped"] == 0
    assert program is not candidates[2]["program"] and len(candidates[1]["program"].predict.demos) == 2
    with pytest.raises(InputError):
        best_capped_candidate([], 300, score)


def test_compile_does_not_modify_its_input_program(records, scripted):
    step = SufficiencyStep()
    with scripted(OptimizeLM(sufficiency=demo_dependent_sufficiency)):
        result = compile(step, sufficiency_cases(records), verdict_metric(), progress=False, log=lambda m: None)
    assert step.predict.demos == [] and result.program.predict.demos


def test_mipro_compiles_a_step_with_proposed_instructions_and_demos(records, scripted):
    import optuna  # noqa: F401  MIPROv2 needs it; in the [test] extra, so a missing one is a broken install
    with scripted(OptimizeLM(sufficiency=demo_dependent_sufficiency)) as lm:
        result = compile_step(IterativeRAG(FakeIndex(records)), "sufficiency", sufficiency_cases(records),
                              optimizer="mipro", effort="light", val_fraction=0.4, progress=False, log=lambda m: None)
    assert lm.proposals > 0  # the prompt model was asked for instructions
    compiled = result.program.sufficiency.predict
    assert compiled.demos or compiled.signature.instructions != STOCK
    assert result.after == 1.0 and result.before == 0.5
    assert result.usage["lm_calls"] <= result.expected.total


def test_gepa_evolves_the_instruction_from_feedback(records, scripted):
    with scripted(OptimizeLM(sufficiency=demo_dependent_sufficiency)) as lm:
        result = compile_step(ReflectiveRAG(FakeIndex(records)), "sufficiency", sufficiency_cases(records),
                              optimizer="gepa", effort="light", val_fraction=0.4, progress=False, log=lambda m: None)
    assert result.program.sufficiency.predict.signature.instructions.startswith("Scripted instruction")
    reflections = [p for s, p in lm.calls if s == "other"]
    assert reflections and "Refine" in reflections[0]  # the metric's feedback reached the reflection LM
    assert (result.before, result.after) == (0.5, 1.0)
    assert result.usage["lm_calls"] <= result.expected.total


def test_program_level_compile_of_basic_rag_on_answer_f1(records, scripted):
    def answer(prompt, n, request):
        # Right on even-numbered questions; with demos in the prompt, right on all of them.
        users = [m for m in request.messages if m.role == "user"]
        number = int(users[-1].text.split("fact two of q")[1].split("?")[0])
        if len(users) < 2 and number % 2:
            return {"answer": "no idea", "evidence_ids": ["c1"]}
        return {"answer": f"answer {number}", "evidence_ids": ["c1"]}

    answer.wants_request = True
    examples = qa_examples(records)
    with scripted(OptimizeLM(answer=answer)):
        result = compile(BasicRAG(FakeIndex(records), k=2), examples, program_metric("f1"), val_fraction=0.3,
                         progress=False, log=lambda m: None)
    assert 0 < result.before < 1.0 and result.after == 1.0
    assert result.program.answer.predict.demos and all("context" in d for d in result.program.answer.predict.demos[:2])
    assert result.expected.evaluation == 2 * len(result.val_ids)


def test_expected_lm_calls_by_hand():
    assert expected_lm_calls("bootstrap", "light", n_train=24, n_val=40).to_dict() == {
        "total": 104, "evaluation": 80, "compile": 24, "proposer": 0,
        "detail": "bootstrapping stops after 2 successful traces"}
    # 7 candidates scored on 5 inner-validation examples, 5 bootstrapped from the other 5
    medium = expected_lm_calls("bootstrap", "medium", n_train=10, n_val=5, calls_per_example=2)
    assert (medium.evaluation, medium.compile) == (20, (7 * 5 + 5 * 5) * 2)
    capped = expected_lm_calls("bootstrap", "medium", n_train=10, n_val=5, calls_per_example=2, capped=True)
    assert capped.compile == medium.compile + 6 * 5 * 2  # the 6 candidates with demos, scored again
    for optimizer in ("mipro", "gepa"):
        light, med, heavy = (expected_lm_calls(optimizer, b, n_train=40, n_val=10).total
                             for b in ("light", "medium", "heavy"))
        assert 0 < light < med < heavy
    assert expected_lm_calls("bootstrap", "light", n_train=4, n_val=2, evaluate=False).evaluation == 0
    assert "expected LM calls: up to 104" in str(expected_lm_calls("bootstrap", "light", n_train=24, n_val=40))
    with pytest.raises(InputError) as err:
        expected_lm_calls("sgd", "light", n_train=1, n_val=1)
    assert err.value.argument == "optimizer"
    with pytest.raises(InputError) as err:
        expected_lm_calls("gepa", "huge", n_train=1, n_val=1)
    assert err.value.argument == "effort"


def test_lm_calls_per_example_follows_the_switches(records):
    index = FakeIndex(records)
    assert lm_calls_per_example(BasicRAG(index)) == 1
    assert lm_calls_per_example(OneShotRAG(index)) == 1
    assert lm_calls_per_example(OneShotRAG(index, lm_steps=LMSteps(crop=True, max_crops=5, filter=True))) == 7
    assert lm_calls_per_example(IterativeRAG(index, loop=Loop(max_turns=2))) == 2 * 4 + 1
    assert lm_calls_per_example(CombinedRAG(index, loop=Loop(max_turns=3))) == 3 * 3 + 1
    assert lm_calls_per_example(ReflectiveRAG(index, reflection=Reflection(max_reflections=2))) == 3 + 2 + 1


def test_bad_arguments_are_refused_clearly(records, scripted):
    cases = sufficiency_cases(records)
    with scripted(OptimizeLM()):
        with pytest.raises(InputError, match="choose from bootstrap, mipro, gepa"):
            compile(SufficiencyStep(), cases, verdict_metric(), optimizer="adam")
        with pytest.raises(InputError, match="Metric"):
            compile(SufficiencyStep(), cases, lambda ex, pred: 1.0)
        with pytest.raises(InputError) as err:
            compile_step(BasicRAG(FakeIndex(records)), "sufficiency", cases)
        assert "BasicRAG has no sufficiency step" in str(err.value)
        with pytest.raises(InputError, match="unknown step"):
            compile_step(IterativeRAG(FakeIndex(records)), "answerx", cases)
    with dspy.context(lm=None):
        with pytest.raises(InputError, match="no LM configured"):
            compile(SufficiencyStep(), cases, verdict_metric())


def test_install_step_needs_a_program_with_that_step(records):
    with pytest.raises(InputError, match="programs with it: oneshot"):
        install_step(IterativeRAG(FakeIndex(records)), "crop", SufficiencyStep())


def test_a_change_within_noise_says_how_many_examples_would_resolve_it():
    """12 validation examples, 3 better and 1 worse: +0.167 is not distinguishable from zero."""
    from ragnet.optimize.compile import CallEstimate, CompileResult

    before = [0, 0, 0, 1] + [1] * 4 + [0] * 4
    after = [1, 1, 1, 0] + [1] * 4 + [0] * 4
    result = CompileResult(program=None, metric="f1", optimizer="bootstrap", effort="light", seed=0,
                           train_ids=["t"], val_ids=[f"v{i}" for i in range(12)], before=5 / 12, after=7 / 12,
                           expected=CallEstimate(0, 0, 0, ""), usage={}, compile_usage={}, seconds=1.0,
                           before_results=[(None, None, b) for b in before],
                           after_results=[(None, None, a) for a in after])
    change = result.change()
    assert change["low"] < 0 < change["high"] and change["p_value"] > 0.05
    assert change["resolvable_n"] > 12
    table = result.table()
    assert f"note: 12 validation examples cannot tell this change from noise; about {change['resolvable_n']}" in table
    assert result.to_dict()["change"] == change
