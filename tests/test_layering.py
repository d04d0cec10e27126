"""Import layering, checked statically over every module of ``ragnet`` (function-level imports
included): no module imports a module that imports it back; the library never imports the
command line (``ragnet.cli``); ``ragnet.eval`` never imports ``ragnet.optimize`` (optimize builds on
eval's metrics, not the other way round)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragnet"


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


def test_eval_does_not_import_optimize():
    graph = _graph()
    offenders = {m: sorted(t for t in deps if t.startswith("ragnet.optimize"))
                 for m, deps in graph.items() if m.startswith("ragnet.eval")}
    assert {m: t for m, t in offenders.items() if t} == {}


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


def test_the_check_sees_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _reaches(graph, "b", "a") and not _reaches(graph, "a", "d")
