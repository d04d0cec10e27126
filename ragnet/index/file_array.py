"""Read parts of a large on-disk NumPy array with ``pread`` instead of a memory map.

A memory map counts every page it has touched toward the process's resident memory (RSS) for as
long as the kernel keeps the page. Serving a million-passage index touches most of the BM25
posting lists and many re-scoring vectors within a few hundred queries, so the RSS of a process
that memory-maps them grows toward the size of those files (docs/results/scale/README.md),
although each query needs only the few megabytes it reads. :class:`FileArray` reads
exactly those bytes with ``os.preadv`` into a private array that is freed after the query. The
bytes still come from the kernel's page cache (shared between processes, dropped under memory
pressure); they just never stay mapped into the process. The cost is one copy of what is read.

Platforms without ``os.preadv`` (Windows) keep the memory map: :func:`file_backed` returns it
unchanged there.

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(12, dtype=np.float32).reshape(6, 2))
    >>> arr = FileArray(np.load(path, mmap_mode="r"))
    >>> arr[1:3].tolist(), arr[np.array([5, 0])].tolist(), arr.shape
    ([[2.0, 3.0], [4.0, 5.0]], [[10.0, 11.0], [0.0, 1.0]], (6, 2))
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from ragnet.errors import IndexFormatError

__all__ = ["FileArray", "file_backed"]


class FileArray:
    """A read-only C-ordered array in a ``.npy`` file, read on demand with ``os.preadv``.

    Indexing takes a slice of rows (``arr[a:b]``, step 1) or an integer array of rows
    (``arr[rows]``) and returns a new in-memory ``ndarray``; shape, dtype and values are those
    the memory map would give.

    Args:
        array: the array opened with ``np.load(path, mmap_mode="r")``.

    Raises:
        TypeError: ``array`` is not a file-backed ``np.memmap`` in C order.
    """

    def __init__(self, array: np.memmap) -> None:
        if not _is_file_map(array):
            raise TypeError("FileArray needs a C-ordered np.memmap of a file (np.load(path, mmap_mode='r'))")
        self.path = Path(array.filename)
        self.shape: tuple[int, ...] = tuple(array.shape)
        self.dtype = array.dtype
        self._offset = int(array.offset)
        self._row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        fd = os.open(self.path, os.O_RDONLY)
        self._fd = fd
        self._close = weakref.finalize(self, os.close, fd)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> np.ndarray:
        n = self.shape[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise IndexError("FileArray slices take step 1")
            out = np.empty((max(0, stop - start), *self.shape[1:]), dtype=self.dtype)
            self._read_into(out, start)
            return out
        rows = np.asarray(key)
        if rows.dtype.kind not in "iu":
            raise IndexError(f"FileArray takes a slice or integer rows, not {rows.dtype}")
        rows = rows.astype(np.int64, copy=False)
        if rows.size and (rows.min() < -n or rows.max() >= n):
            raise IndexError(f"row out of range for a FileArray of {n} rows")
        rows = np.where(rows < 0, rows + n, rows)
        out = np.empty((*rows.shape, *self.shape[1:]), dtype=self.dtype)
        flat = out.reshape(rows.size, *self.shape[1:])
        for i, row in enumerate(rows.ravel().tolist()):
            self._read_into(flat[i : i + 1], row)
        return out

    def _read_into(self, out: np.ndarray, first_row: int) -> None:
        """Fill ``out`` (rows ``first_row``, ``first_row + 1``, ...) from the file."""
        want = out.nbytes
        if want == 0:
            return
        view = memoryview(out.reshape(-1).view(np.uint8))
        position = self._offset + first_row * self._row_bytes
        done = 0
        while done < want:  # a read may return less than asked (very large reads, signals)
            got = os.preadv(self._fd, [view[done:]], position + done)
            if got <= 0:
                raise IndexFormatError(f"{self.path} ended at byte {position + done}, expected "
                                       f"{position + want} (truncated?); rebuild with `ragnet index`")
            done += got


def file_backed(array: np.ndarray) -> np.ndarray | FileArray:
    """``array`` as a :class:`FileArray` when it is a memory map that can be read that way
    (``os.preadv`` exists, C order); otherwise ``array`` itself."""
    return FileArray(array) if hasattr(os, "preadv") and _is_file_map(array) else array


def _is_file_map(array: Any) -> bool:
    """Whether ``array`` is a C-ordered memory map of a file (what :class:`FileArray` reads)."""
    return isinstance(array, np.memmap) and array.filename is not None and array.flags.c_contiguous
