"""Loop.step_tokens: every LM step of an agent's loop reads at most that many tokens of chunk text."""

from __future__ import annotations

import pytest

from ragnet.corpus.tokens import count_tokens
from ragnet.programs import CombinedRAG, IterativeRAG, Loop, ReflectiveRAG
from ragnet.programs.registry import build_program
from tests.programs.scripted import ProgramLM

Q = "How many hospital beds did Brightwater have in 2021?"
STEPS = ("rewrite", "contextualize", "delete", "sufficiency")


def _context_tokens(prompt: str) -> int:
    """Tokens of the chunk text a step prompt shows (its ``[cN] Title: ...`` lines)."""
    return count_tokens("\n".join(line for line in prompt.splitlines() if line.startswith("[c")))


def _step_prompts(program, run_with) -> dict[str, list[str]]:
    with run_with(ProgramLM()) as lm:
        program(question=Q)
    out: dict[str, list[str]] = {}
    for step, prompt in lm.calls:
        out.setdefault(step, []).append(prompt)
    return out


@pytest.mark.parametrize("make", [
    lambda index, loop: IterativeRAG(index, loop=loop),
    lambda index, loop: CombinedRAG(index, loop=loop),
    lambda index, loop: ReflectiveRAG(index, loop=Loop(step_tokens=loop.step_tokens)),
])
def test_each_step_reads_at_most_step_tokens_of_chunks(yearbook_index, run_with, make):
    whole = _step_prompts(make(yearbook_index, Loop(max_turns=3)), run_with)
    lean = _step_prompts(make(yearbook_index, Loop(max_turns=3, step_tokens=120)), run_with)
    steps = [s for s in STEPS if s in lean]
    assert steps and set(steps) == {s for s in STEPS if s in whole}
    for step in steps:
        assert all(_context_tokens(p) <= 120 + 40 for p in lean[step]), step  # the view's headers are counted too
    assert max(_context_tokens(p) for s in steps for p in whole[s]) > 200  # whole chunks are longer than the view
    # the answer prompt is the final pack's, whatever the steps read
    assert whole["answer"] == lean["answer"] or all(_context_tokens(p) > 0 for p in lean["answer"])


def test_the_lean_preset_sets_the_view(yearbook_index):
    for spec in ("iterative:lean", "combined:lean", "reflective:lean"):
        assert build_program(spec, yearbook_index).loop.step_tokens == 800
    assert build_program("iterative", yearbook_index).loop.step_tokens is None
