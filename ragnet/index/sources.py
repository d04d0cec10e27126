"""Where an index's chunks came from: a content hash per document and per file (``sources.json``).

An update (:mod:`ragnet.index.update`) compares these hashes with the documents (or files) it is
given, so it reads, chunks and embeds only what changed. The file sits in the index folder,
listed with its checksum in the manifest like every other file::

    {"format": "ragnet-sources", "version": 1, "code": sha256 of ragnet's reading and chunking code,
     "docs":  [[doc id, sha256 of the document, first chunk row, chunk count], ...],   # row order
     "files": [[file key, sha256 of the file's bytes, [doc id, ...]], ...]}            # ragnet index only

A document's hash covers everything chunking reads from it (id, title, text, metadata, location,
positions); a file's hash covers its bytes, so a changed file is found by its content, never by its
modification time. ``files`` is empty for an index built from documents made in Python. ``code``
(:func:`code_fingerprint`) says which ragnet read and chunked them: after an upgrade that changed
how files are read or chunked, an unchanged file would no longer give the chunks the index holds,
so an update then reads every file again (reusing the vectors of passages that did not change).

Example:
    >>> import tempfile
    >>> from ragnet.corpus.types import Chunk, Document
    >>> docs = [Document(id="a", title="A", text="One."), Document(id="b", title="B", text="Two.")]
    >>> chunks = [Chunk(id="a#0", doc_id="a", title="A", text="One.", tokens=2),
    ...           Chunk(id="b#0", doc_id="b", title="B", text="Two.", tokens=2)]
    >>> sources = Sources.of(docs, chunks)
    >>> sources.docs["b"].row, sources.docs["b"].chunks
    (1, 1)
    >>> folder = tempfile.mkdtemp(); _ = sources.save(folder)
    >>> Sources.load(folder).docs == sources.docs
    True
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["DocRecord", "FileRecord", "SOURCES", "Sources", "code_fingerprint", "document_hash"]

SOURCES = "sources.json"
FORMAT = "ragnet-sources"
VERSION = 1
_MAX_BYTES = 1 << 31  # a sources file larger than this is not one ragnet wrote


_CODE: list[str] = []


def code_fingerprint() -> str:
    """SHA-256 (hex) of the source of what turns files into chunks: the ``ragnet.corpus`` package
    (readers, chunking, metadata, sentence splitting), the passage text and the sentence store.

    Example:
        >>> len(code_fingerprint()), code_fingerprint() == code_fingerprint()
        (64, True)
    """
    if not _CODE:
        root = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in [*sorted((root / "corpus").rglob("*.py")), root / "index" / "passages.py",
                     root / "index" / "sentence_store.py"]:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE.append(digest.hexdigest())
    return _CODE[0]


def document_hash(doc: Any) -> str:
    """SHA-256 (hex) of everything chunking reads from a document.

    Example:
        >>> from ragnet.corpus.types import Document
        >>> a = Document(id="d", title="T", text="Some text.")
        >>> document_hash(a) == document_hash(Document(id="d", title="T", text="Some text."))
        True
        >>> document_hash(a) == document_hash(Document(id="d", title="T", text="Other text."))
        False
    """
    record = [doc.id, doc.title, doc.text, doc.metadata, getattr(doc, "location", None) or {},
              [[int(offset), place] for offset, place in (getattr(doc, "positions", None) or ())]]
    data = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class DocRecord:
    """One document of the index: its hash and its chunks' rows ``row .. row + chunks - 1``."""

    sha256: str
    row: int
    chunks: int

    def held_by(self, store: Any, doc_id: str) -> bool:
        """Whether ``store``'s rows ``row .. row + chunks - 1`` are this document's chunks (their
        first and last ids): ``sources.json`` comes from an untrusted folder."""
        last = self.row + self.chunks - 1
        return (last < len(store) and store.id_at(self.row) == f"{doc_id}#0"
                and store.id_at(last) == f"{doc_id}#{self.chunks - 1}")


