"""Benchmarks for the index: per-query search latency, indexing overhead, embedding backends.

Each function returns a plain dict of figures (``ragnet bench`` prints them). Thread
counts are pinned (FAISS's OpenMP pool and torch's intra-op pool): on a small shared
machine, unpinned BLAS/OpenMP threads make timings swing by an order of magnitude.

Example:
    >>> timings = run_search_bench(index, ["capital of France?"] * 5)   # index: a ragnet.Index
    >>> sorted(timings["hybrid"])
    ['mean_ms', 'median_ms', 'p95_ms']
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ragnet.corpus.types import Document
from ragnet.errors import InputError
from ragnet.index.embedder import Embedder
from ragnet.index.hybrid import Index
from ragnet.index.onnx_backend import resolve_backend
from ragnet.index.options import BuildEngine, DenseOptions
from ragnet.index.passages import passage_text


@contextlib.contextmanager
def pinned_threads(threads: int, faiss_threads: int | None = None) -> Iterator[None]:
    """Pin torch intra-op threads to ``threads`` and FAISS's OpenMP threads to
    ``faiss_threads`` (default: same), restoring both afterwards."""
    import faiss
    import torch

    old_faiss, old_torch = faiss.omp_get_max_threads(), torch.get_num_threads()
    faiss.omp_set_num_threads(faiss_threads or threads)
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(old_faiss)
        torch.set_num_threads(old_torch)


def _summary(times_s: list[float]) -> dict[str, float]:
    ms = np.asarray(times_s) * 1e3
    return {
        "median_ms": round(float(np.median(ms)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
    }


def _time_each(fn: Callable[[str], Any], queries: Sequence[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        for q in queries:
            t0 = time.perf_counter()
            fn(q)
            times.append(time.perf_counter() - t0)
    return times


def run_search_bench(
    index: Index,
    queries: Sequence[str],
    repeats: int = 3,
    k: int = 5,
    lam: float = 0.4,
    threads: int = 2,
    faiss_threads: int = 1,
    warmup: int = 10,
) -> dict[str, Any]:
    """Milliseconds per query for hybrid, dense-only and BM25-only search.

    Also times the query embedding alone (the dominant cost of hybrid and dense search).

    Args:
        index: a built or loaded ``Index``.
        queries: query texts (each is timed ``repeats`` times).
        repeats: passes over ``queries``.
        k: results per query.
        lam: hybrid BM25 weight.
        threads: torch threads (query embedding, flat scan) during the run.
        faiss_threads: FAISS OpenMP threads (HNSW/IVF search) during the run; one query
            at a time gains nothing from more, and idle OpenMP workers spinning next to
            torch's slow it down.
        warmup: untimed queries first (model loaded, TorchScript traced).

    The embedder's query cache is switched off while timing, so every query is embedded.

    Returns:
        ``{"queries", "repeats", "threads", "chunks", "faiss_index", "hybrid", "dense", "bm25",
        "embed"}``; each timing is ``{"median_ms", "p95_ms", "mean_ms"}``.

    Example:
        >>> run_search_bench(index, ["capital of Italy?"], repeats=1)["dense"]["median_ms"] > 0
        True
    """
    queries = [q for q in queries if q.strip()]
    if not queries:
        raise ValueError("run_search_bench needs at least one non-empty query")
    emb = index.embedder
    old_cache = emb.query_cache
    with pinned_threads(threads, faiss_threads):
        emb.query_cache = 0
        emb.clear_cache()
        try:
            result = _search_figures(index, queries, repeats, k, lam, warmup)
        finally:
            emb.query_cache = old_cache
    result.update(threads=threads, faiss_threads=faiss_threads)
    return result


def _search_figures(index: Index, queries: list[str], repeats: int, k: int, lam: float, warmup: int) -> dict[str, Any]:
    for q in (queries * (warmup // len(queries) + 1))[:warmup]:
        index.search(q, k=k, bm25_weight=lam)
    return {
        "queries": len(queries),
        "repeats": repeats,
        "chunks": len(index),
        "faiss_index": index.manifest.get("faiss_index"),
        "k": k,
        "lam": lam,
        "hybrid": _summary(_time_each(lambda q: index.search(q, k=k, bm25_weight=lam), queries, repeats)),
        "dense": _summary(_time_each(lambda q: index.dense_search(q, k=k), queries, repeats)),
        "bm25": _summary(_time_each(lambda q: index.bm25_search(q, k=k), queries, repeats)),
        "embed": _summary(_time_each(index.embed_query, queries, repeats)),
    }


def run_index_bench(
    texts: Sequence[str | Document],
    embedder: Embedder | str | None = None,
    batch_size: int | None = None,
    chunk_tokens: int = 256,
    overlap: int = 32,
    faiss_index: str = "auto",
    threads: int | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """Compare ``Index.build`` with a bare ``SentenceTransformer.encode`` of the same passages.

    Builds an index over ``texts`` (strings become documents ``t0``, ``t1``, ...) into a
    temporary folder, then encodes exactly the passages the index embedded with
    ``model.encode`` at the same batch size; with ``repeats > 1`` the two alternate and the
    fastest of each counts (timings on a shared machine are noisy). ``overhead_pct`` is
    ``(build total - raw encode) / raw encode`` (everything: chunking, metadata,
    embedding, FAISS, BM25, persistence); ``embed_overhead_pct`` is the same for the
    embedding phase alone.

    Args:
        texts: document texts or ``Document`` objects.
        embedder: as for ``Index.build``.
        batch_size: batch size for both the index and the raw encode (None: the embedder's).
        chunk_tokens, overlap, faiss_index: as for ``Index.build``.
        threads: pin torch/FAISS threads (None: leave as is).
        repeats: build/encode rounds.

    Example:
        >>> "overhead_pct" in run_index_bench(["some text"] * 4, repeats=1)
        True
    """
    docs = [t if isinstance(t, Document) else Document(id=f"t{i}", title="", text=t) for i, t in enumerate(texts)]
    emb = embedder if isinstance(embedder, Embedder) else Embedder(embedder, batch_size=batch_size)
    old_batch = emb._batch_size
    batch_size = emb.batch_size = batch_size or emb.batch_size
    ctx = pinned_threads(threads) if threads else contextlib.nullcontext()
    builds: list[dict[str, float]] = []
    raws: list[float] = []
    try:
        with ctx, tempfile.TemporaryDirectory(prefix="ragnet-bench-") as tmp:
            model = emb.model
            model.encode(["warm up the model"] * 4, batch_size=batch_size)
            for _ in range(max(1, repeats)):
                index = Index.build(docs, Path(tmp) / "index", chunk_tokens=chunk_tokens, overlap=overlap,
                                    embedder=emb, dense=DenseOptions(kind=faiss_index), show_progress=False)
                builds.append(index.build_stats or {})
                passages = [passage_text(c) for c in index.chunks]
                t0 = time.perf_counter()
                model.encode(passages, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
                raws.append(time.perf_counter() - t0)
    finally:
        emb.batch_size = old_batch
    stats = min(builds, key=lambda b: b.get("total_s", float("inf")))
    raw = min(raws)
    total, embed = stats["total_s"], stats["embed_s"]
    return {
        "docs": len(docs),
        "chunks": len(index),
        "unique_passages": len(set(passages)),
        "batch_size": batch_size,
        "threads": threads,
        "repeats": max(1, repeats),
        "raw_encode_s": round(raw, 3),
        "build": {key: round(val, 3) for key, val in stats.items()},
        "embed_overhead_pct": round(100.0 * (embed - raw) / raw, 2),
        "overhead_pct": round(100.0 * (total - raw) / raw, 2),
        "chunks_per_s": round(len(index) / total, 1) if total else None,
    }


def parse_backend_spec(spec: str) -> tuple[str, int | None]:
    """``"name"`` or ``"name@batch"`` (an ``Embedder`` backend at a pinned batch size).

    Example:
        >>> parse_backend_spec("torch@64"), parse_backend_spec("onnx-int8")
        (('torch', 64), ('onnx-int8', None))
    """
    name, _, batch = spec.strip().partition("@")
    if batch and not (batch.isdigit() and int(batch) > 0):
        raise InputError(f"backend {spec!r}: the batch size after '@' must be a positive integer", argument="backends")
    return resolve_backend(name), int(batch) if batch else None


def run_embed_bench(
    texts: Sequence[str],
    backends: Sequence[str] = ("torch@64", "torch", "onnx", "onnx-int8"),
    repeats: int = 3,
    embedder: str | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    queries: Sequence[str] = (),
    cache_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Texts per second of each embedding backend on the same texts, and how close its vectors are to torch's.

    Each backend is loaded (and its ONNX graph exported, on first use) and warmed up untimed,
    then ``encode(texts)`` runs ``repeats`` times per backend, round-robin so that load from
    other processes spreads evenly. ``"torch"`` at its default batch size is always measured:
    it is the reference for speed and for the vectors.

    Args:
        texts: the passages to embed.
        backends: ``Embedder`` backends to compare, each optionally pinned to a batch size
            (``"torch@64"``: torch at the batch size that was its default until 2026-11-27).
        repeats: timed passes per backend (the median counts).
        embedder: model name or folder, as for ``Embedder`` (None: bundled all-MiniLM-L6-v2).
        batch_size: texts per forward pass for every backend not pinned with ``@``
            (None: each backend's default, ``DEFAULT_BATCH_SIZE``).
        threads: pin torch/ONNX Runtime threads (None: leave as is).
        queries: if given, also time ``encode_query`` on each (query cache off).
        cache_dir: ONNX export cache, as for ``Embedder``.

    Returns:
        ``{"texts", "repeats", "threads", "model", "backends"}``; ``backends`` maps each spec to
        ``{"batch_size", "texts_per_s", "ratio_to_torch", "ratio_to", "min_cos", "mean_cos",
        "load_s", "encode"}`` (``ratio_to``: the speed ratio to every torch row; ``encode``:
        ``{"median_ms", "p95_ms", "mean_ms"}`` per pass), plus ``"query"`` (the same, per query)
        when ``queries`` is given.

    Example:
        >>> r = run_embed_bench(["Paris is the capital of France."] * 4, backends=("torch",), repeats=1)
        >>> r["backends"]["torch"]["ratio_to_torch"], r["backends"]["torch"]["min_cos"]
        (1.0, 1.0)
    """
    texts = list(texts)
    if not texts or repeats < 1:
        raise ValueError("run_embed_bench needs at least one text and one repeat")
    specs = {"torch": ("torch", batch_size)}
    for spec in backends:
        name, pinned = parse_backend_spec(spec)
        label = f"{name}@{pinned}" if pinned else name
        specs.setdefault(label, (name, pinned or batch_size))
    ctx = pinned_threads(threads) if threads else contextlib.nullcontext()
    with ctx:
        import torch

        used_threads = torch.get_num_threads()
        embedders: dict[str, Embedder] = {}
        load_s: dict[str, float] = {}
        vectors: dict[str, np.ndarray] = {}
        for label, (name, batch) in specs.items():
            t0 = time.perf_counter()
            emb = embedders[label] = Embedder(embedder, batch_size=batch, backend=name, cache_dir=cache_dir,
                                              query_cache=0).load()
            load_s[label] = time.perf_counter() - t0
            emb.encode(texts[: 2 * max(emb.batch_size, used_threads)])  # warm-up
        times: dict[str, list[float]] = {label: [] for label in specs}
        for _ in range(repeats):
            for label, emb in embedders.items():
                t0 = time.perf_counter()
                vectors[label] = emb.encode(texts)
                times[label].append(time.perf_counter() - t0)
        query_times = {label: _time_each(emb.encode_query, list(queries), repeats) for label, emb in embedders.items()
                       } if queries else {}
    rates = {label: len(texts) / float(np.median(times[label])) for label in specs}
    torch_rows = [label for label in specs if specs[label][0] == "torch"]
    out: dict[str, Any] = {}
    for label in specs:
        cos = (vectors[label] * vectors["torch"]).sum(axis=1)
        out[label] = {
            "batch_size": embedders[label].batch_size,
            "texts_per_s": round(rates[label], 2),
            "ratio_to_torch": round(rates[label] / rates["torch"], 3),
            "ratio_to": {ref: round(rates[label] / rates[ref], 3) for ref in torch_rows},
            "min_cos": round(float(cos.min()), 6),
            "mean_cos": round(float(cos.mean()), 6),
            "load_s": round(load_s[label], 3),
            "encode": _summary(times[label]),
        }
        if queries:
            out[label]["query"] = _summary(query_times[label])
    return {
        "texts": len(texts),
        "repeats": repeats,
        "threads": used_threads,
        "model": embedders["torch"].name,
        "backends": out,
    }


def run_ray_bench(docs: Sequence[Document], workers: Sequence[int] = (1, 2), queries: Sequence[str] = (),
                  embedder: str | None = None) -> dict[str, Any]:
    """One-process build against Ray builds with 1, 2, ... workers on a local cluster: seconds,
    chunks/s, the ratio to one worker, and whether the result equals the one-process build
    (chunk ids, largest vector difference, top-5 ids of ``queries``).

    Every build writes chunk data only (``sentences=False``: the figures are chunk throughput),
    into a temporary folder; each worker count gets a fresh local cluster with that many CPUs.
    """
    from ragnet.index import ray_build

    ray = ray_build.ray_module()
    out: dict[str, Any] = {"docs": len(docs), "builds": {}}
    with tempfile.TemporaryDirectory(prefix="ragnet-ray-bench-") as tmp:
        t0 = time.perf_counter()
        local = Index.build(docs, Path(tmp) / "local", embedder=embedder, sentences=False, show_progress=False)
        local_s = time.perf_counter() - t0
        ids = [c.id for c in local.chunks]
        out["chunks"] = len(ids)
        out["builds"]["local"] = {"seconds": round(local_s, 1), "chunks_per_s": round(len(ids) / local_s, 1)}
        top = [[c.id for c in local.search(q, k=5)] for q in queries]
        for n in workers:
            ray.shutdown()
            ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
            t0 = time.perf_counter()
            built = Index.build(docs, Path(tmp) / f"ray{n}", embedder=embedder, sentences=False,
                                show_progress=False, engine=BuildEngine("ray", workers=n))
            seconds = time.perf_counter() - t0
            out["builds"][f"ray_{n}"] = {
                "seconds": round(seconds, 1),
                "chunks_per_s": round(len(built) / seconds, 1),
                "same_ids": [c.id for c in built.chunks] == ids,
                "max_vector_diff": float(np.abs(built.vectors(ids) - local.vectors(ids)).max()),
                "same_top5": [[c.id for c in built.search(q, k=5)] for q in queries] == top,
            }
        ray.shutdown()
    base = out["builds"].get(f"ray_{workers[0]}", {}).get("seconds")
    for n in workers:
        entry = out["builds"][f"ray_{n}"]
        entry["speedup_vs_first"] = round(base / entry["seconds"], 2) if base else None
    return out
