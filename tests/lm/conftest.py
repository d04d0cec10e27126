"""Fixtures for the lm tests: a scripted engine (``ragnet_home`` and ``dspy_state`` are in tests/conftest.py)."""

from __future__ import annotations

import threading
import time

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
