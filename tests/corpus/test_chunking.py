"""Token-aware, sentence-aligned chunking with overlap."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragnet.corpus.chunking import chunk_documents, chunk_text
from ragnet.corpus.sentence_split import sentence_spans as split_sentences
from ragnet.corpus.metadata import METADATA_KEYS, Gazetteer
from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Chunk, Document
from ragnet.errors import InputError

WORDS = (
    "river city bridge council budget report museum harbour station market garden library school "
    "mountain railway festival election treaty province island village castle tower cathedral"
).split()


def prose(n_sentences: int, seed: int = 0, min_words: int = 6, max_words: int = 18) -> str:
    rng = random.Random(seed)
    sentences = []
    for i in range(n_sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(min_words, max_words))]
        sentences.append(f"Sentence {i} says " + " ".join(words) + ".")
    return " ".join(sentences)


def locate(source: str, chunks: list[str]) -> list[tuple[int, int]]:
    """Spans of consecutive chunks in ``source``, each found at or after the previous start."""
    spans, pos = [], 0
    for chunk in chunks:
        start = source.find(chunk, pos)
        assert start >= 0, f"chunk is not a substring of the source: {chunk[:60]!r}"
        spans.append((start, start + len(chunk)))
        pos = start + 1
    return spans


def assert_covers_in_order(source: str, chunks: list[str]) -> None:
    """Every word of the source is in some chunk, chunks advance, nothing is skipped."""
    spans = locate(source, chunks)
    assert spans[0][0] == len(source) - len(source.lstrip())
    assert spans[-1][1] == len(source.rstrip())
    for (a0, b0), (a1, b1) in zip(spans, spans[1:]):
        assert a1 > a0 and b1 > b0  # progress
        if a1 >= b0:  # no overlap: only whitespace may lie between the chunks
            assert source[b0:a1].strip() == ""


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("chunk_tokens", "overlap", "argument"),
    [(15, 0, "chunk_tokens"), (0, 0, "chunk_tokens"), (256.0, 0, "chunk_tokens"), (True, 0, "chunk_tokens"),
     (64, -1, "overlap"), (64, 64, "overlap"), (64, 100, "overlap"), (64, 1.5, "overlap")],
)  # fmt: skip
def test_size_validation(chunk_tokens, overlap, argument):
    with pytest.raises(InputError) as info:
        chunk_text("some text", chunk_tokens, overlap)
    assert info.value.argument == argument
    with pytest.raises(InputError):
        chunk_documents([Document(id="d", title="", text="x")], chunk_tokens, overlap)


def test_smallest_sizes_accepted():
    chunks = chunk_text(prose(10), 16, 15)
    assert chunks and all(count_tokens(c) <= 16 for c in chunks)


# ---------------------------------------------------------------- short texts


@pytest.mark.parametrize("text", ["One sentence.", "  padded text with a newline\n", "x" * 10, prose(3)])
def test_short_text_is_one_unchanged_chunk(text):
    assert count_tokens(text) <= 128
    assert chunk_text(text, 128, 16) == [text]


def test_text_of_exactly_chunk_tokens_is_one_chunk():
    text = prose(30)
    n = count_tokens(text)
    assert chunk_text(text, n, 8) == [text]
    assert len(chunk_text(text, n - 1, 8)) > 1


def test_blank_text_gives_no_chunks():
    assert chunk_text("", 64, 8) == []
    assert chunk_text(" \n\t", 64, 8) == []
    with pytest.raises(InputError, match="argument 'text'"):
        chunk_text(None, 64, 8)  # type: ignore[arg-type]


# ---------------------------------------------------------------- long texts


@pytest.mark.parametrize(("chunk_tokens", "overlap"), [(64, 0), (64, 16), (128, 32), (256, 32), (40, 30)])
def test_long_text_bounds_coverage_substrings(chunk_tokens, overlap):
    text = prose(120, seed=chunk_tokens + overlap)
    chunks = chunk_text(text, chunk_tokens, overlap)
    assert len(chunks) > 2
    assert all(count_tokens(c) <= chunk_tokens for c in chunks)
    assert_covers_in_order(text, chunks)


def test_chunks_are_sentence_aligned_when_sentences_are_short():
    text = prose(60, seed=3)
    chunks = chunk_text(text, 96, 0)
    for chunk in chunks:
        assert chunk.startswith("Sentence ") and chunk.endswith(".")
    # windows are filled: each chunk plus the next sentence would not fit
    sentences = [text[a:b] for a, b in split_sentences(text)]
    assert "".join(chunks).replace(" ", "") == "".join(sentences).replace(" ", "")
    for chunk, nxt in zip(chunks, chunks[1:]):
        following = nxt.split(". ")[0] + "."
        assert count_tokens(chunk + " " + following) > 96 - 4


def test_overlap_repeats_roughly_overlap_tokens():
    text = prose(80, seed=5)
    chunks = chunk_text(text, 100, 24)
    spans = locate(text, chunks)
    shared = []
    for (a0, b0), (a1, _b1) in zip(spans, spans[1:]):
        assert a1 < b0, "consecutive chunks must overlap"
        repeated = text[a1:b0]
        assert text[a1 - 1] == " " and repeated[0] != " "  # starts at a word boundary
        shared.append(count_tokens(repeated))
    assert all(0 < n <= 24 for n in shared)
    assert sum(shared) / len(shared) >= 12  # roughly the overlap, not a token or two


def test_overlap_prefers_sentence_starts_when_close():
    # sentences of ~10 tokens and an overlap of 24: the repeated text should begin a sentence
    text = " ".join(f"Item {i} is a short sentence here." for i in range(100))
    chunks = chunk_text(text, 64, 24)
    assert all(c.startswith("Item ") for c in chunks)
    spans = locate(text, chunks)
    assert all(a1 < b0 for (_, b0), (a1, _) in zip(spans, spans[1:]))


def test_zero_overlap_partitions_the_text():
    text = prose(80, seed=9)
    chunks = chunk_text(text, 64, 0)
    spans = locate(text, chunks)
    for (_, b0), (a1, _) in zip(spans, spans[1:]):
        assert a1 >= b0 and text[b0:a1].strip() == ""
    assert " ".join(chunks).split() == text.split()


def test_original_whitespace_is_kept():
    text = "First line of a poem here.\n\tSecond line, indented.\n\n" * 40
    chunks = chunk_text(text, 48, 8)
    for chunk in chunks:
        assert chunk in text
    assert any("\n\t" in c for c in chunks)


def test_overlong_sentence_split_at_word_boundaries():
    words = [f"{WORDS[i % len(WORDS)]}{i}" for i in range(400)]
    text = " ".join(words)  # one sentence, ~800 tokens, no punctuation
    chunks = chunk_text(text, 64, 8)
    assert all(count_tokens(c) <= 64 for c in chunks)
    for chunk in chunks:
        for word in chunk.split():
            assert word in words  # never cut inside a word
    assert_covers_in_order(text, chunks)


def test_overlong_word_split_by_tokens():
    rng = random.Random(1)
    blob = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(900))
    text = f"The key is {blob} and that is all."
    chunks = chunk_text(text, 32, 4)
    assert all(count_tokens(c) <= 32 for c in chunks)
    spans = locate(text, chunks)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    assert covered >= set(range(len(text))) - {i for i, ch in enumerate(text) if ch == " "}


def test_unicode_text_chunks():
    text = " ".join(f"Der Fluss Nummer {i} fließt durch Zürich und Łódź — 東京 にも。" for i in range(60))
    chunks = chunk_text(text, 48, 8)
    assert all(count_tokens(c) <= 48 for c in chunks)
    assert_covers_in_order(text, chunks)


# ---------------------------------------------------------------- property test


word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789'-", min_size=1, max_size=12)
separator = st.sampled_from([" ", " ", " ", ". ", "! ", "? ", ", ", "\n", "\n\n", ".\n\n", "  "])


@st.composite
def texts(draw):
    words = draw(st.lists(word, min_size=1, max_size=400))
    seps = draw(st.lists(separator, min_size=len(words), max_size=len(words)))
    return "".join(w + s for w, s in zip(words, seps))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), chunk_tokens=st.integers(16, 80), data=st.data())
def test_property_bounds_and_word_order(text, chunk_tokens, data):
    overlap = data.draw(st.integers(0, chunk_tokens - 1))
    chunks = chunk_text(text, chunk_tokens, overlap)
    assert chunks
    assert all(count_tokens(c) <= chunk_tokens for c in chunks)
    if len(chunks) == 1 and count_tokens(text) <= chunk_tokens:
        assert chunks[0] == text
        return
    # every word of the source appears in some chunk, in order: walk the source words,
    # letting each chunk start anywhere inside the previous one (the overlap)
    source = text.split()
    pos = 0
    for chunk in chunks:
        cw = chunk.split()
        starts = [q for q in range(max(0, pos - len(cw)), pos + 1) if source[q : q + len(cw)] == cw]
        assert starts, f"chunk {chunk!r} does not continue the source at word {pos}"
        pos = max(q + len(cw) for q in starts)
    assert pos == len(source)


# ---------------------------------------------------------------- sentences


def test_split_sentences_keeps_abbreviations():
    text = (
        "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. They spoke, e.g. about maps. "
        "See No. 5 on p. 12! Was it fun? Yes.\n\n# Heading\n- item one\n- item two"
    )
    sentences = [text[a:b] for a, b in split_sentences(text)]
    assert sentences == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.",
        "They spoke, e.g. about maps.",
        "See No. 5 on p. 12!",
        "Was it fun?",
        "Yes.",
        "# Heading",
        "- item one",
        "- item two",
    ]


def test_split_sentences_quotes_and_brackets():
    text = 'He said "Stop." Then left. (It rained.) "Why?" she asked.'
    sentences = [text[a:b] for a, b in split_sentences(text)]
    assert sentences == ['He said "Stop."', "Then left.", "(It rained.)", '"Why?" she asked.']


# ---------------------------------------------------------------- documents


def make_docs() -> list[Document]:
    return [
        Document(
            id="short", title="Paris 2024", text="Paris hosted the Olympics in July 2024.", metadata={"year": 2024}
        ),
        Document(
            id="long", title="Budget Report", text=prose(60, seed=11), metadata={"years": [2019, "2020"], "src": "x"}
        ),
    ]


def test_chunk_documents_ids_positions_tokens():
    chunks = chunk_documents(make_docs(), chunk_tokens=64, overlap=8)
    assert all(isinstance(c, Chunk) for c in chunks)
    short = [c for c in chunks if c.doc_id == "short"]
    long = [c for c in chunks if c.doc_id == "long"]
    assert [c.id for c in short] == ["short#0"]
    assert short[0].text == "Paris hosted the Olympics in July 2024."
    assert [c.id for c in long] == [f"long#{i}" for i in range(len(long))]
    assert [c.position for c in long] == list(range(len(long)))
    assert len(long) > 3
    for c in chunks:
        assert c.tokens == count_tokens(c.text) <= 64
        assert c.title == {"short": "Paris 2024", "long": "Budget Report"}[c.doc_id]
        assert c.score == 0.0 and c.dense_score is None and c.bm25_score is None
    assert chunks == short + long  # document order, then position


def test_chunk_ids_and_texts_are_stable():
    first = chunk_documents(make_docs(), 64, 8)
    second = chunk_documents(make_docs(), 64, 8)
    assert [(c.id, c.text, c.tokens, c.metadata) for c in first] == [
        (c.id, c.text, c.tokens, c.metadata) for c in second
    ]


def test_chunk_metadata():
    gaz = Gazetteer(["Paris"])
    chunks = chunk_documents(make_docs(), 64, 8, gazetteer=gaz)
    short = chunks[0].metadata
    assert set(short) == set(METADATA_KEYS) | {"doc"}
    assert short["years"] == [2024]
    assert short["title_years"] == [2024]
    assert short["dates"] == ["2024-07"]
    assert short["entities"] == ["olympics", "paris"]
    assert short["places"] == ["paris"] and short["title_places"] == ["paris"]
    assert short["doc"] == {"year": 2024}
    long = chunks[1].metadata
    assert long["title_years"] == [2019, 2020]  # declared by the document, not in the text
    assert 2019 not in long["years"]
    assert long["doc"] == {"years": [2019, "2020"], "src": "x"}
    assert long["title_entities"] == ["budget report"]


def test_chunk_metadata_does_not_share_the_document_dict():
    doc = Document(id="d", title="", text=prose(40), metadata={"k": 1})
    chunks = chunk_documents([doc], 32, 0)
    chunks[0].metadata["doc"]["k"] = 2
    assert doc.metadata == {"k": 1}
    assert chunks[1].metadata["doc"] == {"k": 1}


def test_chunk_documents_errors():
    good = Document(id="a", title="", text="text")
    with pytest.raises(InputError, match="duplicate document id 'a'"):
        chunk_documents([good, Document(id="a", title="", text="other")])
    with pytest.raises(InputError, match="not a ragnet.Document"):
        chunk_documents([good, {"id": "b", "text": "x"}])  # type: ignore[list-item]
    with pytest.raises(InputError, match="has no text"):
        chunk_documents([Document(id="blank", title="", text="  \n")])
    with pytest.raises(InputError, match="argument 'gazetteer'"):
        chunk_documents([good], gazetteer={"Paris"})  # type: ignore[arg-type]


def test_chunk_documents_accepts_any_iterable_and_empty():
    assert chunk_documents([]) == []
    from_generator = chunk_documents((d for d in make_docs()), 64, 8)
    assert from_generator == chunk_documents(tuple(make_docs()), 64, 8)
    assert from_generator[0].id == "short#0" and len(from_generator) > 3


def test_chunk_round_trips_through_dict():
    [chunk] = chunk_documents([make_docs()[0]])
    assert Chunk.from_dict(chunk.to_dict()) == chunk


def test_one_huge_unbroken_text_chunks_in_linear_time_with_progress():
    """No sentence ends at all (a log line, a dump): words are counted in batches, memory stays
    bounded, and progress arrives window by window."""
    import random

    rng = random.Random(0)
    text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(60_000))
    seen: list[int] = []
    chunks = chunk_documents([Document(id="big", title="Big", text=text)], 128, 16, progress=seen.append)
    assert len(chunks) > 100 and all(c.tokens <= 128 for c in chunks)
    assert len(seen) == len(chunks) and sum(seen) == len(text)
    # every word survives, in order (overlaps aside)
    assert chunks[0].text.split()[:5] == text.split()[:5] and chunks[-1].text.split()[-5:] == text.split()[-5:]
