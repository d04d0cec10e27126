"""``ragnet bench`` runs the timings of a user's install, and nothing of the lab (``benchmarks/``)."""

from __future__ import annotations

import typer

from ragnet.cli import app


def test_bench_commands_are_the_install_timings():
    root = typer.main.get_command(app)
    assert sorted(root.commands["bench"].commands) == ["core", "embed", "index", "ray", "scale", "serve", "update"]
    assert "laziness" not in root.commands["eval"].commands
