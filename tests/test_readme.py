"""The README stays a user's page: short, the quick start first, the Python section starting
from the entry point that answers like ``ask``, and results as one table with a link to the rest
(the measurements' narrative lives on docs/results/README.md). These limits grew back before."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_LINES = 200


def _lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


def _section(title: str) -> list[str]:
    lines = _lines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## ") and title in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1:end]


def test_the_readme_is_at_most_200_lines():
    assert len(_lines()) <= MAX_LINES, f"README.md has {len(_lines())} lines; move detail to docs/"


def test_the_quick_start_indexes_and_asks_within_the_first_60_lines():
    head = "\n".join(_lines()[:60])
    assert re.search(r"^ragnet index \S+ --out \S+", head, re.M)
    assert re.search(r"^ragnet ask \".+\" --index \S+", head, re.M)


def test_the_python_section_starts_from_ragnet_rag():
    code = [line for line in _section("Python API") if line and not line.startswith(("```", "import"))]
    first_program = next(line for line in code if "ragnet." in line and "RAG" in line)
    assert "ragnet.RAG(" in first_program


def test_results_are_one_table_and_a_link():
    section = _section("Results")
    separators = [line for line in section if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip())]
    assert len(separators) == 1, "the README's Results section holds one table"
    header = section[section.index(separators[0]) - 1].casefold()
    for column in ("benchmark", "reader", "strategy", "f1 / em", "p"):
        assert column in header
    assert any("docs/results/README.md" in line for line in section)
