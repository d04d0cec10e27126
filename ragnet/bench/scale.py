"""``ragnet bench scale``: an index of N passages, real paragraphs plus distractors, measured.

Embedding a million passages for real takes about 8 hours on 2 cores, so the corpus is:

* **real**: the pooled HotpotQA paragraphs, chunked and embedded for real (the eval cache's
  pooled index); every dev question's gold paragraphs are among them;
* **distractors** up to N, each a passage whose
  - *text* is 3-6 real sentences drawn at random from the paragraphs of the other benchmarks
    in ``shared/data`` (2Wiki, MuSiQue, SQuAD, NQ; never HotpotQA's), under the title
    ``"Passage <i>"`` and with no metadata, so BM25 sees real English term statistics;
  - *vector* is drawn from a Gaussian mixture fitted to the real vectors (k-means clusters;
    each cluster's mean, its top principal directions and an isotropic rest), then
    L2-normalised, so the dense side sees the real embedding distribution.

``--validate`` checks that the distractors are as hard as real text: it compares recall on
an all-real corpus (HotpotQA plus the other benchmarks' paragraphs, embedded for real)
with a mixed corpus of the same size (HotpotQA plus as many distractors).

Search figures are taken in a fresh process per index (``python -m ragnet.bench.scale``),
so the peak RSS is that of serving, not of building.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ragnet.bench.questions import REAL_SET
from ragnet.corpus.outputs import index_manifest
from ragnet.corpus.types import Chunk

DISTRACTOR_SETS = ("2wikimultihopqa_dev", "2wikimultihopqa_hipporag_pooled", "musique_ans_dev",
                   "squad_v1.1_dev", "nq_open_oracle")
SHARD = 50_000


# -- distractor vectors ------------------------------------------------------------------
@dataclass
class VectorModel:
    """A Gaussian mixture fitted to real embeddings (see the module docstring).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> real = rng.standard_normal((400, 8)).astype(np.float32)
        >>> real /= np.linalg.norm(real, axis=1, keepdims=True)
        >>> model = VectorModel.fit(real, clusters=4, rank=4)
        >>> fake = model.sample(10, rng)
        >>> fake.shape, bool(np.allclose(np.linalg.norm(fake, axis=1), 1.0, atol=1e-5))
        ((10, 8), True)
    """

    means: np.ndarray  # (k, d)
    directions: np.ndarray  # (k, r, d): principal directions scaled by their standard deviation
    rest_sd: np.ndarray  # (k,): standard deviation of the isotropic remainder
    weights: np.ndarray  # (k,): cluster shares

    @classmethod
    def fit(cls, vectors: np.ndarray, clusters: int = 64, rank: int = 32, seed: int = 0) -> "VectorModel":
        import faiss

        x = np.ascontiguousarray(vectors, dtype=np.float32)
        n, d = x.shape
        clusters = max(1, min(clusters, n // 20))
        km = faiss.Kmeans(d, clusters, niter=20, seed=seed, spherical=True, verbose=False)
        km.train(x)
        _, assign = km.index.search(x, 1)
        assign = assign[:, 0]
        means, dirs, rest, weights = [], [], [], []
        for c in range(clusters):
            members = x[assign == c]
            if len(members) < 2:
                continue
            mu = members.mean(axis=0)
            centred = members - mu
            _, s, vt = np.linalg.svd(centred, full_matrices=False)
            sd = s / np.sqrt(len(members) - 1)
            r = min(rank, len(sd))
            total = float((sd ** 2).sum())
            kept = float((sd[:r] ** 2).sum())
            top = np.zeros((rank, d), dtype=np.float32)
            top[:r] = vt[:r] * sd[:r, None]
            means.append(mu)
            dirs.append(top)
            rest.append(np.sqrt(max(total - kept, 0.0) / d))
            weights.append(len(members))
        w = np.asarray(weights, dtype=np.float64)
        return cls(np.asarray(means, np.float32), np.asarray(dirs, np.float32), np.asarray(rest, np.float32),
                   w / w.sum())

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        k, r, d = self.directions.shape
        which = rng.choice(k, size=n, p=self.weights)
        z = rng.standard_normal((n, r)).astype(np.float32)
        out = self.means[which] + np.einsum("nr,nrd->nd", z, self.directions[which])
        out += rng.standard_normal((n, d)).astype(np.float32) * self.rest_sd[which, None]
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)


# -- distractor texts --------------------------------------------------------------------
def distractor_documents(data_dir: str | Path | None = None) -> list[Any]:
    """The paragraphs of the benchmarks other than HotpotQA, as documents (pooled, deduplicated)."""
    from ragnet.eval.run.datasets import dedup_policy, load_corpus, load_questions, pooled_documents, resolve_dataset

    docs: dict[str, Any] = {}
    for name in DISTRACTOR_SETS:
        path = resolve_dataset(name, data_dir)
        corpus = path / "corpus.jsonl"
        if corpus.is_file():
            found = load_corpus(corpus)
        else:
            records = load_questions(path)
            found = pooled_documents(records, dedup=dedup_policy(records))
        for doc in found:
            key = f"{name}:{doc.id}"
            if key not in docs and doc.text.strip():
                docs[key] = doc.__class__(id=key, title=doc.title, text=doc.text, metadata={}, source=doc.source)
    return list(docs.values())


class SentencePool:
    """Real sentences and their token counts, to compose distractor passages from."""

    def __init__(self, documents: Sequence[Any]) -> None:
        from ragnet.corpus.sentence_split import split_sentences
        from ragnet.corpus.tokens import count_tokens

        sentences = [s.strip() for d in documents for s in split_sentences(d.text) if len(s.strip()) > 20]
        self.sentences = sentences
        self.tokens = np.fromiter((count_tokens(s) for s in sentences), dtype=np.int64, count=len(sentences))

    def passages(self, start: int, n: int, seed: int) -> list[Chunk]:
        """Distractor chunks ``start .. start+n`` (deterministic for a seed and start)."""
        rng = np.random.default_rng([seed, start])
        counts = rng.integers(3, 7, size=n)
        picks = rng.integers(0, len(self.sentences), size=int(counts.sum()))
        out, at = [], 0
        for i, c in enumerate(counts):
            rows = picks[at:at + c]
            at += c
            text = " ".join(self.sentences[r] for r in rows)
            tokens = int(self.tokens[rows].sum()) + int(c) - 1
            did = f"distractor-{start + i}"
            out.append(Chunk(id=f"{did}#0", doc_id=did, title=f"Passage {start + i}", text=text, tokens=tokens))
        return out


# -- corpus ------------------------------------------------------------------------------
def real_parts(index: Any) -> tuple[list[Chunk], np.ndarray]:
    """All chunks of a (small) index and their stored vectors."""
    chunks = list(index.chunks)
    return chunks, index.vectors([c.id for c in chunks])


def corpus_shards(real: Sequence[tuple[list[Chunk], np.ndarray]], total: int, pool: SentencePool | None,
                  model: VectorModel | None, seed: int = 0) -> Iterator[tuple[list[Chunk], np.ndarray]]:
    """Real parts first, then distractors up to ``total`` passages, in shards of ``SHARD``."""
    n = 0
    for chunks, vectors in real:
        for start in range(0, len(chunks), SHARD):
            part = chunks[start:start + SHARD][: total - n]
            if part:
                yield part, vectors[start:start + len(part)]
                n += len(part)
    while n < total:
        size = min(SHARD, total - n)
        rng = np.random.default_rng([seed, n, 1])
        yield pool.passages(n, size, seed), model.sample(size, rng)
        n += size


def build_corpus(path: Path, real: Sequence[tuple[list[Chunk], np.ndarray]], total: int,
                 pool: SentencePool | None, model: VectorModel | None, faiss_index: str, embedder: str,
                 ivfpq: Any = None, show_progress: bool = True) -> dict[str, Any]:
    """Build the index at ``path``; returns build figures (seconds, throughput, peak RSS)."""
    from ragnet.index import DenseOptions, Index

    t0 = time.perf_counter()
    index = Index.build_from_shards(corpus_shards(real, total, pool, model), path, count=total, embedder=embedder,
                                    dense=DenseOptions(kind=faiss_index, ivfpq=ivfpq),
                                    show_progress=show_progress)
    seconds = time.perf_counter() - t0
    return {
        "passages": total,
        "faiss_index": index.manifest["faiss_index"],
        "ivfpq": index.manifest.get("ivfpq"),
        "build_s": round(seconds, 1),
        "passages_per_s": round(total / seconds, 1),
        "phases_s": {k: round(v, 1) for k, v in (index.build_stats or {}).items()},
        "peak_rss_mb_process": peak_rss_mb(),
        "disk_mb": disk_figures(path, total, int(index.manifest["dimension"])),
    }


def disk_figures(path: Path, count: int, dim: int) -> dict[str, float]:
    """Sizes on disk (MB) by part, and the dense index's share of the float32 vectors' size."""
    mb = lambda p: p.stat().st_size / 2**20  # noqa: E731
    files = [f for f in path.rglob("*") if f.is_file()]
    dense = sum(mb(f) for f in files if f.name.startswith("dense."))
    float32 = count * dim * 4 / 2**20
    return {
        "total": round(sum(mb(f) for f in files), 1),
        "dense_index": round(dense, 1),
        "rescoring_vectors": round(sum(mb(f) for f in files if f.name in ("vectors.f16.npy", "embeddings.npy")), 1),
        "bm25": round(sum(mb(f) for f in files if "bm25" in f.parts), 1),
        "chunks": round(sum(mb(f) for f in files if f.name.startswith("chunks.")), 1),
        "catalog": round(sum(mb(f) for f in files if "catalog" in f.parts), 1),
        "float32_vectors": round(float32, 1),
        "dense_share_of_float32": round(dense / float32, 4),
    }


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (``VmHWM``: unlike ``ru_maxrss``,
    it is not inherited from the parent across ``exec``)."""
    return _proc_status_mb("VmHWM")


