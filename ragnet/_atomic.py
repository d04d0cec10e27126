"""Atomic persistence helpers: write to a temporary sibling, then rename.

A reader never sees a half-written file, and a crash mid-write leaves the previous
version intact. Nothing here pickles.

A full disk is reported as :class:`~ragnet.errors.DiskFullError` naming the file or folder
being written (:func:`disk_full_names`), after the temporary copy is removed: the previous
version is untouched.

Temporary siblings carry the writer's process id (``.NAME.PID.XXXXXXXX.tmp``, and
``.NAME.old-PID`` for a folder moved aside during a swap), so a later writer of the same
target can tell what a killed process left behind and clean it up (:func:`clean_stale`)
without touching the work of a process that is still running; a reader puts back a folder
that a killed swap left aside (:func:`recover_set_aside`). A folder swap flushes the new files
and the parent folder to disk (:func:`fsync_tree`, :func:`fsync_dir`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Iterator

from ragnet._printable import printable_name
from ragnet._secrets import redact
from ragnet.errors import DiskFullError, InputError, is_disk_full


def _tmp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def _umask() -> int:
    """The process umask, read without ``os.umask()`` (which changes it for every thread for a moment)."""
    with contextlib.suppress(OSError, ValueError, StopIteration):
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1], 8) for line in fh if line.startswith("Umask:"))
    return 0o022  # not Linux: the usual default


def usual_permissions(path: str | Path, recursive: bool = False) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would give it under the umask.

    ``mkstemp`` and ``mkdtemp`` create owner-only entries; renamed into place as they are, a
    report, a compiled program or an index would be unreadable to the user's group (a shared
    server, a container running as another user). With ``recursive`` a folder's whole tree.
    """
    path = Path(path)
    mask = _umask()
    for entry in [path, *(path.rglob("*") if recursive and path.is_dir() else ())]:
        if not entry.is_symlink():
            entry.chmod((0o777 if entry.is_dir() else 0o666) & ~mask)


@contextlib.contextmanager
def disk_full_names(path: str | Path, kept: str | None = None) -> Iterator[None]:
    """Turn a full disk inside the block into a :class:`~ragnet.errors.DiskFullError` naming ``path``.

    Any error of the block that says the disk or quota is full (:func:`ragnet.errors.is_disk_full`)
    becomes one naming ``path``, the file or folder the user asked for, rather than the temporary
    file the write was in. Other errors pass unchanged.

    Args:
        path: what the block writes.
        kept: what survives, for the message; None says ``path`` is unchanged if it exists.

    Example:
        >>> import errno
        >>> with disk_full_names("out/report.md", kept="nothing else changed"):
        ...     raise OSError(errno.ENOSPC, "No space left on device")
        Traceback (most recent call last):
        ...
        ragnet.errors.DiskFullError: disk full: cannot write out/report.md (No space left on device); nothing else changed; free some space and run again
    """
    try:
        yield
    except (OSError, RuntimeError) as exc:
        if not is_disk_full(exc) or (isinstance(exc, DiskFullError) and exc.filename == str(path)):
            raise
        if kept is None:
            kept = f"{path} is as it was" if Path(path).exists() else "nothing was written"
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else None
        raise DiskFullError(path, reason, kept=kept) from exc


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it over ``path`` on success.

    A full disk raises :class:`~ragnet.errors.DiskFullError` naming ``path`` (which is unchanged).

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
        >>> with atomic_path(target) as tmp:
        ...     _ = tmp.write_text("hello")
        >>> target.read_text()
        'hello'
    """
    path = Path(path)
    with disk_full_names(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(path)
        fd, tmp_name = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=suffix + ".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            usual_permissions(tmp)  # writers that reopen the path keep this mode
            yield tmp
            os.replace(tmp, path)
            fsync_dir(path.parent)  # the rename itself survives a power cut
        finally:
            if tmp.exists():
                tmp.unlink()


@contextlib.contextmanager
def scratch_dir(path: str | Path) -> Iterator[Path]:
    """A temporary folder beside ``path``, removed on exit, for work that precedes writing ``path``
    (an index being built is staged in one: gigabytes).

    It is named as :func:`atomic_path` names its temporaries, and its owner is recorded beside it
    (``NAME.owner``) and in ``$RAGNET_HOME/staging``, so if this process is killed, the next
    staging folder made anywhere (the next build, whatever its target) removes it
    (:func:`clean_stale_staging`), as does the next :func:`clean_stale` of ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path)
    clean_stale_staging(path.parent)
    tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=path.parent))
    records = _record_owner(tmp)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        for record in records:
            with contextlib.suppress(OSError):
                record.unlink()


