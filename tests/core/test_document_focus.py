"""The document a question is about: a majority of its best hits, or none."""

from __future__ import annotations

from ragnet.core.document_focus import FOCUS_TOP, focus_document


def test_a_majority_of_the_best_hits_names_the_document():
    hits = ["bc"] * 6 + ["node"] * 4
    assert focus_document(hits) == "bc"


def test_half_or_a_plurality_is_no_focus():
    assert focus_document(["a"] * 5 + ["b"] * 5) is None
    assert focus_document(["a"] * 4 + ["b"] * 3 + ["c"] * 3) is None


def test_only_the_best_hits_count():
    """A long tail of one document below the top does not outvote the top."""
    hits = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"] + ["z"] * 50
    assert len(hits[:FOCUS_TOP]) == FOCUS_TOP and focus_document(hits) is None
    assert focus_document(["z"] * 3 + ["a"] * 50, top=3) == "z"


def test_one_paragraph_documents_never_focus():
    """Wikipedia-style pools: every hit is its own document."""
    assert focus_document([f"page{i}" for i in range(100)]) is None
    assert focus_document([]) is None
