"""Load documents from JSON Lines, plain-text, Markdown, PDF, HTML and DOCX files, folders and globs.

Supported inputs:

- ``.jsonl``: one JSON object per line with ``text`` (or ``contents``) and optional ``id``,
  ``title`` and ``metadata`` (a dict); any other top-level key is kept in ``metadata``.
  Blank lines are skipped. A record without ``id`` gets ``"{file stem}:{line}"``.
- ``.txt``, ``.md``, ``.markdown``: one document per file. The id is the path relative to
  the folder (or glob base) it was found in, or the file name for a file named directly.
  The title is the first Markdown heading (``.md``), else the first non-empty line when it
  is at most 120 characters, else the file stem. A Markdown file may start with simple
  ``key: value`` front matter between ``---`` lines; ``title`` sets the title and the other
  keys go into ``metadata``.
- ``.pdf``, ``.html``/``.htm``, ``.docx``: one document per file, read by
  :mod:`ragnet.corpus.formats` (``pypdf``, ``beautifulsoup4``, ``python-docx``, imported only
  when such a file is read). The id is the relative path as for text files; the title is
  the one the file declares (PDF ``/Title``, HTML ``<title>`` or first ``h1``, DOCX core
  properties), else as for text files; ``author`` and ``date`` go into ``metadata`` (a file's
  date is not its ``year``: :func:`ragnet.corpus.formats.date_metadata`).
  An encrypted, scanned-only (no text layer), truncated or malformed file, or an HTML page
  with no text once its boilerplate is removed, is a problem like any other.
- Every document records where it came from (``Document.location``: ``file``, and ``line``
  for a JSONL record) and, for PDF pages and HTML, DOCX and Markdown headings (and a plain
  text's numbered or outline headings, :mod:`ragnet.corpus.formats.plain_text`), where each part
  of its text sits (``Document.positions``), which chunking turns into each chunk's
  ``metadata["location"]`` (:mod:`ragnet.corpus.locations`).
- Folders are searched recursively in sorted order for those suffixes (hidden files and
  folders, whose names start with ``.``, are skipped; other files with unsupported
  suffixes are skipped with a warning).
- Glob patterns (``"docs/**/*.md"``) are expanded with ``glob.glob(recursive=True)``.
- Folders ragnet wrote (an index, an eval run: :mod:`ragnet.corpus.outputs`) found inside a
  folder or under a pattern are skipped with one warning, so an index kept inside the folder
  it indexes is never read back as documents; named directly, such a folder is refused.

Nothing is dropped silently: every problem raises ``ragnet.errors.InputError`` naming the
file and line, e.g. ``docs.jsonl:3: invalid JSON: Expecting ',' delimiter (column 17)``. A
broken or looping symbolic link, a pipe or a device where a file should be is such a
problem too, and so is text that is not valid Unicode (a lone surrogate escape such as
``"\\ud800"`` in a JSONL record), found before anything is embedded. With
``on_error="skip"`` the files with problems are left out whole instead (never part of a
file), and :func:`read_documents` says which and why (:class:`LoadReport`).

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "paris.md").write_text("# Paris\\n\\nParis is the capital of France.\\n")
    >>> [(d.id, d.title) for d in load_documents(folder)]
    [('paris.md', 'Paris')]
"""

from __future__ import annotations

import codecs
import errno
import glob as _glob
import json
import os
import re
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Union

from ragnet._printable import printable_name
from ragnet._text import MAX_QUESTION_CHARS, question_problem
from ragnet.corpus.formats.markdown import heading_positions, strip_inline_data
from ragnet.corpus.formats.plain_text import text_structure
from ragnet.corpus.limits import DEFAULT_MAX_FILE_MB, FileBounds, cap_positions, cap_title
from ragnet.corpus.outputs import ragnet_output
from ragnet.corpus.types import Document
from ragnet.errors import InputError

__all__ = ["load_documents", "read_documents", "LoadReport", "SUFFIXES", "ON_ERROR"]

PathLike = Union[str, os.PathLike]

#: Supported file suffixes (lower case) and their format.
SUFFIXES = {".jsonl": "jsonl", ".txt": "text", ".md": "markdown", ".markdown": "markdown",
            ".pdf": "pdf", ".html": "html", ".htm": "html", ".docx": "docx"}
