"""``CatalogStore``: the rule filter's metadata catalog, persisted and memory-mapped.

:class:`ragnet.core.rules.MetadataCatalog` holds its inverted maps as Python dicts built from
every chunk at load. For large indexes the index writes them once, at build time, with
:class:`CatalogWriter`, and :class:`CatalogStore` answers the same questions from memory-mapped
arrays. Keys are normalised by the helpers of :mod:`ragnet.core.rules` itself, and
:meth:`CatalogStore.matches` returns exactly what ``MetadataCatalog.matches`` does for the same
chunks, so ``rules.apply(question_meta, candidates, store)`` works unchanged.

Files in the catalog folder (``catalog/`` of an index; nothing is pickled)::

    info.npy                int64 (2,): format version, chunk count
    {m}.keys.npy            uint8: the map's distinct keys, UTF-8, sorted bytewise, concatenated
    {m}.key_offsets.npy     int64 (k + 1): byte offset of each key in {m}.keys.npy, then its size
    {m}.offsets.npy         int64 (k + 1): CSR offsets of each key's postings in {m}.rows.npy
    {m}.rows.npy            int64: the rows holding each key, ascending within a key
    titles.npy              uint8: the distinct raw titles, UTF-8, in order of first appearance
    titles.offsets.npy      int64 (u + 1): byte offset of each title in titles.npy, then its size
    title_of_row.npy        int64 (n,): each row's title (index into the distinct titles)
    title_group.npy         int64 (u,): each distinct title's group; titles that normalise alike
                            share one (what "rank within its title" counts over)

with ``{m}`` one of ``title``, ``entity``, ``place``, ``year`` (years as decimal strings).
Variable-length keys are binary-searched in place, so opening reads no key and no posting.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp() + "/catalog"
    >>> items = [("ew#0", {"title_entities": ["ed wood"]}, "Ed Wood (film)"),
    ...          ("la#0", {"title_places": ["los angeles"], "title_years": [1984]}, "Los Angeles 1984")]
    >>> writer = CatalogWriter(folder)
    >>> for row, (cid, meta, title) in enumerate(items):
    ...     writer.add(row, cid, meta, title)
    >>> writer.close()
    >>> ids = [cid for cid, _, _ in items]
    >>> store = CatalogStore.open(folder, len(ids), ids.__getitem__,
    ...                          {c: r for r, c in enumerate(ids)}.get, lambda r: items[r][1])
    >>> store.matches({"entities": ["ed wood"], "places": ["los angeles"]})[0]
    ('ew#0', 1, "title 'Ed Wood (film)' matches question entity 'ed wood'")
    >>> store.by_year[1984], store.metadata["la#0"]["title_years"], len(store), "x#0" in store
    (['la#0'], [1984], 2, False)
"""

from __future__ import annotations

import operator
import os
from array import array
from collections.abc import Callable, Iterator, Mapping
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ragnet._text import normalize_text
from ragnet.core.rules import (
    _declared_places,
    _declared_years,
    _terms,
    _unpack_item,
    question_terms,
)
from ragnet.core.title_keys import title_keys
from ragnet.errors import IndexFormatError
from ragnet.index.untrusted import REBUILD as _REBUILD

__all__ = ["FILES", "FORMAT", "MAPS", "CatalogStore", "CatalogWriter"]

#: Version of the catalog file layout (``info.npy``'s first value).
FORMAT = 1
#: The four inverted maps, as file-name prefixes.
MAPS = ("title", "entity", "place", "year")
INFO = "info.npy"
TITLES = "titles.npy"
TITLE_OFFSETS = "titles.offsets.npy"
TITLE_OF_ROW = "title_of_row.npy"
TITLE_GROUP = "title_group.npy"
_MAP_PARTS = ("keys", "key_offsets", "offsets", "rows")
#: Every file a complete catalog folder holds.
FILES = (
    INFO,
    *(f"{m}.{part}.npy" for m in MAPS for part in _MAP_PARTS),
    TITLES,
    TITLE_OFFSETS,
    TITLE_OF_ROW,
    TITLE_GROUP,
)


def _encode(text: str) -> bytes:
    # surrogatepass: any Python str round-trips, so no key can fail to store or to match.
    return text.encode("utf-8", "surrogatepass")


