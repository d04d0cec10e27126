"""Scripted LMs, synthetic benchmark questions and a tiny in-memory index for optimizer tests.

``OptimizeLM`` extends the programs' ``ProgramLM``: prompts of ragnet steps are routed to
per-step responders as before, and the optimizers' own prompts (MIPROv2's instruction proposer,
GEPA's reflection; see ``OPTIMIZER_FIELDS``) get a generic answer for whatever output fields
they ask for, as JSON when the adapter asks for JSON. Any other unrecognised prompt raises.
Proposed instructions are numbered, so tests can see them land.

The sufficiency responder ``demo_dependent_sufficiency`` always says Sufficient with the
stock prompt (a 50% baseline on balanced cases); with few-shot demos or a proposed instruction
in the prompt it reads the context and says Sufficient exactly when two GOLD paragraphs are
shown. Compiling therefore has a
measurable effect, which is what the tests check; it says nothing about real models.
"""

from __future__ import annotations

import contextlib
import json
import re
import zlib
from typing import Any

import dspy
import numpy as np
import pytest
from dspy.lm15 import Message, Response, TextPart, Usage

import ragnet.lm.config
from ragnet.corpus.types import Chunk
from ragnet.eval.run.datasets import QARecord
from tests.programs.scripted import ProgramLM, _format, _text


def _last_user(request) -> str:
    users = [m for m in request.messages if str(getattr(m, "role", "")).endswith("user")]
    return (users[-1].text or "") if users else ""


def _n_demos(request) -> int:
    return sum(1 for m in request.messages if str(getattr(m, "role", "")).endswith("user")) - 1


