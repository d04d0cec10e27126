"""Definition items: which sentences of a manual open an option's or a variable's entry."""

from __future__ import annotations

import pytest

from ragnet.core.definition_items import MAX_ITEM_SENTENCES, is_term_line, item_openers


@pytest.mark.parametrize("line", ["'--sandbox'", "'-o FILE'", "`-D DIR, --directory=DIR`", "`r or ^R or ^L`",
                                  "-N or --LINE-NUMBERS", "--null-data", "logfile = FILE", "LESSEDIT",
                                  "HOMEDRIVE, HOMEPATH", "‘e command’"])
def test_term_lines(line):
    assert is_term_line(line)


@pytest.mark.parametrize("line", ["The default", "2.2 Variables", "-- Euclid, The Elements, I", "rule cc",
                                  "-t, --no-time-strict use strict DER decoding while parsing the input files",
                                  "Version | Changes", "'--sandbox' is described below.", "Options:", "A"])
def test_prose_and_headings_are_not_terms(line):
    assert not is_term_line(line)


def test_items_run_to_the_next_term_and_stop_at_the_chunk():
    texts = ["Intro prose.", "'-s'\n'--separate'\nFiles are one stream.", "This treats them apart.",
             "'--sandbox'", "In sandbox mode, e/w/r are rejected.", "Next chunk prose."]
    assert item_openers(texts, [0, 0, 0, 0, 0, 1]).tolist() == [-1, 1, 1, 3, 3, -1]


def test_a_long_run_of_prose_after_the_list_is_not_the_last_items():
    texts = ["'-z'\nUse NUL."] + [f"Prose {i}." for i in range(MAX_ITEM_SENTENCES + 2)]
    owners = item_openers(texts, [0] * len(texts)).tolist()
    assert owners[:MAX_ITEM_SENTENCES + 1] == [0] * (MAX_ITEM_SENTENCES + 1) and owners[-1] == -1
