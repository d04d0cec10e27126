"""The columns of a ``ragnet eval`` report: strategy specs expanded over budgets, with the
compiled programs they load (``--program``) and the questions those programs were trained on.

Example:
    >>> [r.label for r in plan_strategies(["basic", "oneshot"], budgets=[1000, 2000])]
    ['basic', 'oneshot@1000', 'oneshot@2000']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragnet.errors import InputError

__all__ = ["StrategyRun", "parse_program_args", "plan_strategies", "strategy_name", "trained_questions"]


@dataclass(frozen=True)
class StrategyRun:
    """One column of the report: a strategy spec, at one budget, maybe with a compiled program."""

    label: str
    spec: str
    budget: int | None = None
    program: str | None = None


def strategy_name(spec: str) -> str:
    """The strategy a spec names, checked with its presets (``oracle`` is the evaluator's own)."""
    from ragnet.eval.run.oracle import is_oracle, parse_oracle_spec
    from ragnet.programs.registry import parse_spec

    return parse_oracle_spec(spec)[0] if is_oracle(spec) else parse_spec(spec)[0]


def _check_budget(value: Any, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"token budgets must be positive integers, got {value!r}", argument=argument)
    return value


def plan_strategies(
    strategies: Sequence[str],
    *,
    budget: int | None = None,
    budgets: Sequence[int] | None = None,
    programs: dict[str, str | Path] | None = None,
    recommended: tuple[str, int] | None = None,
) -> list[StrategyRun]:
    """Expand strategy specs into report columns.

    Budgeted strategies (``oneshot``, ``combined``, ``iterative``, ``oracle``) run once per entry of ``budgets`` (labels
    ``oneshot@1000`` ...), or at ``budget`` (label ``oneshot@4000``), or at their default
    (label ``oneshot``). Other strategies run once. ``auto`` is ``recommended`` (the spec and
    budget ragnet recommends for the reader, :func:`ragnet.programs.registry.resolve_strategy`),
    at its budget unless one is given, as ``ragnet ask`` runs it.

    Example:
        >>> [r.label for r in plan_strategies(["basic", "oneshot"], budgets=[1000, 2000])]
        ['basic', 'oneshot@1000', 'oneshot@2000']
        >>> [r.label for r in plan_strategies(["basic", "auto"], recommended=("oneshot:sentences+hops", 1000))]
        ['basic', 'oneshot:sentences+hops@1000']
    """
    from ragnet.eval.run.oracle import ORACLE
    from ragnet.programs.registry import BUDGETED

    budgeted = BUDGETED | {ORACLE}
    if budget is not None and budgets:
        raise InputError("give either --budget or --budgets, not both", argument="budgets")
    if budget is not None:
        _check_budget(budget, "budget")
    for b in budgets or ():
        _check_budget(b, "budgets")
    specs = [s.strip() for s in strategies if s and s.strip()]
    if not specs:
        raise InputError("no strategies given", argument="strategies")
    if recommended is None and any(s.casefold() == "auto" for s in specs):
        raise InputError("auto needs the reader it is recommended for", argument="strategies")
    programs = {k: str(v) for k, v in (programs or {}).items()}
    out: list[StrategyRun] = []
    for given in dict.fromkeys(specs):
        spec, own_budget, program = given, budget, programs.get(given)
        if given.casefold() == "auto":
            spec = recommended[0]
            own_budget = budget if budget is not None or budgets else recommended[1]
        name = strategy_name(spec)
        if name in budgeted and budgets:
            out.extend(StrategyRun(f"{spec}@{b}", spec, b, program) for b in dict.fromkeys(budgets))
        elif name in budgeted and own_budget is not None:
            out.append(StrategyRun(f"{spec}@{own_budget}", spec, own_budget, program))
        else:
            out.append(StrategyRun(spec, spec, None, program))
    return out


def parse_program_args(values: Sequence[str] | None, strategies: Sequence[str]) -> dict[str, str]:
    """``--program`` values to ``{spec: file}``: ``spec=FILE``, or a bare ``FILE`` when exactly
    one strategy is given. The file's header must name the strategy's program class.

    Example:
        >>> parse_program_args([], ["basic"])
        {}
    """
    from ragnet.eval.run.oracle import ORACLE, OracleRAG
    from ragnet.programs import STRATEGIES
    from ragnet.programs.persist import read_header

    classes = {**STRATEGIES, ORACLE: OracleRAG}
    specs = [s.strip() for s in strategies if s and s.strip()]
    out: dict[str, str] = {}
    for value in values or ():
        key, sep, file = value.partition("=")
        if not sep:
            if len(specs) != 1:
                raise InputError(f"{value!r} does not say which strategy it is for; use --program STRATEGY=FILE "
                                 f"(strategies: {', '.join(specs)})", argument="program")
            key, file = specs[0], value
        key, file = key.strip(), file.strip()
        matches = [s for s in specs if s == key] or [s for s in specs if strategy_name(s) == key]
        if len(matches) != 1:
            why = "matches several strategies" if matches else "is not among --strategies"
            raise InputError(f"{key!r} {why} ({', '.join(specs)})", argument="program")
        spec = matches[0]
        header = read_header(file)
        expected = classes[strategy_name(spec)].__name__
        if header.get("program") != expected:
            raise InputError(f"compiled for {header.get('program')}, not {expected} ({spec})", path=file)
        out[spec] = file
    return out


def trained_questions(plan: Sequence[StrategyRun]) -> set[str]:
    """Question ids the compiled programs in ``plan`` were compiled on (the ``train_questions``
    that ``ragnet optimize`` records in a file's header). Scores on those questions are not
    held-out, so the evaluator leaves them out."""
    from ragnet.programs.persist import read_header

    out: set[str] = set()
    for file in {run.program for run in plan if run.program}:
        optimization = read_header(file).get("optimization") or {}
        out.update(str(q) for q in optimization.get("train_questions") or ())
    return out