# -- measuring (run in a fresh process) ----------------------------------------------------
class ExactScan:
    """Exact dense search over an index's stored vectors, block by block (the reference the
    approximate kinds are compared with on the same corpus)."""

    kind = "exact-scan"

    def __init__(self, vectors: np.ndarray, block: int = 65_536) -> None:
        self.vectors, self.block = vectors, block
        self.ntotal, self.dimension = vectors.shape

    def search(self, queries: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        best_s = np.full((len(q), 0), -np.inf, dtype=np.float32)
        best_i = np.zeros((len(q), 0), dtype=np.int64)
        for start in range(0, self.ntotal, self.block):
            s = q @ np.asarray(self.vectors[start:start + self.block], dtype=np.float32).T
            idx = np.arange(start, start + s.shape[1], dtype=np.int64)[None, :].repeat(len(q), 0)
            all_s, all_i = np.concatenate([best_s, s], axis=1), np.concatenate([best_i, idx], axis=1)
            top = np.argsort(-all_s, axis=1, kind="stable")[:, :n]
            best_s, best_i = np.take_along_axis(all_s, top, 1), np.take_along_axis(all_i, top, 1)
        return best_s, best_i


def measure(index_path: str, questions: Sequence[dict[str, Any]], exact: bool = False, budget: int = 4000,
            k: int = 5) -> dict[str, Any]:
    """Serve ``questions`` from the index at ``index_path``: search latency, OneShotRAG's
    all-gold recall at ``budget`` tokens, and peak RSS. Call it in a fresh process."""
    from ragnet.index import Index
    from ragnet.programs.oneshot import OneShotRAG

    t0 = time.perf_counter()
    index = Index.load(index_path, verify=False)
    load_s = time.perf_counter() - t0
    dense_kind = index.replace_dense(ExactScan).kind if exact else index.manifest["faiss_index"]
    index.search("warm up the embedder", k=k)
    rss_loaded = _proc_status_mb("VmRSS")
    times = []
    for q in questions:
        t = time.perf_counter()
        index.search(q["question"], k=k)
        times.append((time.perf_counter() - t) * 1000)
    program = OneShotRAG(index, budget=budget)
    hits = []
    for q in questions:
        kept = {c.id for c in program.retrieve(q["question"])}
        hits.append(all(any(i in kept for i in ids) for ids in q["gold"].values() if ids))
    return {
        "index": index_path,
        "dense": dense_kind,
        "questions": len(questions),
        "load_s": round(load_s, 2),
        "search_ms_p50": round(statistics.median(times), 2),
        "search_ms_p95": round(float(np.percentile(times, 95)), 2),
        f"oneshot_all_gold_at_{budget}": round(100 * float(np.mean(hits)), 1),
        "rss_mb_after_load": rss_loaded,
        "peak_rss_mb": peak_rss_mb(),
        # at the end: private memory, and the memory-mapped index pages the kernel may drop
        "rss_anon_mb_end": _proc_status_mb("RssAnon"),
        "rss_file_mb_end": _proc_status_mb("RssFile"),
    }


def _proc_status_mb(field: str) -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:  # not Linux: the peak from getrusage (kB on Linux, bytes on macOS)
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def measure_in_subprocess(index_path: Path, questions_file: Path, exact: bool = False, threads: int = 2,
                          embed_backend: str | None = None) -> dict:
    """:func:`measure` in a fresh Python process (its own peak RSS); returns its JSON.
    ``embed_backend`` sets the query embedder's backend there (``RAGNET_EMBED_BACKEND``)."""
    env = dict(os.environ)
    if embed_backend is not None:
        env["RAGNET_EMBED_BACKEND"] = embed_backend
    cmd = [sys.executable, "-m", "ragnet.bench.scale", str(index_path), str(questions_file), str(threads)]
    if exact:
        cmd.append("--exact")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def question_file(folder: Path, real_index: Any, data_dir: str | Path | None, limit: int) -> Path:
    """HotpotQA dev questions with their gold chunk ids (in the real index), as JSON lines."""
    from ragnet.bench.questions import dev_questions
    from ragnet.eval.metrics.gold_evidence import gold_chunk_ids
    from ragnet.eval.run.datasets import load_questions, resolve_dataset

    path = resolve_dataset(REAL_SET, data_dir)
    records = dev_questions(load_questions(path), path, limit)
    file = folder / "questions.jsonl"
    with open(file, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"id": r.id, "question": r.question, "gold": gold_chunk_ids(r, real_index)}) + "\n")
    return file


