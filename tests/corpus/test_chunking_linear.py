"""Chunking is linear in the text's length, whatever the text (issue 47, item 1).

Before: the long-word splitter re-counted the rest of a word for every piece (random letters:
100 KB in 5.5 s, 200 KB in 28 s, 1 MB not done after 200 s); the sentence splitter's regex
rescanned a run of dots, "!?" or tabs from every position in it (40 KB of tabs: 4.5 s, 20 KB of
dots: 22 s); and tiktoken panicked (a Rust stack overflow, not even an exception) on a run of a
million spaces.

The linearity checks count the characters handed to tiktoken instead of timing anything; the few
that run a hostile text end to end run it in a subprocess with a generous time limit, so a
regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from ragnet.corpus import tokens
from ragnet.corpus.chunking import chunk_documents, chunk_text
from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Document


def letters(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))


class Counting:
    """The real encoding, counting the characters it is asked to encode."""

    def __init__(self, real):
        self.real, self.chars = real, 0

    def encode_ordinary(self, text):
        self.chars += len(text)
        return self.real.encode_ordinary(text)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def encoded(monkeypatch):
    counting = Counting(tokens._encoding())
    monkeypatch.setattr(tokens, "_encoding", lambda: counting)
    return counting


@pytest.mark.parametrize("make", [
    lambda n: letters(n),                                   # one unbroken word
    lambda n: "The key is " + letters(n) + " and that is all.",
    lambda n: "東京" * (n // 2),                             # several tokens per character
    lambda n: "=" * n,                                       # long tokens
    lambda n: "A" + " " * n + "B",                           # a megabyte of blanks between two words
])
def test_chunking_encodes_each_character_a_bounded_number_of_times(encoded, make):
    text = make(300_000)
    chunks = chunk_text(text, 256, 32)
    assert chunks and all(count_tokens(c) <= 256 for c in chunks)
    # before: about 300 times for the unbroken words (the rest of the word re-counted per piece)
    assert encoded.chars <= 8 * len(text), encoded.chars / len(text)


def test_an_unbroken_word_is_cut_into_pieces_that_keep_every_character(encoded):
    word = letters(200_000, seed=3)
    pieces = chunk_documents([Document(id="w", title="W", text=word)], 128, 16)
    assert "".join(c.text for c in pieces) == word  # no overlap inside a word, nothing lost
    assert all(c.tokens == count_tokens(c.text) <= 128 for c in pieces)
    assert min(c.tokens for c in pieces[:-1]) >= 120  # pieces are full, not slivers


@pytest.mark.parametrize("text", ["é" * 5000, "😀" * 3000, "ab" * 4000, "x" * 9000, "日本語のテキスト" * 800])
def test_token_prefix_never_splits_a_character_or_exceeds_the_limit(text):
    from ragnet.corpus.tokens import token_prefix

    start = 0
    while start < len(text):
        end, n = token_prefix(text, start, len(text), 16)
        assert start < end and n == count_tokens(text[start:end]) <= 16
        start = end


def test_counting_a_million_blanks_does_not_crash_tiktoken():
    # before: pyo3_runtime.PanicException (StackOverflow in tiktoken's pre-tokenizer)
    assert 7_000 < count_tokens("a" + " " * 1_000_000 + "b") < 9_000
    assert 100_000 < count_tokens("\t" * 2_000_000) < 200_000


def test_long_texts_are_counted_exactly_when_they_have_words():
    rng = random.Random(1)
    words = "the river flows through a city of old stone bridges and markets".split()
    prose = " ".join(rng.choice(words) for _ in range(60_000))  # about 280,000 characters
    assert count_tokens(prose) == len(tokens._encoding().encode_ordinary(prose))


@pytest.mark.parametrize("run", [".", "!?", "\t", " ", "…", "\t \t"])
def test_sentence_spans_of_long_runs_of_punctuation_or_blanks(run):
    # the run ends in a word, not a blank: every position inside it was a failed match, tried anew
    # (a million blanks: about 45 minutes before; a fifth of a second now)
    _finishes(f"""
        from ragnet.corpus.sentence_split import sentence_spans
        text = "Start" + {run!r} * 1_000_000 + "end here. Next one."
        spans = sentence_spans(text)
        assert text[spans[-1][0]:spans[-1][1]] == "Next one."
    """, 60)


def _finishes(code: str, seconds: float) -> None:
    """Run ``code`` in a fresh interpreter; fail (killing it) if it takes longer than ``seconds``."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish in {seconds} s")
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_megabyte_one_word_file_loads_and_chunks(tmp_path):
    """The issue's case: a 1 MB one-word .txt had not finished after 200 s (now about 2 s on one core;
    `python -m benchmarks.chunking_slope` prints the figures)."""
    path = tmp_path / "word.txt"
    path.write_text(letters(1_000_000), encoding="utf-8")
    _finishes(f"""
        from ragnet.corpus.loader import load_documents
        from ragnet.corpus.chunking import chunk_documents
        chunks = chunk_documents(load_documents({str(path)!r}), 256, 32)
        assert len(chunks) > 1000 and all(c.tokens <= 256 for c in chunks)
    """, 60)


def test_a_markdown_note_with_an_inline_base64_image_is_quick(tmp_path):
    """300 KB of base64 in one Markdown image took 129 s (and made 841 junk chunks)."""
    import base64

    blob = base64.b64encode(random.Random(2).randbytes(225_000)).decode("ascii")
    path = tmp_path / "note.md"
    path.write_text(f"# Note\n\nA picture:\n\n![plot](data:image/png;base64,{blob})\n\nThe end.\n", encoding="utf-8")
    _finishes(f"""
        from ragnet.corpus.loader import load_documents
        from ragnet.corpus.chunking import chunk_documents
        chunks = chunk_documents(load_documents({str(path)!r}), 256, 32)
        assert len(chunks) < 5, len(chunks)  # the image's bytes are not text
        assert "A picture" in chunks[0].text and "The end." in chunks[-1].text
    """, 60)
