"""The numpy core must import without DSPy, torch or other heavy dependencies."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("dspy", "torch", "litellm", "sentence_transformers", "transformers", "faiss", "bm25s")

PROBE = """
import importlib, json, pkgutil, sys
import ragnet.core
from ragnet.core import knapsack, noise, rules
for info in pkgutil.iter_modules(ragnet.core.__path__, "ragnet.core."):
    importlib.import_module(info.name)  # every module of the subpackage, not just the re-exported ones
knapsack.select([1.0, 2.0], [10, 20], 25)
noise.filter([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]])
rules.apply({"years": [2019]}, [("a", {"title_years": [2018]})])
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))
print(json.dumps(heavy))
"""


def test_import_ragnet_core_loads_no_heavy_dependency():
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
