"""Tables of contents and indexes told from a manual's text: what the rules stage drops."""

from __future__ import annotations

import pytest

from ragnet.core.page_listings import MIN_LISTING_LINES, is_page_listing

CONTENTS = """Table of Contents
1 Introduction . . . . . . . . . . . . . . . . . . . . . . . . 1
2 ASN.1 structure handling . . . . . . . . . . . . . . . . . . 2
2.1 ASN.1 syntax . . . . . . . . . . . . . . . . . . . . . . . 2
2.2 Naming . . . . . . . . . . . . . . . . . . . . . . . . . . 3
3.3 Invoking asn1Decoding . . . . . . . . . . . . . . . . . . . 7"""

INDEX = """Concept Index
A
asn1Coding program . . . . . . . . . . . . . . . . . 5
asn1Decoding program . . . . . . . . . . . . . . . . 7
asn1Parser program . . . . . . . . . . . . . . . . . 5
ASN.1 schema . . . . . . . . . . . . . . . . . . . . 2
D
DER....................................................12"""

OPTIONS = """-b, --benchmark perform a benchmark on decoding
-s, --strict use strict DER decoding
-t, --no-time-strict use strict DER decoding but not in time fields
-h, --help display this help and exit"""

EXIT_CODES = """0 No problems occurred.
1 Generic error code.
2 Parse error.
3 File I/O error.
4 Network failure."""


@pytest.mark.parametrize("text", [CONTENTS, INDEX], ids=["contents", "index"])
def test_contents_and_index_pages_are_listings(text):
    assert is_page_listing(text)


@pytest.mark.parametrize("text", [OPTIONS, EXIT_CODES, "", "\n\n", "A sentence . . . . 4"],
                         ids=["options", "numbered-table", "empty", "blank", "one-leader"])
def test_prose_option_lists_and_tables_are_not(text):
    assert not is_page_listing(text)


def test_a_page_quoting_a_few_entries_among_prose_is_text():
    """Three leader lines under prose (a page that ends where the contents begin) are not enough,
    and leaders on fewer than half the lines never are."""
    entries = CONTENTS.splitlines()[1:MIN_LISTING_LINES]
    assert not is_page_listing("\n".join(entries))
    prose = "\n".join(f"Sentence {i} of the chapter's prose." for i in range(6))
    assert not is_page_listing(prose + "\n" + CONTENTS)
    assert is_page_listing(CONTENTS + "\n" + "\n".join(prose.splitlines()[:4]))
