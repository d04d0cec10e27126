"""Skip or fail a test whose resource is missing (the local model, llama_cpp, benchmark data).

`make test`, and so CI, sets RAGNET_REQUIRE_LIVE=1: there a missing resource is a broken
install, and the test must fail rather than pass the run by skipping.
"""

from __future__ import annotations

import os

import pytest

REQUIRED = os.environ.get("RAGNET_REQUIRE_LIVE") == "1"


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it under RAGNET_REQUIRE_LIVE=1."""
    if REQUIRED:
        pytest.fail(f"required (RAGNET_REQUIRE_LIVE=1) but {reason}")
    pytest.skip(reason)
