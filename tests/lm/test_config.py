"""configure(): LM specs, env fallback, cache folder, clear errors."""

from __future__ import annotations

import importlib.util

import dspy
import pytest
from dspy.utils import DummyLM

from ragnet.errors import InputError
from ragnet.lm import config
from ragnet.lm.config import configure, get_lm, make_lm, parse_lm_spec
from ragnet.lm.models import ModelNotFoundError, default_model_path
from tests.required import REQUIRED

# Skipped without llama_cpp, except under RAGNET_REQUIRE_LIVE=1 (`make test`, CI): there a missing
# llama_cpp is a broken install and the tests must fail, not skip.
needs_llama = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None and not REQUIRED,
                                 reason="llama_cpp not installed")


@pytest.mark.parametrize("spec, expected", [
    ("local", ("local", None)),
    ("local:/models/x.gguf", ("local", "/models/x.gguf")),
    ("  openai/gpt-4o-mini ", ("litellm", "openai/gpt-4o-mini")),
    ("ollama_chat/llama3.1", ("litellm", "ollama_chat/llama3.1")),
])
def test_parse_lm_spec(spec, expected, ragnet_home):
    assert parse_lm_spec(spec) == expected


def test_parse_registry_name_after_local(ragnet_home):
    assert parse_lm_spec("local:qwen2.5-coder-1.5b") == ("local", str(default_model_path("qwen2.5-coder-1.5b")))


@pytest.mark.parametrize("spec", ["", "   ", "local:"])
def test_parse_rejects_empty(spec, ragnet_home):
    with pytest.raises(InputError) as info:
        parse_lm_spec(spec)
    assert info.value.argument == "lm"


def test_env_fallback_and_default(ragnet_home, monkeypatch):
    assert parse_lm_spec(None) == ("local", None)
    monkeypatch.setenv("RAGNET_LM", "openai/gpt-4o-mini")
    assert parse_lm_spec(None) == ("litellm", "openai/gpt-4o-mini")
    assert make_lm(None).model == "openai/gpt-4o-mini"


def test_litellm_id_builds_dspy_lm(ragnet_home):
    lm = make_lm("hosted_vllm/Qwen/Qwen2.5-7B-Instruct", api_base="http://localhost:8000/v1", api_key="k",
                 timeout=30, num_retries=4, temperature=0.0, max_tokens=300)
    assert isinstance(lm, dspy.LM)
    assert lm.model == "hosted_vllm/Qwen/Qwen2.5-7B-Instruct"
    assert lm.num_retries == 4
    assert lm.kwargs["api_base"] == "http://localhost:8000/v1"
    assert lm.kwargs["timeout"] == 30
    assert lm.kwargs["temperature"] == 0.0 and lm.kwargs["max_tokens"] == 300
    assert lm.cache is True


def test_litellm_omits_unset_client_options(ragnet_home):
    lm = make_lm("openai/gpt-4o-mini", timeout=None)
    assert "api_key" not in lm.kwargs and "api_base" not in lm.kwargs and "timeout" not in lm.kwargs


def test_bad_litellm_id_is_input_error(ragnet_home):
    with pytest.raises(InputError, match="openai/"):
        make_lm("openai/")


def test_local_without_model_says_how_to_fetch(ragnet_home):
    with pytest.raises(ModelNotFoundError, match="ragnet fetch-model"):
        make_lm("local")


def test_local_env_pointing_at_missing_file(ragnet_home, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGNET_GGUF", str(tmp_path / "gone.gguf"))
    with pytest.raises(ModelNotFoundError, match="RAGNET_GGUF"):
        make_lm("local")


def test_local_path_missing(ragnet_home, tmp_path):
    with pytest.raises(ModelNotFoundError, match="gone.gguf"):
        make_lm(f"local:{tmp_path / 'gone.gguf'}")


def test_local_refuses_api_key(ragnet_home, tmp_path):
    with pytest.raises(InputError) as info:
        make_lm("local", api_key="sk-x")
    assert info.value.argument == "api_key"


@needs_llama
def test_local_path_builds_engine_lm_without_loading(ragnet_home, tmp_path):
    from ragnet.lm.local import LlamaCppEngine

    gguf = tmp_path / "My Model.Q4.gguf"
    gguf.write_bytes(b"not loaded until the first call")
    lm = make_lm(f"local:{gguf}", timeout=7, max_tokens=64, n_ctx=2048, n_threads=1)
    assert isinstance(lm, dspy.LM)
    assert isinstance(lm.engine, LlamaCppEngine)
    assert lm.model == "llamacpp/My-Model.Q4"
    assert lm.num_retries == 0
    assert lm.engine.timeout == 7 and lm.engine.n_ctx == 2048 and lm.engine.max_tokens == 64
    assert lm.kwargs["temperature"] == 0.0 and lm.kwargs["max_tokens"] == 64


@needs_llama
def test_local_rejects_unknown_options(ragnet_home, tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"x")
    with pytest.raises(InputError, match="unknown options"):
        make_lm(f"local:{gguf}", top_logprobs=3)


def test_configure_installs_lm_and_cache_dir(ragnet_home, dspy_state, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    lm = DummyLM([{"answer": "x"}])
    assert configure(lm) is lm
    assert dspy.settings.lm is lm
    assert get_lm() is lm
    assert config._cache_state["dir"] == tmp_path / "cache"
    assert dspy.cache.disk_cache_dir == str(tmp_path / "cache")


def test_cache_dir_defaults_under_ragnet_home(ragnet_home):
    assert config.cache_dir() == ragnet_home / "dspy_cache"
    assert config.cache_dir("/x/y") .as_posix() == "/x/y"


def test_configure_litellm(ragnet_home, dspy_state, tmp_path):
    lm = configure("openai/gpt-4o-mini", api_key="sk-test", cache_dir=tmp_path / "c", num_retries=1)
    assert dspy.settings.lm is lm
    assert lm.model == "openai/gpt-4o-mini" and lm.num_retries == 1


def test_resolve_adapter_auto_picks_json_for_local_engine_only():
    import dspy
    from dspy.utils import DummyLM

    from ragnet.lm.config import resolve_adapter

    local = DummyLM([])
    local.model = "llamacpp/tiny"  # how make_lm names the local engine's LM

    assert isinstance(resolve_adapter("auto", local), dspy.JSONAdapter)
    chat = resolve_adapter("auto", DummyLM([]))
    assert isinstance(chat, dspy.ChatAdapter) and not isinstance(chat, dspy.JSONAdapter)
    assert isinstance(resolve_adapter("json", DummyLM([])), dspy.JSONAdapter)
    custom = dspy.ChatAdapter()
    assert resolve_adapter(custom, local) is custom
    with pytest.raises(InputError, match="adapter"):
        resolve_adapter("xml", DummyLM([]))
