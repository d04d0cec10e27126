"""``ChunkStore``: an index's chunks read from disk on demand instead of held in RAM.

``chunks.jsonl`` stays human-readable (one ``Chunk`` per line, in row order). Three sidecar
arrays make access cheap without parsing the file at load::

    chunks.jsonl         one Chunk.to_dict() per line, minus score, dense_score, bm25_score
    chunks.offsets.npy   int64 (n + 1): byte offset of each line start, then the file size
    chunks.ids.npy       S{w} (n,): the chunk ids, UTF-8, sorted bytewise
    chunks.id_rows.npy   int64 (n,): the row of each sorted id

Opening memory-maps the arrays, so nothing proportional to the corpus becomes a Python
object; a row costs one ``pread`` and one ``json.loads`` (then sits in a small LRU cache),
an id lookup a binary search. Nothing is pickled.

Example:
    >>> import tempfile
    >>> from ragnet.corpus.types import Chunk
    >>> folder = tempfile.mkdtemp()
    >>> chunks = [Chunk(id="zürich#0", doc_id="zürich", title="Zürich", text="On the Limmat.", tokens=5),
    ...           Chunk(id="bern#0", doc_id="bern", title="Bern", text="The capital.", tokens=3)]
    >>> write_chunk_store(folder, chunks)
    2
    >>> store = ChunkStore.open(folder, count=2)
    >>> store[0].title, store[-1].id, len(store)
    ('Zürich', 'bern#0', 2)
    >>> store.row("bern#0"), "nowhere#0" in store, store.rows(["bern#0", "zürich#0"]).tolist()
    (1, False, [1, 0])
    >>> [c.id for c in store]
    ['zürich#0', 'bern#0']
    >>> store.close()
"""

from __future__ import annotations

import dataclasses
import functools
import json
import operator
import os
import re
import threading
import weakref
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Iterable, Iterator, overload

import numpy as np

from ragnet.corpus.types import Chunk
from ragnet.errors import IndexFormatError, InputError
from ragnet.index.untrusted import REBUILD as _REBUILD

__all__ = [
    "CHUNKS",
    "OFFSETS",
    "IDS",
    "ID_ROWS",
    "SIDECARS",
    "ChunkStore",
    "ChunkStoreWriter",
    "write_chunk_store",
]

CHUNKS = "chunks.jsonl"
OFFSETS = "chunks.offsets.npy"
IDS = "chunks.ids.npy"
ID_ROWS = "chunks.id_rows.npy"
SIDECARS = (OFFSETS, IDS, ID_ROWS)
_SCORE_FIELDS = ("score", "dense_score", "bm25_score")
_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(Chunk) if f.name not in _SCORE_FIELDS)
_BLOCK = 1 << 20  # bytes per read when scanning rows in order
_ID_PREFIX = b'{"id": "'  # how every chunks.jsonl line starts (Chunk's first field)


def _record_line(chunk: Chunk) -> tuple[bytes, bytes]:
    """The ``chunks.jsonl`` line for ``chunk`` and its UTF-8 id (``InputError`` if unstorable)."""
    if not isinstance(chunk, Chunk):
        raise TypeError(f"ChunkStoreWriter.add expects a ragnet.Chunk, got {type(chunk).__name__}")
    if not isinstance(chunk.id, str):
        raise InputError(f"chunk id must be a string, got {chunk.id!r}", argument="chunks")
    if chunk.id.endswith("\x00"):
        raise InputError(f"chunk id {chunk.id!r} ends with a NUL character, which ids cannot", argument="chunks")
    # The fields in Chunk.to_dict() order, without its deep copy (the slow part of a write);
    # to_dict() is the fallback for metadata holding dataclasses, which it turns into dicts.
    record = {name: getattr(chunk, name) for name in _RECORD_FIELDS}
    try:
        try:
            text = json.dumps(record, ensure_ascii=False)
        except TypeError:
            record = chunk.to_dict()
            for name in _SCORE_FIELDS:
                record.pop(name, None)
            text = json.dumps(record, ensure_ascii=False)
        line = (text + "\n").encode("utf-8")
        key = chunk.id.encode("utf-8")
    except (TypeError, ValueError) as exc:  # non-JSON metadata, lone surrogates
        raise InputError(f"chunk {chunk.id!r} cannot be stored as JSON ({exc})", argument="chunks") from exc
    return line, key


