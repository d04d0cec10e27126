"""A scripted LM for control-flow tests of programs (never a stand-in for a real model's quality).

``ProgramLM`` is a DSPy 3.4 engine (``complete(Request) -> Response``) that recognises which
ragnet signature a prompt belongs to by its output fields, and answers from per-step
responders: ``responders["sufficiency"] = lambda prompt, n: {"verdict": "Refine", ...}``.
Every call is logged as ``(step, prompt_text)`` so tests can assert on what the LM was shown.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

# Output field -> step name, checked in this order.
STEP_BY_FIELD = [
    ("new_notes", "contextualize"),
    ("verdict", "sufficiency"),
    ("delete_ids", "delete"),
    ("evidence_ids", "answer"),
    ("decisions", "filter"),
    ("relevant_text", "crop"),
    ("queries", "rewrite"),
    ("match", "judge"),
    ("standalone_question", "condense"),
]

DEFAULTS: dict[str, Callable[[str, int], dict[str, Any]]] = {
    "contextualize": lambda p, n: {"new_notes": f"- note {n}"},
    "sufficiency": lambda p, n: {"verdict": "Refine", "confidence": 0.3, "missing": "more facts"},
    "delete": lambda p, n: {"delete_ids": []},
    "answer": lambda p, n: {"answer": "scripted answer", "evidence_ids": ["c1"]},
    "filter": lambda p, n: {"decisions": []},
    "crop": lambda p, n: {"relevant_text": ""},
    "rewrite": lambda p, n: {"queries": [{"query": f"sub-query {i} of call {n}", "probability": round(0.5 - i / 20, 2)}
                                         for i in range(5)]},
    "judge": lambda p, n: {"rationale": "", "match": True},
    "condense": lambda p, n: {"standalone_question": f"standalone question {n}"},
}


def _text(request) -> str:
    parts = []
    system = request.system
    if isinstance(system, str):
        parts.append(system)
    elif system:
        parts.extend(getattr(p, "text", "") or "" for p in system)
    for message in request.messages:
        parts.append(message.text or "")
    return "\n".join(parts)


def _format(outputs: dict[str, Any]) -> str:
    blocks = []
    for name, value in outputs.items():
        rendered = value if isinstance(value, str) else json.dumps(value)
        blocks.append(f"[[ ## {name} ## ]]\n{rendered}")
    blocks.append("[[ ## completed ## ]]")
    return "\n\n".join(blocks)


class ProgramLM:
    """Engine routing each call to a per-step responder; see module docstring."""

    def __init__(self, **responders: Callable[[str, int], dict[str, Any]]) -> None:
        self.responders = {**DEFAULTS, **responders}
        self.calls: list[tuple[str, str]] = []

    def step_of(self, prompt: str) -> str:
        system_fields = re.search(r"Your output fields are:(.*?)(?:All interactions|\Z)", prompt, re.S)
        scope = system_fields.group(1) if system_fields else prompt
        for field, step in STEP_BY_FIELD:
            if f"`{field}`" in scope:
                return step
        raise AssertionError(f"unrecognised prompt: {prompt[:300]}")

    def complete(self, request):
        prompt = _text(request)
        step = self.step_of(prompt)
        n = sum(1 for s, _ in self.calls if s == step) + 1
        self.calls.append((step, prompt))
        out = self.responders[step](prompt, n)
        return Response(
            id=None,
            model="scripted",
            message=Message.assistant([TextPart(_format(out))]),
            finish_reason="stop",
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=10, total_tokens=len(prompt) // 4 + 10),
        )

    def close(self) -> None:
        pass

    def steps(self) -> list[str]:
        return [s for s, _ in self.calls]

    def lm(self) -> dspy.LM:
        return dspy.LM("scripted/program", engine=self, cache=False, num_retries=0)


class SureProgramLM(ProgramLM):
    """A :class:`ProgramLM` whose engine reports token logprobs, as ragnet's llama.cpp engine does:
    asked for them, it gives its whole reply as one token of probability ``sure``, so the answer's
    confidence (the tokens that spell it) is ``sure``."""

    supported_params = frozenset({"temperature", "max_tokens", "logprobs", "top_logprobs"})

    def __init__(self, sure: float = 0.8, **responders: Callable[[str, int], dict[str, Any]]) -> None:
        super().__init__(**responders)
        self.sure = sure

    def complete(self, request):
        import dataclasses
        import math

        from dspy.lm15 import TokenLogprob

        response = super().complete(request)
        if request.config.logprobs is None:
            return response
        return dataclasses.replace(response, logprobs=(TokenLogprob(token=response.message.text,
                                                                    logprob=math.log(self.sure)),))
