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


def to_bytes(index: Any) -> np.ndarray:
    """FAISS's own serialisation of ``index`` as a uint8 array (ships a trained index to a
    worker without pickle)."""
    return _faiss().serialize_index(index)


def from_bytes(data: np.ndarray) -> Any:
    """Inverse of :func:`to_bytes`."""
    return _faiss().deserialize_index(np.ascontiguousarray(data, dtype=np.uint8))


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


def load(index_file: str | os.PathLike, nprobe: int = NPROBE) -> Any:
    """Open an on-disk IVF-PQ index; its inverted lists are memory-mapped, not read.

    Raises:
        IndexFormatError: the header or its ``.ivfdata`` file is missing or unreadable.
    """
    faiss = _faiss()
    index_file = Path(index_file)
    data_file = index_file.with_suffix(IVFDATA_SUFFIX)
    for f in (index_file, data_file):
        if not f.is_file():
            raise IndexFormatError(f"FAISS file {f} is missing; rebuild with `ragnet index`")
    try:
        with _c_stdout_silenced():  # FAISS printf()s the data file's new location
            index = faiss.read_index(str(index_file), faiss.IO_FLAG_ONDISK_SAME_DIR)
        ivf = faiss.extract_index_ivf(index)
    except Exception as exc:  # noqa: BLE001 - FAISS raises RuntimeError with C++ text
        raise IndexFormatError(f"FAISS file {index_file} is unreadable ({exc}); rebuild with `ragnet index`") from exc
    ivf.nprobe = int(min(nprobe, ivf.nlist))
    return index