def _field(prompt: str, name: str) -> str:
    match = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\[\[ ## |\Z)", prompt, re.S)
    return match.group(1) if match else ""


# Output fields of the optimizer-internal prompts this package's tests reach: MIPROv2's dataset
# summariser (observations, summary), program/module describers and instruction proposer, and
# GEPA's reflection (new_instruction). Found by logging every prompt no ragnet step claims.
OPTIMIZER_FIELDS = {"observations", "summary", "program_description", "module_description",
                    "proposed_instruction", "new_instruction"}


def _output_fields(prompt: str) -> list[str]:
    scope = re.search(r"Your output fields are:(.*?)(?:All interactions|\Z)", prompt, re.S)
    return re.findall(r"\d+\. `(\w+)`", scope.group(1) if scope else "")


_ENGINES: list[OptimizeLM] = []  # every engine made during the current test


@pytest.fixture(autouse=True)
def _fail_on_unrecognised_prompts():
    """Fail the test if any engine saw a prompt that is neither a ragnet step nor an optimizer's own,
    even when the program caught the engine's error and fell back (ragnet's ``run_step`` does)."""
    _ENGINES.clear()
    yield
    bad = [p for engine in _ENGINES for p in engine.unrecognised]
    _ENGINES.clear()
    if bad:
        pytest.fail(f"{len(bad)} prompt(s) matched no ragnet step and no optimizer prompt; first:\n{bad[0][:600]}")


class OptimizeLM(ProgramLM):
    """ProgramLM that also answers optimizer prompts; see the module docstring."""

    def __init__(self, **responders: Any) -> None:
        super().__init__(**responders)
        self.proposals = 0
        self.requests: list[Any] = []
        self.unrecognised: list[str] = []
        _ENGINES.append(self)

    def step_of(self, prompt: str) -> str:
        """A ragnet step by its output fields; ``"other"`` only for the optimizers' own prompts
        (their output fields are all in :data:`OPTIMIZER_FIELDS`). Anything else raises, so a
        ragnet step whose prompt is no longer recognised (a renamed field) fails the test
        instead of silently getting the generic scripted answer."""
        try:
            return super().step_of(prompt)
        except AssertionError:
            names = set(_output_fields(prompt))
            if names and names <= OPTIMIZER_FIELDS:
                return "other"
            self.unrecognised.append(prompt)  # ragnet's run_step may swallow the raise; the fixture below won't
            raise

    def _other(self, prompt: str) -> str:
        names = _output_fields(prompt)
        out: dict[str, Any] = {}
        for name in names:
            if "instruction" in name:
                self.proposals += 1
                out[name] = (f"Scripted instruction {self.proposals}: say Sufficient only when every fact the "
                             f"question needs is in the context.")
            else:
                out[name] = f"scripted {name}"
        if "JSON object" in prompt:
            return json.dumps(out)
        return _format(out)

    def complete(self, request):
        prompt = _text(request)
        step = self.step_of(prompt)
        self.requests.append(request)
        if step == "other":
            self.calls.append((step, prompt))
            text = self._other(prompt)
        else:
            n = sum(1 for s, _ in self.calls if s == step) + 1
            self.calls.append((step, prompt))
            responder = self.responders[step]
            out = responder(prompt, n, request) if getattr(responder, "wants_request", False) else responder(prompt, n)
            text = _format(out)
        return Response(id=None, model="scripted", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=len(prompt) // 4, output_tokens=10,
                                    total_tokens=len(prompt) // 4 + 10))


def demo_dependent_sufficiency(prompt: str, n: int, request) -> dict[str, Any]:
    """Always Sufficient with the stock prompt; with demos or a proposed ("Scripted") instruction,
    Sufficient iff two GOLD paragraphs are shown."""
    if _n_demos(request) < 1 and "Scripted instruction" not in prompt:
        return {"verdict": "Sufficient", "confidence": 0.9, "missing": ""}
    context = _field(_last_user(request), "context")
    sufficient = context.count("GOLD") >= 2
    return {"verdict": "Sufficient" if sufficient else "Refine", "confidence": 0.8,
            "missing": "" if sufficient else "the other gold fact"}


demo_dependent_sufficiency.wants_request = True


def make_records(n: int = 20) -> list[QARecord]:
    """Synthetic two-hop questions: two GOLD paragraphs (with sentence lists) and four distractors."""
    records = []
    for i in range(n):
        golds = [(f"Gold {i}a", [f"GOLD fact one of q{i} is here.", f" Filler sentence {i}a."]),
                 (f"Gold {i}b", [f"Filler sentence {i}b.", f" GOLD fact two of q{i} is here.", " More filler."])]
        noise = [(f"Noise {i}-{j}", [f"Unrelated sentence {j} for q{i}.", " Nothing else."]) for j in range(4)]
        context = [{"title": t, "text": "".join(s), "sentences": s} for t, s in golds + noise]
        records.append(QARecord(
            id=f"q{i:02d}", question=f"What links fact one and fact two of q{i}?", answers=[f"answer {i}"],
            gold_titles=[golds[0][0], golds[1][0]], gold_sentences=[[golds[0][0], 0], [golds[1][0], 1]],
            context=context,
        ))
    return records


@pytest.fixture
def records() -> list[QARecord]:
    return make_records()


class FakeIndex:
    """Keyword-overlap search over a few chunks, with bag-of-words vectors (the members of
    ``ragnet.programs.index_protocol.ProgramIndex`` these tests' programs use)."""

    def __init__(self, records: list[QARecord]) -> None:
        self.chunks = {}
        for rec in records:
            for para in rec.context or []:
                cid = f"{para['title']}#0"
                self.chunks[cid] = Chunk(id=cid, doc_id=para["title"], title=para["title"], text=para["text"],
                                         tokens=len(para["text"].split()))

    def __len__(self) -> int:
        return len(self.chunks)

    def search(self, query: str, k: int = 5, exclude=(), bm25_weight: float = 0.4) -> list[Chunk]:
        words = set(re.findall(r"\w+", query.lower()))
        scored = sorted(((len(words & set(re.findall(r"\w+", c.text.lower()))), c.id) for c in self.chunks.values()
                         if c.id not in set(exclude)), reverse=True)
        return [self.chunks[cid].with_scores(score=float(s)) for s, cid in scored[:k]]

    def chunk(self, cid: str) -> Chunk:
        return self.chunks[cid]

    def embed_query(self, text: str) -> np.ndarray:
        """The text's words hashed into 32 buckets, L2-normalised."""
        vec = np.zeros(32, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            vec[zlib.crc32(word.encode()) % 32] += 1.0
        return vec / max(float(np.linalg.norm(vec)), 1e-9)

    def vectors(self, ids) -> np.ndarray:
        return np.stack([self.embed_query(self.chunks[cid].text) for cid in ids]).reshape(-1, 32)


@pytest.fixture
def scripted():
    """``with scripted(OptimizeLM(...)) as lm:`` configures DSPy with the scripted engine."""

    @contextlib.contextmanager
    def make(engine: OptimizeLM):
        with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
            yield engine

    return make


@contextlib.contextmanager
def every_lm_is(lm: ProgramLM, monkeypatch, tmp_path):
    """Every LM spec the CLI resolves becomes ``lm``'s engine, its cache under ``tmp_path``;
    DSPy's LM is restored after. For the ``engine`` fixtures of tests that run ``ragnet optimize``."""
    monkeypatch.setattr(ragnet.lm.config, "make_lm", lambda spec=None, **kwargs: lm.lm())
    monkeypatch.setenv("RAGNET_CACHE_DIR", str(tmp_path / "cache"))
    saved = dspy.settings.lm
    try:
        yield lm
    finally:
        dspy.configure(lm=saved)
