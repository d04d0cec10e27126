"""BM25 at scale: sharded build with global statistics, memory-mapped load, sorted vocabulary table."""

from __future__ import annotations

import json
import mmap
import pickle
import sys
import types
from pathlib import Path

import bm25s
import numpy as np
import pytest

from tests.required import SHARED_DATA, skip_or_fail

from ragnet.errors import IndexFormatError
from ragnet.index.file_array import FileArray
from ragnet.index.sparse import SORTED_VOCAB_FILE, VOCAB_FILE, SortedVocab, SparseIndex
from ragnet.index.sparse_shards import ShardCounts, build_sharded, merge, tokenize_shard

DATA = SHARED_DATA / "hotpotqa_dev_distractor" / "questions.jsonl"


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str]]:
    """300 HotpotQA paragraphs and the 30 questions they were retrieved for."""
    if not DATA.exists():
        skip_or_fail(f"{DATA} is not available (set RAGNET_DATA)")
    texts, questions = [], []
    with DATA.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            texts.extend(p["text"] for p in record["context"])
            questions.append(record["question"])
            if len(texts) >= 300:
                break
    return texts[:300], questions[:30]


@pytest.fixture(scope="module")
def whole(corpus) -> SparseIndex:
    return SparseIndex.build(corpus[0], show_progress=False)


