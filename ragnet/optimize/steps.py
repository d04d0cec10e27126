"""Step-level compilation: compile one LM step of a program on its own cases and metric.

Compiling a whole pipeline runs every step of every program call for every candidate prompt,
which is expensive on a small local model. A step can be compiled alone instead: the step's
predictor is wrapped in a one-predictor ``dspy.Module`` (run exactly as programs run it,
through the ``run_*`` helper with its retries, repairs and fallback), compiled against the
step's metric on cases built from benchmark questions, and the compiled predictor (demos and
instructions) is then installed into the program under the attribute the program uses. Saving
the program saves the compiled step.

Steps:

* ``sufficiency``: AssessSufficiency (``IterativeRAG``, ``ReflectiveRAG``, ``CombinedRAG``,
  attribute ``assess``), cases from :func:`ragnet.optimize.cases.sufficiency_cases`, metric:
  verdict accuracy;
* ``crop``: CropChunk (``OneShotRAG``, attribute ``cropper``), cases from
  :func:`ragnet.optimize.cases.crop_cases`, metric: gold-sentence F2;
* ``answer``: GenerateAnswer (every program, attribute ``answer``), cases from
  :func:`ragnet.optimize.cases.answer_cases` (short contexts of gold sentences and
  distractors), metric: answer F1. Its demos teach a small reader the short-answer form.

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
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import dspy

from ragnet.errors import InputError
from ragnet.optimize.cases import answer_cases, crop_cases, sufficiency_cases
from ragnet.optimize.metrics import Metric, crop_metric, verdict_metric
from ragnet.programs.base import step_predictor
from ragnet.signatures import (
    AssessSufficiency,
    CropChunk,
    GenerateAnswer,
    answer_default,
    answer_validator,
    run_crop,
    run_step,
    run_sufficiency,
)

__all__ = ["STEPS", "AnswerStep", "CropStep", "StepSpec", "SufficiencyStep", "answer_metric", "compile_step",
           "install_step", "step_module"]


class SufficiencyStep(dspy.Module):
    """AssessSufficiency alone, run as the programs run it (``run_sufficiency``).

    Example:
        >>> [name for name, _ in SufficiencyStep().named_predictors()]
        ['assess']
    """

    def __init__(self, retries: int = 1) -> None:
        super().__init__()
        self.retries = retries
        self.assess = step_predictor(AssessSufficiency, "sufficiency")

    def forward(self, question: str, context: str) -> dspy.Prediction:
        return run_sufficiency(self.assess, question, context, trace=None, retries=self.retries)


class CropStep(dspy.Module):
    """CropChunk alone, run as OneShotRAG runs it (``run_crop``, verbatim-checked).

    Example:
        >>> [name for name, _ in CropStep().named_predictors()]
        ['cropper']
    """

    def __init__(self, retries: int = 1) -> None:
        super().__init__()
        self.retries = retries
        self.cropper = step_predictor(CropChunk, "crop")

    def forward(self, question: str, title: str, chunk: str) -> dspy.Prediction:
        return run_crop(self.cropper, question, SimpleNamespace(title=title, text=chunk), trace=None,
                        retries=self.retries)


class AnswerStep(dspy.Module):
    """GenerateAnswer alone, on a ready context, run through ``run_step`` as programs run it
    (retry, lenient parse, a non-empty answer required).

    Example:
        >>> [name for name, _ in AnswerStep().named_predictors()]
        ['answer']
    """

    def __init__(self, retries: int = 1) -> None:
        super().__init__()
        self.retries = retries
        self.answer = step_predictor(GenerateAnswer, "answer")

    def forward(self, question: str, context: str) -> dspy.Prediction:
        id_map = {m: m for m in re.findall(r"^\[(c\d+)\]", context, re.M)}
        return run_step(self.answer, step="answer", trace=None, default=answer_default(),
                        validate=answer_validator(id_map), retries=self.retries, question=question, context=context)


def answer_metric() -> Metric:
    """Answer step: token F1 of the answer against the gold answers (a demo needs F1 >= 0.8)."""
    from ragnet.eval.program_metrics import program_metric

    metric = program_metric("f1")
    return Metric("answer_f1", metric.score, threshold=metric.threshold, feedback=metric.feedback)


@dataclass(frozen=True)
class StepSpec:
    """How one step is compiled: its module (whose predictor is the attribute ``attr``), the
    programs that have it (``program.steps()[name]``), its metric and case builder."""

    name: str
    attr: str
    strategies: tuple[str, ...]
    module: Callable[[], dspy.Module]
    metric: Callable[[], Metric]
    cases: Callable[..., list[dspy.Example]]
    label: str | None = None  # the case field holding a categorical gold label, for per-label breakdowns


STEPS: dict[str, StepSpec] = {
    "sufficiency": StepSpec("sufficiency", "assess", ("iterative", "reflective", "combined"), SufficiencyStep,
                            verdict_metric, sufficiency_cases, label="verdict"),
    "crop": StepSpec("crop", "cropper", ("oneshot",), CropStep, crop_metric, crop_cases),
    "answer": StepSpec("answer", "answer", ("basic", "oneshot", "iterative", "reflective", "combined"), AnswerStep,
                       answer_metric, answer_cases),
}


def _spec(step: str) -> StepSpec:
    if step not in STEPS:
        raise InputError(f"unknown step {step!r}; choose from {', '.join(STEPS)}", argument="step")
    return STEPS[step]


def _target(program: Any, spec: StepSpec) -> dspy.Predict:
    steps = program.steps() if callable(getattr(program, "steps", None)) else {}
    predictor = steps.get(spec.name)
    if not isinstance(predictor, dspy.Predict):
        raise InputError(
            f"{type(program).__name__} has no {spec.name} step; programs with it: {', '.join(spec.strategies)}",
            argument="step",
        )
    return predictor


def step_module(step: str, program: Any = None) -> dspy.Module:
    """The one-predictor module for ``step``; with ``program``, it starts from the program's
    current instructions for that step (demos are rebuilt by the optimizer)."""
    spec = _spec(step)
    module = spec.module()
    if program is not None:
        source = _target(program, spec)
        setattr(module, spec.attr, copy.deepcopy(source))
        getattr(module, spec.attr).demos = []
        module.retries = getattr(program, "retries", module.retries)
    return module


def install_step(program: Any, step: str, compiled: dspy.Module) -> Any:
    """Put ``compiled``'s predictor (demos, instructions, settings) into ``program``; returns it."""
    spec = _spec(step)
    _target(program, spec)
    program.set_step(spec.name, copy.deepcopy(getattr(compiled, spec.attr)))
    return program


def compile_step(program: Any, step: str, trainset: list, metric: Metric | None = None, **kwargs: Any):
    """Compile one step of ``program`` on step cases and install the result into ``program``.

    Args:
        program: a ragnet program that has the step (see :data:`STEPS`).
        step: ``"sufficiency"`` or ``"crop"``.
        trainset: step cases (e.g. from :func:`ragnet.optimize.cases.sufficiency_cases`); the
            validation part is split off them unless ``valset`` is given.
        metric: the step metric (default: the step's own).
        **kwargs: passed to :func:`ragnet.optimize.compile.compile` (optimizer, budget, valset, ...).

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