class CatalogWriter:
    """Collect every chunk's catalog keys, then write the catalog files.

    Memory grows with the number of distinct keys and of postings (kept as ``array("q")``),
    not with per-chunk objects. The files are written in place, not one by one atomically:
    write into a temporary index folder that is renamed into place, as ``IndexWriter`` does.

    Args:
        folder: the catalog folder (created if missing), e.g. ``<index>/catalog``.

    Example:
        >>> import tempfile
        >>> writer = CatalogWriter(tempfile.mkdtemp())
        >>> writer.add(0, "a#0", {"title_years": [2019]}, "Budget 2019")
        >>> writer.close(); writer.count
        1
    """

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self._closed = False
        self._postings: dict[str, dict[bytes, array]] = {m: {} for m in MAPS}
        self._title_ids: dict[str, int] = {}  # distinct raw title -> its index
        self._group_ids: dict[str, int] = {}  # normalised title -> its group
        self._title_group = array("q")
        self._title_of_row = array("q")

    def add(self, row: int, chunk_id: str, metadata: Mapping[str, Any] | None, title: str | None) -> None:
        """Add the chunk at ``row``; rows must come in order ``0, 1, ..., n - 1``.

        Raises:
            InputError: malformed metadata or id (as ``MetadataCatalog.build`` reports it).
            ValueError: a row out of order, or the writer is closed.
        """
        if self._closed:
            raise ValueError(f"CatalogWriter for {self.folder} is closed")
        if isinstance(row, bool) or operator.index(row) != self.count:
            raise ValueError(f"catalog rows must be added in order: expected row {self.count}, got {row!r}")
        _, meta, title = _unpack_item((chunk_id, metadata, title), row)
        tid = self._title_ids.get(title)
        if tid is None:
            tid = self._title_ids[title] = len(self._title_ids)
            self._title_group.append(self._group_ids.setdefault(normalize_text(title), len(self._group_ids)))
        self._title_of_row.append(tid)
        keys = (
            title_keys(title),
            _terms(meta.get("title_entities")),
            _declared_places(meta),
            [str(y) for y in _declared_years(meta)],
        )
        for name, values in zip(MAPS, keys):
            postings = self._postings[name]
            for value in values:
                key = _encode(value)
                rows = postings.get(key)
                if rows is None:
                    rows = postings[key] = array("q")
                rows.append(row)
        self.count += 1

    def close(self) -> None:
        """Write the catalog files (``info.npy`` last) and free the collected keys. Idempotent."""
        if self._closed:
            return
        for name in MAPS:
            postings = self._postings[name]
            keys = sorted(postings)
            self._save(f"{name}.keys.npy", np.frombuffer(b"".join(keys), dtype=np.uint8))
            self._save(f"{name}.key_offsets.npy", _offsets(len(k) for k in keys))
            self._save(f"{name}.offsets.npy", _offsets(len(postings[k]) for k in keys))
            rows = array("q")
            for k in keys:
                rows.extend(postings[k])
            self._save(f"{name}.rows.npy", np.frombuffer(rows, dtype=np.int64))
            self._postings[name] = {}
        titles = [_encode(t) for t in self._title_ids]
        self._save(TITLES, np.frombuffer(b"".join(titles), dtype=np.uint8))
        self._save(TITLE_OFFSETS, _offsets(len(t) for t in titles))
        self._save(TITLE_OF_ROW, np.frombuffer(self._title_of_row, dtype=np.int64))
        self._save(TITLE_GROUP, np.frombuffer(self._title_group, dtype=np.int64))
        self._save(INFO, np.array([FORMAT, self.count], dtype=np.int64))
        self._title_ids, self._group_ids = {}, {}
        self._title_of_row, self._title_group = array("q"), array("q")
        self._closed = True

    def _save(self, name: str, arr: np.ndarray) -> None:
        np.save(self.folder / name, arr, allow_pickle=False)


def _offsets(lengths: Any) -> np.ndarray:
    out = np.zeros(1, dtype=np.int64)
    lens = np.fromiter(lengths, dtype=np.int64)
    return np.concatenate([out, np.cumsum(lens)]) if lens.size else out


# ------------------------------------------------------------------------------ reading


def _corrupt(folder: Path, name: str, what: str) -> IndexFormatError:
    return IndexFormatError(f"metadata catalog at {folder} is corrupt: {name} {what}; {_REBUILD}")


