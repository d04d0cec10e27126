"""Reading an index folder as untrusted input: paths, ``.npy`` headers and FAISS headers are
checked before anything is opened, mapped or allocated.

An index folder may come from anyone (a download, a shared drive, a colleague), and its manifest's
checksums only prove that the files match the manifest, which can be rewritten with them. So
``Index.load`` checks the folder's structure itself, from sizes and headers, before it trusts it:

* a path the manifest names must be relative, stay inside the folder and not pass through a
  symbolic link (:func:`member`), so nothing outside the folder is ever opened;
* a ``.npy`` file's header must describe exactly the bytes the file holds (:func:`npy_header`),
  so a header claiming 200 million rows is refused before NumPy maps or allocates them;
* a FAISS file's header must agree with the manifest (:func:`faiss_header`), and FAISS reads it
  with every allocation bounded by the file's size (:func:`bounded_faiss_read`).

Every failure is one :class:`~ragnet.errors.IndexFormatError` line that names the file and says
to rebuild.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()); np.save(folder / "a.npy", np.zeros((2, 3), np.float32))
    >>> npy_header(folder, "a.npy").shape
    (2, 3)
    >>> member(folder, "../etc/hostname")
    Traceback (most recent call last):
    ...
    ragnet.errors.IndexFormatError: index at ... is corrupt: manifest.json names '../etc/hostname', outside the index folder; rebuild with `ragnet index`
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator

import numpy as np

from ragnet.corpus.outputs import INDEX_MANIFEST as MANIFEST
from ragnet.errors import IndexFormatError

__all__ = ["NpyHeader", "member", "corrupt", "npy_header", "faiss_header", "flat_faiss_size", "bounded_faiss_read",
           "unreadable", "check_counts", "check_ids"]

REBUILD = "rebuild with `ragnet index`"
_MAX_NPY_HEADER = 1 << 16  # numpy's own readers refuse far smaller headers by default


def corrupt(folder: Path, name: str, what: str) -> IndexFormatError:
    """The one-line error for file ``name`` of the index at ``folder``."""
    return IndexFormatError(f"index at {folder} is corrupt: {name} {what}; {REBUILD}")


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


# -- paths -----------------------------------------------------------------------------
def member(folder: str | os.PathLike, name: Any) -> Path:
    """The path of the index file ``name`` (as the manifest spells it) inside ``folder``.

    ``name`` must be a normalised relative POSIX path ("bm25/params.index.json"), and every part of it
    must be a real entry of the folder, not a symbolic link; the last one a regular file. Only
    ``lstat`` is called: nothing is opened.

    Raises:
        IndexFormatError: ``name`` is absolute, leaves the folder, passes through a symbolic link,
            is missing or is not a regular file.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "x.txt").write_text("x")
        >>> member(d, "x.txt") == d / "x.txt"
        True
    """
    folder = Path(folder)
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
        raise corrupt(folder, MANIFEST, f"names {name!r}, which is not a file name")
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts or pure.as_posix() != name or name.startswith("./"):
        raise corrupt(folder, MANIFEST, f"names {name!r}, outside the index folder")
    path = folder
    parts = pure.parts
    for i, part in enumerate(parts):
        path = path / part
        rel = "/".join(parts[: i + 1])
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise IndexFormatError(f"index at {folder} is incomplete: {name} is missing; {REBUILD}") from None
        except OSError as exc:
            raise corrupt(folder, rel, f"cannot be read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(st.st_mode):
            raise corrupt(folder, rel, f"is a symbolic link (to {os.readlink(path)!r}); an index holds its files "
                                       "itself")
        last = i == len(parts) - 1
        if last and not stat.S_ISREG(st.st_mode):
            raise corrupt(folder, rel, "is not a regular file")
        if not last and not stat.S_ISDIR(st.st_mode):
            raise corrupt(folder, rel, "is not a folder")
    return path


# -- .npy headers ----------------------------------------------------------------------
@dataclass(frozen=True)
class NpyHeader:
    """What a ``.npy`` file's header says: ``shape``, ``dtype`` and where the data starts."""

    shape: tuple[int, ...]
    dtype: np.dtype
    offset: int

    @property
    def nbytes(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n * self.dtype.itemsize


def npy_header(folder: str | os.PathLike, name: str) -> NpyHeader:
    """Read the header of the ``.npy`` file ``name`` in ``folder`` and check it against the file's size.

    The file must hold exactly the bytes its header describes, in C order, with no Python objects;
    so loading or mapping it afterwards costs at most its size on disk.

    Raises:
        IndexFormatError: an unreadable header, or one that describes more or fewer bytes than the
            file holds (the message gives both).
    """
    folder = Path(folder)
    path = folder / name
    fmt = np.lib.format
    try:
        with open(path, "rb") as fh:
            version = fmt.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(fh, max_header_size=_MAX_NPY_HEADER)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(fh, max_header_size=_MAX_NPY_HEADER)
            else:
                raise ValueError(f".npy format version {version} is not one ragnet writes")
            offset = fh.tell()
            size = os.fstat(fh.fileno()).st_size
    except (OSError, ValueError, SyntaxError, TypeError, EOFError) as exc:
        raise corrupt(folder, name, f"has no readable .npy header ({_one_line(exc)})") from None
    if fortran or dtype.hasobject or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise corrupt(folder, name, f"has an unsupported .npy header (shape {shape}, {dtype}, fortran {fortran})")
    header = NpyHeader(tuple(shape), dtype, offset)
    if offset + header.nbytes != size:
        raise corrupt(folder, name, f"says it holds {header.shape} {dtype} ({offset + header.nbytes} bytes), "
                                    f"but the file has {size} bytes")
    return header


# -- FAISS files -----------------------------------------------------------------------
# Every FAISS index file starts with a fourcc, then the index header: d (int32), ntotal (int64),
# two unused int64, is_trained (1 byte), metric type (int32) and, for metric types above 1, a float.
_FAISS_HEAD = struct.Struct("<4siq")
_FLAT_HEADER = struct.Struct("<4siqqqBi")  # all of an IndexFlatIP's header (metric 0: no float)
_U64 = struct.Struct("<Q")


def faiss_header(path: str | os.PathLike) -> tuple[bytes, int, int]:
    """``(fourcc, d, ntotal)`` of a FAISS index file, read from its first 16 bytes.

    Raises:
        IndexFormatError: the file is shorter than a header.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(_FAISS_HEAD.size)
    if len(head) < _FAISS_HEAD.size:
        raise corrupt(path.parent, path.name, f"holds {len(head)} bytes, fewer than a FAISS index header")
    return _FAISS_HEAD.unpack(head)


def flat_faiss_size(path: str | os.PathLike) -> int:
    """The exact size an ``IndexFlatIP`` file must have, from its header and vector length.

    FAISS allocates the vector length it reads before it reads the vectors; a 30 KB file can claim
    gigabytes. This reads the same fields first, so a file whose claims do not add up to its size
    is refused without FAISS allocating anything.

    Raises:
        IndexFormatError: not an ``IndexFlatIP`` file, or a vector length other than ``d * ntotal``.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(_FLAT_HEADER.size + _U64.size)
    if len(head) < _FLAT_HEADER.size + _U64.size:
        raise corrupt(path.parent, path.name, f"holds {len(head)} bytes, fewer than a flat FAISS index header")
    fourcc, d, ntotal, _, _, _, metric = _FLAT_HEADER.unpack_from(head)
    if fourcc != b"IxFI" or metric != 0:
        raise corrupt(path.parent, path.name, f"is not an inner-product flat FAISS index (type {fourcc!r})")
    (floats,) = _U64.unpack_from(head, _FLAT_HEADER.size)
    if floats != d * ntotal:
        raise corrupt(path.parent, path.name, f"claims {floats} floats ({4 * floats} bytes) for {ntotal} vectors "
                                              f"of dimension {d}")
    return _FLAT_HEADER.size + _U64.size + 4 * floats


_LIMITS_GUARD = threading.Lock()


@contextlib.contextmanager
def bounded_faiss_read(faiss: Any, size: int) -> Iterator[None]:
    """Within the block, FAISS refuses to allocate a vector or loop over a count larger than ``size``
    (the file's bytes) while reading an index, so a crafted file cannot make it allocate more than
    about twice the file.

    FAISS's limits are process-wide settings; they are restored on exit and the block is serialised
    between threads. FAISS builds without these settings (PyPI's faiss-cpu before 1.14.2, below
    ragnet's floor; conda or source builds may differ) read unbounded.
    """
    setters = ("set_deserialization_vector_byte_limit", "set_deserialization_loop_limit")
    getters = ("get_deserialization_vector_byte_limit", "get_deserialization_loop_limit")
    if not all(hasattr(faiss, name) for name in (*setters, *getters)):
        yield
        return
    with _LIMITS_GUARD:
        saved = [getattr(faiss, name)() for name in getters]
        bound = max(int(size), 1 << 16)
        try:
            for name, old in zip(setters, saved):
                getattr(faiss, name)(min(bound, old) if old else bound)
            yield
        finally:
            for name, old in zip(setters, saved):
                getattr(faiss, name)(old)

def unreadable(path: Path, why: Any) -> IndexFormatError:
    """The one-line error for a FAISS file that cannot be used."""
    why = " ".join(str(why).split())
    why = why if len(why) <= 300 else why[:300] + "..."
    return IndexFormatError(f"FAISS file {path} is unreadable ({why}); rebuild with `ragnet index`")


def check_counts(path: Path, d: int, ntotal: int, count: int | None, dimension: int | None) -> None:
    """Refuse a FAISS header whose vector count or dimension is not the manifest's."""
    if (count is not None and ntotal != count) or (dimension is not None and d != dimension):
        raise unreadable(path, f"its header says {ntotal} vectors of dimension {d}, the manifest {count} of {dimension}")


def check_ids(path: Path, lists: Iterable[np.ndarray], ntotal: int) -> None:
    """Every id of the inverted ``lists`` must be a row in ``0 .. ntotal - 1``, each exactly once."""
    seen = np.zeros(ntotal, dtype=bool)
    stored = 0
    for ids in lists:
        ids = np.asarray(ids)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= ntotal):
            bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
            raise unreadable(path, f"an inverted list holds id {bad}, outside 0..{ntotal - 1}")
        seen[ids] = True
        stored += ids.size
    distinct = int(seen.sum())
    if stored != ntotal or distinct != ntotal:
        raise unreadable(path, f"its inverted lists hold {stored} ids ({distinct} distinct) for {ntotal} vectors")