# -- staging folders of processes that were killed ---------------------------------------
_OWNER_SUFFIX = ".owner"
_STAGING_NAME = re.compile(r"^\..+\.\d+\.[A-Za-z0-9_]+\.tmp$")


def _ragnet_home() -> Path:
    """``$RAGNET_HOME``, default ``~/.cache/ragnet`` (as :func:`ragnet.lm.models.ragnet_home`)."""
    return Path(os.environ.get("RAGNET_HOME") or Path.home() / ".cache" / "ragnet").expanduser()


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot; Linux), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_gone(owner: dict) -> bool:
    """Whether the process an owner record names has ended (its pid now another process's too)."""
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if not _pid_alive(pid):
        return True
    start = owner.get("start")
    now = _process_start(pid)
    return isinstance(start, int) and now is not None and now != start


def _record_owner(staging: Path) -> list[Path]:
    """Record this process as the owner of ``staging``, beside it and in ``$RAGNET_HOME/staging``."""
    owner = {"pid": os.getpid(), "start": _process_start(os.getpid()), "staging": str(staging.absolute())}
    records = []
    for record in (staging.with_name(staging.name + _OWNER_SUFFIX),
                   _ragnet_home() / "staging" / f"{os.getpid()}.{staging.name.strip('.')}.json"):
        with contextlib.suppress(OSError):  # best effort: the name alone still lets clean_stale find it
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(json.dumps(owner), encoding="utf-8")
            records.append(record)
    return records


def _remove_staging(record: Path) -> str | None:
    """Remove the staging folder ``record`` names and the record, if its owner has ended."""
    try:
        owner = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(owner, dict) or not _owner_gone(owner):
        return None
    staging = Path(str(owner.get("staging", "")))
    beside = staging.with_name(staging.name + _OWNER_SUFFIX)
    removed = None
    if _STAGING_NAME.match(staging.name) and staging.is_dir() and not staging.is_symlink() and beside.is_file():
        shutil.rmtree(staging, ignore_errors=True)
        removed = str(staging)
    for leftover in {record, beside}:
        with contextlib.suppress(OSError):
            leftover.unlink()
    return removed


def clean_stale_staging(folder: str | Path | None = None) -> list[str]:
    """Remove the staging folders of ragnet processes that were killed: those recorded in
    ``$RAGNET_HOME/staging`` (wherever they are) and those beside their owner record in
    ``folder``. A folder whose owner still runs is left alone; a folder whose record is gone is
    never guessed at. Returns the folders removed.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); (d / ".idx.99999999.abcdefgh.tmp").mkdir()
        >>> _ = (d / ".idx.99999999.abcdefgh.tmp.owner").write_text(
        ...     '{"pid": 99999999, "staging": "%s"}' % (d / ".idx.99999999.abcdefgh.tmp"))
        >>> [pathlib.Path(p).name for p in clean_stale_staging(d)]
        ['.idx.99999999.abcdefgh.tmp']
    """
    records: list[Path] = []
    with contextlib.suppress(OSError):
        records += sorted((_ragnet_home() / "staging").glob("*.json"))
    if folder is not None:
        with contextlib.suppress(OSError):
            records += [p for p in Path(folder).iterdir() if p.name.endswith(_OWNER_SUFFIX)
                        and _STAGING_NAME.match(p.name[: -len(_OWNER_SUFFIX)])]
    return [removed for record in records if (removed := _remove_staging(record)) is not None]


def write_text(path: str | Path, text: str) -> None:
    """Atomically write ``text`` (UTF-8) to ``path``, with any API key this process was given
    redacted (:mod:`ragnet._secrets`)."""
    text = redact(text)
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())


def write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    """Atomically write ``obj`` as JSON to ``path``."""
    write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


# -- output folders: writability, locking, stale leftovers -------------------------------
def check_writable_parent(path: str | Path, argument: str | None = None) -> Path:
    """Create ``path``'s parent if needed and make sure files can be written there.

    Called before expensive work, so an unwritable output is refused in a second, not
    after an hour of embedding.

    Raises:
        InputError: the parent cannot be created or written to (names the path or argument).

    Example:
        >>> import tempfile, pathlib
        >>> check_writable_parent(pathlib.Path(tempfile.mkdtemp()) / "new" / "out").name
        'new'
    """
    path = Path(path)
    parent = path.parent
    where = {"argument": argument} if argument else {"path": path}
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=_tmp_prefix(path), suffix=".tmp", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except FileExistsError:
        raise InputError(f"cannot write {path}: a part of the path {parent} is a file, not a folder", **where) from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(f"cannot write {path}: {parent} is not writable ({reason}); choose another path", **where) from None
    return parent


