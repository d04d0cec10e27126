"""Fixtures for the lm tests: isolated ragnet home, restored DSPy state, a scripted engine."""

from __future__ import annotations

import threading
import time

import dspy
import pytest
from dspy.lm15 import Message, Response, TextPart, Usage



class ScriptedEngine:
    """A tiny canonical DSPy engine: answers every request with ``answer`` and fixed usage.

    Used to exercise DSPy's real engine path (cache, callbacks, usage tracker) without a model.
    """

    def __init__(self, answer: str = "[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]",
                 input_tokens: int = 11, output_tokens: int = 3, delay: float = 0.0,
                 error: Exception | None = None) -> None:
        self.answer = answer
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.delay = delay
        self.error = error
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request):
        with self._lock:
            self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return Response(id=None, model="scripted", message=Message.assistant([TextPart(self.answer)]),
                        finish_reason="stop",
                        usage=Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens))


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
