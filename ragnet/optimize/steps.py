"""Step-level compilation: compile one LM step of a program on its own cases and metric.

Compiling a whole pipeline runs every step of every program call for every candidate prompt,
which is expensive on a small local model. A step can be compiled alone instead: each LM step
is already a one-predictor ``dspy.Module`` (``ragnet.signatures.Step``: run exactly as programs
run it, with its retries, repairs and fallback), so a copy of the program's step is compiled
against the step's metric on cases built from benchmark questions, and the compiled predictor
(demos and instructions) is then installed into the program's step. Saving the program saves
the compiled step.

Steps:

* ``sufficiency``: AssessSufficiency (``IterativeRAG``, ``ReflectiveRAG``, ``CombinedRAG``),
  cases from :func:`ragnet.optimize.cases.sufficiency_cases`, metric: verdict accuracy;
* ``crop``: CropChunk (``OneShotRAG``), cases from :func:`ragnet.optimize.cases.crop_cases`,
  metric: gold-sentence F2;
* ``answer``: GenerateAnswer (every program), cases from
  :func:`ragnet.optimize.cases.answer_cases` (short contexts of gold sentences and
  distractors), metric: answer F1. Its demos teach a small reader the short-answer form; they are
  capped at 300 prompt tokens (``StepSpec.demo_tokens``), since the answer prompt is the reader's
  whole budget;
* ``rewrite``: the follow-up query (``IterativeRAG``, ``ReflectiveRAG``, ``CombinedRAG``; RewriteQuery
  or the one-query NextQuery, whichever the program holds), cases from
  :func:`ragnet.optimize.cases.rewrite_cases` (questions whose one-shot context lacks a gold
  document, labelled with its title), metric: hop recall by a real search
  (:func:`ragnet.optimize.step_metrics.hop_metric`). Its cases and metric need the pooled index
  (``StepSpec.needs_index``);
* ``condense``: the follow-up made standalone (:class:`ragnet.programs.conversation.FollowUp`, any
  strategy), cases from a follow-ups file (:func:`ragnet.optimize.cases.load_followups`), metric:
  :func:`ragnet.optimize.step_metrics.condense_score`. The saved file is the ``FollowUp`` program.

Example:
    >>> from ragnet.programs import IterativeRAG
    >>> prog = IterativeRAG(index)
    >>> sorted(prog.steps())                       # what --step can name for this program
    ['answer', 'contextualize', 'delete', 'rewrite', 'sufficiency']
    >>> type(step_module("sufficiency", prog)).__name__   # compiled alone, then installed with install_step
    'SufficiencyStep'
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dspy

from ragnet.errors import InputError
from ragnet.eval.metrics.program_metrics import Metric
from ragnet.optimize.cases import answer_cases, condense_cases, crop_cases, rewrite_cases, sufficiency_cases
from ragnet.optimize.step_metrics import condense_metric, crop_metric, hop_metric, verdict_metric
from ragnet.signatures import AnswerStep, CondenseStep, CropStep, RewriteStep, Step, SufficiencyStep

__all__ = ["STEPS", "AnswerStep", "CropStep", "StepSpec", "SufficiencyStep", "answer_metric", "compile_step",
           "install_step", "step_module"]


def answer_metric() -> Metric:
    """Answer step: token F1 of the answer against the gold answers (a demo needs F1 >= 0.8)."""
    from ragnet.eval.metrics.program_metrics import program_metric

    metric = program_metric("f1")
    return Metric("answer_f1", metric.score, threshold=metric.threshold, feedback=metric.feedback)


@dataclass(frozen=True)
class StepSpec:
    """How one step is compiled: its module, the programs that may have it (``program.steps()[name]``;
    a router has the steps of its routes, and compiling one its routes lack is refused by name),
    its metric and case builder. With ``needs_index`` the case builder and the metric take the
    pooled index (``index=``)."""

    name: str
    strategies: tuple[str, ...]
    module: Callable[[], dspy.Module]
    metric: Callable[[], Metric]
    cases: Callable[..., list[dspy.Example]]
    label: str | None = None  # the case field holding a categorical gold label, for per-label breakdowns
    demo_tokens: int | None = None  # default cap on the compiled step's demo tokens (None: no cap)
    needs_index: bool = False


STEPS: dict[str, StepSpec] = {
    "sufficiency": StepSpec("sufficiency", ("iterative", "reflective", "combined", "router"), SufficiencyStep,
                            verdict_metric, sufficiency_cases, label="verdict"),
    "crop": StepSpec("crop", ("oneshot", "router"), CropStep, crop_metric, crop_cases),
    # The answer prompt is the reader's budget (PromptBudget counts demos in it): uncapped, the
    # demos crowd out evidence. 300 tokens keeps about two compact demos.
    "answer": StepSpec("answer", ("basic", "oneshot", "iterative", "reflective", "combined", "router"), AnswerStep,
                       answer_metric, answer_cases, demo_tokens=300),
    "rewrite": StepSpec("rewrite", ("iterative", "reflective", "combined", "router"), RewriteStep, hop_metric, rewrite_cases,
                        needs_index=True),
    # A follow-up made standalone before any program runs (ragnet.programs.conversation.FollowUp):
    # cases from a follow-ups file, every strategy.
    "condense": StepSpec("condense", ("basic", "oneshot", "iterative", "reflective", "combined", "router"),
                         CondenseStep, condense_metric, condense_cases),
}


def _spec(step: str) -> StepSpec:
    if step not in STEPS:
        raise InputError(f"unknown step {step!r}; choose from {', '.join(STEPS)}", argument="step")
    return STEPS[step]


def _target(program: Any, spec: StepSpec) -> Step:
    steps = program.steps() if callable(getattr(program, "steps", None)) else {}
    step = steps.get(spec.name)
    if not isinstance(step, Step):
        raise InputError(
            f"{type(program).__name__} has no {spec.name} step; programs with it: {', '.join(spec.strategies)}",
            argument="step",
        )
    return step


def step_module(step: str, program: Any = None) -> Step:
    """The step module for ``step``, on; with ``program``, a copy of the program's step (its
    current instructions and retries; demos are rebuilt by the optimizer)."""
    spec = _spec(step)
    if program is None:
        return spec.module()
    module = copy.deepcopy(_target(program, spec))
    module.enabled = True
    module.predict.demos = []
    return module


def install_step(program: Any, step: str, compiled: Step) -> Any:
    """Put ``compiled``'s predictor (demos, instructions, settings) into ``program``'s step; returns it."""
    spec = _spec(step)
    _target(program, spec)
    program.set_step(spec.name, compiled)
    return program


def compile_step(program: Any, step: str, trainset: list, metric: Metric | None = None, **kwargs: Any):
    """Compile one step of ``program`` on step cases and install the result into ``program``.

    Args:
        program: a ragnet program that has the step (see :data:`STEPS`).
        step: ``"sufficiency"`` or ``"crop"``.
        trainset: step cases (e.g. from :func:`ragnet.optimize.cases.sufficiency_cases`); the
            validation part is split off them unless ``valset`` is given.
        metric: the step metric (default: the step's own).
        **kwargs: passed to :func:`ragnet.optimize.compile.compile` (optimizer, effort, valset, ...).

    Returns:
        The :class:`ragnet.optimize.compile.CompileResult`; its ``program`` is ``program`` with the
        compiled step installed, ``step_program`` the compiled one-step module.
    """
    from ragnet.optimize.compile import compile as compile_program

    spec = _spec(step)
    student = step_module(step, program)
    result = compile_program(student, trainset, metric or spec.metric(), **kwargs)
    result.step = step
    result.step_program = result.program
    result.program = install_step(program, step, result.step_program)
    return result
