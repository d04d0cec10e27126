"""API keys are redacted from everything ragnet writes (issue 47, item 7): the recorded command
line, and any text an error or a trace echoed them into."""

from __future__ import annotations

import json
import logging

from ragnet._atomic import write_json, write_text
from ragnet._secrets import REDACTED, redact, redact_argv, redact_logs, remember, remember_url
from ragnet.eval.run.results_file import RowWriter
from ragnet.lm.config import LMOptions


def test_a_key_given_to_the_lm_options_is_redacted_from_every_write(tmp_path, monkeypatch):
    key = "sk-proj-unit-test-key-42"
    monkeypatch.setenv("MY_KEY", "env-secret-value-987")
    LMOptions(lm="openai/gpt-4o-mini", api_key=key, api_base="http://u:server-pass-1@h/v1").connection()
    LMOptions(lm="openai/gpt-4o-mini", api_key_env="MY_KEY").connection()
    write_json(tmp_path / "run.json", {"error": f"401: {key}", "trace": ["env-secret-value-987"],
                                       "base": "http://u:server-pass-1@h/v1"})
    write_text(tmp_path / "report.md", f"Command: `ragnet eval --api-key {key}`")
    with RowWriter(tmp_path / "results.jsonl") as write:
        write({"id": "q1", "error": f"AuthenticationError: Incorrect API key provided: {key}"})
    for path in tmp_path.iterdir():
        text = path.read_text()
        for secret in (key, "env-secret-value-987", "server-pass-1"):
            assert secret not in text, (path.name, text)
    assert json.loads((tmp_path / "results.jsonl").read_text())["error"].endswith(REDACTED)


def test_short_values_are_not_taken_for_secrets():
    LMOptions(lm="openai/x", api_key="k").connection()
    assert redact("keep every k") == "keep every k"


def test_the_command_line_hides_the_key_whatever_its_length():
    assert redact_argv(["ragnet", "ask", "q", "--api-key", "k", "--lm", "openai/x"]) == [
        "ragnet", "ask", "q", "--api-key", REDACTED, "--lm", "openai/x"]
    assert redact_argv(["--api-key=abc", "--api-base", "https://user:pw@host:8000/v1"]) == [
        f"--api-key={REDACTED}", "--api-base", f"https://user:{REDACTED}@host:8000/v1"]


def test_a_url_password_is_redacted_where_it_stands_whatever_its_length():
    remember_url("http://user:pw5@127.0.0.1:1/v1")
    # as httpx names an address it could not reach: no scheme, the userinfo kept
    assert redact("failed to connect to user:pw5@127.0.0.1:1") == "failed to connect to user:***@127.0.0.1:1"
    assert redact("pw5 alone is not taken for the password") == "pw5 alone is not taken for the password"
    assert redact("see https://a:other-pass@host/x") == "see https://a:***@host/x"  # any URL's password


def test_log_records_lose_the_secrets_they_quote(caplog):
    key = "sk-log-secret-000111"
    remember(key)
    redact_logs()
    redact_logs()  # once is enough; again changes nothing
    try:
        raise RuntimeError(f"401: Incorrect API key provided: Bearer {key}")
    except RuntimeError:
        logging.getLogger("ragnet.test").exception("the call failed (%s)", key)
    assert key not in caplog.text and f"the call failed ({REDACTED})" in caplog.text
    assert f"Bearer {REDACTED}" in caplog.text  # the traceback too


def test_a_redacted_record_keeps_its_arguments_for_formatters_that_read_them():
    from uvicorn.logging import AccessFormatter

    key = "access-line-key-0042"
    remember(key)
    redact_logs()
    token = "1767225600." + "Ab1_" * 10 + "xyz"  # a file link's token (ragnet.serve.links)
    access = logging.getLogger("uvicorn.access").makeRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/files/sed.pdf?t={token}&k={key}", "1.1", 200), None)
    assert isinstance(access.args, tuple)  # uvicorn's formatter unpacks them: collapsed, it would fail
    line = AccessFormatter("%(client_addr)s %(request_line)s %(status_code)s", use_colors=False).format(access)
    assert line == f"127.0.0.1:5000 GET /files/sed.pdf?t={REDACTED}&k={REDACTED} HTTP/1.1 200 OK"
    split = logging.getLogger("ragnet.test").makeRecord("ragnet.test", logging.INFO, __file__, 1,
                                                        "%s%s", (key[:9], key[9:]), None)
    assert split.getMessage() == REDACTED  # a secret split across arguments: the whole line, redacted
