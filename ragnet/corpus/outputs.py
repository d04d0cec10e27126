"""Recognise the folders ragnet itself writes, so that they are never read back as documents.

``ragnet index docs --out docs/idx`` puts the index inside the folder it indexes: without
this check the next build read the index's own ``chunks.jsonl`` as documents and the corpus
grew with every rebuild (20, 40, 60 documents). An eval run folder (``report.md``,
``results.jsonl``) inside a docs folder would be read the same way. Both are recognised by
what their writer leaves in them:

- an index folder by its ``manifest.json``: a JSON object whose ``"format"`` is
  ``"ragnet-index"`` (every index of the format this ragnet reads declares it);
- an eval run folder by its ``.ragnet-eval`` marker file.

This module is the one place that decides both: :mod:`ragnet.index.manifest` (which names it
replaces) and :mod:`ragnet.eval.run.run_folder` take the names, and the index its manifest test
(:func:`index_manifest`), from here.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> ragnet_output(folder) is None
    True
    >>> _ = (folder / "manifest.json").write_text('{"format": "ragnet-index", "files": {}}')
    >>> ragnet_output(folder)
    'a ragnet index'
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["EVAL_MARKER", "INDEX_FORMAT", "INDEX_MANIFEST", "index_manifest", "ragnet_output"]

#: The file every ragnet index folder holds, and the format it declares.
INDEX_MANIFEST = "manifest.json"
INDEX_FORMAT = "ragnet-index"
#: The marker file of a ``ragnet eval`` output folder.
EVAL_MARKER = ".ragnet-eval"
#: A manifest larger than this is someone else's file (an index's is a few kilobytes per file it lists).
_MAX_MANIFEST_BYTES = 16_000_000


def ragnet_output(folder: str | Path) -> str | None:
    """What ragnet wrote ``folder`` as (``"a ragnet index"``, ``"a ragnet eval run"``), or None.

    Never raises: an unreadable or foreign ``manifest.json`` means "not an index".
    """
    folder = Path(folder)
    try:
        if (folder / EVAL_MARKER).is_file():
            return "a ragnet eval run"
    except (OSError, ValueError):
        return None
    return "a ragnet index" if index_manifest(folder) is not None else None


def index_manifest(folder: str | Path, *, unmarked: bool = False,
                   max_bytes: int | None = _MAX_MANIFEST_BYTES) -> dict | None:
    """The JSON object of ``folder``'s ``manifest.json`` when it declares a ragnet index
    (``"format": "ragnet-index"``), else None. Never raises.

    Args:
        folder: the folder.
        unmarked: also accept a manifest with no ``"format"`` at all, as indexes written before
            the marker have (``ragnet index --out OLD`` replaces them; the caller then checks the
            manifest's other keys).
        max_bytes: a larger manifest is not read (None: no limit).

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "manifest.json").write_text('{"files": {}}')
        >>> index_manifest(folder), index_manifest(folder, unmarked=True)
        (None, {'files': {}})
    """
    manifest_path = Path(folder) / INDEX_MANIFEST
    try:
        if not manifest_path.is_file() or (max_bytes is not None and manifest_path.stat().st_size > max_bytes):
            return None
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(manifest, dict):
        return None
    if manifest.get("format", INDEX_FORMAT if unmarked else None) != INDEX_FORMAT:
        return None
    return manifest
