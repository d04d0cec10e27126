"""A compressed dense index on disk: FAISS IVF-PQ with memory-mapped inverted lists.

For corpora whose float32 vectors do not fit in RAM. Following FAISS's own recipe for
large indexes (``faiss/contrib/ondisk.py``, ``demos/demo_ondisk_ivf.py``):

1. train the coarse quantizer (``nlist`` k-means centroids) and the product quantizer
   (``m`` sub-quantizers of ``2**nbits`` codes; OPQ rotation optional) on a sample;
2. add the vectors in independent shards (each a copy of the trained, empty index that
   holds only its rows; shards can be built on different machines);
3. merge the shards' inverted lists into one ``OnDiskInvertedLists`` file
   (``dense.ivfdata``) that search memory-maps instead of reading.

A vector costs ``m`` bytes of code plus an 8-byte id (56 bytes at the default ``m=48``
for 384 dimensions, against 1,536 bytes as float32). Search returns approximate
neighbours; ``Index`` then re-scores the candidate pool exactly from full vectors.

Example:
    >>> import numpy as np, tempfile, pathlib
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((2000, 16)).astype(np.float32)
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> params = IVFPQParams(nlist=16, m=4).resolve(len(x), 16)
    >>> trained = train(x, params)
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> shards = [add_shard(trained, x[i:i + 1000], i, d / f"s{i}.faiss") for i in (0, 1000)]
    >>> merge(trained, shards, d / "dense.faiss")
    2000
    >>> index = load(d / "dense.faiss", params.nprobe)
    >>> int(index.ntotal), int(index.search(x[:1], 5)[1][0, 0])
    (2000, 0)
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ragnet.errors import IndexFormatError, InputError, require
from ragnet.index.untrusted import bounded_faiss_read, check_counts, check_ids, faiss_header, unreadable

IVFDATA_SUFFIX = ".ivfdata"  # inverted lists beside the index file: dense.faiss -> dense.ivfdata
# Defaults, chosen with `ragnet bench scale` (docs/results/scale/README.md): nlist ~ 2*sqrt(n)
# keeps training short at a million passages; 32 probed lists keep the scan cheap next to the
# re-scoring; m = d/8 (48 bytes a vector for MiniLM).
NPROBE = 32
SAMPLE_PER_LIST = 64  # training vectors per coarse centroid (FAISS warns below 39)
MAX_TRAIN = 262_144


def _faiss() -> Any:
    return require("faiss", purpose="dense vector search")


@dataclass(frozen=True)
class IVFPQParams:
    """IVF-PQ settings; ``None`` fields are derived from the corpus size by :meth:`resolve`.

    Attributes:
        nlist: coarse clusters (inverted lists); default a power of two near ``2*sqrt(n)``.
        m: PQ sub-quantizers, i.e. bytes per vector at 8 bits; must divide the dimension
            (default ``d/8``, so 48 for 384-dimensional MiniLM).
        nbits: bits per sub-quantizer code (8: 256 centroids each).
        opq: learn an OPQ rotation before quantizing (better codes, slower training).
        nprobe: lists scanned per query.
        train_size: vectors sampled for training (default ``64 * nlist``, at most 262,144).

    Example:
        >>> IVFPQParams().resolve(1_000_000, 384)
        IVFPQParams(nlist=2048, m=48, nbits=8, opq=False, nprobe=32, train_size=131072)
    """

    nlist: int | None = None
    m: int | None = None
    nbits: int = 8
    opq: bool = False
    nprobe: int = NPROBE
    train_size: int | None = None

    def resolve(self, n: int, d: int) -> "IVFPQParams":
        """The settings for ``n`` vectors of dimension ``d`` (checked; defaults filled in)."""
        nlist = self.nlist
        if nlist is None:
            nlist = 2 ** round(math.log2(max(2.0 * math.sqrt(max(n, 1)), 1.0)))
            nlist = max(1, min(nlist, 65_536, max(1, n // SAMPLE_PER_LIST)))
        m = self.m if self.m is not None else max(1, d // 8)
        for name, value in (("nlist", nlist), ("m", m), ("nbits", self.nbits), ("nprobe", self.nprobe)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"IVF-PQ {name} must be a positive integer, got {value!r}", argument=name)
        if d % m:
            divisors = [k for k in range(1, d + 1) if d % k == 0 and k <= 128]
            raise InputError(f"IVF-PQ m={m} must divide the dimension {d}; try one of {divisors[-6:]}", argument="m")
        if nlist > n:
            raise InputError(f"IVF-PQ nlist={nlist} is larger than the corpus ({n} vectors)", argument="nlist")
        train_size = self.train_size or min(n, MAX_TRAIN, max(SAMPLE_PER_LIST * nlist, 2 ** self.nbits * 40))
        return IVFPQParams(int(nlist), int(m), int(self.nbits), bool(self.opq), int(self.nprobe),
                           int(min(train_size, n)))

    def factory(self) -> str:
        """The FAISS ``index_factory`` string (inner product on L2-normalised vectors)."""
        pre = f"OPQ{self.m}," if self.opq else ""
        return f"{pre}IVF{self.nlist},PQ{self.m}x{self.nbits}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "IVFPQParams":
        known = {k: data[k] for k in ("nlist", "m", "nbits", "opq", "nprobe", "train_size") if k in data}
        return cls(**known)


def sample_rows(n: int, size: int, seed: int = 0) -> np.ndarray:
    """``size`` distinct row numbers out of ``n``, sorted (sequential reads from a memmap)."""
    if size >= n:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)).astype(np.int64)


def train(sample: np.ndarray, params: IVFPQParams) -> Any:
    """An empty IVF-PQ index trained on ``sample`` (``(s, d)``, rows L2-normalised)."""
    faiss = _faiss()
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    index = faiss.index_factory(sample.shape[1], params.factory(), faiss.METRIC_INNER_PRODUCT)
    # Polysemous code ordering serves Hamming-filtered search, which ragnet does not use; it is
    # on by default and makes training many times slower.
    faiss.downcast_index(faiss.extract_index_ivf(index)).do_polysemous_training = False
    index.train(sample)
    return index


def add_shard(trained: Any, vectors: np.ndarray, first_row: int, file: str | os.PathLike) -> Path:
    """Encode ``vectors`` (rows ``first_row ...`` of the corpus) into a copy of the trained
    index and write it to ``file``; returns the path. Shards are independent of each other."""
    faiss = _faiss()
    shard = faiss.clone_index(trained)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ids = np.arange(first_row, first_row + len(vectors), dtype=np.int64)
    if len(vectors):
        shard.add_with_ids(vectors, ids)
    faiss.write_index(shard, str(file))
    return Path(file)


def merge(trained: Any, shard_files: Sequence[str | os.PathLike], index_file: str | os.PathLike) -> int:
    """Merge the shards' inverted lists into ``<index_file stem>.ivfdata`` on disk and write
    the index header to ``index_file``. Returns the number of vectors.

    The header records the data file by name; :func:`load` finds it beside the header, so
    the folder can be moved (or renamed into place) after writing.
    """
    faiss = _faiss()
    from faiss.contrib.ondisk import merge_ondisk

    index_file = Path(index_file)
    data_file = index_file.with_suffix(IVFDATA_SUFFIX)
    index = faiss.clone_index(trained)
    with _c_stdout_silenced():  # OnDiskInvertedLists printf()s every file resize
        merge_ondisk(index, [str(f) for f in shard_files], str(data_file))
    faiss.write_index(index, str(index_file))
    return int(index.ntotal)


@contextlib.contextmanager
def _c_stdout_silenced() -> Iterator[None]:
    """Send what C code writes to file descriptor 1 to /dev/null for the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def load(index_file: str | os.PathLike, nprobe: int = NPROBE, *, count: int | None = None,
         dimension: int | None = None) -> Any:
    """Open an on-disk IVF-PQ index; its inverted lists are memory-mapped, not read.

    Both files are untrusted (``ragnet.index.untrusted``). The header is read first with the
    inverted lists left unmapped, its allocations bounded by the file's size; the table of lists it
    holds must fit inside ``.ivfdata`` (a shorter file would be mapped and then kill the process with
    SIGBUS on the first search); and every stored id must be a distinct row below the vector count.
    Only then is the data file mapped (read-only).

    Args:
        index_file: the header file (``dense.faiss``); the lists are in ``dense.ivfdata`` beside it.
        nprobe: lists scanned per query.
        count: the number of vectors it must hold (the manifest's ``chunk_count``), if known.
        dimension: their dimension, if known.

    Raises:
        IndexFormatError: either file is missing, unreadable or inconsistent (one line naming it).
    """

    faiss = _faiss()
    index_file = Path(index_file)
    data_file = index_file.with_suffix(IVFDATA_SUFFIX)
    for f in (index_file, data_file):
        if not f.is_file():
            raise IndexFormatError(f"FAISS file {f} is missing; rebuild with `ragnet index`")
    fourcc, d, ntotal = faiss_header(index_file)
    if fourcc not in (b"IwPQ", b"IxPT"):  # IVF-PQ, or IVF-PQ behind an OPQ rotation
        raise unreadable(index_file, f"it holds a FAISS index of type {fourcc!r}, not IVF-PQ")
    check_counts(index_file, d, ntotal, count, dimension)
    flags = (faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_SKIP_IVF_DATA | faiss.IO_FLAG_SKIP_PRECOMPUTE_TABLE
             | faiss.IO_FLAG_READ_ONLY)
    try:
        with bounded_faiss_read(faiss, index_file.stat().st_size), _c_stdout_silenced():
            index = faiss.read_index(str(index_file), flags)  # FAISS printf()s the data file's new location
        ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
        lists = faiss.downcast_InvertedLists(ivf.invlists)
    except Exception as exc:  # noqa: BLE001 - FAISS raises RuntimeError with C++ text
        raise unreadable(index_file, exc) from exc
    if not isinstance(ivf, faiss.IndexIVFPQ) or not isinstance(lists, faiss.OnDiskInvertedLists):
        raise unreadable(index_file, "it is not an IVF-PQ index with inverted lists on disk")
    spans = _list_spans(index_file, data_file, ivf, lists)
    check_ids(data_file, _stored_ids(data_file, spans), int(index.ntotal))
    try:
        lists.do_mmap()
    except Exception as exc:  # noqa: BLE001
        raise unreadable(data_file, exc) from exc
    if ivf.by_residual:  # what read_index does unless told to skip it: a table of nlist * m * 2**nbits floats
        ivf.use_precomputed_table = 0
        ivf.precompute_table()
    ivf.nprobe = int(min(nprobe, ivf.nlist))
    return index