#: Formats read from bytes by :mod:`ragnet.corpus.formats` rather than decoded as text.
_BINARY_FORMATS = frozenset({"pdf", "html", "docx"})
#: What ``load_documents`` does with a file it cannot read: report all and load nothing, or leave it out.
ON_ERROR = ("fail", "skip")
_SUPPORTED = ", ".join(SUFFIXES)
MAX_TITLE_CHARS = 120
_BINARY_PROBE = 8192
_GLOB_MAGIC = re.compile(r"[*?\[]")
_FRONT_MATTER_LINE = re.compile(r"^([A-Za-z_][\w\-]*)[ \t]*:[ \t]*(.*?)[ \t]*$")
# a JSON escape of a UTF-16 surrogate: the only way a lone surrogate gets into decoded text
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class _Source:
    """A file to read, with the id base it was found under."""

    path: Path
    display: str  # how the path is written in messages and ids' provenance
    rel_id: str  # id of a txt/md document
    base: Path | None = None  # the folder (or a pattern's base) it was found in; None: named itself
    problem: InputError | None = None  # a folder of the walk that could not be listed, reported as its file


def unreadable_folder(source: Any) -> str | None:
    """The path (relative to the folder walked, as files' ids are) of a folder that could not be
    listed, when ``source`` stands for one; None for a file. An update keeps what the index holds
    from such a folder instead of removing it.

    Example:
        >>> unreadable_folder(_Source(Path("a.md"), "a.md", "a.md")) is None
        True
    """
    return source.rel_id if source.problem is not None else None


@dataclass
class LoadReport:
    """What :func:`read_documents` read and what it left out.

    Attributes:
        documents: the documents read, in input order.
        files_read: how many files they came from.
        skipped: one ``InputError`` per file left out (``on_error="skip"``), in input order;
            ``err.path`` is the file, ``str(err)`` the one-line reason.

    Example:
        >>> report = LoadReport([], 3, [InputError("encrypted PDF (it needs a password)", path="a.pdf")])
        >>> print(report.summary())
        read 3 files (0 documents); skipped 1 file:
          encrypted PDF: a.pdf
    """

    documents: list[Document]
    files_read: int
    skipped: list[InputError] = field(default_factory=list)

    def reasons(self) -> dict[str, list[str]]:
        """Skipped files grouped by reason (the message up to its details), in order of first appearance."""
        groups: dict[str, list[str]] = {}
        for err in self.skipped:
            groups.setdefault(_reason(err), []).append(printable_name(err.path or err.argument or "?"))
        return groups

    def summary(self) -> str:
        """``read N files (M documents); skipped K files:`` then one line per reason naming its files."""
        plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"  # noqa: E731
        head = f"read {plural(self.files_read, 'file')} ({plural(len(self.documents), 'document')})"
        if not self.skipped:
            return head
        lines = [f"{head}; skipped {plural(len(self.skipped), 'file')}:"]
        for reason, files in self.reasons().items():
            lines.append(f"  {reason}: {', '.join(files)}")
        return "\n".join(lines)


def _reason(err: InputError) -> str:
    """The kind of problem, without its details: ``"encrypted PDF"`` of ``"encrypted PDF (it needs...)"``."""
    message = err.message
    for stop in (":", " (", ";", ","):
        cut = message.find(stop)
        if cut > 0:
            message = message[:cut]
    return message.strip() or err.message