def split(texts: list[str], sizes: list[int]) -> list[list[str]]:
    assert sum(sizes) == len(texts)
    bounds = np.cumsum([0, *sizes])
    return [texts[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def columns(index: SparseIndex) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """term -> (rows, values) of its CSC column: the matrix independent of vocabulary ids."""
    out = {}
    for term in index.retriever.vocab_dict:
        t = index.retriever.vocab_dict[term]
        if t < len(index._indptr) - 1:  # bm25s's empty token "" has no column
            a, b = index._indptr[t], index._indptr[t + 1]
            out[term] = (np.asarray(index._indices[a:b]), np.asarray(index._data[a:b]))
    return out


def assert_same_index(got: SparseIndex, expected: SparseIndex, queries: list[str]) -> None:
    assert len(got) == len(expected)
    np.testing.assert_allclose(got.scores_batch(queries), expected.scores_batch(queries), rtol=1e-6, atol=0)
    got_cols, expected_cols = columns(got), columns(expected)
    assert got_cols.keys() == expected_cols.keys()
    for term, (rows, values) in expected_cols.items():
        np.testing.assert_array_equal(got_cols[term][0], rows, err_msg=term)
        np.testing.assert_allclose(got_cols[term][1], values, rtol=1e-6, err_msg=term)


def is_mapped(a: np.ndarray) -> bool:
    """True when ``a`` (or an array it views) is a memory map."""
    while a is not None:
        if isinstance(a, (np.memmap, mmap.mmap)):
            return True
        a = getattr(a, "base", None)
    return False


# -- sharded build ---------------------------------------------------------------------
@pytest.mark.parametrize("sizes", [[300], [150, 150], [100, 100, 100], [1, 0, 250, 49], [0, 300, 0], [299, 1]])
def test_sharded_build_equals_build(corpus, whole, sizes):
    texts, queries = corpus
    sharded = build_sharded(split(texts, sizes))
    assert_same_index(sharded, whole, queries)
    assert sharded.stemmer_name == whole.stemmer_name
    assert sum(np.count_nonzero(sharded.scores(q)) for q in queries) > 0  # the queries do hit documents
    for q in queries[:5]:
        assert sharded.top(q, 5)[0].tolist() == whole.top(q, 5)[0].tolist()


def test_stopword_and_empty_shards(corpus):
    texts, queries = corpus
    shards = [["The of and", ""], [], texts[:20], ["a an the"]]
    assert_same_index(build_sharded(shards), SparseIndex.build(sum(shards, []), show_progress=False),
                      queries)


def test_all_stopword_shards_give_an_empty_index_that_saves(tmp_path):
    shards = [["the of and"], [], ["a an the", "!!"]]
    sharded = build_sharded(shards)
    built = SparseIndex.build(sum(shards, []), show_progress=False)
    assert len(sharded) == len(built) == 3
    assert sharded.scores("the capital").tolist() == built.scores("the capital").tolist() == [0.0, 0.0, 0.0]
    for name in ("_data", "_indices", "_indptr"):
        np.testing.assert_array_equal(getattr(sharded, name), getattr(built, name))
        assert getattr(sharded, name).dtype == getattr(built, name).dtype
    sharded.save(tmp_path / "bm25")
    for flag in (False, True):
        loaded = SparseIndex.load(tmp_path / "bm25", mmap=flag)
        assert len(loaded) == 3 and loaded.scores("anything at all").tolist() == [0.0, 0.0, 0.0]
    assert len(build_sharded([])) == 0


def test_stemmed_shards_equal_stemmed_build(corpus, monkeypatch):
    """Stems that merge several words (term frequency summed over them) count the same way."""

    class FakeStemmer:  # PyStemmer's interface; strips a plural "s" so "films"/"film" merge
        def __init__(self, name):
            assert name == "english"

        def stemWords(self, words):
            return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words]

    monkeypatch.setitem(sys.modules, "Stemmer", types.SimpleNamespace(Stemmer=FakeStemmer))
    texts, queries = corpus
    built = SparseIndex.build(texts, show_progress=False, stemmer="english")
    sharded = build_sharded(split(texts, [90, 0, 210]), stemmer="english")
    assert built.tokenize("films") == ["film"] and sharded.stemmer_name == "english"
    assert_same_index(sharded, built, queries)


def test_shard_counts_travel_as_plain_arrays(corpus, whole):
    texts, queries = corpus
    counts = [tokenize_shard(shard) for shard in split(texts, [120, 180])]
    c = counts[0]
    assert len(c) == 120 and c.doc_ptr.shape == (121,) and c.doc_ptr[-1] == len(c.term_ids) == len(c.tfs)
    assert all(isinstance(t, str) for t in c.terms) and len(set(c.terms)) == len(c.terms)
    assert c.doc_lengths.sum() == c.tfs.sum()  # every kept token is counted once
    copies = [pickle.loads(pickle.dumps(x)) for x in counts]  # what a process or Ray task returns
    assert_same_index(merge(copies), whole, queries)


def test_merge_rejects_bad_input():
    good = tokenize_shard(["a cat"], None)
    with pytest.raises(ValueError, match="at least one shard"):
        merge([])
    with pytest.raises(ValueError, match="different stemmers"):
        merge([good, ShardCounts(**{**good.__dict__, "stemmer": "english"})])
    with pytest.raises(ValueError, match="not 'english'"):
        merge([good], stemmer="english")
    garbled = ShardCounts(**{**good.__dict__, "term_ids": np.array([5], dtype=np.int32)})
    with pytest.raises(ValueError, match="inconsistent ShardCounts"):
        merge([garbled])
    assert len(merge([good], stemmer=None)) == 1


# -- save / load, mmap -----------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(corpus, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sparse") / "bm25"
    build_sharded(split(corpus[0], [100, 200])).save(folder)
    return folder


def test_save_writes_bm25s_files_plus_sorted_vocab(saved, corpus):
    names = {f.name for f in saved.iterdir()}
    assert {"data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "params.index.json",
            VOCAB_FILE, SORTED_VOCAB_FILE, "tokenizer.json"} <= names
    table = np.load(saved / SORTED_VOCAB_FILE, allow_pickle=False)
    assert np.all(table["term"][:-1] < table["term"][1:])  # strictly sorted
    vocab = json.loads((saved / VOCAB_FILE).read_text(encoding="utf-8"))
    assert {bytes(t).decode(): int(i) for t, i in zip(table["term"], table["id"])} == vocab
    # bm25s reads the sharded index's folder and scores like we do
    plain = bm25s.BM25.load(str(saved), load_corpus=False, allow_pickle=False, show_progress=False)
    ours = SparseIndex.load(saved)
    for q in corpus[1][:10]:
        tokens = ours.tokenize(q)
        expected = plain.get_scores(tokens) if ours.token_ids(q) else np.zeros(len(ours))
        np.testing.assert_allclose(ours.scores(q), expected, rtol=1e-6)


def test_mmap_load_gives_the_same_scores_and_ids(saved, corpus, whole):
    texts, queries = corpus
    in_ram = SparseIndex.load(saved)
    mapped = SparseIndex.load(saved, mmap=True)
    assert len(mapped) == len(in_ram) == len(texts)
    np.testing.assert_array_equal(mapped.scores_batch(queries), in_ram.scores_batch(queries))
    np.testing.assert_allclose(mapped.scores_batch(queries), whole.scores_batch(queries), rtol=1e-6)
    assert [mapped.token_ids(q) for q in queries] == [in_ram.token_ids(q) for q in queries]
    vocab = in_ram.retriever.vocab_dict
    terms = list(vocab)
    assert mapped._vocab.lookup(terms) == [vocab[t] for t in terms]  # every term, incl. non-ASCII ones
    assert any(not t.isascii() for t in terms)
    assert len(mapped.retriever.vocab_dict) == len(vocab) and mapped.retriever.vocab_dict.to_dict() == vocab
    # bm25s's own scoring works on the mapped retriever (the table stands in for vocab_dict)
    tokens = mapped.tokenize(queries[0])
    np.testing.assert_allclose(mapped.retriever.get_scores(tokens), in_ram.scores(queries[0]), rtol=1e-6)
    from ragnet.index.sentence_store import idf_of

    np.testing.assert_array_equal(idf_of(mapped), idf_of(in_ram))


def test_mmap_load_reads_posting_lists_from_disk(saved):
    mapped = SparseIndex.load(saved, mmap=True)
    in_ram = SparseIndex.load(saved)
    # postings are read per query with pread (nothing stays mapped); the small indptr is mapped
    assert isinstance(mapped._data, FileArray) and mapped._data.path.name == "data.csc.index.npy"
    assert isinstance(mapped._indices, FileArray) and mapped._indices.path.name == "indices.csc.index.npy"
    assert is_mapped(mapped._indptr)
    for name in ("_data", "_indices", "_indptr"):
        assert not is_mapped(getattr(in_ram, name)) and not isinstance(getattr(in_ram, name), FileArray), name
    assert isinstance(mapped._vocab, SortedVocab) and is_mapped(mapped._vocab.table)
    assert isinstance(in_ram._vocab, dict)


def test_mmap_index_saves_again(saved, corpus, tmp_path):
    mapped = SparseIndex.load(saved, mmap=True)
    mapped.save(tmp_path / "copy")
    assert isinstance(mapped.retriever.vocab_dict, SortedVocab)  # restored after bm25s wrote the JSON
    for flag in (False, True):
        again = SparseIndex.load(tmp_path / "copy", mmap=flag)
        np.testing.assert_array_equal(again.scores_batch(corpus[1]), mapped.scores_batch(corpus[1]))


def copy_folder(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


def test_a_folder_without_the_sorted_vocab_is_refused_with_mmap(saved, corpus, tmp_path):
    old = copy_folder(saved, tmp_path / "old")
    (old / SORTED_VOCAB_FILE).unlink()
    with pytest.raises(IndexFormatError, match=f"{SORTED_VOCAB_FILE} is missing.*rebuild with `ragnet index`"):
        SparseIndex.load(old, mmap=True)
    mapped = SparseIndex.load(saved, mmap=True)
    assert isinstance(mapped._data, FileArray) and isinstance(mapped._vocab, SortedVocab)
    in_ram = SparseIndex.load(saved)
    assert [mapped.token_ids(q) for q in corpus[1]] == [in_ram.token_ids(q) for q in corpus[1]]
    np.testing.assert_array_equal(mapped.scores_batch(corpus[1]), in_ram.scores_batch(corpus[1]))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "not_a_table", "wrong_length"])
