"""The local LM's time limit: ``"auto"`` measures this machine, a number is fixed (no model needed)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from ragnet.cli.common import with_lm_options
from ragnet.errors import InputError
from ragnet.lm import call_time
from ragnet.lm.call_time import AUTO_FACTOR, AUTO_FLOOR_S, CallLimit, Speed, check_timeout
from ragnet.lm.config import LMOptions, make_lm


def test_timeout_values():
    assert check_timeout("auto") == "auto" and check_timeout(" AUTO ") == "auto"
    assert check_timeout("2.5") == 2.5 and check_timeout(30) == 30.0 and check_timeout(None) is None
    for bad, message in [("soon", "number of seconds or 'auto'"), (0, "more than 0"), (-3, "more than 0")]:
        with pytest.raises(InputError, match=message) as info:
            check_timeout(bad)
        assert info.value.argument == "timeout"


def test_speed_keeps_the_best_rate_of_samples_long_enough_to_mean_it():
    speed = Speed()
    speed.saw_read(10, 0.001)          # too short a slice: per-call overhead, not the machine
    speed.saw_generation(3, 0.001)
    assert speed.read_rate is None and speed.generation_rate is None
    speed.saw_read(512, 10.0)
    speed.saw_read(512, 40.0)          # a slower slice (a busy moment) does not lower the bar
    speed.saw_generation(16, 4.0)
    assert speed.read_rate == pytest.approx(51.2) and speed.generation_rate == pytest.approx(4.0)
    assert speed.expected(1024, 40) == (pytest.approx(20.0), pytest.approx(10.0))


def test_auto_limit_is_a_multiple_of_the_measured_need_with_a_floor():
    speed = Speed()
    limit = CallLimit.auto(speed, read_tokens=3000, max_tokens=200)
    # nothing measured yet: the first prompt slice measures the read rate before anything is checked
    assert limit.allowance() is None and not limit.over(1e6)
    speed.saw_read(500, 25.0)          # 20 tokens/s: 150 s to read 3,000
    # the generation rate is unknown: the prompt read is held to its own share
    assert limit.allowance() == pytest.approx(AUTO_FACTOR * 150)
    assert limit.over(601) and not limit.over(599)
    # generating before the call's first tokens measured the rate: nothing to compare with yet
    assert not limit.over(1e6, generating=True)
    speed.saw_generation(50, 10.0)     # 5 tokens/s: 40 s for 200
    assert limit.allowance() == pytest.approx(AUTO_FACTOR * 190)
    assert limit.over(761, generating=True) and not limit.over(759, generating=True)
    quick = CallLimit.auto(speed, read_tokens=40, max_tokens=10)
    assert quick.allowance() == AUTO_FLOOR_S    # a short call keeps the old fixed default
    # a prompt found whole in the KV cache needs no read rate
    assert CallLimit.auto(Speed(), read_tokens=0, max_tokens=10).allowance() == AUTO_FLOOR_S


def test_auto_describes_itself_with_what_was_measured(monkeypatch):
    speed = Speed()
    speed.saw_read(400, 20.0)
    speed.saw_generation(40, 8.0)
    monkeypatch.setattr(call_time, "AUTO_FLOOR_S", 1.0)
    text = CallLimit.auto(speed, read_tokens=2000, max_tokens=100).describe()
    assert text.startswith("its automatic 480s timeout (4x the 120s this machine was measured to need")
    assert "2000 prompt tokens and up to 100 answer tokens" in text and "busy" in text
    assert CallLimit.fixed(30.0).describe() == "its 30s timeout"
    assert not CallLimit.fixed(None).bounded and not CallLimit.fixed(None).over(1e9)


def test_auto_reaches_each_kind_of_lm(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    local = make_lm(f"local:{gguf}")
    assert local.engine.timeout == "auto" and local.engine.dump_state()["timeout"] == "auto"
    assert make_lm(f"local:{gguf}", timeout=7).engine.timeout == 7.0
    # a served model has nothing measured here: auto is the floor, a fixed bound
    assert make_lm("openai/gpt-4o-mini", api_key="sk-test").kwargs["timeout"] == AUTO_FLOOR_S
    assert LMOptions().connection() == {"timeout": "auto"}


def test_the_cli_takes_seconds_or_auto():
    seen = []
    app = typer.Typer()

    @app.command()
    @with_lm_options(answer_lm=False)
    def run(*, lms):
        seen.append(lms)

    @app.command()
    def other():  # a second command keeps typer's subcommand layout
        pass

    for args, timeout in [([], "auto"), (["--timeout", "auto"], "auto"), (["--timeout", "45"], 45.0)]:
        result = CliRunner().invoke(app, ["run", *args])
        assert result.exit_code == 0, result.output
        assert seen[-1].timeout == timeout
    result = CliRunner().invoke(app, ["run", "--timeout", "soon"])
    assert result.exit_code == 2 and "--timeout" in result.output and "'auto'" in result.output
    assert "SECONDS|auto" in CliRunner().invoke(app, ["run", "--help"]).output