def check_writable_dir(path: str | Path, argument: str | None = None) -> Path:
    """Create folder ``path`` if needed and make sure files can be written inside it.

    Example:
        >>> import tempfile, pathlib
        >>> check_writable_dir(pathlib.Path(tempfile.mkdtemp()) / "runs").is_dir()
        True
    """
    path = Path(path)
    where = {"argument": argument} if argument else {"path": path}
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} is a file; give a folder path", **where)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ragnet-write-check.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(f"cannot write into {path} ({reason}); choose another folder", **where) from None
    return path


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _stale_pattern(name: str) -> re.Pattern[str]:
    # ".NAME.PID.RANDOM[.ext].tmp" (temp file or folder) and ".NAME.old-PID" (folder set aside)
    return re.compile(rf"^\.{re.escape(name)}\.(?:(\d+)\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9]+)?\.tmp|old-(\d+))$")


def clean_stale(path: str | Path) -> list[str]:
    """Remove the temporary siblings of ``path`` left by processes that no longer run.

    A folder set aside during a swap (``.NAME.old-PID``) is the previous complete version:
    when the process died between the two renames and ``path`` is missing, it is put back
    instead of removed. Returns the names removed or restored.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); (d / ".out.99999999.abcdefgh.tmp").mkdir()
        >>> clean_stale(d / "out")
        ['.out.99999999.abcdefgh.tmp']
    """
    path = Path(path)
    parent = path.parent
    if not parent.is_dir():
        return []
    pattern = _stale_pattern(path.name)
    done: list[str] = []
    leftovers = []
    for entry in parent.iterdir():
        m = pattern.match(entry.name)
        if m is None:
            continue
        pid = int(m.group(1) or m.group(2))
        if not _pid_alive(pid):
            leftovers.append((m.group(2) is not None, entry))
    # a set-aside previous version first: it may have to be restored before temp folders go
    for is_backup, entry in sorted(leftovers, key=lambda x: not x[0]):
        if is_backup and not path.exists():
            os.replace(entry, path)
            done.append(f"{entry.name} (restored as {path.name})")
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        with contextlib.suppress(OSError):  # a staging folder's owner record (scratch_dir)
            entry.with_name(entry.name + _OWNER_SUFFIX).unlink()
        done.append(entry.name)
    return done


_HELD: dict[str, int] = {}
_HELD_GUARD = threading.Lock()


@contextlib.contextmanager
def dir_lock(path: str | Path, wait: bool = False) -> Iterator[None]:
    """Hold ``.NAME.lock`` beside ``path`` so that one process at a time rewrites it.

    Re-entrant within a process. With ``wait=False`` a folder another process is writing is
    refused at once with a message; ``wait=True`` blocks until that process is done.

    Raises:
        InputError: another process holds the lock and ``wait`` is False.

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "idx"
        >>> with dir_lock(out):
        ...     (out.parent / ".idx.lock").exists()
        True
    """
    import fcntl

    path = Path(path).absolute()
    key = str(path)
    with _HELD_GUARD:
        if key in _HELD:
            _HELD[key] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _HELD_GUARD:
                _HELD[key] -= 1
        return

    lock = path.with_name(f".{path.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            raise InputError(
                f"another ragnet process (pid {holder}) is writing this folder right now; "
                "wait for it to finish, or choose another path",
                path=path,
            ) from None
        # The previous holder unlinks the lock file on release: make sure ours is still it.
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    with _HELD_GUARD:
        _HELD[key] = 1
    try:
        yield
    finally:
        with _HELD_GUARD:
            del _HELD[key]
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        os.close(fd)