def test_corrupt_sorted_vocab_is_an_index_format_error(saved, tmp_path, damage):
    folder = copy_folder(saved, tmp_path / "bad")
    path = folder / SORTED_VOCAB_FILE
    if damage == "garbage":
        path.write_bytes(b"not a numpy file at all")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "not_a_table":
        np.save(path, np.arange(10), allow_pickle=False)
    else:
        SortedVocab.from_dict({"only": 0, "two": 1}).save(path)
    with pytest.raises(IndexFormatError, match=SORTED_VOCAB_FILE):
        SparseIndex.load(folder, mmap=True)
    assert len(SparseIndex.load(folder)) == 300  # the in-RAM path reads vocab.index.json, not the table


def test_missing_vocab_files_are_an_index_format_error(saved, tmp_path):
    folder = copy_folder(saved, tmp_path / "bare")
    (folder / SORTED_VOCAB_FILE).unlink()
    (folder / VOCAB_FILE).unlink()
    with pytest.raises(IndexFormatError, match=SORTED_VOCAB_FILE):
        SparseIndex.load(folder, mmap=True)
    with pytest.raises(IndexFormatError, match="missing or unreadable"):
        SparseIndex.load(folder)
    (folder / "data.csc.index.npy").unlink()
    with pytest.raises(IndexFormatError, match="missing or unreadable"):
        SparseIndex.load(folder, mmap=True)


def test_table_ids_outside_the_matrix_are_an_index_format_error(saved, tmp_path):
    folder = copy_folder(saved, tmp_path / "ids")
    table = np.load(folder / SORTED_VOCAB_FILE)
    table["id"] += 10_000
    np.save(folder / SORTED_VOCAB_FILE, table)
    with pytest.raises(IndexFormatError, match=SORTED_VOCAB_FILE):  # range-checked once, at load
        SparseIndex.load(folder, mmap=True)


def test_sorted_vocab_lookup_edge_cases():
    vocab = SortedVocab.from_dict({"abc": 0, "café": 1, "東京": 2, "": 3})
    assert vocab.lookup(["abcd", "ab", "abc"]) == [0]  # a longer word is not truncated into a false hit
    assert vocab.lookup(["東京", "café", "cafe", "zzz", "東京"]) == [2, 1, 2]
    assert "café" in vocab and "cafe" not in vocab and vocab["東京"] == 2 and 3 not in vocab
    with pytest.raises(KeyError):
        vocab["nope"]
    assert sorted(vocab) == sorted(["abc", "café", "東京", ""]) and len(vocab) == 4
    assert SortedVocab.from_dict({}).lookup(["x"]) == [] and len(SortedVocab.from_dict({})) == 0


def test_mmap_load_of_a_bm25s_built_index(whole, corpus, tmp_path):
    whole.save(tmp_path / "built")
    mapped = SparseIndex.load(tmp_path / "built", mmap=True)
    assert isinstance(mapped._data, FileArray) and isinstance(mapped._vocab, SortedVocab)
    assert [mapped.token_ids(q) for q in corpus[1]] == [whole.token_ids(q) for q in corpus[1]]
    np.testing.assert_array_equal(mapped.scores_batch(corpus[1]), whole.scores_batch(corpus[1]))