def _load(folder: Path, name: str, kind: str, length: int | None = None) -> np.ndarray:
    """Memory-map ``name`` and check it is 1-D of ``kind`` (``"i8"`` or ``"u1"``), ``length`` long."""
    path = folder / name
    try:
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise IndexFormatError(f"metadata catalog at {folder} is incomplete: {name} is missing; {_REBUILD}") from None
    except (OSError, ValueError, EOFError):
        try:  # an empty array cannot be memory-mapped by some numpy versions
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise _corrupt(folder, name, f"is unreadable ({exc})") from exc
    expected = np.dtype(kind)
    if (arr.ndim != 1 or arr.dtype.kind != expected.kind or arr.dtype.itemsize != expected.itemsize
            or not arr.dtype.isnative):
        raise _corrupt(folder, name, f"has shape {arr.shape} {arr.dtype}, expected 1-D {expected}")
    if length is not None and len(arr) != length:
        raise _corrupt(folder, name, f"has {len(arr)} entries, expected {length}")
    return arr.view(np.ndarray)  # still backed by the file; plain ndarrays index faster than memmaps


def _check_offsets(folder: Path, name: str, offsets: np.ndarray, total: int, target: str) -> None:
    if len(offsets) < 1 or int(offsets[0]) != 0 or int(offsets[-1]) != total:
        ends = (int(offsets[0]), int(offsets[-1])) if len(offsets) else None
        raise _corrupt(folder, name, f"spans {ends}, expected (0, {total}) to cover {target}")


class _Strings:
    """Variable-length UTF-8 strings stored as a byte blob plus offsets (memory-mapped)."""

    def __init__(self, folder: Path, blob: str, offsets: str) -> None:
        self.folder, self.name = folder, blob
        self.blob = _load(folder, blob, "u1")
        self.offsets = _load(folder, offsets, "i8")
        _check_offsets(folder, offsets, self.offsets, len(self.blob), blob)
        # memoryviews: indexing gives Python ints and bytes without creating arrays
        self._bytes, self._offs, self._size = memoryview(self.blob), memoryview(self.offsets), len(self.blob)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def raw(self, i: int) -> bytes:
        a, b = self._offs[i], self._offs[i + 1]
        if not 0 <= a <= b <= self._size:
            raise _corrupt(self.folder, self.name, f"entry {i} spans bytes {a}..{b} outside the file")
        return self._bytes[a:b].tobytes()

    def text(self, i: int) -> str:
        try:
            return self.raw(i).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise _corrupt(self.folder, self.name, f"entry {i} is not UTF-8 ({exc})") from exc

    def find(self, key: bytes) -> int | None:
        """Position of ``key`` among the (bytewise sorted) strings, or None."""
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.raw(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self) and self.raw(lo) == key else None


class _Postings:
    """One inverted map: sorted keys -> ascending rows (CSR)."""

    def __init__(self, folder: Path, name: str, rows_total: int) -> None:
        self.folder, self.name, self.n = folder, name, rows_total
        self.keys = _Strings(folder, f"{name}.keys.npy", f"{name}.key_offsets.npy")
        self.rows = _load(folder, f"{name}.rows.npy", "i8")
        self.offsets = _load(folder, f"{name}.offsets.npy", "i8", len(self.keys) + 1)
        _check_offsets(folder, f"{name}.offsets.npy", self.offsets, len(self.rows), f"{name}.rows.npy")

    def rows_at(self, pos: int) -> list[int]:
        a, b = int(self.offsets[pos]), int(self.offsets[pos + 1])
        if not 0 <= a < b <= len(self.rows):
            raise _corrupt(self.folder, f"{self.name}.offsets.npy", f"entry {pos} spans {a}..{b} outside the postings")
        rows = np.asarray(self.rows[a:b])
        if int(rows[0]) < 0 or int(rows[-1]) >= self.n or (len(rows) > 1 and not bool(np.all(rows[1:] > rows[:-1]))):
            raise _corrupt(self.folder, f"{self.name}.rows.npy", f"rows {a}..{b} are not ascending rows below {self.n}")
        return rows.tolist()

    def rows_of(self, key: str) -> list[int]:
        pos = self.keys.find(_encode(key))
        return [] if pos is None else self.rows_at(pos)