def _sorted_ids(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray, bytes | None]:
    """Sorted ``S{w}`` ids, the row of each, and the first duplicate id (None if unique)."""
    width = max((len(k) for k in keys), default=1) or 1
    ids = np.array(keys, dtype=f"S{width}") if keys else np.zeros(0, dtype="S1")
    order = np.argsort(ids, kind="stable").astype(np.int64)
    ids = ids[order]
    dup = np.flatnonzero(ids[1:] == ids[:-1])
    return ids, order, (bytes(ids[dup[0]]) if dup.size else None)


class ChunkStoreWriter:
    """Stream chunks into ``folder`` as ``chunks.jsonl`` plus the sidecar arrays.

    Only the ids and line offsets are kept in memory. The files are written in place (build
    inside a temporary folder and rename it for atomicity, as ``Index.build`` does).
    Leaving a ``with`` block by an exception removes the files written so far.

    Args:
        folder: the index folder (created if missing). Existing store files are replaced.

    Example:
        >>> import tempfile
        >>> from ragnet.corpus.types import Chunk
        >>> with ChunkStoreWriter(tempfile.mkdtemp()) as writer:
        ...     writer.add(Chunk(id="a#0", doc_id="a", title="A", text="x", tokens=1))
        >>> writer.count
        1
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        for name in SIDECARS:  # stale once chunks.jsonl is rewritten
            (self.folder / name).unlink(missing_ok=True)
        self._fh: Any = open(self.folder / CHUNKS, "wb")
        self._offsets = array("q", [0])
        self._keys: list[bytes] = []
        self.count = 0

    def add(self, chunk: Chunk) -> None:
        """Append ``chunk`` as the next row.

        Raises:
            InputError: the chunk cannot be stored (non-JSON metadata, an id ending in NUL).
            ValueError: the writer is closed.
        """
        if self._fh is None:
            raise ValueError(f"ChunkStoreWriter for {self.folder} is closed")
        line, key = _record_line(chunk)
        self._fh.write(line)
        self._offsets.append(self._offsets[-1] + len(line))
        self._keys.append(key)
        self.count += 1

    def close(self) -> int:
        """Finish ``chunks.jsonl`` and write the three ``.npy`` sidecars.

        Returns:
            The number of chunks written.

        Raises:
            InputError: two chunks share an id (the message names it); nothing is left behind.
        """
        if self._fh is None:
            return self.count
        self._fh.close()
        self._fh = None
        ids, id_rows, dup = _sorted_ids(self._keys)
        if dup is not None:
            self._remove_files()
            raise InputError(f"duplicate chunk id {dup.decode('utf-8')!r}; chunk ids must be unique", argument="chunks")
        np.save(self.folder / ID_ROWS, id_rows, allow_pickle=False)
        np.save(self.folder / IDS, ids, allow_pickle=False)
        np.save(self.folder / OFFSETS, np.frombuffer(self._offsets, dtype=np.int64), allow_pickle=False)
        self._keys = []
        return self.count

    def abort(self) -> None:
        """Stop writing and remove the files written so far."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._remove_files()

    def _remove_files(self) -> None:
        for name in (CHUNKS, *SIDECARS):
            (self.folder / name).unlink(missing_ok=True)

    def __enter__(self) -> "ChunkStoreWriter":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_chunk_store(folder: str | os.PathLike, chunks: Iterable[Chunk]) -> int:
    """Write ``chunks`` (in row order) as a chunk store in ``folder``; returns how many.

    Raises:
        InputError: a duplicate id or an unstorable chunk (no store files are left behind).
    """
    with ChunkStoreWriter(folder) as writer:
        for chunk in chunks:
            writer.add(chunk)
    return writer.count


