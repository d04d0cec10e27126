"""Which index ``ragnet serve FOLDER`` answers from: the folder's own, kept in a cache folder.

``ragnet serve ~/manuals`` serves a folder of documents, not an index. Its index lives in
``$RAGNET_HOME/served/<folder name>-<key>`` (``RAGNET_HOME`` defaults to ``~/.cache/ragnet``,
where the models and eval indexes are kept), the key a hash of the folder's resolved path: the
same folder finds its index again on every start, two folders of the same name never share one,
and nothing is written into the folder being watched (an index there would wake the watcher with
its own writes, and a read-only or shared folder could not hold it). ``--index DIR`` beside a
folder puts the index there instead.

A folder that already is an index (``ragnet serve manuals-index``) is served as ``--index`` would
serve it: that is what its user meant, and nothing in it is a document.

Example:
    >>> import pathlib, tempfile
    >>> docs = pathlib.Path(tempfile.mkdtemp()) / "manuals"; docs.mkdir()
    >>> chosen = served_paths(docs, None)
    >>> chosen.folder == docs.resolve(), chosen.index.parent.name
    (True, 'served')
    >>> chosen.index.name.startswith("manuals-"), served_paths(docs, None).index == chosen.index
    (True, True)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from ragnet.errors import InputError

__all__ = ["ServedPaths", "cache_index", "served_paths"]

#: The folder under ``$RAGNET_HOME`` that holds the indexes of served folders.
SERVED = "served"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_index(folder: str | Path) -> Path:
    """Where the index of ``folder`` is kept: ``$RAGNET_HOME/served/<name>-<12 hex of its path>``.

    Example:
        >>> cache_index("/srv/docs/User Guides").name[:12]
        'User_Guides-'
    """
    from ragnet.lm.models import ragnet_home

    resolved = Path(folder).expanduser().resolve()
    key = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = _UNSAFE.sub("_", resolved.name).strip("._")[:40] or "folder"
    return ragnet_home() / SERVED / f"{name}-{key}"


@dataclass(frozen=True)
class ServedPaths:
    """What ``ragnet serve`` was given, made definite.

    Attributes:
        folder: the folder of documents to keep the index in step with; None: serve an index.
        index: the index folder to answer from (written from ``folder`` when there is one).
        note: a line to tell the user about a choice made for them ("" when none).
    """

    folder: Path | None
    index: Path
    note: str = ""


def served_paths(folder: str | Path | None, index: str | Path | None) -> ServedPaths:
    """The folder to watch and the index to serve, from ``ragnet serve [FOLDER] [--index DIR]``.

    Raises:
        InputError: neither given, a FOLDER that is not a folder, an index given as FOLDER
            together with ``--index``, or an ``--index`` that is the folder itself or a folder of
            other things (:func:`ragnet.index.manifest.check_output_folder`).
    """
    from ragnet.index.manifest import check_output_folder, index_files

    if folder is None:
        if index is None:
            raise InputError("give a folder of documents to serve (ragnet serve ~/manuals) or an index "
                             "(ragnet serve --index DIR)", argument="folder")
        return ServedPaths(None, Path(index))
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        why = "no such folder" if not folder.exists() else "not a folder (give the folder that holds it)"
        raise InputError(why, path=folder)
    if index_files(folder) is not None:
        if index is not None:
            raise InputError("this folder is a ragnet index, not documents; serve it with --index alone",
                             path=folder)
        return ServedPaths(None, folder, f"{folder} is an index: serving it as --index {folder}")
    resolved = folder.resolve()
    if index is None:
        return ServedPaths(resolved, cache_index(resolved))
    index = Path(index).expanduser()
    if index.resolve() == resolved:
        raise InputError("the index cannot be the folder of documents itself; give another --index folder",
                         argument="index")
    check_output_folder(index)  # new, empty or a ragnet index: never a folder of other things
    return ServedPaths(resolved, index)
