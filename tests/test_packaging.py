"""What ``pip install .`` puts in the wheel: the ``ragnet`` packages, found as pyproject.toml's
``[tool.setuptools.packages.find]`` finds them, their package data (``report.html``'s template),
and none of the lab (a clone's top-level ``benchmarks/`` folder: studies and research benchmarks,
run as ``python -m benchmarks.NAME``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What left ``ragnet/bench`` for ``benchmarks/`` (issue 48): it must not come back into the wheel.
MOVED = ("laziness", "laziness_evaluator", "sufficiency_step", "studies")
#: What ``ragnet bench`` runs on a user's install: it stays in the wheel.
KEPT = ("ragnet.bench.core", "ragnet.bench.index_timings", "ragnet.bench.questions", "ragnet.bench.scale",
        "ragnet.bench.serve_load", "ragnet.bench.update")


def _wheel_modules() -> set[str]:
    """Every module of the packages setuptools finds with pyproject.toml's settings (the defaults
    of ``packages.find`` included: ``where = ["."]``, namespaces on)."""
    setuptools = pytest.importorskip("setuptools")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    finder = setuptools.find_namespace_packages if find.get("namespaces", True) else setuptools.find_packages
    modules = set()
    for where in find.get("where", ["."]):
        base = ROOT / where
        for package in finder(where=str(base), include=find.get("include", ("*",)), exclude=find.get("exclude", ())):
            modules.add(package)
            folder = base.joinpath(*package.split("."))
            modules.update(f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__")
    return modules


def test_the_wheel_carries_no_benchmark_module():
    modules = _wheel_modules()
    assert (ROOT / "benchmarks" / "__init__.py").is_file()  # the lab is there to be left out
    assert sorted(m for m in modules if m == "benchmarks" or m.startswith("benchmarks.")) == []
    lab = {p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".") for p in (ROOT / "benchmarks").rglob("*.py")}
    assert lab and not lab & modules
    gone = sorted(m for m in modules for name in MOVED
                  if m == f"ragnet.bench.{name}" or m.startswith(f"ragnet.bench.{name}."))
    assert gone == []


def test_the_wheel_carries_the_whole_library_and_the_users_timings():
    modules = _wheel_modules()
    library = set()
    for path in (ROOT / "ragnet").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        library.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert library - modules == set()
    assert set(KEPT) <= modules and "ragnet.cli.bench" in modules


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory) -> set[str]:
    """The files of the wheel setuptools builds from a copy of the package (what ``pip install .`` installs)."""
    pytest.importorskip("setuptools")
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "ragnet", source / "ragnet", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-c", "from setuptools import build_meta; build_meta.build_wheel('dist')"],
                   cwd=source, check=True, capture_output=True)
    (wheel,) = (source / "dist").glob("*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_the_wheel_carries_the_report_template_and_every_data_file_of_the_package(wheel_files):
    assert "ragnet/eval/report/html_report.j2" in wheel_files
    data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ragnet").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    assert data and data <= wheel_files
    library = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ragnet").rglob("*.py") if "__pycache__" not in p.parts}
    assert library <= wheel_files and not [f for f in wheel_files if f.startswith("benchmarks/")]
