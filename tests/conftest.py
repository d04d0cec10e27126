"""Test-wide settings: everything runs offline, with pinned thread counts."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "2")
# A loaded index queries with backend "auto" (fp32 ONNX once an export is cached in ~/.cache/ragnet,
# else torch): the same vectors to ~1e-7, but not bit for bit, and which one a test got would depend
# on what ran before it on this machine. Tests pin torch; the "auto" tests unset this themselves.
os.environ.setdefault("RAGNET_EMBED_BACKEND", "torch")

import importlib.util
from pathlib import Path

import dspy
import pytest

from tests.required import SHARED_DATA, skip_or_fail


def _live_skip_reason(path) -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed (pip install 'ragnet[local]')"
    if path is None or not path.is_file():
        return "no local GGUF model (run `ragnet fetch-model` or set RAGNET_GGUF)"
    return None


@pytest.fixture(scope="session")
def live_model_path():
    """Path of the real local model. Skips when it is missing, unless RAGNET_REQUIRE_LIVE=1
    (set by `make test`, so CI can never pass by silently skipping the live tests)."""
    from ragnet.lm.models import default_model_path

    env = os.environ.get("RAGNET_GGUF")
    path = Path(env) if env else default_model_path()
    reason = _live_skip_reason(path)
    if reason:
        skip_or_fail(reason)
    return path


@pytest.fixture(scope="session")
def local_lm(live_model_path):
    """The real local model through llama.cpp, uncached: every run must really call the model."""
    from ragnet.lm.config import make_lm

    return make_lm(f"local:{live_model_path}", cache=False, timeout=300)


@pytest.fixture
def ragnet_home(tmp_path, monkeypatch):
    """An empty RAGNET_HOME with RAGNET_GGUF / RAGNET_LM / RAGNET_CACHE_DIR unset."""
    home = tmp_path / "ragnet_home"
    monkeypatch.setenv("RAGNET_HOME", str(home))
    for name in ("RAGNET_GGUF", "RAGNET_LM", "RAGNET_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def dspy_state(tmp_path):
    """Restore DSPy's configured LM, adapter and cache after the test; give the test a fresh memory cache."""
    from ragnet.lm import config

    saved_lm, saved_adapter = dspy.settings.lm, dspy.settings.adapter
    saved_cache, saved_dir = dspy.cache, config._cache_state["dir"]
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=True)
    try:
        yield
    finally:
        dspy.configure(lm=saved_lm, adapter=saved_adapter)
        dspy.cache = saved_cache
        config._cache_state["dir"] = saved_dir



@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data folder (``$RAGNET_DATA`` or ``../shared/data`` beside the clone)."""
    if not (SHARED_DATA / "hotpotqa_dev_distractor" / "questions.jsonl").is_file():
        skip_or_fail(f"benchmark data is missing at {SHARED_DATA} (set RAGNET_DATA)")
    return SHARED_DATA
