"""Sharded BM25 build: tokenise shards anywhere, merge with corpus-wide statistics.

``tokenize_shard`` turns a list of texts into ``ShardCounts`` (plain NumPy arrays and a
list of terms, cheap to send back from a process or a Ray task). ``merge`` unites the
shards' vocabularies, computes document frequencies, the document count and the average
document length over the whole corpus, and assembles the CSC score matrix column by
column, shard by shard (NumPy only, no per-document dicts). The result scores every query
exactly as ``SparseIndex.build`` on the concatenated texts does (bm25s 0.3, Lucene):

    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))          rounded to float32
    score(d, t) = idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))   in float64, stored float32

where ``|d|`` counts a document's tokens after stopword removal. Vocabulary ids follow
first appearance across shards, not bm25s's order; only ids differ, never scores.

Example:
    >>> shards = [tokenize_shard(["Paris is in France."]), tokenize_shard(["Berlin, Germany.", "Rome"])]
    >>> index = merge(shards)
    >>> len(index), int(index.top("Germany", 1)[0][0])
    (3, 1)
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ragnet.index.sparse import (
    TOKEN_PATTERN,
    SparseIndex,
    _bm25s,
    _empty_scores,
    _stemmer,
    default_stemmer_name,
)


@dataclass(frozen=True)
class ShardCounts:
    """Term counts of one shard of documents, in row order.

    Entry ``j`` says that document ``d`` (the one with ``doc_ptr[d] <= j < doc_ptr[d + 1]``)
    contains term ``terms[term_ids[j]]`` ``tfs[j]`` times.

    Attributes:
        terms: the shard's distinct terms (stopwords removed, stemmed); local id = position.
        doc_lengths: ``int64 (n_docs,)`` tokens per document after stopword removal.
        doc_ptr: ``int64 (n_docs + 1,)`` entry offsets of each document.
        term_ids: ``int32 (n_entries,)`` local term id of each entry, ascending within a document.
        tfs: ``int32 (n_entries,)`` term frequency of each entry.
        stemmer: the PyStemmer language used, or None.
    """

    terms: list[str]
    doc_lengths: np.ndarray
    doc_ptr: np.ndarray
    term_ids: np.ndarray
    tfs: np.ndarray
    stemmer: str | None

    def __len__(self) -> int:
        return len(self.doc_lengths)

    def check(self) -> None:
        """Raise ``ValueError`` when the arrays do not fit together (e.g. a shard garbled in transit)."""
        n, e = len(self.doc_lengths), len(self.term_ids)
        ok = (
            self.doc_ptr.shape == (n + 1,) and len(self.tfs) == e and int(self.doc_ptr[0]) == 0
            and int(self.doc_ptr[-1]) == e and bool(np.all(np.diff(self.doc_ptr) >= 0))
            and (e == 0 or (int(self.term_ids.min()) >= 0 and int(self.term_ids.max()) < len(self.terms)))
            and (e == 0 or int(self.tfs.min()) >= 1)
        )
        if not ok:
            raise ValueError(
                f"inconsistent ShardCounts: {n} documents, doc_ptr of shape {self.doc_ptr.shape}, "
                f"{e} term ids, {len(self.tfs)} frequencies, {len(self.terms)} terms"
            )


def tokenize_shard(texts: Iterable[str], stemmer: str | None = "auto") -> ShardCounts:
    """Count the terms of each text, tokenised as ``bm25s.tokenize`` does for ``SparseIndex.build``.

    Args:
        texts: the shard's documents, in row order.
        stemmer: ``"auto"`` (English if PyStemmer is installed), a PyStemmer language, or None.

    Example:
        >>> counts = tokenize_shard(["The cat saw the cat.", "the of and"], stemmer=None)
        >>> counts.terms, counts.doc_lengths.tolist(), counts.doc_ptr.tolist(), counts.tfs.tolist()
        (['cat', 'saw'], [3, 0], [0, 2, 2], [2, 1])
    """
    name = default_stemmer_name() if stemmer == "auto" else stemmer
    stem = _stemmer(name)
    split = re.compile(TOKEN_PATTERN).findall
    stopwords = frozenset(_bm25s().stopwords.STOPWORDS_EN)
    word_ids: dict[str, int] = {}  # the shard's distinct words, before stemming
    tokens = array("i")
    lengths = array("q")
    for text in texts:
        ids = [word_ids.setdefault(w, len(word_ids)) for w in split(text.lower()) if w not in stopwords]
        tokens.extend(ids)
        lengths.append(len(ids))
    words = list(word_ids)
    del word_ids
    stems = stem.stemWords(words) if stem is not None and words else words
    term_ids: dict[str, int] = {}
    word_to_term = np.fromiter((term_ids.setdefault(s, len(term_ids)) for s in stems), dtype=np.int64, count=len(stems))
    n_docs, n_terms = len(lengths), max(len(term_ids), 1)
    doc_lengths = np.frombuffer(lengths, dtype=np.int64).copy() if n_docs else np.zeros(0, dtype=np.int64)
    token_terms = word_to_term[np.frombuffer(tokens, dtype=np.int32)] if len(tokens) else np.zeros(0, np.int64)
    # one key per token, (document, term) packed; unique keys sort by document, then term
    keys = np.repeat(np.arange(n_docs, dtype=np.int64), doc_lengths) * n_terms + token_terms
    keys, tfs = np.unique(keys, return_counts=True)
    doc_ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n_terms, minlength=n_docs), out=doc_ptr[1:])
    return ShardCounts(
        terms=list(term_ids),
        doc_lengths=doc_lengths,
        doc_ptr=doc_ptr,
        term_ids=(keys % n_terms).astype(np.int32),
        tfs=tfs.astype(np.int32),
        stemmer=name,
    )


def merge(shards: Sequence[ShardCounts], stemmer: str | None = "auto") -> SparseIndex:
    """Build the index of the concatenated shards (in the order given) with global statistics.

    Two passes over the shards: the first unites vocabularies and sums document frequencies
    and lengths; the second scores each shard's entries and scatters them into their CSC
    columns (a counting sort, so rows stay ascending within a column). Peak memory is the
    output matrix plus one shard's temporaries.

    Args:
        shards: ``tokenize_shard`` results, in row order; all with the same stemmer.
        stemmer: the stemmer the shards must have been tokenised with (a PyStemmer language
            or None); ``"auto"`` takes the one they record.

    Raises:
        ValueError: no shards, shards with different stemmers (or not ``stemmer``), or
            inconsistent arrays.

    Example:
        >>> index = merge([tokenize_shard(["a cat"], None), tokenize_shard(["a dog", "cat dog"], None)])
        >>> whole = SparseIndex.build(["a cat", "a dog", "cat dog"], show_progress=False, stemmer=None)
        >>> len(index), bool(np.array_equal(index.scores("dog cat"), whole.scores("dog cat")))
        (3, True)
    """
    shards = list(shards)
    if not shards:
        raise ValueError("merge needs at least one shard (an empty shard is tokenize_shard([]))")
    stemmers = {s.stemmer for s in shards}
    if len(stemmers) > 1:
        raise ValueError(f"shards were tokenised with different stemmers: {sorted(map(str, stemmers))}")
    if stemmer != "auto" and stemmers != {stemmer}:
        raise ValueError(f"shards were tokenised with stemmer {stemmers.pop()!r}, not {stemmer!r}")
    for s in shards:
        s.check()
    bm25s = _bm25s()
    retriever = bm25s.BM25()
    if retriever.method != "lucene" or retriever.idf_method != "lucene":
        raise ValueError(f"merge reproduces bm25s's Lucene scoring only, not {retriever.method!r}")
    k1, b = retriever.k1, retriever.b
    retriever.nonoccurrence_array = None  # what index() sets for Lucene; save() reads it

    # pass 1: vocabulary, document frequencies, N, average length
    vocab: dict[str, int] = {}
    local_to_global = []
    for s in shards:
        local_to_global.append(
            np.fromiter((vocab.setdefault(t, len(vocab)) for t in s.terms), dtype=np.int64, count=len(s.terms))
        )
    n_terms = len(vocab)
    n_docs = sum(len(s) for s in shards)
    if n_docs >= 2**31:
        raise ValueError(f"{n_docs} documents do not fit bm25s's int32 row indices")
    if n_terms == 0:  # every text was stopwords/punctuation, as in ``SparseIndex.build``
        retriever.scores = _empty_scores(n_docs)
        retriever.vocab_dict = {}
        return SparseIndex(retriever, stemmers.pop())
    df = np.zeros(n_terms, dtype=np.int64)
    total_length = 0
    for s, l2g in zip(shards, local_to_global):
        df += np.bincount(l2g[s.term_ids], minlength=n_terms)
        total_length += int(s.doc_lengths.sum())
    # bm25s: np.array(lengths).mean() (exact integer sum in float64, then one division)
    avgdl = np.float64(total_length) / n_docs
    # bm25s computes idf with math.log per term; idf depends on df only, so once per distinct df
    distinct, which = np.unique(df, return_inverse=True)
    idf = np.array([math.log(1 + (n_docs - d + 0.5) / (d + 0.5)) for d in distinct.tolist()],
                   dtype=retriever.dtype)[which]

    # pass 2: scores, scattered into CSC columns
    dtype = np.dtype(retriever.dtype)
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    heads = indptr[:-1].copy()  # next free slot of each column
    data = np.empty(int(indptr[-1]), dtype=dtype)
    indices = np.empty(int(indptr[-1]), dtype=np.dtype(retriever.int_dtype))
    row0 = 0
    for s, l2g in zip(shards, local_to_global):
        per_doc = np.diff(s.doc_ptr)
        cols = l2g[s.term_ids]
        # same float64 operations in the same order as bm25s's _score_tfc_lucene, then idf (float32) *
        norm = np.repeat(k1 * ((1 - b) + b * s.doc_lengths.astype(np.float64) / avgdl), per_doc)
        tf = s.tfs.astype(np.float64)
        values = (idf[cols] * (tf / (norm + tf))).astype(dtype)
        rows = np.repeat(np.arange(row0, row0 + len(s), dtype=np.int64), per_doc)
        order = np.argsort(cols, kind="stable")  # stable: rows stay ascending within a column
        cols = cols[order]
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]]) if cols.size else np.zeros(0, np.int64)
        runs = np.diff(np.r_[starts, cols.size])
        slots = heads[cols] + (np.arange(cols.size) - np.repeat(starts, runs))
        data[slots] = values[order]
        indices[slots] = rows[order]
        heads[cols[starts]] += runs
        row0 += len(s)
    vocab[""] = n_terms  # bm25s's index() adds the empty token after the last column
    retriever.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
    retriever.vocab_dict = vocab
    retriever.unique_token_ids_set = set(vocab.values())
    return SparseIndex(retriever, stemmers.pop())


def build_sharded(shards: Iterable[Sequence[str]], stemmer: str | None = "auto") -> SparseIndex:
    """Index a corpus given as consecutive shards; scores equal ``SparseIndex.build`` on the
    concatenation.

    Each shard is tokenised on its own (:func:`tokenize_shard`), then the counts are merged
    with corpus-wide document frequencies and average length (:func:`merge`). Tokenise
    shards elsewhere (processes, Ray tasks) and call ``merge`` directly to parallelise.

    Args:
        shards: lists of texts, in row order (empty shards are allowed).
        stemmer: ``"auto"`` (English if PyStemmer is installed), a PyStemmer language, or None.

    Example:
        >>> shards = [["Paris is in France."], [], ["Berlin is in Germany."]]
        >>> index = build_sharded(shards, stemmer=None)
        >>> len(index), int(index.top("Germany", 1)[0][0])
        (2, 1)
    """
    counts = [tokenize_shard(shard, stemmer) for shard in shards]
    return merge(counts or [tokenize_shard([], stemmer)])