def load_documents(
    paths: PathLike | Iterable[PathLike],
    *,
    glob: str | None = None,
    encoding: str = "utf-8",
    max_file_mb: float | None = DEFAULT_MAX_FILE_MB,
    on_error: str = "fail",
    follow_links: bool = False,
) -> list[Document]:
    """Read documents from files, folders and glob patterns.

    Args:
        paths: a file, folder or glob pattern, or a list of them. Files are read in the order
            given; a folder's files in sorted path order; a pattern's matches sorted. A file
            reached twice (say, named and inside a named folder) is read once.
        glob: inside folders, read only the files matching this pattern (relative to the
            folder, e.g. ``"**/*.md"``) instead of every supported file.
        encoding: text encoding of the text files (UTF-8 by default; a leading BOM is
            removed). HTML files declare their own (``<meta charset>``), else it is guessed.
        max_file_mb: the work one file may cost, in megabytes (None: no bound): refuse a file
            larger than this on disk, a DOCX unpacking to more, a PDF whose pages hold more
            drawing instructions than a tenth of it on one page or three times it in all, an
            HTML page of more than 20,000 elements per MB (:mod:`ragnet.corpus.limits`). A huge
            file is more likely a mistake (a log, a dump) than a document; raise the limit for a
            real one.
        on_error: ``"fail"`` (default): any bad file raises, listing every bad file, and
            nothing is returned. ``"skip"``: bad files are left out whole and one warning
            summarises them (:func:`read_documents` returns that summary instead).
        follow_links: read a file a symbolic link in a folder (or under a pattern) leads to
            outside that folder; by default such a link is a problem naming it, so a link
            such as ``notes.txt -> ~/.ssh/id_rsa`` cannot carry a file into the index unseen.

    Returns:
        The documents, in input order.

    Raises:
        InputError: a path does not exist or matches nothing, a file has an unsupported
            suffix, is empty, binary or not valid in ``encoding``, a JSONL line is not a
            JSON object or lacks a non-empty string ``text`` or holds a lone surrogate, a file
            is larger than ``max_file_mb``, is a broken or looping symbolic link or not a
            regular file, a link leads outside its folder, a subfolder cannot be listed, a PDF is
            encrypted, has no text layer or is damaged, a DOCX is
            damaged or an HTML page has no text, a named folder is ragnet's own output (an
            index, an eval run), two documents share an id, or no document was found. The
            message names the file and line; every bad file is reported at once (one line
            each), not only the first. With ``on_error="skip"``, only when no document is left.

    Example:
        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "docs.jsonl"
        >>> _ = f.write_text('{"id": "d1", "title": "Paris", "text": "Paris is in France.", "year": 2019}\\n')
        >>> doc = load_documents(f)[0]
        >>> doc.id, doc.title, doc.metadata, doc.location
        ('d1', 'Paris', {'year': 2019}, {'file': 'docs.jsonl', 'line': 1})
    """
    report = read_documents(paths, glob=glob, encoding=encoding, max_file_mb=max_file_mb, on_error=on_error,
                            follow_links=follow_links)
    if report.skipped:
        warnings.warn(report.summary(), stacklevel=2)
    return report.documents


def read_documents(
    paths: PathLike | Iterable[PathLike],
    *,
    glob: str | None = None,
    encoding: str = "utf-8",
    max_file_mb: float | None = DEFAULT_MAX_FILE_MB,
    on_error: str = "fail",
    follow_links: bool = False,
) -> LoadReport:
    """:func:`load_documents`, returning what was read and what was skipped (``LoadReport``).

    Arguments and errors as for :func:`load_documents`; with ``on_error="skip"`` a file with a
    problem (any problem :func:`load_documents` names a file for, a duplicate id included) is
    left out whole and listed in ``LoadReport.skipped``.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "a.txt").write_text("Paris is in France.")
        >>> _ = (folder / "b.txt").write_text("")
        >>> report = read_documents(folder, on_error="skip")
        >>> [d.id for d in report.documents], report.files_read, [e.message for e in report.skipped]
        (['a.txt'], 1, ['file is empty'])
    """
    skip = check_read_options(on_error, max_file_mb)
    codec = _check_encoding(encoding)
    if glob is not None and (not isinstance(glob, str) or not glob.strip()):
        raise InputError("must be a non-empty glob pattern such as '**/*.md'", argument="glob")
    given = _as_list(paths)
    if not given:
        raise InputError("no paths given", argument="paths")
    docs: list[Document] = []
    seen_ids: dict[str, str] = {}
    seen_files: set[Path] = set()
    problems: list[InputError] = []
    files_read = 0
    bounds = FileBounds(max_file_mb)
    for source in _expand(given, glob):
        try:
            key, size = _regular_file(source, follow_links)
        except InputError as err:
            problems.append(err)
            continue
        if key in seen_files:
            continue
        seen_files.add(key)
        try:
            _check_size(source, size, max_file_mb)
            found = _read(source, codec, encoding, bounds)
        except InputError as err:  # report every bad file together, after reading the others
            problems.append(err)
            continue
        if not claim_ids([(doc.id, line, doc.source) for doc, line in found], seen_ids, source.display, problems,
                         skip=skip):
            continue
        docs.extend(doc for doc, _ in found)
        files_read += 1
    check_load(problems, skip, given, found_any=bool(docs))
    return LoadReport(docs, files_read, problems)


