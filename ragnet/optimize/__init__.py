"""Prompt compilation against dev sets (BootstrapFewShot, MIPROv2, GEPA), and save/load.

Modules:

* :mod:`ragnet.optimize.compile`: ``compile(program, trainset, metric, optimizer=...)`` with
  before/after scores on a held-out part, and ``expected_lm_calls``;
* :mod:`ragnet.optimize.steps`: compile one step (``sufficiency``, ``crop``) and install it;
* :mod:`ragnet.optimize.cases`: examples and step cases from benchmark questions;
* :mod:`ragnet.optimize.step_metrics`: the step metrics (the program metrics, :class:`Metric` and
  :func:`program_metric`, are ``ragnet.eval``'s and re-exported here);
* :mod:`ragnet.optimize.split`: seeded, deterministic train/validation splits;
* :mod:`ragnet.optimize.run`: ``run_optimize(spec, questions=DevQuestions(...), settings=CompileSettings(...))``,
  what ``ragnet optimize`` runs;
* save/load (``save_program``, ``load_program``, ``read_header``) live in
  :mod:`ragnet.programs.persist` (evaluation loads programs too) and are re-exported here.

Names below load their module on first use.

Example:
    >>> from ragnet.optimize import train_val_split
    >>> train_val_split(["a", "b", "c", "d"], val_fraction=0.5, seed=0)[1]
    ['c', 'a']
"""

from __future__ import annotations

from ragnet._lazy import lazy_getattr

_LAZY = {
    "save_program": "ragnet.programs.persist",
    "load_program": "ragnet.programs.persist",
    "read_header": "ragnet.programs.persist",
    "train_val_split": "ragnet.optimize.split",
    "split_examples": "ragnet.optimize.compile",
    "expected_lm_calls": "ragnet.optimize.compile",
    "CompileResult": "ragnet.optimize.compile",
    "compile_step": "ragnet.optimize.steps",
    "install_step": "ragnet.optimize.steps",
    "STEPS": "ragnet.optimize.steps",
    "Metric": "ragnet.eval.metrics.program_metrics",
    "program_metric": "ragnet.eval.metrics.program_metrics",
    "qa_examples": "ragnet.optimize.cases",
    "sufficiency_cases": "ragnet.optimize.cases",
    "crop_cases": "ragnet.optimize.cases",
    "run_optimize": "ragnet.optimize.run",
    "DevQuestions": "ragnet.optimize.run",
    "CompileSettings": "ragnet.optimize.run",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(globals(), _LAZY)
