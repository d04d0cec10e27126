"""The console entry point's handling of DSPy's per-call truncation warning."""

from __future__ import annotations

import logging

from ragnet.cli import TruncationNotes


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
