"""IndexHolder: a version of the index folder that fails to load is tried again by the watcher
after a growing wait, a bounded number of times (not every ``reload_every`` seconds), while a
forced reload still tries it and a newer version is picked up again."""

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
    # the watcher's view: nothing new to try before its retry is due, so no load and no warning
    # every few seconds
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


def test_a_version_that_failed_is_retried_with_backoff_until_it_loads(index_copy, monkeypatch):
    import time

    from ragnet.serve import state

    load = FlakyLoad()
    holder = IndexHolder(index_copy, load=load, retry_first=0.05)
    load.broken = True  # the manifest is copied in; the files it names are not yet
    touch_manifest(index_copy, 5)
    waits = []
    for _ in range(3):
        with pytest.raises(RagnetError):
            holder.reload()
        began = time.monotonic()
        while not holder.changed():  # the same version on disk: tried again once its wait is over
            assert time.monotonic() - began < 5
            time.sleep(0.01)
        waits.append(time.monotonic() - began)
    assert waits[0] >= 0.05 and waits[2] >= 0.2 and load.calls == 4  # 0.05 s, 0.1 s, 0.2 s
    load.broken = False  # the copy is done
    snap = holder.reload()
    assert (snap.generation, holder.last_error, holder.changed()) == (2, None, False)

    # a version that never loads is tried a bounded number of times
    monkeypatch.setattr(state, "RETRIES", 2)
    holder.retry_first = 0.0
    load.broken = True
    touch_manifest(index_copy, 10)
    tries = 0
    while holder.changed() and tries < 10:
        tries += 1
        with pytest.raises(RagnetError):
            holder.reload()
    assert tries == 3 and not holder.changed()  # the first try and 2 more
