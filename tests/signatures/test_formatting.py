"""format_chunks / format_context / resolve_ids."""

from __future__ import annotations

import pytest

from ragnet.signatures.formatting import format_chunks, format_context, resolve_ids, split_id_text


def test_format_chunks_renders_short_id_blocks(chunks):
    text, id_map = format_chunks(chunks)
    assert id_map == {"c1": "paris#0", "c2": "lyon#0", "c3": "cats#3"}
    blocks = text.split("\n\n")
    assert blocks[0] == "[c1] Paris: Paris is the capital of France. It has many museums. The Seine flows through it."
    assert blocks[2].startswith("[c3] Cats: Cats sleep")
    assert "paris#0" not in text  # real ids never reach the prompt


def test_format_chunks_start_prefix_and_untitled():
    text, id_map = format_chunks([{"id": "x#1", "title": "", "text": "  Hello world. "}], start=4)
    assert text == "[c4] Hello world."
    assert id_map == {"c4": "x#1"}
    assert format_chunks([]) == ("", {})


def test_format_context_puts_notes_before_chunks(chunks):
    text, id_map = format_context(chunks[:1], notes="- Paris is in France")
    assert text.startswith("Notes:\n- Paris is in France\n\nChunks:\n[c1] Paris:")
    assert id_map == {"c1": "paris#0"}
    assert format_context(chunks[:1])[0].startswith("[c1] Paris:")


def test_round_trip_every_short_id_resolves(chunks):
    _, id_map = format_chunks(chunks)
    known, unknown = resolve_ids(list(id_map), id_map)
    assert known == [c.id for c in chunks]
    assert unknown == []


@pytest.mark.parametrize(
    "raw, expected",
    [
        (["[c1]"], ["paris#0"]),
        ([" C2 "], ["lyon#0"]),
        (["'c3'"], ["cats#3"]),
        (["c1: Paris"], ["paris#0"]),
        (["[c2] Lyon"], ["lyon#0"]),
        (["LYON#0"], ["lyon#0"]),  # a real id given directly, any case
        ("c1, c3", ["paris#0", "cats#3"]),
        ("[c1] [c2]", ["paris#0", "lyon#0"]),
        ("c2 c3", ["lyon#0", "cats#3"]),
        ("- c3\n- c1", ["cats#3", "paris#0"]),
        (["c1", "c1", "paris#0"], ["paris#0"]),  # duplicates collapse
        ("none", []),
        (None, []),
    ],
)
def test_resolve_ids_is_tolerant(chunks, raw, expected):
    _, id_map = format_chunks(chunks)
    known, unknown = resolve_ids(raw, id_map)
    assert known == expected
    assert unknown == []


def test_resolve_ids_reports_unknown_in_order(chunks):
    _, id_map = format_chunks(chunks)
    known, unknown = resolve_ids(["c9", "c2", "doc#42", ""], id_map)
    assert known == ["lyon#0"]
    assert unknown == ["c9", "doc#42"]


def test_short_id_wins_over_identical_real_id():
    id_map = {"c1": "c2", "c2": "other"}
    assert resolve_ids(["c2"], id_map) == (["other"], [])


def test_split_id_text_variants():
    assert split_id_text('["c1", "c2"]') == ["c1", "c2"]
    assert split_id_text("c1; c4") == ["c1", "c4"]
    assert split_id_text("[]") == []