# -- whole-folder replacement -------------------------------------------------------------
def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link (copy where links are impossible) file or folder ``src`` to ``dst``."""
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)
    elif src.is_symlink():
        os.symlink(os.readlink(src), dst)
    else:
        _link_or_copy(src, dst)


def _link_or_copy(src: str | Path, dst: str | Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def foreign_entries(folder: Path, owned: set[str]) -> list[str]:
    """Top-level-most entries of ``folder`` that are not in ``owned`` (relative POSIX paths).

    A folder is reported whole when nothing inside it is owned.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "a.txt").write_text("x"); (d / "keep").mkdir()
        1
        >>> foreign_entries(d, {"a.txt"})
        ['keep']
    """
    owned_dirs = {p for name in owned for p in Path(name).parents if str(p) != "."}
    owned_dirs = {p.as_posix() for p in owned_dirs}
    found: list[str] = []

    def walk(rel: Path) -> None:
        for entry in sorted((folder / rel).iterdir()):
            name = (rel / entry.name).as_posix()
            if name in owned:
                continue
            if name in owned_dirs and entry.is_dir() and not entry.is_symlink():
                walk(rel / entry.name)
            else:
                found.append(name)

    walk(Path("."))
    return found


class DirSwap:
    """What :func:`atomic_dir` did: ``kept`` lists the entries carried over from the old folder."""

    def __init__(self) -> None:
        self.kept: list[str] = []


@contextlib.contextmanager
def atomic_dir(path: str | Path, owned: Callable[[Path], set[str] | None] | None = None,
               swap: DirSwap | None = None) -> Iterator[Path]:
    """Yield a fresh temporary folder; on success it replaces ``path``.

    The old folder (if any) is moved aside first and removed only after the new one is in
    place, so a failure at any point leaves either the old or the new version (and a crash
    between the two renames is repaired by :func:`clean_stale` on the next write, and by
    :func:`recover_set_aside` on the next read). Every file of the new folder, and the parent
    folder after the renames, is flushed to disk (fsync) before the old version is removed.

    Nothing the old folder holds beyond what it owns is lost: ``owned(old)`` names the
    files that belong to the old version (relative paths), and every other entry is
    hard-linked (or copied) into the new folder before the swap and listed in
    ``swap.kept``. With ``owned=None`` the old folder must hold nothing at all.

    Raises:
        InputError: a kept entry has the name of a file the new version writes; the old
            folder is left as it was.
        DiskFullError: the disk filled up; the temporary folder is gone, the old one intact.
    """
    path = Path(path)
    with disk_full_names(path), scratch_dir(path) as tmp:  # removed on the way out unless renamed into place
        usual_permissions(tmp)  # entries made inside follow the umask already
        yield tmp
        backup = None
        if path.exists():
            mine = (owned(path) if owned is not None else set()) or set()
            keep = foreign_entries(path, mine)
            for name in keep:
                target = tmp / name
                if target.exists() or target.is_symlink():
                    raise InputError(
                        f"{printable_name(name)} in {printable_name(path)} is not part of the old version, but the "
                        "new one writes a file of that "
                        "name; move it elsewhere and run again (nothing was changed)",
                        path=path,
                    )
                target.parent.mkdir(parents=True, exist_ok=True)
                _link_tree(path / name, target)
            if swap is not None:
                swap.kept = keep
            backup = path.with_name(f".{path.name}.old-{os.getpid()}")
            if backup.exists():
                shutil.rmtree(backup)
        fsync_tree(tmp)  # every file on disk before the new folder takes the name
        if backup is not None:
            os.replace(path, backup)
        os.replace(tmp, path)
        fsync_dir(path.parent)  # both renames on disk before the old version goes
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)


# -- durability ---------------------------------------------------------------------------
def fsync_dir(folder: str | Path) -> None:
    """Flush ``folder``'s entries (names created, renamed or removed in it) to disk.

    Best effort: a file system that cannot sync a folder (some network mounts) is left as it is.
    """
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_tree(folder: str | Path) -> None:
    """Flush every regular file under ``folder`` and every folder of it (``folder`` included) to
    disk, so a power cut after a rename that publishes ``folder`` cannot leave it with empty or
    partly written files. Links are not followed; pipes and devices are left alone.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a.txt").write_text("x")
        >>> fsync_tree(d)
    """
    import stat as _stat

    for root, dirs, names in os.walk(folder):
        for name in names:
            entry = os.path.join(root, name)
            with contextlib.suppress(OSError):
                if not _stat.S_ISREG(os.lstat(entry).st_mode):
                    continue
                fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                fsync_dir(os.path.join(root, name))
    fsync_dir(folder)


# -- readers: an index set aside by a swap that was killed ---------------------------------
def recover_set_aside(path: str | Path) -> Path:
    """Where to read folder ``path`` when a writer was killed between the two renames of a swap
    (:func:`atomic_dir`): ``path`` itself, after putting the complete previous version it had
    moved aside (``.NAME.old-PID``, its process no longer running) back in place; the version set
    aside, when it cannot be renamed back (a read-only parent folder); or ``path`` unchanged when
    it exists or nothing was set aside. A swap still under way (its writer alive) is never touched.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); (d / ".idx.old-99999999").mkdir()
        >>> recover_set_aside(d / "idx") == d / "idx", (d / "idx").is_dir()
        (True, True)
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        return path
    pattern = _stale_pattern(path.name)
    try:
        aside = [entry for entry in path.parent.iterdir()
                 if (m := pattern.match(entry.name)) is not None and m.group(2) is not None
                 and not _pid_alive(int(m.group(2))) and entry.is_dir() and not entry.is_symlink()]
    except OSError:
        return path
    if not aside:
        return path
    newest = None
    try:
        newest = max(aside, key=lambda entry: entry.stat().st_mtime_ns)
        os.replace(newest, path)
    except FileNotFoundError:  # another reader or the next writer put it back first
        return path
    except OSError:
        return path if path.exists() or newest is None else newest
    fsync_dir(path.parent)
    return path