def check_read_options(on_error: str, max_file_mb: float | None) -> bool:
    """Check the options of a read of files (as :func:`read_documents` and the incremental index
    update take them); return whether files with problems are skipped (``on_error="skip"``).

    Example:
        >>> check_read_options("skip", 20.0)
        True
    """
    if on_error not in ON_ERROR:
        raise InputError(f"must be one of {', '.join(ON_ERROR)}, got {on_error!r}", argument="on_error")
    if max_file_mb is not None and not (isinstance(max_file_mb, (int, float)) and max_file_mb > 0):
        raise InputError(f"must be a positive number of megabytes, got {max_file_mb!r}", argument="max_file_mb")
    return on_error == "skip"


def claim_ids(found: Iterable[tuple[str, int | None, str]], seen: dict[str, str], display: str,
              problems: list[InputError], *, skip: bool) -> bool:
    """Record in ``seen`` the document ids one file defines, given as ``(id, line, where it is
    defined)``; or, when an earlier file or an earlier line of this one defined one of them,
    leave the whole file out (not only the documents after the clash): add a duplicate-id error
    naming both places to ``problems`` (the first only, with ``skip``) and return False.

    Example:
        >>> seen, problems = {"a": "one.jsonl:1"}, []
        >>> claim_ids([("b", 1, "two.jsonl:1"), ("a", 2, "two.jsonl:2")], seen, "two.jsonl", problems, skip=False)
        False
        >>> str(problems[0]), sorted(seen)
        ("two.jsonl:2: duplicate document id 'a' (first defined at one.jsonl:1); ids must be unique", ['a'])
    """
    mine: dict[str, str] = {}
    clashes: list[InputError] = []
    for doc_id, line, where in found:
        first = seen.get(doc_id) or mine.get(doc_id)
        if first is not None:
            clashes.append(InputError(f"duplicate document id {doc_id!r} (first defined at {first}); "
                                      "ids must be unique", path=display, line=line))
            continue
        mine[doc_id] = where
    if clashes:
        problems.extend(clashes[:1] if skip else clashes)
        return False
    seen.update(mine)
    return True