def run_backend_recall(backend: str, workdir: str | Path, *, data_dir: str | Path | None = None,
                       questions: int = 10_000, threads: int = 2,
                       log: Callable[[str], None] = print) -> dict[str, Any]:
    """OneShotRAG's all-gold recall at 4k tokens on HotpotQA dev, the pooled index embedded
    (documents and queries) with ``backend`` against the torch-embedded pooled index."""
    from ragnet.eval.run.datasets import load_eval_set
    from ragnet.eval.run.eval_indexes import load_pooled
    from ragnet.index import DenseOptions, Index
    from ragnet.index.embedder import Embedder

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    torch_index, _ = load_pooled(REAL_SET, data_dir=data_dir, log=log)
    qfile = question_file(workdir, torch_index, data_dir, questions)
    path = workdir / f"pooled-{backend}"
    if index_manifest(path) is not None:  # built by an earlier run
        build_s = None
    else:
        docs = load_eval_set(REAL_SET, data_dir=data_dir, split=None, mode="pooled").documents
        log(f"embedding the {len(docs)} pooled HotpotQA paragraphs with the {backend} backend")
        t0 = time.perf_counter()
        Index.build(docs, path, embedder=Embedder(backend=backend), dense=DenseOptions(kind="flat"), sentences=False)
        build_s = round(time.perf_counter() - t0, 1)
    ref = measure_in_subprocess(torch_index.path, qfile, threads=threads, embed_backend="torch")
    got = measure_in_subprocess(path, qfile, threads=threads, embed_backend=backend)
    key = "oneshot_all_gold_at_4000"
    return {"backend": backend, "build_s": build_s, "torch": ref, backend: got,
            "difference_points": round(got[key] - ref[key], 1)}


