"""``ragnet demo``: the synthetic yearbooks, the evidence each strategy gives the reader, answers."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from ragnet.cli.common import with_lm_options

if TYPE_CHECKING:
    from ragnet.lm.config import LMOptions


@with_lm_options(answer_lm="auto")
def demo(
    workdir: Path = typer.Option(Path(".ragnet-cache/demo"), help="Where the demo corpus, index and results go."),
    # ragnet.demo.run.DEFAULT_ANSWERS (tests/demo pins the two together); a literal, so that every
    # `ragnet` command does not import the demo corpus at start-up (~35 ms)
    answers: int = typer.Option(3, help="Questions answered, among those plain top-5 gets wrong, taken from each level in turn."),
    evidence_per_level: int = typer.Option(3, help="Questions per level in the evidence table (no LM)."),
    strategies: Optional[str] = typer.Option(None, help="Comma-separated strategies to answer with (default basic,oneshot; presets allowed)."),
    full: bool = typer.Option(False, "--full", help="Every strategy on every picked question (several times longer)."),
    budget: int = typer.Option(1000, help="Token budget of the answer prompt for the budgeted strategies."),
    max_turns: int = typer.Option(2, help="Turn cap for the agent loops (kept small for the local LM)."),
    *,
    lms: LMOptions,
) -> None:
    """Synthetic yearbooks where top-5 confuses years and cities: evidence per strategy, then answers."""
    from ragnet.demo.run import run_demo

    run_demo(workdir, lms=lms, answers=answers, evidence_per_level=evidence_per_level,
             strategies=[s for s in strategies.split(",") if s] if strategies else None, full=full, budget=budget,
             max_turns=max_turns)


def register(app: typer.Typer) -> None:
    """``ragnet demo``."""
    app.command("demo")(demo)