@dataclass(frozen=True)
class FileRecord:
    """One file a ``ragnet index`` run read: the hash of its bytes and its documents, in order."""

    sha256: str
    docs: tuple[str, ...]


@dataclass
class Sources:
    """The documents (in row order) and files an index was made from.

    Attributes:
        docs: document id -> :class:`DocRecord`, in row order.
        files: file key (the path relative to the folder indexed, as citations show it) ->
            :class:`FileRecord`; empty when the index was built from documents made in Python.
    """

    docs: dict[str, DocRecord] = field(default_factory=dict)
    files: dict[str, FileRecord] = field(default_factory=dict)
    code: str = field(default_factory=code_fingerprint)

    @classmethod
    def of(cls, docs: Sequence[Any], chunks: Sequence[Any], files: Mapping[str, FileRecord] | None = None,
           hashes: Mapping[str, str] | None = None) -> "Sources":
        """The sources of an index whose rows are ``chunks`` (document by document, in ``docs``
        order). ``hashes`` gives documents' hashes already computed (by id)."""
        hashes = hashes or {}
        first: dict[str, int] = {}
        count: dict[str, int] = {}
        for row, chunk in enumerate(chunks):
            first.setdefault(chunk.doc_id, row)
            count[chunk.doc_id] = count.get(chunk.doc_id, 0) + 1
        records = {}
        for doc in docs:
            if doc.id in first:
                records[doc.id] = DocRecord(hashes.get(doc.id) or document_hash(doc), first[doc.id], count[doc.id])
        return cls(records, dict(files or {}))

    def file_hashes(self) -> dict[str, str]:
        """Each recorded file (by its key) and the SHA-256 its bytes had when indexed."""
        return {key: record.sha256 for key, record in self.files.items()}

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``sources.json`` into ``folder`` (an index being written, before its checksums)."""
        path = Path(folder) / SOURCES
        data = {"format": FORMAT, "version": VERSION, "code": self.code,
                "docs": [[i, r.sha256, r.row, r.chunks] for i, r in self.docs.items()],
                "files": [[k, r.sha256, list(r.docs)] for k, r in self.files.items()]}
        path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "Sources | None":
        """Read ``sources.json`` of an index folder; None when it is missing or not ragnet's.

        The folder is untrusted: anything malformed reads as "no sources", so an update reads every
        document again (it still reuses the vectors of unchanged passages) rather than trusting it.
        The rows it names are checked against the chunk ids by the update itself.
        """
        path = Path(folder) / SOURCES
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_BYTES:
                return None
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
                return None
            docs = {}
            for item in data["docs"]:
                doc_id, sha, row, n = item
                if not (isinstance(doc_id, str) and isinstance(sha, str) and type(row) is int
                        and type(n) is int and row >= 0 and n >= 1) or doc_id in docs:
                    return None
                docs[doc_id] = DocRecord(sha, row, n)
            files = {}
            for item in data["files"]:
                key, sha, ids = item
                if not (isinstance(key, str) and isinstance(sha, str) and isinstance(ids, list)
                        and all(isinstance(i, str) for i in ids)) or key in files:
                    return None
                files[key] = FileRecord(sha, tuple(ids))
            code = data.get("code", "")
            if not isinstance(code, str):
                return None
        except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError):
            return None
        return cls(docs, files, code)

    def file_of(self) -> dict[str, str]:
        """Document id -> the key of the file it was read from (documents of recorded files only)."""
        return {doc_id: key for key, record in self.files.items() for doc_id in record.docs}

    def without(self, doc_ids: Iterable[str]) -> "Sources":
        """A copy without ``doc_ids``; a file that loses a document loses its record (it is read again
        by the next ``ragnet index`` run, which puts its documents back if the file still has them)."""
        gone = set(doc_ids)
        return Sources({i: r for i, r in self.docs.items() if i not in gone},
                       {k: r for k, r in self.files.items() if not gone.intersection(r.docs)}, self.code)
