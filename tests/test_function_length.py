"""No function in ragnet/ is longer than 80 lines of code (issue 48): a long function does two jobs.

Lines of code are the function's lines that are neither blank nor comments, its docstring left
out; a nested function counts toward the function that holds it, as it is read there.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ragnet"
MAX_LINES = 80


def _code_lines(source: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = source[node.lineno - 1:node.end_lineno]
    body = node.body
    docstring = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        docstring = body[0].end_lineno - body[0].lineno + 1
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#")) - docstring


def long_functions(root: Path = PACKAGE, limit: int = MAX_LINES) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        source = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(source, node)
                if n > limit:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {n} lines")
    return out


def test_no_function_is_over_80_lines_of_code():
    assert long_functions() == []


def test_the_count_leaves_out_docstrings_comments_and_blank_lines(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(81))
    (tmp_path / "long.py").write_text(f'def f():\n    """Doc.\n\n    More.\n    """\n    # a comment\n\n{body}\n')
    (tmp_path / "short.py").write_text('def g():\n    """Doc."""\n' + "\n".join(f"    # c{i}" for i in range(90))
                                       + "\n    return 1\n")
    assert [line.split(" ")[1] for line in long_functions(tmp_path)] == ["f:"]