def run_scale_bench(passages: int, workdir: str | Path, *, data_dir: str | Path | None = None,
                    questions: int = 200, faiss_index: str = "ivfpq", ivfpq: Any = None, validate: bool = False,
                    exact: bool = True, threads: int = 2, seed: int = 0,
                    query_backends: Sequence[str] = ("torch",),
                    log: Callable[[str], None] = print) -> dict[str, Any]:
    """Build an index of ``passages`` passages under ``workdir`` and measure it (see the module
    docstring). Returns the figures as a JSON-ready dict.

    Args:
        passages: corpus size (real HotpotQA paragraphs first, then distractors).
        workdir: where the indexes are written (a few GB at 1M passages); reused between runs
            for the real-text validation index.
        questions: HotpotQA dev questions used for latency and recall.
        faiss_index: the dense kind of the large index (``ivfpq``, or any ``Index.build`` kind).
        ivfpq: ``IVFPQParams`` for the on-disk kind.
        validate: also compare an all-real corpus with a mixed one of the same size.
        exact: also measure recall with exact dense search on the same corpus.
        threads: threads for the search processes.
        query_backends: ``Embedder`` backends the search processes embed queries with (the
            first also measures exact-search recall).
    """
    from ragnet.eval.run.eval_indexes import load_pooled

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    real_index, _ = load_pooled(REAL_SET, data_dir=data_dir, log=log)
    real = [real_parts(real_index)]
    n_real = len(real[0][0])
    if passages < n_real:
        from ragnet.errors import InputError

        raise InputError(f"--passages must be at least the {n_real} real HotpotQA chunks", argument="passages")
    log(f"fitting the distractor vector model on {n_real} real vectors; reading distractor sentences")
    model = VectorModel.fit(real[0][1], seed=seed)
    docs = distractor_documents(data_dir)
    pool = SentencePool(docs)
    qfile = question_file(workdir, real_index, data_dir, questions)
    embedder = real_index.manifest["embedder"]
    result: dict[str, Any] = {
        "passages": passages, "real_passages": n_real, "distractor_passages": passages - n_real,
        "distractor_sentences": len(pool.sentences), "questions": questions, "threads": threads,
    }
    for backend in query_backends:
        log(f"baseline: the {n_real}-chunk real index alone, {backend} query embedder")
        result[f"baseline_{backend}"] = measure_in_subprocess(real_index.path, qfile, threads=threads,
                                                              embed_backend=backend)
    big = workdir / f"scale-{passages}-{faiss_index}"
    log(f"building {passages} passages into {big} ({faiss_index})")
    result["build"] = build_corpus(big, real, passages, pool, model, faiss_index, embedder, ivfpq)
    for backend in query_backends:
        log(f"measuring search (fresh process), {backend} query embedder")
        result[f"search_{backend}"] = measure_in_subprocess(big, qfile, threads=threads, embed_backend=backend)
    result["search"] = result[f"search_{query_backends[0]}"]
    if exact:
        log("measuring recall with exact dense search on the same corpus")
        result["search_exact"] = measure_in_subprocess(big, qfile, exact=True, threads=threads,
                                                       embed_backend=query_backends[0])
        key = "oneshot_all_gold_at_4000"
        result["recall_gap_points"] = round(result["search"][key] - result["search_exact"][key], 1)
    if validate:
        result["validation"] = _validate(workdir, real, docs, pool, model, embedder, qfile, threads, log)
    return result