class _PostingView(Mapping):
    """Read-only ``key -> [chunk ids]`` view of one map (like ``MetadataCatalog.by_title``)."""

    def __init__(self, postings: _Postings, id_of_row: Callable[[int], str], years: bool) -> None:
        self._p, self._id_of_row, self._years = postings, id_of_row, years

    def _key(self, key: Any) -> str | None:
        if self._years:
            return None if isinstance(key, bool) or not isinstance(key, int) else str(key)
        return key if isinstance(key, str) else None

    def __getitem__(self, key: Any) -> list[str]:
        k = self._key(key)
        pos = None if k is None else self._p.keys.find(_encode(k))
        if pos is None:
            raise KeyError(key)
        return [self._id_of_row(r) for r in self._p.rows_at(pos)]

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self._p.keys)):
            text = self._p.keys.text(i)
            if self._years:
                try:
                    yield int(text)
                except ValueError:
                    raise _corrupt(self._p.folder, self._p.keys.name, f"entry {i} is not a year: {text!r}") from None
            else:
                yield text

    def __len__(self) -> int:
        return len(self._p.keys)

    def __contains__(self, key: object) -> bool:
        k = self._key(key)
        return k is not None and self._p.keys.find(_encode(k)) is not None


class _RowView(Mapping):
    """Read-only ``chunk id -> value`` view over rows (``metadata``, ``titles``)."""

    def __init__(self, store: "CatalogStore", value_of_row: Callable[[int], Any]) -> None:
        self._store, self._value_of_row = store, value_of_row

    def __getitem__(self, chunk_id: Any) -> Any:
        row = self._store._row(chunk_id)
        if row is None:
            raise KeyError(chunk_id)
        return self._value_of_row(row)

    def __iter__(self) -> Iterator[str]:
        return (self._store._id_of_row(r) for r in range(self._store._n))

    def __len__(self) -> int:
        return self._store._n

    def __contains__(self, chunk_id: object) -> bool:
        return self._store._row(chunk_id) is not None


