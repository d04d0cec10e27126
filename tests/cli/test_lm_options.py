"""The LM options every command shares: declared once (``with_lm_options``), parsed by typer,
handed to the command as one ``LMOptions``, and checked with one-line errors naming the option."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from ragnet.cli.common import new_app, with_lm_options
from ragnet.lm.config import LMOptions


def _app(seen, **declared):
    app = new_app("test")

    @app.command("run")
    @with_lm_options(**declared)
    def run(name: str = typer.Argument(...), *, lms: LMOptions) -> None:
        seen.append((name, lms))
        lms.connection()

    @app.command("other")
    def other() -> None:  # a second command, so "run" stays a subcommand
        pass

    return app


def test_the_options_arrive_as_one_object(monkeypatch):
    seen = []
    monkeypatch.setenv("MY_KEY", "sk-123")
    result = CliRunner().invoke(_app(seen, answer_lm="auto"), [
        "run", "q", "--lm", "openai/gpt-4o-mini", "--answer-lm", "openai/gpt-4o", "--api-base",
        "http://127.0.0.1:9/v1", "--api-key-env", "MY_KEY", "--timeout", "5"])
    assert result.exit_code == 0, result.output
    ((name, lms),) = seen
    assert name == "q" and lms == LMOptions(lm="openai/gpt-4o-mini", answer_lm="openai/gpt-4o",
                                            api_base="http://127.0.0.1:9/v1", api_key_env="MY_KEY", timeout=5.0)
    assert lms.connection() == {"api_base": "http://127.0.0.1:9/v1", "api_key": "sk-123", "timeout": 5.0}
    assert lms.reader() == "openai/gpt-4o"


def test_defaults_and_a_command_without_a_reader_option():
    seen = []
    assert CliRunner().invoke(_app(seen, answer_lm="auto", timeout=300.0), ["run", "q"]).exit_code == 0
    assert seen[-1][1] == LMOptions(answer_lm="auto", timeout=300.0)
    result = CliRunner().invoke(_app(seen, answer_lm=False), ["run", "q", "--answer-lm", "x"])
    assert result.exit_code == 2 and "No such option: --answer-lm" in result.output
    assert "--api-key-env" in CliRunner().invoke(_app(seen, answer_lm=False), ["run", "--help"]).output


def test_bad_connection_options_are_one_line_naming_the_option(monkeypatch):
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    for args, message in [(["--api-key", "a", "--api-key-env", "B"], "give --api-key or --api-key-env, not both"),
                          (["--api-key-env", "NOT_SET_ANYWHERE"], "NOT_SET_ANYWHERE is not set or empty"),
                          (["--timeout", "0"], "must be more than 0 seconds")]:
        result = CliRunner().invoke(_app([]), ["run", "q", *args])
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