def _list_spans(index_file: Path, data_file: Path, ivf: Any, lists: Any) -> list[tuple[int, int, int]]:
    """``(offset, size, capacity)`` of each inverted list, checked to lie inside ``data_file``.

    A list holds ``capacity`` codes of ``code_size`` bytes, then ``capacity`` 8-byte ids.
    """

    nlist, code_size = int(ivf.nlist), int(ivf.code_size)
    if (int(lists.nlist), int(lists.code_size), int(lists.lists.size())) != (nlist, code_size, nlist) \
            or int(ivf.pq.code_size) != code_size or int(ivf.quantizer.ntotal) != nlist:
        raise unreadable(index_file, f"its inverted lists ({int(lists.nlist)} of {int(lists.code_size)}-byte codes) "
                                     f"do not match its {nlist} lists of {code_size}-byte codes")
    if Path(str(lists.filename)).name != data_file.name:
        raise unreadable(index_file, f"it names {Path(str(lists.filename)).name!r} as its inverted lists, "
                                     f"not {data_file.name}")
    total, size = int(lists.totsize), data_file.stat().st_size
    if total > size:
        raise unreadable(data_file, f"it has {size} bytes, but {index_file.name} says its lists take {total}")
    spans, stored = [], 0
    for i in range(nlist):
        entry = lists.lists.at(i)
        offset, n, capacity = int(entry.offset), int(entry.size), int(entry.capacity)
        if n > capacity or offset + capacity * (code_size + 8) > total:
            raise unreadable(data_file, f"inverted list {i} ({n} of {capacity} entries at byte {offset}) lies "
                                        f"outside its {total} bytes")
        spans.append((offset, n, capacity))
        stored += n
    if stored != int(ivf.ntotal):
        raise unreadable(data_file, f"its lists hold {stored} entries for {int(ivf.ntotal)} vectors")
    return [(offset + capacity * code_size, n, capacity) for offset, n, capacity in spans]


def _stored_ids(data_file: Path, spans: list[tuple[int, int, int]]) -> Iterator[np.ndarray]:
    """The ids of each inverted list, read with ``pread`` (so the file's pages are not mapped)."""
    fd = os.open(data_file, os.O_RDONLY)
    try:
        for ids_at, n, _ in spans:
            if n:
                yield np.frombuffer(os.pread(fd, 8 * n, ids_at), dtype="<i8")
    finally:
        os.close(fd)
