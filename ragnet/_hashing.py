"""SHA-256 of a file, read in blocks (index manifests, compiled-program fingerprints, model files).

Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> _ = path.write_bytes(b"abc")
    >>> sha256_file(path)[:16]
    'ba7816bf8f01cfea'
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["sha256_file"]

_BLOCK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of the file at ``path`` (read 1 MiB at a time, so large files stay cheap)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