class ChunkStore(Sequence):
    """Read-only, thread-safe sequence of an index's chunks, read from disk on demand.

    Build one with :meth:`open`. Rows are ``Chunk`` objects (``store[i]``, ``store[a:b]``,
    ``iter(store)``); ids map to rows with :meth:`row`, :meth:`rows` and ``id in store``
    (membership is by id, not by ``Chunk``). Recently read rows are kept in an LRU cache;
    the cached ``Chunk`` objects are shared, so treat their ``metadata`` as read-only.

    Attributes:
        folder: the index folder.
    """

    def __init__(
        self,
        folder: Path,
        fd: int,
        offsets: np.ndarray,
        ids: np.ndarray,
        id_rows: np.ndarray,
        *,
        cache_size: int,
    ) -> None:
        self.folder = folder
        self._fd: int | None = fd
        self._close_fd = weakref.finalize(self, os.close, fd)
        self._offsets = offsets
        self._ids = ids
        self._id_rows = id_rows
        self._n = len(offsets) - 1
        self._width = ids.dtype.itemsize
        self._id_pos: np.ndarray | None = None  # row -> position in ids, built on first id_at
        self._lock = threading.Lock()  # only for platforms without os.pread
        self._cached = functools.lru_cache(maxsize=cache_size)(self._load) if cache_size > 0 else self._load

    # -- opening -----------------------------------------------------------------------
    @classmethod
    def open(cls, folder: str | os.PathLike, count: int | None = None, *, cache_size: int = 4096) -> "ChunkStore":
        """Open the chunk store in ``folder``.

        The sidecar arrays are memory-mapped and checked (shapes, dtypes, offsets increasing
        and ending at the file size, ids sorted and unique); no ``Chunk`` objects are made.

        Args:
            folder: the index folder holding ``chunks.jsonl``.
            count: the number of chunks expected (e.g. the manifest's ``chunk_count``).
            cache_size: how many parsed chunks to keep (0 disables the cache).

        Raises:
            IndexFormatError: a missing, unreadable or inconsistent file (the message names it).
        """
        folder = Path(folder)
        file = folder / CHUNKS
        try:
            fd = os.open(file, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            raise IndexFormatError(f"index at {folder} is incomplete: {CHUNKS} is missing; {_REBUILD}") from None
        except OSError as exc:
            raise IndexFormatError(f"index at {folder} is corrupt: {CHUNKS} unreadable ({exc}); {_REBUILD}") from exc
        try:
            missing = [name for name in SIDECARS if not (folder / name).is_file()]
            if missing:
                raise IndexFormatError(f"index at {folder} is incomplete: {', '.join(missing)} is missing; {_REBUILD}")
            offsets, ids, id_rows = _load_sidecars(folder, os.fstat(fd).st_size)
            n = len(offsets) - 1
            if count is not None and n != int(count):
                raise IndexFormatError(
                    f"index at {folder} is corrupt: {CHUNKS} has {n} chunks, expected {int(count)}; {_REBUILD}"
                )
        except BaseException:
            os.close(fd)
            raise
        return cls(folder, fd, offsets, ids, id_rows, cache_size=cache_size)

    # -- rows --------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, key: int) -> Chunk: ...

    @overload
    def __getitem__(self, key: slice) -> list[Chunk]: ...

    def __getitem__(self, key: Any) -> Chunk | list[Chunk]:
        """``store[i]`` (negative ok, ``IndexError`` out of range) or ``store[a:b:s]`` (a list)."""
        if isinstance(key, slice):
            start, stop, step = key.indices(self._n)
            if step == 1:
                return list(self._scan(start, stop)) if start < stop else []
            return [self._cached(r) for r in range(start, stop, step)]
        row = self._check_row(key)
        return self._cached(row)

    def __iter__(self) -> Iterator[Chunk]:
        """All chunks in row order, read sequentially in large blocks (not cached)."""
        return self._scan(0, self._n)

    def take(self, rows: Iterable[int]) -> list[Chunk]:
        """The chunks at ``rows`` (e.g. search results), in the given order."""
        return [self._cached(self._check_row(r)) for r in rows]

    def _check_row(self, key: Any) -> int:
        row = operator.index(key)
        if row < 0:
            row += self._n
        if not 0 <= row < self._n:
            raise IndexError(f"chunk row {key} out of range for {self._n} chunks")
        return row

    # -- ids ---------------------------------------------------------------------------
    def row(self, chunk_id: str) -> int | None:
        """Row of ``chunk_id``, or None when there is no such chunk."""
        key = self._key(chunk_id)
        if key is None or self._n == 0:
            return None
        pos = int(np.searchsorted(self._ids, np.array(key, dtype=self._ids.dtype)))
        if pos < self._n and self._ids[pos] == key:
            return int(self._id_rows[pos])
        return None

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.row(chunk_id) is not None

    def rows(self, ids: Iterable[str]) -> np.ndarray:
        """Rows of ``ids`` in the given order, as int64, with one vectorised binary search.

        Raises:
            KeyError: an unknown id (the first one; the message names it and the store).
        """
        if isinstance(ids, str):
            raise TypeError("rows() takes a list of chunk ids, not one id; use row() for one")
        ids = list(ids)
        if not ids:
            return np.zeros(0, dtype=np.int64)
        keys = [self._key(i) for i in ids]
        valid = np.array([k is not None for k in keys], dtype=bool)
        query = np.array([k if k is not None else b"" for k in keys], dtype=self._ids.dtype)
        if self._n:
            pos = np.minimum(np.searchsorted(self._ids, query), self._n - 1)
            hit = valid & (self._ids[pos] == query)
        else:
            pos, hit = np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        if not hit.all():
            raise self._unknown(ids[int(np.argmin(hit))])
        return np.asarray(self._id_rows[pos], dtype=np.int64)

    def chunk(self, chunk_id: str) -> Chunk:
        """The chunk with id ``chunk_id`` (``KeyError`` naming it when there is none)."""
        row = self.row(chunk_id)
        if row is None:
            raise self._unknown(chunk_id)
        chunk = self._cached(row)
        if chunk.id != chunk_id:
            raise IndexFormatError(
                f"index at {self.folder} is corrupt: {IDS} maps {chunk_id!r} to row {row}, "
                f"but {CHUNKS}:{self._line_no(row)} holds {chunk.id!r}; {_REBUILD}"
            )
        return chunk

    def id_at(self, row: int) -> str:
        """Id of the chunk at ``row``, from the id arrays (no JSON parsing).

        The row -> sorted-position map this needs (8 bytes a row) is built on first use.
        """
        row = self._check_row(row)
        pos = self._id_pos
        if pos is None:
            pos = np.empty(self._n, dtype=np.int64)
            pos[np.asarray(self._id_rows)] = np.arange(self._n, dtype=np.int64)
            self._id_pos = pos
        return bytes(self._ids[pos[row]]).decode("utf-8")

    def check_ids(self) -> None:
        """Check that each id maps to the row whose line in ``chunks.jsonl`` holds that id.

        ``open`` checks that the id arrays are sorted and that ``chunks.id_rows.npy`` is a
        permutation of the rows, but two swapped entries would still send an id to another
        chunk's row (its title, text and vector). This reads ``chunks.jsonl`` once, in large
        blocks, and compares each line's leading ``"id"`` field with the id mapped to its row;
        ``Index.load(verify=True)`` calls it next to the checksums, which read every file too.

        Raises:
            IndexFormatError: an id and its row's line disagree (the message names both).
        """
        n = self._n
        if not n:
            return
        position = np.empty(n, dtype=np.int64)  # row -> its position in the sorted ids
        position[np.asarray(self._id_rows)] = np.arange(n, dtype=np.int64)
        offsets, escaped = self._offsets, re.compile(rb'["\\\x00-\x1f]')  # what JSON would escape
        i = 0
        while i < n:
            base = int(offsets[i])
            j = min(max(int(np.searchsorted(offsets, base + _BLOCK, side="right")) - 1, i + 1), n)
            data = self._pread(base, int(offsets[j]) - base)
            bounds = (np.asarray(offsets[i : j + 1]) - base).tolist()
            keys = self._ids[position[i:j]].tolist()
            for k, key in enumerate(keys):
                at = bounds[k] + len(_ID_PREFIX)
                if (data.startswith(_ID_PREFIX, bounds[k]) and data.startswith(key, at)
                        and data[at + len(key) : at + len(key) + 1] == b'"' and not escaped.search(key)):
                    continue  # the line starts with {"id": "<this id>"
                record = self._parse(data[bounds[k] : bounds[k + 1]], i + k)
                if record.id.encode("utf-8") != key:
                    row = i + k
                    raise _corrupt(self.folder, ID_ROWS, f"maps id {key.decode('utf-8', 'replace')!r} to row {row}, "
                                                         f"but {CHUNKS}:{self._line_no(row)} holds {record.id!r}")
            i = j

    def _key(self, chunk_id: Any) -> bytes | None:
        """UTF-8 id as stored, or None when no stored id can equal it."""
        if not isinstance(chunk_id, str):
            return None
        try:
            key = chunk_id.encode("utf-8")
        except UnicodeEncodeError:
            return None
        # Longer than every stored id, or a trailing NUL that S arrays would strip: no match.
        if len(key) > self._width or key.endswith(b"\x00"):
            return None
        return key

    def _unknown(self, chunk_id: Any) -> KeyError:
        example = f"; ids look like {self.id_at(0)!r}" if self._n else ""
        return KeyError(f"no chunk with id {chunk_id!r} in index at {self.folder} ({self._n} chunks{example})")

    # -- reading -----------------------------------------------------------------------
    def _pread(self, offset: int, size: int) -> bytes:
        fd = self._fd
        if fd is None:
            raise ValueError(f"chunk store at {self.folder} is closed")
        if hasattr(os, "pread"):
            data = os.pread(fd, size, offset)
        else:  # pragma: no cover - Windows
            with self._lock:
                os.lseek(fd, offset, os.SEEK_SET)
                data = os.read(fd, size)
        if len(data) != size:
            raise IndexFormatError(
                f"index at {self.folder} is corrupt: {CHUNKS} ended at byte {offset + len(data)}, "
                f"expected {offset + size} (truncated?); {_REBUILD}"
            )
        return data

    def _load(self, row: int) -> Chunk:
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return self._parse(self._pread(start, end - start), row)

    def _scan(self, start: int, stop: int) -> Iterator[Chunk]:
        offsets = self._offsets
        i = start
        while i < stop:
            base = int(offsets[i])
            j = int(np.searchsorted(offsets, base + _BLOCK, side="right")) - 1
            j = min(max(j, i + 1), stop)
            data = self._pread(base, int(offsets[j]) - base)
            bounds = (np.asarray(offsets[i : j + 1]) - base).tolist()
            for k in range(j - i):
                yield self._parse(data[bounds[k] : bounds[k + 1]], i + k)
            i = j

    def _parse(self, raw: bytes, row: int) -> Chunk:
        try:
            return Chunk.from_dict(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, TypeError) as exc:
            raise IndexFormatError(
                f"index at {self.folder} is corrupt: {CHUNKS}:{self._line_no(row)} is not a chunk record "
                f"({exc}); {_REBUILD}"
            ) from exc

    def _line_no(self, row: int) -> int:
        """1-based line of ``row`` in ``chunks.jsonl`` (counts newlines; for error messages)."""
        end, pos, lines = int(self._offsets[row]), 0, 1
        while pos < end:
            size = min(_BLOCK, end - pos)
            lines += self._pread(pos, size).count(b"\n")
            pos += size
        return lines

    # -- lifetime ----------------------------------------------------------------------
    def close(self) -> None:
        """Close the file; later reads raise ``ValueError``. Idempotent."""
        self._fd = None
        self._close_fd()
        if hasattr(self._cached, "cache_clear"):
            self._cached.cache_clear()

    def __enter__(self) -> "ChunkStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChunkStore({str(self.folder)!r}, chunks={self._n})"


def _corrupt(folder: Path, name: str, what: str) -> IndexFormatError:
    return IndexFormatError(f"index at {folder} is corrupt: {name} {what}; {_REBUILD}")


def _load_array(folder: Path, name: str) -> np.ndarray:
    path = folder / name
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError):
        pass  # an empty array cannot be memory-mapped by some numpy versions, or a bad file
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise _corrupt(folder, name, f"unreadable ({exc})") from exc