def check_load(problems: list[InputError], skip: bool, given: list, *, found_any: bool) -> None:
    """What ends a load of ``given`` paths: every problem together (one line each) unless files
    with problems are skipped, and a clear error when no document is left. Shared by
    :func:`read_documents` and the incremental index update, which reads files the same way."""
    if problems and not skip:
        if len(problems) == 1:
            raise problems[0]
        shown = "\n  ".join(str(p) for p in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise InputError(f"{len(problems)} problems in the input; nothing was indexed:\n  {shown}{more}",
                         argument="paths")
    if found_any:
        return
    names = ", ".join(printable_name(p) for p in given)
    if problems:
        reasons = [line.strip() for line in LoadReport([], 0, problems).summary().split("\n")[1:]]
        raise InputError(f"no documents left in {names}: every file was skipped\n  " + "\n  ".join(reasons),
                         argument="paths")
    raise InputError(f"no documents found in {names} (supported files: {_SUPPORTED})", argument="paths")


# ------------------------------------------------------------------ arguments and paths


def _check_encoding(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise InputError(f"unknown text encoding {encoding!r}", argument="encoding") from None


def _as_list(paths: Any) -> list[str | Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    try:
        items = list(paths)
    except TypeError:
        raise InputError(
            f"expected a path or a list of paths, got {type(paths).__name__}", argument="paths"
        ) from None
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise InputError(f"expected paths, got {type(item).__name__}: {item!r}", argument="paths")
    return items


def _expand(given: list[str | Path], pattern: str | None) -> Iterable[_Source]:
    """Yield the files to read, in order, checking each named path."""
    for item in given:
        text = os.fspath(item)
        path = Path(text)
        if path.is_dir():
            _check_not_output(path)
            yield from _folder_files(path, pattern)
        elif path.is_file() or path.is_symlink():  # a broken link is reported when it is read
            _check_suffix(path)
            yield _Source(path, text, path.name)
        elif path.exists():
            raise InputError("not a regular file or folder", path=text)
        elif _GLOB_MAGIC.search(text):
            yield from _glob_files(text, pattern)
        else:
            raise InputError("no such file or folder", path=text)


def _check_suffix(path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix in SUFFIXES:
        return
    hint = " (convert it to JSON Lines, .jsonl: one JSON object per line)" if suffix == ".json" else ""
    shown = repr(suffix) if suffix else "no suffix"
    raise InputError(f"unsupported file type {shown}; supported: {_SUPPORTED}{hint}", path=path)


def _rel(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix()


def _is_hidden(path: Path, base: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(base).parts)


def _check_not_output(folder: Path) -> None:
    """Refuse a folder named for reading that ragnet wrote (an index, an eval run)."""
    kind = ragnet_output(folder)
    if kind is not None:
        raise InputError(f"this folder is {kind} (ragnet's own output), not documents; name the folder of "
                         "documents instead", path=folder)


class _OutputFolders:
    """Finds the folders ragnet wrote under ``base`` (each checked once) and warns about them once."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.found: dict[Path, str] = {}
        self._checked: dict[Path, bool] = {}

    def is_output(self, folder: Path) -> bool:
        if folder not in self._checked:
            kind = ragnet_output(folder)
            self._checked[folder] = kind is not None
            if kind is not None:
                self.found[folder] = kind
        return self._checked[folder]

    def contains(self, path: Path) -> bool:
        """Whether ``path`` lies in a ragnet output folder below ``base`` (``base`` included)."""
        parent = path.parent
        while True:
            if self.is_output(parent):
                return True
            if parent == self.base or parent == parent.parent:
                return False
            parent = parent.parent

    def names(self) -> str:
        return ", ".join(f"{_shown(p, self.base)} ({kind})" for p, kind in sorted(self.found.items()))

    def note(self) -> str:
        """``"; skipped ..."`` for a message saying nothing was found, or ``""``."""
        return f"; skipped folders ragnet wrote: {self.names()}" if self.found else ""

    def warn(self, where: str | Path) -> None:
        """Say once which folders were skipped (when some files remain to read)."""
        if self.found:
            warnings.warn(f"{printable_name(where)}: skipped folders ragnet wrote, which are not documents: "
                          f"{self.names()}",
                          stacklevel=5)


def _shown(path: Path, base: Path) -> str:
    try:
        return printable_name(path.relative_to(base).as_posix() or ".")
    except ValueError:
        return printable_name(path)


def _folder_files(folder: Path, pattern: str | None) -> list[_Source]:
    """Supported files under ``folder`` (or those matching ``pattern``), sorted."""
    outputs = _OutputFolders(folder)
    if pattern is not None:
        matches = sorted(p for p in folder.glob(pattern) if (p.is_file() or p.is_symlink()) and not p.is_dir()
                         and not _is_hidden(p, folder) and not outputs.contains(p))
        if not matches:
            raise InputError(f"no files match {pattern!r} in this folder{outputs.note()}", path=folder)
        outputs.warn(folder)
        for p in matches:
            _check_suffix(p)
        return [_Source(p, str(p), _rel(p, folder), folder) for p in matches]

    files: list[Path] = []
    skipped: dict[str, int] = {}
    linked: list[str] = []  # links to folders: os.walk does not enter them (no loops, nothing outside the folder)
    unreadable: list[OSError] = []  # folders that could not be listed: never left out without a word
    for root, dirs, names in os.walk(folder, onerror=unreadable.append):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not outputs.is_output(Path(root) / d))
        linked.extend(_rel(Path(root) / d, folder) for d in dirs if (Path(root) / d).is_symlink())
        for name in names:
            if name.startswith("."):
                continue
            p = Path(root) / name
            suffix = p.suffix.lower()
            if suffix in SUFFIXES:
                files.append(p)
            elif p.is_file():
                skipped[suffix or "(no suffix)"] = skipped.get(suffix or "(no suffix)", 0) + 1
    closed = _unreadable_folders(folder, unreadable)
    files.sort(key=lambda p: p.relative_to(folder).parts)
    others = ", ".join(f"{n} {printable_name(s)}" for s, n in sorted(skipped.items()))
    links = (f"skipped links to folders, which are not followed: {', '.join(map(printable_name, sorted(linked)))} "
             f"(name a linked folder itself to read it)")
    if not files and not closed:
        found = f"; found only {others}" if others else "" if outputs.found or linked else " (the folder is empty)"
        raise InputError(f"no {_SUPPORTED} files in this folder{found}{outputs.note()}"
                         f"{'; ' + links if linked else ''}", path=folder)
    outputs.warn(folder)
    if linked:
        warnings.warn(f"{printable_name(folder)}: {links}", stacklevel=4)
    if skipped:
        warnings.warn(f"{printable_name(folder)}: skipped files with unsupported suffixes: {others}", stacklevel=4)
    found = [_Source(p, str(p), _rel(p, folder), folder) for p in files]
    return sorted(found + closed, key=lambda source: Path(source.rel_id).parts)


def _unreadable_folders(folder: Path, errors: list[OSError]) -> list[_Source]:
    """The subfolders of ``folder`` the walk could not list, each as a source whose reading fails
    with one line naming it (so it is refused, or skipped and listed, like an unreadable file).
    ``folder`` itself unreadable is refused at once: there is nothing to read."""
    out: list[_Source] = []
    for exc in errors:
        where = Path(exc.filename) if exc.filename else folder
        reason = exc.strerror or str(exc)
        if where == folder:
            raise InputError(f"cannot read this folder ({reason}); make it readable", path=folder)
        problem = InputError(f"cannot read folder ({reason}), so its files cannot be listed; make it readable, "
                             "or give --on-error skip to leave it out", path=where)
        out.append(_Source(where, str(where), _rel(where, folder), folder, problem))
    return out


def _glob_base(pattern: str) -> Path:
    """The leading folders of ``pattern`` that contain no wildcard."""
    parts = Path(pattern).parts
    base: list[str] = []
    for part in parts[:-1]:
        if _GLOB_MAGIC.search(part):
            break
        base.append(part)
    return Path(*base) if base else Path(".")


def _glob_files(pattern: str, folder_pattern: str | None) -> list[_Source]:
    matches = sorted(_glob.glob(pattern, recursive=True))
    if not matches:
        raise InputError("no files match this pattern", path=pattern)
    base = _glob_base(pattern)
    outputs = _OutputFolders(base)
    out: list[_Source] = []
    for m in matches:
        p = Path(m)
        if p.is_dir():
            continue  # "**" also yields folders; their files are matched by the pattern itself
        if outputs.contains(p):
            continue
        _check_suffix(p)
        try:
            rel = _rel(p, base)
        except ValueError:
            rel = p.name
        out.append(_Source(p, m, rel, base))
    if not out and outputs.found:
        raise InputError(f"the pattern matches only files in folders ragnet wrote, not documents{outputs.note()}",
                         path=pattern)
    if not out:
        raise InputError("the pattern matches only folders; use a pattern for files or name the folder", path=pattern)
    outputs.warn(pattern)
    return out


# ------------------------------------------------------------------ reading files


def _decode(source: _Source, codec: str, encoding: str) -> str:
    try:
        data = source.path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=source.display) from None
    label = "UTF-8" if codec == "utf-8" else encoding
    if not codec.startswith(("utf-16", "utf-32")) and b"\x00" in data[:_BINARY_PROBE]:
        line = data.count(b"\n", 0, data.index(b"\x00")) + 1
        raise InputError(f"not a {label} text file (binary?): NUL byte", path=source.display, line=line)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not a {label} text file (binary?): cannot decode byte {data[exc.start]:#04x}",
            path=source.display,
            line=line,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise InputError("file is empty", path=source.display)
    return text


def _regular_file(source: _Source, follow_links: bool = False) -> tuple[Path, int]:
    """The resolved path and size of a file to read, or an InputError saying why it cannot be read.

    A broken or looping symbolic link, a link that leads outside the folder the file was found
    in (unless ``follow_links``), a folder that could not be listed, and a pipe, socket or device
    (reading a pipe would block for ever), are reported like any other unreadable file.
    """
    if source.problem is not None:
        raise source.problem
    path = source.path
    try:
        info = path.stat()
    except OSError as exc:
        if path.is_symlink():
            if exc.errno == errno.ELOOP:
                raise InputError("symbolic link loop (it never leads to a file); fix or remove the link",
                                 path=source.display) from None
            try:
                target = repr(os.readlink(path))
            except OSError:
                target = "its target"
            raise InputError(f"broken symbolic link: {target} does not exist; fix or remove the link",
                             path=source.display) from None
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=source.display) from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError("not a regular file (a pipe, socket or device); remove it or name only the files to read",
                         path=source.display)
    resolved = path.resolve()
    if source.base is not None and not follow_links and not resolved.is_relative_to(source.base.resolve()):
        raise InputError(f"symbolic link to {printable_name(resolved)}, outside the folder; name the file itself, "
                         "or give --follow-links to read files links lead to (load_documents(follow_links=True))",
                         path=source.display)
    return resolved, info.st_size


def _check_size(source: _Source, size: int, max_file_mb: float | None) -> None:
    if max_file_mb is None:
        return
    if size > max_file_mb * 1_000_000:
        raise InputError(f"file is {size / 1e6:.1f} MB, over the {max_file_mb:g} MB limit; split it, or raise "
                         "the limit (--max-file-mb, load_documents(max_file_mb=...))", path=source.display)


def _read(source: _Source, codec: str, encoding: str,
          bounds: FileBounds | None = None) -> list[tuple[Document, int | None]]:
    """The documents of one file, each with its line number (None but for JSONL), read within
    ``bounds`` (default: those of the default ``max_file_mb``); whatever goes wrong is an
    InputError naming the file (a structure nested too deep for a parser too)."""
    try:
        return _read_kind(source, codec, encoding, bounds if bounds is not None else FileBounds())
    except RecursionError:  # this file's problem only, never the run's
        raise InputError("malformed file: nested too deep to read", path=source.display) from None


def _read_kind(source: _Source, codec: str, encoding: str, bounds: FileBounds) -> list[tuple[Document, int | None]]:
    kind = SUFFIXES[source.path.suffix.lower()]
    if kind in _BINARY_FORMATS:
        return [(_read_formatted(source, kind, bounds), None)]
    text = _decode(source, codec, encoding)
    if kind == "jsonl":
        return _read_jsonl(source, text)
    return [(_read_text(source, text, markdown=kind == "markdown"), None)]


def _read_formatted(source: _Source, kind: str, bounds: FileBounds) -> Document:
    """A PDF, HTML or DOCX file as one document (:mod:`ragnet.corpus.formats`)."""
    from ragnet.corpus.formats import read_file

    try:
        data = source.path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path=source.display) from None
    got = read_file(kind, data, source.display, bounds)
    for note in got.notes:
        warnings.warn(f"{printable_name(source.display)}: {note}", stacklevel=5)
    title = got.title.strip() or _title(got.text, False) or source.path.stem
    return Document(id=source.rel_id, title=title, text=got.text, metadata=dict(got.metadata),
                    source=source.display, location={"file": source.rel_id}, positions=got.positions)


def check_record_question(question: Any, where: Any, number: int) -> None:
    """Refuse a question read from a questions file, naming ``where`` and the line ``number``: not
    text, empty (invisible characters only) or longer than an LM is sent (:func:`ragnet._text.question_problem`)."""
    problem = question_problem(question)
    if problem:
        raise InputError(f"'question' must be a non-empty string of at most {MAX_QUESTION_CHARS:,} characters: "
                         f"{problem}", path=where, line=number)


def parse_jsonl_record(line: str, where: Any, number: int) -> dict:
    """One JSONL line as a dict, or an InputError naming ``where`` and the line ``number``.

    A string holding a lone surrogate escape is refused here, naming its field, rather than
    failing later in whatever first encodes it.

    Shared by the document loader and the benchmark loaders (``ragnet.eval.run.datasets``).
    """
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=where, line=number) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deep to read", path=where, line=number) from None
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object per line, got {_json_type(record)}", path=where, line=number)
    if _SURROGATE_ESCAPE.search(line):
        _check_unicode(record, where, number)
    return record


def _read_jsonl(source: _Source, text: str) -> list[tuple[Document, int | None]]:
    docs: list[tuple[Document, int | None]] = []
    stem = source.path.stem
    where = source.display
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = parse_jsonl_record(line, where, number)
        docs.append((_record_to_document(record, f"{stem}:{number}", where, number, source.rel_id), number))
    if not docs:
        raise InputError("file is empty (no JSON records)", path=where)
    return docs


def _check_unicode(record: dict, where: str, number: int) -> None:
    """Refuse a record holding a lone surrogate (``"\\ud800"`` with no partner): not text any
    file can store, it failed only when the index was written, after all the embedding."""

    def walk(value: Any, field: str) -> None:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                char = value[exc.start]
                raise InputError(f"{field} holds a lone surrogate \\u{ord(char):04x} (half of a UTF-16 pair), "
                                 "which is not valid text; fix or remove that escape", path=where, line=number) from None
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key, f"a key in {field}")
                walk(item, repr(key) if field == "the record" else f"{field}[{key!r}]")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{field}[{i}]")

    walk(record, "the record")


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _record_to_document(record: dict, default_id: str, where: str, number: int, file: str) -> Document:
    def fail(message: str) -> InputError:
        return InputError(message, path=where, line=number)

    record = dict(record)
    if "text" in record:
        key = "text"
    elif "contents" in record:
        key = "contents"
    else:
        keys = ", ".join(sorted(record)) or "none"
        raise fail(f"missing 'text' field (or 'contents'); keys present: {keys}")
    text = record.pop(key)
    if not isinstance(text, str):
        raise fail(f"{key!r} must be a string, got {_json_type(text)}")
    if not text.strip():
        raise fail(f"{key!r} is empty")

    doc_id = record.pop("id", None)
    if doc_id is None:
        doc_id = default_id
    elif isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise fail(f"'id' must be a string or an integer, got {_json_type(doc_id)}")
    else:
        doc_id = str(doc_id)
        if not doc_id.strip():
            raise fail("'id' is empty")

    title = record.pop("title", None)
    if title is None:
        title = ""
    elif not isinstance(title, str):
        raise fail(f"'title' must be a string, got {_json_type(title)}")
    title = cap_title(title)

    metadata = record.pop("metadata", None)
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise fail(f"'metadata' must be an object, got {_json_type(metadata)}")
    clash = sorted(set(record) & set(metadata))
    if clash:
        raise fail(f"key {clash[0]!r} is given both at the top level and inside 'metadata'")
    merged = {**record, **metadata}
    return Document(id=doc_id, title=title, text=text, metadata=merged, source=f"{where}:{number}",
                    location={"file": file, "line": number})


def _read_text(source: _Source, text: str, *, markdown: bool) -> Document:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    metadata: dict[str, Any] = {}
    if markdown:
        text, metadata = _front_matter(text)
        text = strip_inline_data(text)  # an image's base64 bytes are not text
        if not text.strip():
            raise InputError("file has front matter but no text", path=source.display)
        headings, named = heading_positions(text), None
    else:  # its running lines out, and a man page's NAME line as its title
        text, named, headings = text_structure(text)
    title = metadata.pop("title", None)
    if not isinstance(title, str) or not title.strip():
        # a Markdown file's first heading (ragnet.corpus.formats.markdown decides what is one); a
        # man page's NAME line; else a plain text's first line (its first heading is a section)
        first = headings[0][1]["headings"][0] if headings and markdown else named
        title = first or _title(text, markdown) or source.path.stem
    positions = cap_positions(headings)
    return Document(id=source.rel_id, title=cap_title(title), text=text, metadata=metadata, source=source.display,
                    location={"file": source.rel_id}, positions=positions)


def _title(text: str, markdown: bool) -> str | None:
    """The first non-empty line (without leading ``#`` for Markdown) if short enough: the title of
    a text with no heading."""
    for line in text.split("\n"):
        line = " ".join(line.split())  # a header line's spaced-out columns ("RFC 9999     Example")
        if line:
            if markdown:
                line = line.lstrip("#").strip() or line
            return line if len(line) <= MAX_TITLE_CHARS else None
    return None


def _front_matter(text: str) -> tuple[str, dict[str, Any]]:
    """Split ``---``-delimited ``key: value`` front matter off a Markdown text."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return text, {}
    meta: dict[str, Any] = {}
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[i + 1 :]).lstrip("\n"), meta
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _FRONT_MATTER_LINE.match(line)
        if not m:
            return text, {}  # not simple front matter (nested YAML, a rule line...): keep the text as is
        meta[m.group(1)] = _scalar(m.group(2))
    return text, {}


def _scalar(value: str) -> Any:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return value
