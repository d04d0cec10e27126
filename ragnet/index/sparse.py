"""BM25 keyword scoring with bm25s (Lucene variant, k1=1.5, b=0.75).

Documents are tokenised with ``bm25s.tokenize``: lowercase, ``\\b\\w\\w+\\b`` words, English
stopwords removed, and Snowball English stemming when PyStemmer is installed. Queries
go through an equivalent but leaner tokenizer (no progress bars, no vocab building), so
a query costs a few microseconds before scoring.

Persistence is bm25s's native ``save`` (NumPy ``.npy`` arrays written with
``allow_pickle=False`` plus JSON vocab/params; no corpus copy), a small
``tokenizer.json`` recording the tokenisation, so a loaded index tokenises queries the
same way it tokenised documents, and ``vocab.sorted.index.npy``: the vocabulary as a
sorted ``(term bytes, id)`` table. ``load(folder, mmap=True)`` memory-maps the score
arrays and that table, so neither the CSC matrix nor a ``term -> id`` dict is read into
RAM; a query then reads its
terms' posting lists with ``pread`` (:mod:`ragnet.index.file_array`), so they do not pile up in
the process's resident memory.

Large corpora can be indexed shard by shard (``ragnet.index.sparse_shards.build_sharded``, or
``ragnet.index.sparse_shards`` to tokenise shards elsewhere) with the same scores as
``build`` on the concatenation.

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
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragnet.errors import IndexFormatError, MissingDependencyError, require
from ragnet.index.file_array import file_backed

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
TOKENIZER_FILE = "tokenizer.json"
VOCAB_FILE = "vocab.index.json"  # bm25s's own name
SORTED_VOCAB_FILE = "vocab.sorted.index.npy"


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


class SortedVocab(Mapping):
    """Read-only ``term -> id`` mapping over a table of terms sorted by their UTF-8 bytes.

    The table is a 1-D structured array with fields ``term`` (``S<n>``, sorted) and ``id``
    (``int32``); lookups are ``np.searchsorted``, so a memory-mapped table costs almost no
    RAM however large the vocabulary. It stands in for bm25s's ``vocab_dict``.

    Args:
        table: the structured array (a ``np.memmap`` or in memory).
        source: the file it came from, named in errors.

    Example:
        >>> vocab = SortedVocab.from_dict({"tower": 0, "eiffel": 1})
        >>> vocab["tower"], "paris" in vocab, vocab.lookup(["eiffel", "paris", "tower"])
        (0, False, [1, 0])
    """

    def __init__(self, table: np.ndarray, source: str | os.PathLike | None = None) -> None:
        if table.ndim != 1 or table.dtype.names != ("term", "id") or table.dtype["term"].kind != "S" \
                or table.dtype["id"].kind not in "iu":
            raise IndexFormatError(f"{source or 'vocabulary table'} is not a sorted vocabulary table "
                                   f"(dtype {table.dtype}, shape {table.shape}); rebuild with `ragnet index`")
        self._terms = table["term"]
        self._ids = table["id"]
        self._width = table.dtype["term"].itemsize
        self.table = table
        self.source = source

    @classmethod
    def from_dict(cls, vocab: Mapping[str, int]) -> "SortedVocab":
        """The table for a ``term -> id`` mapping (kept in memory)."""
        terms = [t.encode("utf-8") for t in vocab]
        width = max(1, max(map(len, terms), default=1))
        table = np.empty(len(terms), dtype=[("term", f"S{width}"), ("id", "<i4")])
        table["term"] = terms
        table["id"] = np.fromiter(vocab.values(), dtype=np.int64, count=len(terms))
        return cls(table[np.argsort(table["term"], kind="stable")])

    @classmethod
    def load(cls, path: str | os.PathLike, mmap: bool = True) -> "SortedVocab":
        """Read a table written by ``save`` (memory-mapped unless ``mmap=False``).

        Raises:
            IndexFormatError: the file is missing, truncated or not such a table.
        """
        try:
            table = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise IndexFormatError(f"BM25 vocabulary table {path} is missing or unreadable "
                                   f"({type(exc).__name__}: {exc}); rebuild with `ragnet index`") from exc
        return cls(table, path)

    def save(self, path: str | os.PathLike) -> None:
        """Write the table as one ``.npy`` file (no pickle)."""
        np.save(path, np.asarray(self.table), allow_pickle=False)

    def lookup(self, terms: Sequence[str]) -> list[int]:
        """Ids of ``terms`` in order, unknown terms dropped (one vectorised search)."""
        if not terms or not len(self._terms):
            return []
        keys = [t.encode("utf-8") for t in terms]
        fits = [len(k) <= self._width for k in keys]  # longer keys would be truncated into false hits
        if not all(fits):
            keys = [k for k, ok in zip(keys, fits) if ok]
            if not keys:
                return []
        query = np.array(keys, dtype=self._terms.dtype)
        pos = np.minimum(np.searchsorted(self._terms, query), len(self._terms) - 1)
        found = self._terms[pos] == query
        return [int(i) for i in self._ids[pos[found]]]

    def __getitem__(self, term: str) -> int:
        ids = self.lookup([term]) if isinstance(term, str) else []
        if not ids:
            raise KeyError(term)
        return ids[0]

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and bool(self.lookup([term]))

    def __len__(self) -> int:
        return len(self._terms)

    def __iter__(self) -> Iterator[str]:
        return (bytes(t).decode("utf-8") for t in self._terms)

    def to_dict(self) -> dict[str, int]:
        """A plain ``term -> id`` dict (what bm25s writes to ``vocab.index.json``)."""
        return {bytes(t).decode("utf-8"): int(i) for t, i in zip(self._terms, self._ids)}


def _empty_scores(num_docs: int) -> dict[str, Any]:
    """bm25s ``scores`` of an index with no terms (every text was stopwords/punctuation)."""
    return {
        "data": np.zeros(0, dtype=np.float32),
        "indices": np.zeros(0, dtype=np.int32),
        "indptr": np.zeros(1, dtype=np.int32),
        "num_docs": num_docs,
    }


class SparseIndex:
    """A bm25s index plus the query tokenizer that matches its vocabulary.

    Args:
        retriever: a fitted ``bm25s.BM25``; its ``vocab_dict`` is a dict or, for an index
            loaded with ``mmap=True``, a ``SortedVocab``, and its score arrays may be memory-mapped.
        stemmer: PyStemmer language name used at build time, or None.
    """

    def __init__(self, retriever: Any, stemmer: str | None = None) -> None:
        self.retriever = retriever
        self.stemmer_name = stemmer
        self._stemmer = _stemmer(stemmer)
        self._split = re.compile(TOKEN_PATTERN).findall
        self._stopwords = frozenset(_bm25s().stopwords.STOPWORDS_EN)
        vocab = retriever.vocab_dict
        # shared with the retriever, not copied: at a million passages it is hundreds of MB
        self._vocab: Mapping[str, int] = vocab if vocab is not None else {}
        s = retriever.scores
        # Memory-mapped posting lists are read with pread (ragnet.index.file_array), so the pages
        # a query touches do not stay in this process's resident memory; indptr is small.
        self._data = file_backed(s["data"])
        self._indices = file_backed(s["indices"])
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
            retriever.scores = _empty_scores(len(tokenized.ids))
            retriever.vocab_dict = {}
            retriever.nonoccurrence_array = None  # what index() sets for Lucene; save() reads it
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
        if isinstance(vocab, SortedVocab):
            return vocab.lookup(self.tokenize(query))  # ids range-checked at load
        return [vocab[w] for w in self.tokenize(query) if w in vocab]

    def _columns(self, query: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(rows, impacts)``: the posting list of each query term, in query order (a repeated
        term twice, as bm25s counts it)."""
        data, indices, indptr = self._data, self._indices, self._indptr
        cols = []
        for t in self.token_ids(query):
            start, end = int(indptr[t]), int(indptr[t + 1])
            if end > start:
                cols.append((np.asarray(indices[start:end]), np.asarray(data[start:end])))
        return cols

    def _sum(self, cols: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        out = np.zeros(self._num_docs, dtype=self._dtype)
        for rows, impacts in cols:
            # a column lists each document at most once, so plain fancy-index add is exact
            out[rows] += impacts
        return out

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float32, length ``len(self)``).

        Same values as ``bm25s.BM25.get_scores`` (summing each term's precomputed column).
        """
        return self._sum(self._columns(query))

    def top_and_scores_at(self, query: str, n: int, rows: np.ndarray | None = None,
                          within: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``top(query, n)`` and ``scores(query)[rows]`` in one pass, exact, without selecting
        among every scored document.

        Selecting the top ``n`` of a million scores costs more than scoring them. The ``n``-th
        best score of any set of documents is at most the ``n``-th best overall, so the
        documents of the query's rarest terms (a few hundred, most likely to score highest)
        give a threshold, and only documents scoring at least that (a few hundred at a million
        passages) are ranked. Same rows, ties and values as ``top_positive(scores(query), n)``.

        Args:
            query: the query.
            n: how many top documents (positive score only, best first, ties by lower row).
            rows: documents whose scores are also wanted (e.g. the dense candidates).
            within: when given, the top is drawn from these documents only (distinct rows: a
                scope), ranked among them directly.

        Returns:
            ``(top rows, top scores, scores at rows)``.

        Example:
            >>> bm25 = SparseIndex.build(["Paris is in France.", "Berlin is in Germany.", "France and Germany"],
            ...                          show_progress=False)
            >>> top, vals, at = bm25.top_and_scores_at("France", 1, rows=np.array([1, 2]))
            >>> top.tolist(), at.tolist() == bm25.scores("France")[[1, 2]].tolist()
            ([0], True)
            >>> bm25.top_and_scores_at("France", 1, within=np.array([1, 2]))[0].tolist()
            [2]
        """
        wanted = np.zeros(0, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
        cols = self._columns(query)
        scores = self._sum(cols)
        if within is not None:
            within = np.asarray(within, dtype=np.int64)
            top_rows, top_scores = top_positive(scores[within], n, rows=within)
            return top_rows, top_scores, scores[wanted]
        threshold = 0.0
        if n > 0:
            probe, cap = np.zeros(0, dtype=np.int64), max(4 * n, 1024)
            for col_rows, impacts in sorted(cols, key=lambda col: len(col[0])):  # rarest terms first
                if len(col_rows) > cap:  # any subset gives a valid bound; keep it small, and likely high
                    col_rows = col_rows[np.argpartition(impacts, len(impacts) - cap)[-cap:]]
                probe = np.union1d(probe, col_rows)
                if probe.size >= n:
                    threshold = float(np.partition(scores[probe], probe.size - n)[probe.size - n])
                    break
        cand = np.flatnonzero(scores >= threshold) if threshold > 0 else np.flatnonzero(scores > 0)
        top_rows, top_scores = top_positive(scores[cand], n, rows=cand)
        return top_rows, top_scores, scores[wanted]

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
        if scores is not None:
            return top_positive(scores, n)
        top_rows, top_scores, _ = self.top_and_scores_at(query, n)
        return top_rows, top_scores

    # -- persistence -------------------------------------------------------------------
    def save(self, folder: str | os.PathLike) -> None:
        """Write bm25s's native files, ``vocab.sorted.index.npy`` and ``tokenizer.json`` (no pickle).

        ``bm25s.BM25.load`` reads the folder too. Call it inside a temporary directory that is
        renamed into place afterwards (``ragnet._atomic.atomic_dir``): bm25s writes file by file.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        vocab = self.retriever.vocab_dict
        if isinstance(vocab, SortedVocab):  # bm25s writes vocab.index.json from a real dict
            table = vocab
            self.retriever.vocab_dict = vocab.to_dict()
        else:
            table = SortedVocab.from_dict(vocab or {})
        try:
            self.retriever.save(str(folder), corpus=None, allow_pickle=False, show_progress=False)
        finally:
            self.retriever.vocab_dict = vocab
        table.save(folder / SORTED_VOCAB_FILE)
        spec = {"lower": True, "token_pattern": TOKEN_PATTERN, "stopwords": "en", "stemmer": self.stemmer_name}
        (folder / TOKENIZER_FILE).write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: str | os.PathLike, mmap: bool = False, count: int | None = None) -> "SparseIndex":
        """Read what ``save`` wrote.

        The files are untrusted: ``params.index.json`` is checked before bm25s reads it, each
        array's header against its file's size before it is mapped or read, and every id (document
        rows, vocabulary ids) is range-checked here, once, so a query never meets one that points
        nowhere.

        Args:
            folder: the folder ``save`` wrote.
            mmap: memory-map the score arrays and the sorted vocabulary table instead of
                reading them (and ``vocab.index.json``) into RAM; scores are identical.
            count: the number of documents the index must cover (the index's chunk count), if known.

        Raises:
            IndexFormatError: files missing, unreadable or inconsistent (one line naming the file).

        Example:
            >>> import tempfile
            >>> folder = tempfile.mkdtemp()
            >>> SparseIndex.build(["Paris is in France."], show_progress=False).save(folder)
            >>> SparseIndex.load(folder, mmap=True).token_ids("France") == SparseIndex.load(folder).token_ids("France")
            True
        """
        folder = Path(folder)
        num_docs = _check_params(folder, count)
        shapes = _check_array_headers(folder)
        try:
            spec = json.loads((folder / TOKENIZER_FILE).read_text(encoding="utf-8"))
            retriever = _bm25s().BM25.load(
                str(folder), load_corpus=False, load_vocab=not mmap, mmap=mmap, allow_pickle=False,
                show_progress=False,
            )
            if mmap:
                retriever.vocab_dict = _load_sorted_vocab(folder, shapes[INDPTR] - 1)
                # bm25s only tests ids for membership; they are 0..n-1, and a range costs nothing
                retriever.unique_token_ids_set = range(len(retriever.vocab_dict))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError) as exc:
            # TypeError/AttributeError: files that parse but are not bm25s's (e.g. params replaced by {})
            raise IndexFormatError(f"BM25 files in {folder} are missing or unreadable ({type(exc).__name__}: "
                                   f"{_one_line(exc)}); rebuild with `ragnet index`") from exc
        if not isinstance(spec, dict) or spec.get("token_pattern") != TOKEN_PATTERN or spec.get("stopwords") != "en":
            raise IndexFormatError(f"BM25 tokenizer settings in {folder / TOKENIZER_FILE} are not supported: "
                                   f"{_one_line(repr(spec))}; rebuild with `ragnet index`")
        try:
            index = cls(retriever, spec.get("stemmer"))
        except (KeyError, TypeError, ValueError) as exc:  # arrays or params that are not bm25s's
            raise IndexFormatError(f"BM25 files in {folder} are missing or unreadable ({type(exc).__name__}: "
                                   f"{_one_line(exc)}); rebuild with `ragnet index`") from exc
        index._check_ids(folder, num_docs)
        return index

    def _check_ids(self, folder: Path, num_docs: int) -> None:
        """Range-check every id the files hold: posting-list bounds, document rows, vocabulary ids."""
        indptr, n_data = self._indptr, len(self._data)
        if indptr.ndim != 1 or indptr.dtype.kind not in "iu" or len(indptr) < 1 or int(indptr[0]) != 0 \
                or int(indptr[-1]) != n_data or len(self._indices) != n_data \
                or not bool(np.all(np.diff(indptr) >= 0)):
            raise _bad(folder, INDPTR, f"does not delimit the {n_data} scores in order")
        if self._indices.dtype.kind not in "iu":
            raise _bad(folder, INDICES, f"holds {self._indices.dtype}, not integer rows")
        for start in range(0, n_data, _ID_BLOCK):  # in blocks: a mapped file is read, not kept resident
            rows = np.asarray(self._indices[start: min(start + _ID_BLOCK, n_data)])
            if int(rows.min()) < 0 or int(rows.max()) >= num_docs:
                bad = int(rows.min()) if int(rows.min()) < 0 else int(rows.max())
                raise _bad(folder, INDICES, f"holds document row {bad}, outside 0..{num_docs - 1}")
        columns = len(indptr) - 1
        vocab = self._vocab
        if isinstance(vocab, SortedVocab):
            table = file_backed(vocab.table)
            blocks = (np.asarray(table[i: i + _ID_BLOCK]) for i in range(0, len(table), _ID_BLOCK))
            parts = ((part["id"], part["term"] == b"") for part in blocks)
            name = SORTED_VOCAB_FILE
        else:
            if not all(isinstance(t, str) and type(i) is int for t, i in vocab.items()):
                raise _bad(folder, VOCAB_FILE, "is not a table of terms and integer ids")
            ids = np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))
            parts = iter([(ids, np.fromiter((t == "" for t in vocab), dtype=bool, count=len(vocab)))])
            name = VOCAB_FILE
        for ids, empty in parts:
            # bm25s gives the empty token "" the id after the last column; a query never contains it
            if ids.size and (int(ids.min()) < 0 or int(ids[~empty].max(initial=-1)) >= columns
                             or int(ids[empty].max(initial=-1)) > columns):
                raise _bad(folder, name, f"maps a term to an id outside the {columns} columns of the score matrix")


def _load_sorted_vocab(folder: Path, columns: int) -> SortedVocab:
    """The memory-mapped vocabulary table of ``folder``."""
    vocab = SortedVocab.load(folder / SORTED_VOCAB_FILE, mmap=True)
    # bm25s adds the empty token "" after the last column, so n or n + 1 entries
    if len(vocab) not in (columns, columns + 1):
        raise IndexFormatError(f"BM25 vocabulary table {vocab.source} has {len(vocab)} terms but the score "
                               f"matrix has {columns} columns; rebuild with `ragnet index`")
    return vocab


DATA, INDICES, INDPTR, PARAMS = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy", "params.index.json"
FILES = (DATA, INDICES, INDPTR, PARAMS, VOCAB_FILE, SORTED_VOCAB_FILE, TOKENIZER_FILE)  # what save() writes
_ID_BLOCK = 1 << 22  # document rows range-checked per block at load


def _bad(folder: Path, name: str, what: str) -> IndexFormatError:
    return IndexFormatError(f"BM25 files in {folder} are missing or unreadable: {name} {what}; "
                            "rebuild with `ragnet index`")


def _one_line(text: Any, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)


def _check_params(folder: Path, count: int | None) -> int:
    """Check ``params.index.json`` before bm25s reads it (bm25s would import numba for
    ``"backend": "numba"``, or fail deep inside for a negative document count); returns
    ``num_docs``."""
    try:
        params = json.loads((folder / PARAMS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexFormatError(f"BM25 files in {folder} are missing or unreadable ({PARAMS} is missing); "
                               "rebuild with `ragnet index`") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _bad(folder, PARAMS, f"is not valid JSON ({_one_line(exc)})") from None
    if not isinstance(params, dict):
        raise _bad(folder, PARAMS, "is not a JSON object")
    num_docs = params.get("num_docs")
    checks = [
        ("k1", _number(params.get("k1", 1.5)) and params.get("k1", 1.5) >= 0),
        ("b", _number(params.get("b", 0.75)) and 0 <= params.get("b", 0.75) <= 1),
        ("delta", _number(params.get("delta", 0.5))),
        # ragnet's scores are bm25s's Lucene variant; other methods need files ragnet does not write
        ("method", params.get("method", "lucene") == "lucene"),
        ("idf_method", params.get("idf_method") in (None, "lucene")),
        ("dtype", params.get("dtype", "float32") == "float32"),
        ("int_dtype", params.get("int_dtype", "int32") in ("int32", "int64")),
        ("backend", params.get("backend", "numpy") == "numpy"),
        ("csc_backend", params.get("csc_backend", "numpy") == "numpy"),
        ("num_docs", type(num_docs) is int and num_docs >= 0 and (count is None or num_docs == count)),
    ]
    for key, ok in checks:
        if not ok:
            expected = f" (the index has {count} chunks)" if key == "num_docs" and count is not None else ""
            raise _bad(folder, PARAMS, f"has {key} {params.get(key)!r}, which ragnet does not read{expected}")
    return num_docs


def _check_array_headers(folder: Path) -> dict[str, int]:
    """Check the score arrays' headers against their files' sizes before bm25s maps or reads them;
    returns each one's length."""
    from ragnet.index.untrusted import npy_header

    lengths = {}
    for name in (DATA, INDICES, INDPTR):
        if not (folder / name).is_file():
            raise IndexFormatError(f"BM25 files in {folder} are missing or unreadable ({name} is missing); "
                                   "rebuild with `ragnet index`")
        header = npy_header(folder, name)
        if len(header.shape) != 1:
            raise _bad(folder, name, f"has shape {header.shape}, expected one dimension")
        lengths[name] = header.shape[0]
    if lengths[INDPTR] < 1 or lengths[DATA] != lengths[INDICES]:
        raise _bad(folder, INDPTR, f"and its arrays do not fit together ({lengths})")
    return lengths


def top_positive(scores: np.ndarray, n: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the ``n`` largest positive entries of ``scores``, best first, ties by lower row.

    Args:
        scores: the scores.
        n: how many.
        rows: the row each score belongs to (distinct; default ``0 .. len(scores) - 1``).

    Example:
        >>> top_positive(np.array([0.0, 2.0, 1.0, 2.0], dtype=np.float32), 2)[0].tolist()
        [1, 3]
        >>> top_positive(np.array([2.0, 1.0, 2.0], dtype=np.float32), 2, rows=np.array([9, 4, 7]))[0].tolist()
        [7, 9]
    """
    positive = np.flatnonzero(scores > 0)
    if n <= 0 or positive.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=scores.dtype)
    vals = scores[positive]
    at = positive if rows is None else np.asarray(rows)[positive]
    if positive.size > n:
        part = np.argpartition(-vals, n - 1)[:n]
        threshold = vals[part].min()
        # Everything strictly above the n-th value, then the lowest rows among its ties,
        # so the result does not depend on argpartition's arbitrary tie order.
        above = vals > threshold
        ties = np.flatnonzero(vals == threshold)
        ties = ties[np.argsort(at[ties], kind="stable")[: n - int(above.sum())]]
        keep = np.concatenate([np.flatnonzero(above), ties])
        vals, at = vals[keep], at[keep]
    order = np.lexsort((at, -vals))
    return at[order].astype(np.int64), vals[order]
