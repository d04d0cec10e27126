"""What the reader reads of a manual's chunk: its document's title, heading lines without section numbers."""

import dspy
from dspy.utils import DummyLM

from ragnet import Chunk
from ragnet.signatures import AnswerStep
from ragnet.signatures.reader_view import reader_text, reader_view

MANUAL_TEXT = ("5.9. /var/lock : Lock files\n5.9.1. Purpose\nThe format is a ten byte ASCII decimal number.\n"
               "16.4 Options for Scanner Speed and Size\n1.2.3 release was made in 2004.")


def _prompt(chunks: list[Chunk]) -> str:
    lm = DummyLM([{"answer": "ten byte", "evidence_ids": ["c1"]}])
    with dspy.context(lm=lm):
        out = AnswerStep()(question="How wide is the PID field?", context=chunks)
    assert out.evidence_ids == [chunks[0].id]  # the ids still name the real chunk
    return lm.history[-1]["messages"][-1]["content"]


def test_a_manual_chunk_reaches_the_reader_under_its_document_title_without_section_numbers():
    chunk = Chunk(id="fhs#7", doc_id="fhs", title="FHS › 5.9. /var/lock : Lock files › 5.9.1. Purpose",
                  text=MANUAL_TEXT, tokens=40,
                  metadata={"location": {"file": "fhs.pdf", "headings": ["5.9. /var/lock : Lock files", "5.9.1. Purpose"]}})
    prompt = _prompt([chunk])
    assert "[c1] FHS: /var/lock : Lock files\nPurpose\nThe format is a ten byte" in prompt
    assert "5.9" not in prompt and "16.4" not in prompt and "›" not in prompt
    assert "1.2.3 release was made in 2004." in prompt  # a sentence that starts with a number keeps it
    assert chunk.title.startswith("FHS › 5.9.") and chunk.text == MANUAL_TEXT  # the chunk itself is untouched


def test_a_chunk_without_sections_is_shown_as_it_is():
    chunk = Chunk(id="w#0", doc_id="w", title="Apollo 11", text="2.1 Launch\nIt launched on July 16, 1969.", tokens=9)
    assert "[c1] Apollo 11: 2.1 Launch\nIt launched on July 16, 1969." in _prompt([chunk])
    assert reader_view([chunk]) == [chunk]


def test_values_that_look_like_numbers_stay():
    kept = ["4096 Display font-matching transformation", "9 UUCP lock files must be placed in /var/lock.",
            "2.5.13a is the version", "3.1 apples are good.", "1.5 seconds: the default timeout;"]
    for line in kept:
        assert reader_text(line) == line
    assert reader_text("2.7.3. Error-related Options\n7.7 The magic files") == "Error-related Options\nThe magic files"
