"""IndexHolder: a version of the index folder that fails to load is tried once by the watcher,
not every ``reload_every`` seconds, while a forced reload still tries it and a newer version is
picked up again."""

from __future__ import annotations

import os

import pytest

from ragnet.errors import RagnetError
from ragnet.serve.state import IndexHolder


class FlakyLoad:
    """Index.load, failing while ``broken`` is set; counts its calls."""

    def __init__(self) -> None:
        self.broken = False
        self.calls = 0

    def __call__(self, path):
        from ragnet.index import Index

        self.calls += 1
        if self.broken:
            raise RagnetError(f"{path}/manifest.json: checksum mismatch")
        return Index.load(path)


def touch_manifest(folder, seconds: int) -> None:
    manifest = folder / "manifest.json"
    st = os.stat(manifest)
    os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def test_a_version_that_failed_is_not_retried_until_it_changes(index_copy):
    load = FlakyLoad()
    holder = IndexHolder(index_copy, load=load)
    assert (holder.current.generation, holder.changed(), load.calls) == (1, False, 1)

    load.broken = True
    touch_manifest(index_copy, 5)
    assert holder.changed()
    with pytest.raises(RagnetError, match="checksum mismatch"):
        holder.reload()
    assert "checksum mismatch" in holder.last_error and load.calls == 2
    # the watcher's view: nothing new to try, so no load and no warning every few seconds
    assert not holder.changed()
    assert holder.reload() is holder.current and load.calls == 2
    # POST /reload and SIGHUP force another try
    with pytest.raises(RagnetError):
        holder.reload(force=True)
    assert load.calls == 3

    load.broken = False
    touch_manifest(index_copy, 10)  # `ragnet index` wrote a newer version
    assert holder.changed()
    snap = holder.reload()
    assert (snap.generation, holder.last_error, holder.changed(), load.calls) == (2, None, False, 4)
