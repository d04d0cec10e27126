"""BM25 keyword scoring with bm25s (Lucene variant, k1=1.5, b=0.75).

Documents are tokenised with ``bm25s.tokenize``: lowercase, ``\\b\\w\\w+\\b`` words, English
stopwords removed, and Snowball English stemming when PyStemmer is installed. Queries
go through an equivalent but leaner tokenizer (no progress bars, no vocab building), so
a query costs a few microseconds before scoring.

Persistence is bm25s's native ``save`` (NumPy ``.npy`` arrays written with
``allow_pickle=False`` plus JSON vocab/params; no corpus copy) and a small
``tokenizer.json`` recording the tokenisation, so a loaded index tokenises queries the
same way it tokenised documents.

Example:
    >>> bm25 = SparseIndex.build(["Paris is in France.", "Berlin is in Germany."], show_progress=False)
    >>> rows, scores = bm25.top("capital of France", 1)
    >>> int(rows[0])
    0
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragnet.errors import IndexFormatError, MissingDependencyError, require

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
TOKENIZER_FILE = "tokenizer.json"


def _bm25s():
    return require("bm25s", purpose="BM25 keyword search")


def _stemmer(name: str | None) -> Any:
    """A PyStemmer stemmer for ``name`` (None -> no stemming)."""
    if name is None:
        return None
    try:
        import Stemmer  # PyStemmer
    except ImportError as exc:
        raise MissingDependencyError(
            f"this index was built with the PyStemmer {name!r} stemmer, which is not installed; "
            "run: pip install PyStemmer (or rebuild the index without it)"
        ) from exc
    return Stemmer.Stemmer(name)


def default_stemmer_name() -> str | None:
    """``"english"`` when PyStemmer is importable, else None (no stemming)."""
    try:
        import Stemmer  # noqa: F401
    except ImportError:
        return None
    return "english"


class SparseIndex:
    """A bm25s index plus the query tokenizer that matches its vocabulary.

    Args:
        retriever: a fitted ``bm25s.BM25``.
        stemmer: PyStemmer language name used at build time, or None.
    """

    def __init__(self, retriever: Any, stemmer: str | None = None) -> None:
        self.retriever = retriever
        self.stemmer_name = stemmer
        self._stemmer = _stemmer(stemmer)
        self._split = re.compile(TOKEN_PATTERN).findall
        self._stopwords = frozenset(_bm25s().stopwords.STOPWORDS_EN)
        self._vocab: dict[str, int] = dict(retriever.vocab_dict or {})
        s = retriever.scores
        self._data = np.asarray(s["data"])
        self._indices = np.asarray(s["indices"])
        self._indptr = np.asarray(s["indptr"])
        self._num_docs = int(s["num_docs"])
        self._dtype = np.dtype(retriever.dtype)

    def __len__(self) -> int:
        return self._num_docs

    # -- building ----------------------------------------------------------------------
    @classmethod
    def build(cls, texts: Sequence[str], show_progress: bool = True, stemmer: str | None = "auto") -> "SparseIndex":
        """Tokenise and index ``texts``.

        Args:
            texts: one text per document (row order is kept).
            show_progress: show bm25s's progress bars.
            stemmer: ``"auto"`` (English if PyStemmer is installed), a PyStemmer language, or None.

        Example:
            >>> len(SparseIndex.build(["a cat", "a dog"], show_progress=False))
            2
        """
        bm25s = _bm25s()
        name = default_stemmer_name() if stemmer == "auto" else stemmer
        tokenized = bm25s.tokenize(
            list(texts), stopwords="en", stemmer=_stemmer(name), show_progress=show_progress, return_ids=True
        )
        retriever = bm25s.BM25()
        if tokenized.vocab:
            retriever.index(tokenized, show_progress=show_progress)
        else:  # every text is stopwords/punctuation: an index that scores everything 0
            retriever.scores = {
                "data": np.zeros(0, dtype=np.float32),
                "indices": np.zeros(0, dtype=np.int32),
                "indptr": np.zeros(1, dtype=np.int32),
                "num_docs": len(tokenized.ids),
            }
            retriever.vocab_dict = {}
        return cls(retriever, name)

    # -- querying ----------------------------------------------------------------------
    def tokenize(self, query: str) -> list[str]:
        """Query terms exactly as ``bm25s.tokenize`` would produce them (stopwords removed, stemmed).

        Example:
            >>> SparseIndex.build(["x y"], show_progress=False).tokenize("The Eiffel tower")
            ['eiffel', 'tower']
        """
        words = [w for w in self._split(query.lower()) if w not in self._stopwords]
        if self._stemmer is not None and words:
            words = self._stemmer.stemWords(words)
        return words

    def token_ids(self, query: str) -> list[int]:
        """Vocabulary ids of the query's terms (unknown terms dropped; repeats kept, as in bm25s)."""
        vocab = self._vocab
        return [vocab[w] for w in self.tokenize(query) if w in vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float32, length ``len(self)``).

        Same values as ``bm25s.BM25.get_scores`` (summing each term's precomputed column).
        """
        out = np.zeros(self._num_docs, dtype=self._dtype)
        data, indices, indptr = self._data, self._indices, self._indptr
        for t in self.token_ids(query):
            start, end = indptr[t], indptr[t + 1]
            # a column lists each document at most once, so plain fancy-index add is exact
            out[indices[start:end]] += data[start:end]
        return out

    def scores_batch(self, queries: Sequence[str]) -> np.ndarray:
        """``(len(queries), len(self))`` score matrix."""
        if not queries:
            return np.zeros((0, self._num_docs), dtype=self._dtype)
        return np.stack([self.scores(q) for q in queries])

    def top(self, query: str, n: int, scores: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The up-to-``n`` documents with positive score, best first (ties: lower row first).

        Args:
            query: the query (ignored when ``scores`` is given).
            n: how many.
            scores: a precomputed ``self.scores(query)``.

        Returns:
            ``(rows, scores)`` as int64 and float32 arrays.
        """
        s = self.scores(query) if scores is None else scores
        return top_positive(s, n)

    # -- persistence -------------------------------------------------------------------
    def save(self, folder: str | os.PathLike) -> None:
        """Write bm25s's native files plus ``tokenizer.json`` into ``folder`` (no pickle).

        Call it inside a temporary directory that is renamed into place afterwards
        (``ragnet._atomic.atomic_dir``): bm25s writes file by file.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.retriever.save(str(folder), corpus=None, allow_pickle=False, show_progress=False)
        spec = {"lower": True, "token_pattern": TOKEN_PATTERN, "stopwords": "en", "stemmer": self.stemmer_name}
        (folder / TOKENIZER_FILE).write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "SparseIndex":
        """Read what ``save`` wrote.

        Raises:
            IndexFormatError: files missing or unreadable.
        """
        folder = Path(folder)
        try:
            spec = json.loads((folder / TOKENIZER_FILE).read_text(encoding="utf-8"))
            retriever = _bm25s().BM25.load(
                str(folder), load_corpus=False, mmap=False, allow_pickle=False, show_progress=False
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            # TypeError/AttributeError: files that parse but are not bm25s's (e.g. params replaced by {})
            raise IndexFormatError(f"BM25 files in {folder} are missing or unreadable ({type(exc).__name__}: {exc}); "
                                   "rebuild with `ragnet index`") from exc
        if spec.get("token_pattern") != TOKEN_PATTERN or spec.get("stopwords") != "en":
            raise IndexFormatError(f"BM25 tokenizer settings in {folder / TOKENIZER_FILE} are not supported: {spec}")
        try:
            return cls(retriever, spec.get("stemmer"))
        except (KeyError, TypeError, ValueError) as exc:  # arrays or params that are not bm25s's
            raise IndexFormatError(f"BM25 files in {folder} are missing or unreadable ({type(exc).__name__}: {exc}); "
                                   "rebuild with `ragnet index`") from exc


def top_positive(scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the ``n`` largest positive entries of ``scores``, best first, ties by lower row.

    Example:
        >>> top_positive(np.array([0.0, 2.0, 1.0, 2.0], dtype=np.float32), 2)[0].tolist()
        [1, 3]
    """
    positive = np.flatnonzero(scores > 0)
    if n <= 0 or positive.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=scores.dtype)
    if positive.size > n:
        vals = scores[positive]
        part = np.argpartition(-vals, n - 1)[:n]
        threshold = vals[part].min()
        # Everything strictly above the n-th value, then the lowest rows among its ties,
        # so the result does not depend on argpartition's arbitrary tie order.
        above = positive[vals > threshold]
        ties = positive[vals == threshold][: n - above.size]
        positive = np.concatenate([above, ties])
    vals = scores[positive]
    order = np.lexsort((positive, -vals))
    rows = positive[order].astype(np.int64)
    return rows, scores[rows]
