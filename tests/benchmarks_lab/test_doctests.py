"""The docstring examples of the lab (``benchmarks/``) run as they did inside the package:
pytest's ``--doctest-modules`` walks ``ragnet/`` and ``tests/`` only."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WITH_EXAMPLES = sorted(p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
                       for p in (ROOT / "benchmarks").rglob("*.py") if ">>>" in p.read_text(encoding="utf-8"))


def test_the_moved_modules_keep_their_examples():
    assert {"benchmarks.laziness", "benchmarks.laziness_evaluator", "benchmarks.sufficiency_step"} <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.attempted > 0 and result.failed == 0