def _validate(workdir: Path, real: list, docs: list, pool: SentencePool, model: VectorModel, embedder: str,
              qfile: Path, threads: int, log: Callable[[str], None]) -> dict[str, Any]:
    """Recall on HotpotQA + the other benchmarks' real paragraphs vs HotpotQA + as many distractors."""
    from ragnet.index import DenseOptions, Index

    others_path = workdir / "real-distractor-paragraphs"
    if index_manifest(others_path) is not None:
        others = Index.load(others_path, verify=False)
    else:
        log(f"embedding {len(docs)} real paragraphs of the other benchmarks (one-off)")
        others = Index.build(docs, others_path, embedder=embedder, dense=DenseOptions(kind="flat"), sentences=False)
    other_parts = real_parts(others)
    total = len(real[0][0]) + len(other_parts[0])
    out: dict[str, Any] = {"passages": total}
    for name, parts, gen_pool in (("all_real", real + [other_parts], None), ("mixed", real, pool)):
        path = workdir / f"validate-{name}-{total}"
        log(f"validation: {name} corpus of {total} passages")
        build_corpus(path, parts, total, gen_pool, model, "flat", embedder, show_progress=False)
        out[name] = measure_in_subprocess(path, qfile, threads=threads)
    key = "oneshot_all_gold_at_4000"
    out["difference_points"] = round(out["mixed"][key] - out["all_real"][key], 1)
    return out


def main(argv: Sequence[str]) -> None:  # python -m ragnet.bench.scale INDEX QUESTIONS THREADS [--exact]
    from ragnet._threads import pin_threads

    pin_threads(int(argv[2]))
    questions = [json.loads(line) for line in Path(argv[1]).read_text(encoding="utf-8").splitlines() if line]
    print(json.dumps(measure(argv[0], questions, exact="--exact" in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])
