"""Import layering, checked statically over every module of ``ragnet`` (function-level imports
included):

* the sub-packages follow one declared order (:data:`LAYERS`): a module imports only from its
  own layer or a lower one, so the numpy core never reaches for an LM and no library package
  reaches for the command line; only the command line imports the user's timings (``ragnet.bench``);
* no module imports a module that imports it back;
* no module imports the lab: the studies and research benchmarks of a clone's top-level
  ``benchmarks/`` folder, which the wheel does not carry (``tests/test_packaging.py``).

``ragnet/__init__.py`` (the public re-exports) and ``ragnet/__main__.py`` stand outside the order;
an ``import ragnet`` inside a function (for ``ragnet.__version__``) is not checked against it.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragnet"

#: The declared order, lowest first; packages on one line are on one layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("ragnet._atomic", "ragnet._hashing", "ragnet._lazy", "ragnet._printable", "ragnet._secrets", "ragnet._text",
     "ragnet._threads", "ragnet.errors"),
    ("ragnet.core", "ragnet.corpus"),
    ("ragnet.index",),
    ("ragnet.lm", "ragnet.signatures"),
    ("ragnet.programs",),
    ("ragnet.eval",),
    ("ragnet.optimize",),
    ("ragnet.demo", "ragnet.bench", "ragnet.serve"),
    ("ragnet.cli",),
)
EXEMPT = ("ragnet", "ragnet.__main__")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _layer(module: str, layers: tuple[tuple[str, ...], ...]) -> int | None:
    """The layer of ``module``: that of the longest declared package it is in (None: undeclared)."""
    best, found = -1, None
    for level, packages in enumerate(layers):
        for package in packages:
            if (module == package or module.startswith(package + ".")) and len(package) > best:
                best, found = len(package), level
    return found


def _order_violations(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...],
                      exempt: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """``(importer, imported)`` pairs where a module imports from a higher layer."""
    out = []
    for module, deps in graph.items():
        if module in exempt:
            continue
        mine = _layer(module, layers)
        out.extend((module, dep) for dep in deps
                   if dep not in exempt and (_layer(dep, layers) or 0) > (mine or 0))
    return sorted(out)


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        for nxt in graph[node]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_every_module_has_a_declared_layer():
    undeclared = sorted(m for m in _modules() if m not in EXEMPT and _layer(m, LAYERS) is None)
    assert undeclared == []


def test_packages_import_only_from_their_own_layer_or_below():
    assert _order_violations(_graph(), LAYERS, EXEMPT) == []


def test_eval_does_not_import_optimize():
    graph = _graph()
    offenders = {m: sorted(t for t in deps if t.startswith("ragnet.optimize"))
                 for m, deps in graph.items() if m.startswith("ragnet.eval")}
    assert {m: t for m, t in offenders.items() if t} == {}


def test_no_module_imports_a_module_that_imports_it_back():
    graph = _graph()
    cycles = sorted((a, b) for a in graph for b in graph[a] if _reaches(graph, b, a))
    assert cycles == []


def test_the_library_never_imports_the_command_line():
    graph = _graph()
    offenders = {m: sorted(t for t in deps if t == "ragnet.cli" or t.startswith("ragnet.cli."))
                 for m, deps in graph.items() if not (m == "ragnet.cli" or m.startswith("ragnet.cli.")
                                                      or m == "ragnet.__main__")}
    assert {m: t for m, t in offenders.items() if t} == {}


def test_only_the_command_line_imports_the_benchmarks():
    graph = _graph()
    inside = ("ragnet.bench", "ragnet.cli")
    offenders = {m: sorted(t for t in deps if t == "ragnet.bench" or t.startswith("ragnet.bench."))
                 for m, deps in graph.items() if not any(m == p or m.startswith(p + ".") for p in inside)}
    assert {m: t for m, t in offenders.items() if t} == {}


def _lab_imports(tree: ast.AST) -> list[str]:
    """The modules of the top-level ``benchmarks`` package that ``tree`` imports: ``import``,
    ``from ... import`` (module level or inside a function) and ``importlib.import_module`` /
    ``__import__`` of a literal name."""
    def lab(name: str | None) -> bool:
        return bool(name) and (name == "benchmarks" or name.startswith("benchmarks."))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if lab(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and lab(node.module):
            found.append(node.module)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str) \
                    and lab(node.args[0].value):
                found.append(node.args[0].value)
    return found


def test_the_library_never_imports_the_lab():
    offenders = {name: found for name, path in _modules().items()
                 if (found := _lab_imports(ast.parse(path.read_text(encoding="utf-8"))))}
    assert offenders == {}


def test_the_lab_check_sees_every_kind_of_import():
    source = """
import benchmarks
import benchmarks.laziness as lz
from benchmarks.studies import parser
import benchmarks_other, json
from ragnet.bench import core

def later():
    from benchmarks import laziness
    import importlib
    importlib.import_module("benchmarks.studies.ingest_pdfs")
    __import__("benchmarks")
    importlib.import_module("ragnet.bench.core")
"""
    assert sorted(_lab_imports(ast.parse(source))) == [
        "benchmarks", "benchmarks", "benchmarks", "benchmarks.laziness", "benchmarks.studies",
        "benchmarks.studies.ingest_pdfs"]


def test_the_check_sees_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _reaches(graph, "b", "a") and not _reaches(graph, "a", "d")


def test_the_order_check_sees_an_upward_import():
    layers = (("p.base",), ("p.low", "p.side"), ("p.high",))
    graph = {
        "p": {"p.high"},                      # exempt, like ragnet/__init__.py
        "p.base": set(),
        "p.low": {"p.base", "p.side"},        # down and sideways: allowed
        "p.low.deep": {"p.high.mod"},         # a sub-module reaching up: caught
        "p.side": {"p.low.deep"},
        "p.high": {"p.low"},
        "p.high.mod": {"p.base"},
    }
    assert _order_violations(graph, layers, exempt=("p",)) == [("p.low.deep", "p.high.mod")]
    assert _layer("p.low.deep", layers) == 1 and _layer("p.lowest", layers) is None