def _load_sidecars(folder: Path, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    offsets = _load_array(folder, OFFSETS)
    if offsets.ndim != 1 or offsets.dtype.kind != "i" or offsets.dtype.itemsize != 8 or len(offsets) < 1:
        raise _corrupt(folder, OFFSETS, f"has shape {offsets.shape} {offsets.dtype}, expected (n + 1,) int64")
    n = len(offsets) - 1
    if int(offsets[0]) != 0:
        raise _corrupt(folder, OFFSETS, f"starts at byte {int(offsets[0])}, not 0")
    if int(offsets[-1]) != size:
        raise _corrupt(
            folder, OFFSETS, f"says {CHUNKS} ends at byte {int(offsets[-1])}, but it has {size} bytes (truncated?)"
        )
    if n and not bool(np.all(np.diff(offsets) > 0)):
        raise _corrupt(folder, OFFSETS, "is not strictly increasing")
    ids = _load_array(folder, IDS)
    if ids.ndim != 1 or ids.dtype.kind != "S" or len(ids) != n:
        raise _corrupt(folder, IDS, f"has shape {ids.shape} {ids.dtype}, expected ({n},) of bytes")
    if n > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise _corrupt(folder, IDS, "is not sorted or holds a duplicate id")
    id_rows = _load_array(folder, ID_ROWS)
    if id_rows.ndim != 1 or id_rows.dtype.kind != "i" or len(id_rows) != n:
        raise _corrupt(folder, ID_ROWS, f"has shape {id_rows.shape} {id_rows.dtype}, expected ({n},) int64")
    if n and (int(id_rows.min()) < 0 or int(id_rows.max()) >= n):
        raise _corrupt(folder, ID_ROWS, f"holds a row outside 0..{n - 1}")
    if n and int(np.bincount(id_rows, minlength=n).max()) != 1:
        raise _corrupt(folder, ID_ROWS, "gives two ids the same row")
    return offsets, ids, id_rows
