"""Cells and markdown tables shared by every evaluation report.

Example:
    >>> percent(0.4567), percent(None), percent(0.05, sign=True), percent(0.9, 0, symbol=True)
    ('45.7', '–', '+5.0', '90%')
    >>> number(12345.678), number(0.5, 3)
    ('12,345.7', '0.500')
    >>> print("\\n".join(markdown_table(["a", "b"], [["1", ""]])))
    | a | b |
    |---|---|
    | 1 |  |
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DASH", "markdown_table", "number", "percent"]

#: What an undefined figure reads as.
DASH = "–"


def percent(x: float | None, digits: int = 1, *, sign: bool = False, symbol: bool = False,
            missing: str = DASH) -> str:
    """A share as percent: ``100 * x`` with ``digits`` decimals, ``+`` for gains when ``sign``
    (percentage points), a ``%`` sign when ``symbol``; ``missing`` for None."""
    if x is None:
        return missing
    return f"{100 * x:{'+' if sign else ''}.{digits}f}" + ("%" if symbol else "")


def number(x: float | None, digits: int = 1, *, missing: str = DASH) -> str:
    """A figure with thousands separators and ``digits`` decimals; ``missing`` for None."""
    return missing if x is None else f"{x:,.{digits}f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a markdown table (cells as given, already formatted)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines
