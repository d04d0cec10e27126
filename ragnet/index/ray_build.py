"""Build an index on a Ray cluster with Ray Data (``Index.build(..., engine=BuildEngine("ray"))``,
``ragnet index ... --ray ADDRESS``).

The documents become a Ray Dataset; chunking runs as a stateless ``flat_map``; embedding
and BM25 tokenisation run in ``map_batches`` over an actor pool, one embedder loaded per
actor. The driver reads the results back in order (``preserve_order``) and streams them,
shard by shard, into the same :class:`~ragnet.index.writer.IndexWriter` as a one-process
build: chunk ids are identical (chunking is per document), BM25 scores are identical
(global document frequencies), and vectors agree up to float rounding (batches are padded
differently).

What scales here is the expensive part, embedding (and tokenising): with ``W`` workers of
equal speed the embedding phase takes about ``1/W`` of the one-process time, while the
driver's part (writing the stores, merging BM25, training and filling the dense index)
stays serial (docs/results/scale/README.md).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ragnet.corpus.types import Chunk, Document
from ragnet.errors import InputError, require

SHARD = 50_000  # rows the driver hands to the writer at a time


def ray_module() -> Any:
    """The ``ray`` package, or a clear error naming the extra that installs it."""
    return require("ray", purpose="distributed index builds (pip install 'ragnet[scale]')")


def connect(address: str | None, workers: int | None) -> Any:
    """Join the cluster at ``address`` (``"auto"``, ``"ray://host:10001"``) or, for None or
    ``"local"``, start a local one with ``workers`` CPUs (all cores when None)."""
    import logging

    ray = ray_module()
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its per-dataset INFO lines would bury our progress
    if not ray.is_initialized():
        if address in (None, "local"):
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        else:
            ray.init(address=address, log_to_driver=False, ignore_reinit_error=True)
    return ray


def _chunk_rows(row: dict[str, Any], chunk_tokens: int, overlap: int, gazetteer_names: list[str] | None
                ) -> list[dict[str, Any]]:
    from ragnet.corpus.chunking import chunk_documents
    from ragnet.corpus.metadata import Gazetteer

    place = json.loads(row["place"])
    doc = Document(id=row["id"], title=row["title"], text=row["text"], metadata=json.loads(row["metadata"]),
                   source=row["source"], location=place["location"],
                   positions=tuple((offset, where) for offset, where in place["positions"]))
    gaz = Gazetteer(gazetteer_names) if gazetteer_names else None
    return [
        {"doc_row": row["row"], "id": c.id, "doc_id": c.doc_id, "title": c.title, "text": c.text,
         "tokens": c.tokens, "position": c.position, "metadata": json.dumps(c.metadata, ensure_ascii=False)}
        for c in chunk_documents([doc], chunk_tokens, overlap, gazetteer=gaz)
    ]


class EmbedAndTokenize:
    """A Ray Data actor: embeds a batch of chunks and counts its BM25 terms, and with
    ``sentences`` also embeds every sentence of the chunks (``"Title: sentence"``, as
    :mod:`ragnet.index.sentence_store` stores them)."""

    def __init__(self, embedder: str, backend: str | None, threads: int, sentences: bool = False) -> None:
        from ragnet._threads import pin_threads
        from ragnet.index.embedder import Embedder

        pin_threads(threads)
        self.embedder = Embedder(embedder, backend=backend).load()
        self.sentences = sentences

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        from ragnet.index.passages import passage_text
        from ragnet.index.sparse_shards import tokenize_shard

        texts = [passage_text(Chunk(id="", doc_id="", title=str(t), text=str(x), tokens=0))
                 for t, x in zip(batch["title"], batch["text"])]
        vectors = self.embedder.encode(texts)
        counts = tokenize_shard(texts)
        terms = np.asarray(counts.terms, dtype=object)
        per_doc_terms, per_doc_tfs = [], []
        for d in range(len(texts)):
            lo, hi = counts.doc_ptr[d], counts.doc_ptr[d + 1]
            per_doc_terms.append(list(terms[counts.term_ids[lo:hi]]))
            per_doc_tfs.append(counts.tfs[lo:hi].tolist())
        out = dict(batch)
        out["vector"] = vectors
        out["bm25_terms"] = per_doc_terms
        out["bm25_tfs"] = per_doc_tfs
        out["bm25_len"] = counts.doc_lengths
        out["bm25_stemmer"] = [counts.stemmer or ""] * len(texts)
        if self.sentences:
            out["sentence_vectors"] = self._sentence_vectors(batch)
        return out

    def _sentence_vectors(self, batch: dict[str, np.ndarray]) -> list[bytes]:
        """Each chunk's sentence vectors as float16 bytes (a fixed Arrow type, whatever the count)."""
        from ragnet.index.sentence_store import chunk_sentences, embed_unique

        per_chunk = [chunk_sentences(Chunk(id="", doc_id="", title=str(t), text=str(x), tokens=0))[1]
                     for t, x in zip(batch["title"], batch["text"])]
        vectors = embed_unique([s for texts in per_chunk for s in texts], self.embedder)
        ends = np.cumsum([len(texts) for texts in per_chunk])
        return [part.tobytes() for part in np.split(vectors, ends[:-1])]


def counts_from_rows(terms: Sequence[Sequence[str]], tfs: Sequence[Sequence[int]], lengths: Sequence[int],
                     stemmer: str | None) -> Any:
    """A ``ShardCounts`` from per-document term lists (what the actors send back).

    Example:
        >>> c = counts_from_rows([["cat", "saw"], []], [[2, 1], []], [3, 0], None)
        >>> c.terms, c.doc_ptr.tolist(), c.tfs.tolist()
        (['cat', 'saw'], [0, 2, 2], [2, 1])
    """
    from ragnet.index.sparse_shards import ShardCounts

    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(t, len(vocab)) for row in terms for t in row), dtype=np.int64)
    freqs = np.fromiter((f for row in tfs for f in row), dtype=np.int64, count=len(ids))
    sizes = np.fromiter((len(row) for row in terms), dtype=np.int64, count=len(terms))
    doc_ptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(sizes, out=doc_ptr[1:])
    docs = np.repeat(np.arange(len(terms)), sizes)
    order = np.lexsort((ids, docs))  # entries ascending by term within each document
    counts = ShardCounts(terms=list(vocab), doc_lengths=np.asarray(lengths, dtype=np.int64), doc_ptr=doc_ptr,
                         term_ids=ids[order].astype(np.int32), tfs=freqs[order].astype(np.int32), stemmer=stemmer)
    counts.check()
    return counts


def shards(docs: Sequence[Document], *, embedder: str, backend: str | None, chunk_tokens: int, overlap: int,
           gazetteer_names: list[str] | None, workers: int, batch_size: int = 64,
           progress: Callable[[int], None] | None = None, sentence_sink: Any = None,
           ) -> tuple[int, Iterator[tuple[list[Chunk], np.ndarray, Any]]]:
    """The chunk count, and ``(chunks, vectors, bm25 counts)`` shards in document order,
    computed on the cluster. Chunking runs (and is counted) first: the writer sizes its
    vector file with the count.

    With a ``sentence_sink`` (a :class:`ragnet.index.sentence_store.VectorSpill`), the workers also
    embed every chunk's sentences, and each shard read appends its sentence vectors to the sink
    (float16, one row per sentence in order), for ``SentenceStore.write(..., vectors=sink)``
    once the corpus BM25 exists."""
    if not docs:
        raise InputError("no documents to index", argument="docs")
    ray = ray_module()
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    items = [{"row": i, "id": d.id, "title": d.title, "text": d.text,
              "metadata": json.dumps(d.metadata, ensure_ascii=False), "source": d.source,
              "place": json.dumps({"location": d.location, "positions": d.positions}, ensure_ascii=False)}
             for i, d in enumerate(docs)]
    ds = ray.data.from_items(items, override_num_blocks=max(1, min(len(items), 8 * workers)))
    chunked = ds.flat_map(_chunk_rows, fn_kwargs={"chunk_tokens": chunk_tokens, "overlap": overlap,
                                                  "gazetteer_names": gazetteer_names}).materialize()
    count = chunked.count()
    embedded = chunked.map_batches(EmbedAndTokenize, fn_constructor_kwargs={"embedder": embedder, "backend": backend,
                                                                            "threads": 1,
                                                                            "sentences": sentence_sink is not None},
                                   concurrency=workers, batch_size=batch_size, num_cpus=1, batch_format="numpy")

    def read() -> Iterator[tuple[list[Chunk], np.ndarray, Any]]:
        for batch in embedded.iter_batches(batch_size=SHARD, batch_format="numpy", prefetch_batches=1):
            chunks = [
                Chunk(id=str(i), doc_id=str(d), title=str(t), text=str(x), tokens=int(k), position=int(p),
                      metadata=json.loads(m))
                for i, d, t, x, k, p, m in zip(batch["id"], batch["doc_id"], batch["title"], batch["text"],
                                               batch["tokens"], batch["position"], batch["metadata"])
            ]
            stemmer = str(batch["bm25_stemmer"][0]) or None
            counts = counts_from_rows(batch["bm25_terms"], batch["bm25_tfs"], batch["bm25_len"], stemmer)
            vectors = batch["vector"]
            vectors = np.stack(vectors) if vectors.dtype == object else vectors
            if sentence_sink is not None:
                dim = int(np.shape(vectors)[1])
                sentence_sink.append(np.concatenate(
                    [np.frombuffer(b, dtype=np.float16).reshape(-1, dim) for b in batch["sentence_vectors"]]))
            if progress is not None:
                progress(len(chunks))
            yield chunks, np.asarray(vectors, dtype=np.float32), counts

    return count, read()
