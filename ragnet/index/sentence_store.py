"""Sentence data of every chunk, computed once and saved in the index, for sentence-level selection.

For each chunk the store keeps its sentence boundaries (:mod:`ragnet.corpus.sentence_split`), each
sentence's tokens (cl100k), its BM25 terms (the index's own vocabulary) and its embedding.
A sentence is embedded as ``"Title: sentence"``: most sentences after a paragraph's first
name their subject with a pronoun ("He lives in Los Angeles"), and the title restores it
(sentence selection finds all gold sentences for more questions; docs/results/README.md).

Selecting sentences for a question then costs a matrix product over the candidates'
sentences, not a forward pass of the embedder.

On-disk layout (folder ``sentences/`` of the index; listed with checksums in the manifest)::

    info.json         format, splitter, embedded text format, counts, mean BM25 length
    offsets.npy       int64 (chunks + 1): sentences of chunk row r are rows offsets[r]:offsets[r+1]
    spans.npy         int32 (sentences, 2): character span of each sentence in its chunk's text
    tokens.npy        int32 (sentences,): cl100k tokens of each sentence
    terms.npy         int32: BM25 term ids of all sentences, concatenated
    term_offsets.npy  int64 (sentences + 1): sentence s has terms[term_offsets[s]:term_offsets[s+1]]
    vectors.npy       float16 (sentences, dimension): L2-normalised embeddings

Example:
    >>> import ragnet, tempfile
    >>> docs = [ragnet.Document(id="d", title="Ed Wood", text="Ed Wood was a director. He was American.")]
    >>> index = ragnet.Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
    >>> store = index.sentences
    >>> [store.text(index.chunks[0], s) for s in store.rows_of(0)]
    ['Ed Wood was a director.', 'He was American.']
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Sequence

import numpy as np

from ragnet.errors import IndexFormatError

FORMAT = "ragnet-sentences"
SPLITTER = "ragnet-2"  # bump when ragnet.corpus.sentence_split changes its boundaries
EMBEDDED_AS = "title: sentence"
FOLDER = "sentences"
_ARRAYS = ("offsets", "spans", "tokens", "terms", "term_offsets", "vectors")
FILES = ("info.json", *(f"{name}.npy" for name in _ARRAYS))  # what a saved store holds
# BM25 (Lucene) parameters, as the chunk-level index uses them
K1, B = 1.5, 0.75


def embedded_text(title: str, sentence: str) -> str:
    """The text embedded for one sentence.

    Example:
        >>> embedded_text("Ed Wood", "He was American.")
        'Ed Wood: He was American.'
    """
    title = " ".join(str(title or "").split())
    return f"{title}: {sentence}" if title else sentence


class SentenceStore:
    """Sentence boundaries, tokens, BM25 terms and embeddings of every chunk of an index.

    Build with :meth:`build`; an index keeps one in its ``sentences/`` folder (see
    ``ragnet.Index.sentences``).
    """

    def __init__(self, arrays: dict[str, np.ndarray], info: dict[str, Any]) -> None:
        self.offsets = arrays["offsets"]
        self.spans = arrays["spans"]
        self.tokens = arrays["tokens"]
        self.terms = arrays["terms"]
        self.term_offsets = arrays["term_offsets"]
        self.vectors = arrays["vectors"]
        self.info = info
        self.mean_terms = float(info.get("mean_terms") or 1.0)

    def __len__(self) -> int:
        return int(self.spans.shape[0])

    # -- building ----------------------------------------------------------------------
    @classmethod
    def build(cls, chunks: Sequence[Any], embedder: Any, sparse: Any, show_progress: bool = False) -> "SentenceStore":
        """Split, count, tokenise and embed the sentences of ``chunks`` (in index row order), in memory.

        Args:
            chunks: the index's chunks.
            embedder: the index's ``Embedder`` (sentences share the chunks' vector space).
            sparse: the index's ``SparseIndex`` (its tokenizer and vocabulary give the terms).
            show_progress: an embedding progress bar.
        """
        arrays = _sentence_arrays(chunks, embedder, sparse, show_progress=show_progress)
        return cls(arrays, _info(len(chunks), arrays["term_offsets"]))

    @classmethod
    def write(cls, chunks: Iterable[Any], embedder: Any, sparse: Any, folder: str | Path, count: int | None = None,
              show_progress: bool = False, block: int = 20_000, vectors: "VectorSpill | None" = None) -> dict[str, Any]:
        """What ``build(...).save(folder)`` writes, computed ``block`` chunks at a time.

        The vectors of each block go straight to disk, so memory holds one block's sentences and
        vectors plus the small per-sentence arrays, not every vector (a large corpus has several
        sentences per passage, gigabytes of vectors). Use it for large indexes
        (``Index.add_sentences``).

        Args:
            chunks: the index's chunks, in row order (an iterable: a ``ChunkStore`` is read block by block).
            embedder, sparse: as for :meth:`build`.
            folder: the folder to write (created; inside a staging folder that is moved in afterwards).
            count: number of chunks, for the progress bar.
            show_progress: one progress bar over the chunks.
            block: chunks per block.
            vectors: the sentences' embeddings when they were computed elsewhere (a Ray build's
                workers embed them with :func:`chunk_sentences`), read in row order from a
                :class:`VectorSpill`; ``embedder`` is then not run.

        Returns:
            The store's ``info`` (as written to ``info.json``).

        Raises:
            IndexFormatError: ``vectors`` holds more or fewer rows than the chunks have sentences.
        """
        from tqdm.auto import tqdm

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        parts: dict[str, list[np.ndarray]] = {name: [] for name in _ARRAYS if name != "vectors"}
        n_chunks = n_sentences = n_terms = 0
        raw = folder / "vectors.raw.part"
        take = vectors.take if vectors is not None else None
        with open(raw, "wb") as out, tqdm(total=count, desc="Sentences", unit="chunk", disable=not show_progress) as bar:
            for batch in _blocks(chunks, block):
                arrays = _sentence_arrays(batch, embedder, sparse, vectors=take)
                # offsets within the block -> offsets within the store (one leading 0 in all)
                skip = 1 if n_chunks else 0
                parts["offsets"].append(arrays["offsets"][skip:] + n_sentences)
                parts["term_offsets"].append(arrays["term_offsets"][skip:] + n_terms)
                for name in ("spans", "tokens", "terms"):
                    parts[name].append(arrays[name])
                out.write(arrays["vectors"].tobytes())
                n_chunks += len(batch)
                n_sentences += len(arrays["tokens"])
                n_terms += len(arrays["terms"])
                bar.update(len(batch))
        if vectors is not None and vectors.remaining:
            raise _misaligned(vectors.rows, n_sentences, n_chunks)
        if not n_chunks:  # no chunks: the arrays of an empty store
            parts = {name: [array] for name, array in _sentence_arrays([], embedder, sparse).items() if name in parts}
        arrays = {name: np.concatenate(pieces) for name, pieces in parts.items()}
        for name, array in arrays.items():
            np.save(folder / f"{name}.npy", array, allow_pickle=False)
        dimension = vectors.dimension if vectors is not None and vectors.dimension else embedder.dimension
        _npy_from_raw(raw, folder / "vectors.npy", np.float16, (n_sentences, int(dimension)))
        info = _info(n_chunks, arrays["term_offsets"])
        (folder / "info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        return info

    # -- persistence -------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        """Write the store into ``folder`` (inside an index being written atomically)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in _ARRAYS:
            np.save(folder / f"{name}.npy", getattr(self, name), allow_pickle=False)
        (folder / "info.json").write_text(json.dumps(self.info, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path, chunk_count: int, dimension: int) -> "SentenceStore":
        """Read a saved store; the vectors are memory-mapped.

        Raises:
            IndexFormatError: missing, unreadable or inconsistent files.
        """
        folder = Path(folder)
        rebuild = f"run `ragnet add-sentences {folder.parent}` (or rebuild the index)"
        try:
            info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
            arrays = {name: np.load(folder / f"{name}.npy", allow_pickle=False,
                                    mmap_mode="r" if name == "vectors" else None) for name in _ARRAYS}
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"sentence data in {folder} is unreadable ({exc}); {rebuild}") from exc
        if info.get("format") != FORMAT or info.get("splitter") != SPLITTER:
            raise IndexFormatError(f"sentence data in {folder} has format {info.get('format')!r}/"
                                   f"{info.get('splitter')!r}, this ragnet reads {FORMAT!r}/{SPLITTER!r}; {rebuild}")
        n = arrays["spans"].shape[0]
        ok = (arrays["offsets"].shape == (chunk_count + 1,) and int(arrays["offsets"][-1]) == n
              and arrays["tokens"].shape == (n,) and arrays["term_offsets"].shape == (n + 1,)
              and int(arrays["term_offsets"][-1]) == arrays["terms"].shape[0]
              and arrays["vectors"].shape == (n, dimension))
        if not ok:
            raise IndexFormatError(f"sentence data in {folder} does not match the index ({chunk_count} chunks, "
                                   f"dimension {dimension}); {rebuild}")
        return cls(arrays, info)

    # -- reading -----------------------------------------------------------------------
    def rows_of(self, chunk_row: int) -> range:
        """Sentence rows of one chunk row, in document order."""
        return range(int(self.offsets[chunk_row]), int(self.offsets[chunk_row + 1]))

    def gather(self, chunk_rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sentence rows of several chunks: ``(rows, chunk index per row, position in its chunk)``.

        The chunk index refers to the position in ``chunk_rows``.
        """
        starts = self.offsets[np.asarray(chunk_rows, dtype=np.int64)]
        ends = self.offsets[np.asarray(chunk_rows, dtype=np.int64) + 1]
        counts = (ends - starts).astype(np.int64)
        chunk_of = np.repeat(np.arange(len(counts)), counts)
        position = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        rows = np.repeat(starts, counts) + position
        return rows.astype(np.int64), chunk_of, position

    def text(self, chunk: Any, row: int) -> str:
        """The text of sentence ``row`` of ``chunk`` (cut from the chunk's text)."""
        a, b = self.spans[row]
        return chunk.text[int(a):int(b)]

    def cosines(self, rows: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
        """Cosine of each sentence with the (L2-normalised) query vector."""
        vecs = np.asarray(self.vectors[rows], dtype=np.float32)
        return np.einsum("ij,j->i", vecs, np.asarray(query_vector, dtype=np.float32))

    def bm25(self, rows: np.ndarray, query_terms: Sequence[int], idf: np.ndarray) -> np.ndarray:
        """BM25 score of each sentence for the query's term ids, with the index's IDF.

        Sentence lengths are normalised by the mean sentence length of the whole store.
        """
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(rows.size, dtype=np.float64)
        terms = np.unique(np.asarray(query_terms, dtype=np.int64))
        if rows.size == 0 or terms.size == 0:
            return out
        starts, ends = self.term_offsets[rows], self.term_offsets[rows + 1]
        lengths = (ends - starts).astype(np.int64)
        owner = np.repeat(np.arange(rows.size), lengths)
        flat = self.terms[np.repeat(starts, lengths) + (np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths))]
        hit = np.isin(flat, terms)
        if not hit.any():
            return out
        col = np.searchsorted(terms, flat[hit])
        tf = np.zeros((rows.size, terms.size))
        np.add.at(tf, (owner[hit], col), 1.0)
        norm = K1 * (1 - B + B * lengths / self.mean_terms)
        return (idf[terms][None, :] * tf * (K1 + 1) / (tf + norm[:, None])).sum(axis=1)


class VectorSpill:
    """float16 vector rows appended in order and read back once in the same order, held in an
    anonymous file on disk.

    A Ray build's workers embed the sentences while the chunks stream past, but the store's
    other arrays need the corpus BM25 vocabulary, which exists only after the last shard. The
    vectors wait here instead of in the driver's memory (gigabytes at a million passages). The
    file has no name: the OS frees it when it is closed or
    the process dies, so an interrupted build leaves nothing behind.

    Example:
        >>> spill = VectorSpill()
        >>> spill.append(np.ones((3, 2))); spill.append(np.zeros((1, 2)))
        >>> spill.take(2).tolist(), spill.remaining
        ([[1.0, 1.0], [1.0, 1.0]], 2)
        >>> spill.take(5).shape                    # fewer rows than asked: only what is left
        (2, 2)
        >>> spill.close()
    """

    def __init__(self, folder: str | Path | None = None) -> None:
        self._file = tempfile.TemporaryFile(dir=folder)
        self.dimension: int | None = None
        self.rows = 0  # rows appended
        self._taken = 0
        self._reading = False

    @property
    def remaining(self) -> int:
        """Rows appended and not yet taken."""
        return self.rows - self._taken

    def append(self, vectors: np.ndarray) -> None:
        """Add rows (any float dtype; stored as float16) after the ones already appended."""
        block = np.ascontiguousarray(vectors, dtype=np.float16)
        if self._reading:
            raise ValueError("VectorSpill: append after take")
        if block.ndim != 2 or (self.dimension is not None and block.shape[1] != self.dimension):
            raise IndexFormatError(f"sentence vectors of shape {block.shape} do not continue rows of dimension "
                                   f"{self.dimension}")
        self.dimension = int(block.shape[1])
        self._file.write(block.tobytes())
        self.rows += len(block)

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` rows (fewer when fewer are left)."""
        if not self._reading:
            self._file.flush()
            self._file.seek(0)
            self._reading = True
        n = max(0, min(int(n), self.remaining))
        dim = self.dimension or 0
        data = self._file.read(n * dim * 2)
        self._taken += n
        return np.frombuffer(data, dtype=np.float16).reshape(n, dim)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "VectorSpill":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def idf_of(sparse: Any) -> np.ndarray:
    """Lucene IDF of every vocabulary term of a ``SparseIndex`` (document = chunk).

    Example:
        >>> from ragnet.index.sparse import SparseIndex
        >>> idf_of(SparseIndex.build(["cat", "cat dog"], show_progress=False)).round(3).tolist()
        [0.182, 0.693]
    """
    df = np.diff(np.asarray(sparse._indptr)).astype(np.float64)
    n = float(len(sparse))
    return np.log(1.0 + (n - df + 0.5) / (df + 0.5))


def chunk_sentences(chunk: Any) -> tuple[list[tuple[int, int]], list[str]]:
    """A chunk's sentence spans and the text embedded for each (``"Title: sentence"``).

    Example:
        >>> from ragnet.corpus.types import Chunk
        >>> chunk_sentences(Chunk(id="d#0", doc_id="d", title="Ed Wood", text="A director. He was American.", tokens=6))
        ([(0, 11), (12, 28)], ['Ed Wood: A director.', 'Ed Wood: He was American.'])
    """
    from ragnet.corpus.sentence_split import sentence_spans

    spans = sentence_spans(chunk.text) or [(0, len(chunk.text))]
    return spans, [embedded_text(chunk.title, chunk.text[a:b]) for a, b in spans]


def embed_unique(texts: Sequence[str], embedder: Any, show_progress: bool = False, dtype: Any = np.float16,
                 desc: str = "Embedding sentences") -> np.ndarray:
    """Embeddings of ``texts`` as ``dtype``, each distinct text embedded once (corpora repeat
    boilerplate passages and sentences)."""
    first: dict[str, int] = {}
    inverse = np.fromiter((first.setdefault(t, len(first)) for t in texts), dtype=np.int64, count=len(texts))
    vectors = embedder.encode(list(first), show_progress=show_progress, desc=desc) if first else \
        np.zeros((0, embedder.dimension), dtype=np.float32)
    if len(first) == len(texts):  # all distinct: inverse is the identity, no gather needed
        return np.ascontiguousarray(vectors, dtype=dtype)
    return np.ascontiguousarray(vectors[inverse], dtype=dtype)


def _sentence_arrays(chunks: Sequence[Any], embedder: Any, sparse: Any, show_progress: bool = False,
                     vectors: Callable[[int], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The store's arrays for ``chunks`` alone (offsets start at 0). ``vectors(n)`` gives the next
    ``n`` sentence vectors when they were computed elsewhere (see ``SentenceStore.write``)."""
    from ragnet.corpus.tokens import count_tokens_batch

    offsets = [0]
    spans: list[tuple[int, int]] = []
    texts: list[str] = []
    embedded: list[str] = []
    for chunk in chunks:
        found, as_embedded = chunk_sentences(chunk)
        spans.extend(found)
        texts.extend(chunk.text[a:b] for a, b in found)
        embedded.extend(as_embedded)
        offsets.append(len(spans))
    if vectors is None:
        found_vectors = embed_unique(embedded, embedder, show_progress=show_progress)
    else:
        found_vectors = vectors(len(embedded))
        if len(found_vectors) != len(embedded):
            raise _misaligned(len(found_vectors), len(embedded), len(offsets) - 1)
    term_lists = [sparse.token_ids(t) for t in texts]
    term_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    term_offsets[1:] = np.cumsum([len(t) for t in term_lists])
    return {
        "offsets": np.asarray(offsets, dtype=np.int64),
        "spans": np.asarray(spans, dtype=np.int32).reshape(-1, 2),
        "tokens": np.asarray(count_tokens_batch(texts) if texts else [], dtype=np.int32),
        "terms": np.asarray([t for ts in term_lists for t in ts], dtype=np.int32),
        "term_offsets": term_offsets,
        "vectors": np.ascontiguousarray(found_vectors, dtype=np.float16),
    }


def _misaligned(given: int, sentences: int, chunks: int) -> IndexFormatError:
    return IndexFormatError(f"{given} sentence vectors were given for the {sentences} sentences of {chunks} chunks; "
                            "the sentence splitter differs between the workers and this process (install the same "
                            "ragnet version everywhere)")


def _info(chunks: int, term_offsets: np.ndarray) -> dict[str, Any]:
    lengths = np.diff(np.asarray(term_offsets))
    return {
        "format": FORMAT,
        "splitter": SPLITTER,
        "embedded_as": EMBEDDED_AS,
        "chunks": chunks,
        "sentences": int(lengths.size),
        "mean_terms": float(lengths.mean()) if lengths.size else 1.0,
    }


def _blocks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    block: list[Any] = []
    for item in items:
        block.append(item)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block


def _npy_from_raw(raw: Path, path: Path, dtype: Any, shape: tuple[int, ...], step: int = 1 << 26) -> None:
    """Write ``path`` as a ``.npy`` of ``shape`` whose data are the bytes of ``raw`` (then removed);
    the count of rows is known only after the last block, so the header is written last."""
    dtype = np.dtype(dtype)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if raw.stat().st_size != expected:
        raise IndexFormatError(f"{raw} holds {raw.stat().st_size} bytes, expected {expected}")
    with open(path, "wb") as out, open(raw, "rb") as src:
        np.lib.format.write_array_header_1_0(out, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                   "fortran_order": False, "shape": shape})
        while chunk := src.read(step):
            out.write(chunk)
    raw.unlink()
