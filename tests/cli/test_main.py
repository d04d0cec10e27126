"""The console entry point: DSPy's per-call truncation warning, and thread pinning."""

from __future__ import annotations

import logging
import os

import numpy  # noqa: F401 - loads BLAS before the pin, as the CLI does
import pytest
import typer
from threadpoolctl import threadpool_info, threadpool_limits

from ragnet._threads import pin_threads as _pin_threads
from ragnet.cli.common import TruncationNotes


def test_truncation_warnings_are_counted_once_and_other_warnings_pass(caplog):
    notes = TruncationNotes()
    logger = logging.getLogger("dspy.clients.lm")
    logger.addFilter(notes)
    try:
        with caplog.at_level(logging.WARNING, logger="dspy.clients.lm"):
            for _ in range(3):
                logger.warning("LM response was truncated; increase max_tokens or inspect history.")
            logger.warning("something else went wrong")
    finally:
        logger.removeFilter(notes)
    assert [r.getMessage() for r in caplog.records] == ["something else went wrong"]
    assert notes.count == 3 and notes.summary().startswith("note: 3 LM answer(s) were cut")
    assert TruncationNotes().summary() is None


def test_pin_threads_limits_blas_pools_loaded_before_it(monkeypatch):
    import torch

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, ""))  # restored after the test
    pools = threadpool_info()
    if not any(p["user_api"] == "blas" for p in pools):
        pytest.skip("numpy has no BLAS thread pool here")
    torch_threads = torch.get_num_threads()
    try:
        _pin_threads(1)
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and torch.get_num_threads() == 1
    finally:  # the rest of the session keeps its threads
        threadpool_limits(limits=max(p["num_threads"] for p in pools))
        torch.set_num_threads(torch_threads)


def test_warnings_print_as_one_clean_line(capsys):
    import warnings

    from ragnet.cli import _one_line_warning

    saved = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("something odd\n   happened", UserWarning)
    finally:
        warnings.showwarning = saved
    err = capsys.readouterr().err
    assert err == "warning: something odd happened\n"


@pytest.mark.parametrize("prog_name", ["ragnet", "python -m ragnet", "/opt/venv/bin/ragnet"])
def test_reports_name_the_command_as_ragnet_however_it_was_invoked(prog_name):
    from typer.testing import CliRunner

    from ragnet.cli.common import command_line

    app = typer.Typer()
    sub = typer.Typer()
    app.add_typer(sub, name="eval")

    @sub.command("retrieval")
    def retrieval(ctx: typer.Context, n: int = typer.Option(5, "-n"), fresh: bool = typer.Option(False, "--fresh")):
        print(command_line(ctx))

    @app.callback()
    def root() -> None:
        pass

    out = CliRunner().invoke(app, ["eval", "retrieval", "-n", "7", "--fresh"], prog_name=prog_name)
    assert out.exit_code == 0 and out.stdout.strip() == "ragnet eval retrieval -n 7 --fresh"