class CatalogStore:
    """A persisted ``MetadataCatalog``: same ``matches``, same ``metadata[chunk_id]``.

    Open one with :meth:`open`. Chunk ids and metadata are not stored here; they come from the
    index's chunk store through the callables given to :meth:`open`.

    Attributes:
        folder: the catalog folder.
        by_title, by_entity, by_place, by_year: read-only mappings from key to chunk ids, equal
            to ``MetadataCatalog``'s dicts (keys iterate in bytewise order, not build order).
        metadata: read-only mapping chunk id -> metadata (what ``rules.apply`` reads).
        titles: read-only mapping chunk id -> title.
    """

    def __init__(
        self,
        folder: Path,
        n: int,
        maps: dict[str, _Postings],
        titles: _Strings,
        title_of_row: np.ndarray,
        title_group: np.ndarray,
        id_of_row: Callable[[int], str],
        row_of_id: Callable[[str], int | None],
        metadata_of_row: Callable[[int], Mapping[str, Any]],
    ) -> None:
        self.folder = folder
        self._n = n
        self._maps = maps
        self._titles = titles
        self._title_of_row = title_of_row
        self._title_group = title_group
        self._id_of_row = id_of_row
        self._row_of_id = row_of_id
        self.by_title = _PostingView(maps["title"], id_of_row, years=False)
        self.by_entity = _PostingView(maps["entity"], id_of_row, years=False)
        self.by_place = _PostingView(maps["place"], id_of_row, years=False)
        self.by_year = _PostingView(maps["year"], id_of_row, years=True)
        self.metadata = _RowView(self, metadata_of_row)
        self.titles = _RowView(self, lambda r: self._titles.text(self._title_ids([r])[0]))

    @staticmethod
    def has_files(folder: str | os.PathLike) -> bool:
        """Whether ``folder`` holds every catalog file (False, e.g., for an index written before them).

        Example:
            >>> import tempfile
            >>> CatalogStore.has_files(tempfile.mkdtemp())
            False
        """
        folder = Path(folder)
        return all((folder / name).is_file() for name in FILES)

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike,
        chunk_count: int,
        id_of_row: Callable[[int], str],
        row_of_id: Callable[[str], int | None],
        metadata_of_row: Callable[[int], Mapping[str, Any]],
    ) -> "CatalogStore":
        """Memory-map the catalog in ``folder`` (written by :class:`CatalogWriter`).

        Only sizes and end points are checked here, so opening costs the same at any size; a
        posting or title is checked when it is read (the index manifest's checksums cover the rest).

        Args:
            folder: the catalog folder.
            chunk_count: the number of chunks the index holds.
            id_of_row: chunk id at a row.
            row_of_id: row of a chunk id, None when there is no such chunk.
            metadata_of_row: chunk metadata at a row.

        Raises:
            IndexFormatError: a missing, unreadable or inconsistent file (the message names it).
        """
        folder = Path(folder)
        missing = [name for name in FILES if not (folder / name).is_file()]
        if missing:
            where = "the folder is missing" if not folder.is_dir() else f"{missing[0]} is missing"
            raise IndexFormatError(f"metadata catalog at {folder} is incomplete: {where}; {_REBUILD}")
        info = _load(folder, INFO, "i8", 2)
        version, n = (int(v) for v in info)
        if version != FORMAT:
            raise _corrupt(folder, INFO, f"says format version {version}; this ragnet reads version {FORMAT}")
        if n != int(chunk_count):
            raise _corrupt(folder, INFO, f"covers {n} chunks, but the index has {int(chunk_count)}")
        maps = {name: _Postings(folder, name, n) for name in MAPS}
        titles = _Strings(folder, TITLES, TITLE_OFFSETS)
        title_of_row = _load(folder, TITLE_OF_ROW, "i8", n)
        title_group = _load(folder, TITLE_GROUP, "i8", len(titles))
        return cls(folder, n, maps, titles, title_of_row, title_group, id_of_row, row_of_id, metadata_of_row)

    def __len__(self) -> int:
        return self._n

    def __contains__(self, chunk_id: object) -> bool:
        return self._row(chunk_id) is not None

    def __repr__(self) -> str:
        return f"CatalogStore({str(self.folder)!r}, chunks={self._n})"

    def _row(self, chunk_id: object) -> int | None:
        if not isinstance(chunk_id, str):
            return None
        row = self._row_of_id(chunk_id)
        return row if row is not None and 0 <= row < self._n else None

    def _title_ids(self, rows: list[int]) -> list[int]:
        tids = np.asarray(self._title_of_row[np.asarray(rows, dtype=np.int64)])
        if tids.size and (int(tids.min()) < 0 or int(tids.max()) >= len(self._titles)):
            raise _corrupt(self.folder, TITLE_OF_ROW, f"holds a title outside 0..{len(self._titles) - 1}")
        return tids.tolist()

    def matches(self, question_meta: Mapping[str, Any]) -> list[tuple[str, int, str]]:
        """Catalog chunks matching the question's entities or places, best first.

        Exactly ``MetadataCatalog.matches`` over the same chunks: same ids, scores, reasons
        and order.

        Returns:
            ``(chunk_id, score, reason)`` per matching chunk.
        """
        terms = question_terms(question_meta)
        title_hits: dict[int, list[str]] = {}
        other_hits: dict[int, list[str]] = {}
        for term in terms:
            in_title = self._maps["title"].rows_of(term)
            for row in in_title:
                title_hits.setdefault(row, []).append(term)
            skip = set(in_title)
            for row in chain(self._maps["entity"].rows_of(term), self._maps["place"].rows_of(term)):
                if row in skip:
                    continue
                hits = other_hits.setdefault(row, [])
                if not hits or hits[-1] != term:  # terms come one at a time: a repeat is the last
                    hits.append(term)
        found = sorted(title_hits.keys() | other_hits.keys())
        if not found:
            return []
        tids = self._title_ids(found)
        groups = np.asarray(self._title_group[np.asarray(tids, dtype=np.int64)]).tolist()
        title_of: dict[int, int] = dict(zip(found, tids))
        rank_in_title: dict[int, int] = {}
        seen: dict[int, int] = {}
        for row, group in zip(found, groups):
            rank_in_title[row] = seen.get(group, 0)
            seen[group] = rank_in_title[row] + 1

        def sort_key(row: int) -> tuple[int, int, int, int]:
            t, o = len(title_hits.get(row, ())), len(other_hits.get(row, ()))
            return (-(t + o), -t, rank_in_title[row], row)

        texts: dict[int, str] = {}
        out = []
        for row in sorted(found, key=sort_key):
            tid = title_of[row]
            title = texts.get(tid)
            if title is None:
                title = texts[tid] = self._titles.text(tid)
            parts = [f"title {title!r} matches question {terms[t]} {t!r}" for t in title_hits.get(row, ())]
            others = other_hits.get(row, ())
            if others:
                parts.append("title mentions question " + ", ".join(f"{terms[t]} {t!r}" for t in others))
            out.append((self._id_of_row(row), len(title_hits.get(row, ())) + len(others), "; ".join(parts)))
        return out
