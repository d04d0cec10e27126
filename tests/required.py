"""Skip or fail a test whose resource is missing (the local model, llama_cpp, benchmark data).

`make test`, and so CI, sets RAGNET_REQUIRE_LIVE=1: there a missing resource is a broken
install, and the test must fail rather than pass the run by skipping.
"""

from __future__ import annotations

import os

import pytest

from pathlib import Path

REQUIRED = os.environ.get("RAGNET_REQUIRE_LIVE") == "1"
# The benchmark data: $RAGNET_DATA, or ../shared/data beside the clone (as CI lays it out).
SHARED_DATA = Path(os.environ.get("RAGNET_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it under RAGNET_REQUIRE_LIVE=1."""
    if REQUIRED:
        pytest.fail(f"required (RAGNET_REQUIRE_LIVE=1) but {reason}")
    pytest.skip(reason)
