"""Fill a token budget with chunks: relevance calibration + knapsack, counting the real prompt.

The budget bounds the *whole* answer prompt as the LM sees it (instructions, demos, the
question and the formatted context), not just the chunk texts. ``PromptBudget`` measures the
fixed part by formatting the answer step's prompt with an empty context through the active
DSPy adapter; each chunk then costs the tokens of its ``[cN] Title: text`` block plus a
separator. After selection the full prompt is counted again and the least relevant chunks
are dropped until it fits (tokenisation is not exactly additive across block boundaries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import dspy
import numpy as np

from ragnet.core import selection
from ragnet.corpus.tokens import count_tokens, count_tokens_batch
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.signatures import format_context
from ragnet.signatures.answer import answer_demos, answer_inputs
from ragnet.signatures.contextualize import note_lines
from ragnet.signatures.formatting import render_chunk

# Separator + short-id drift between the per-chunk estimate and the joined prompt.
_BLOCK_SLACK = 2
#: How many more tokens than cl100k another LM's tokenizer may count (Qwen: up to ~15% on
#: English prose). Budgets are counted with cl100k; a context window must allow for this.
TOKENIZER_SLACK = 1.15


def prompt_tokens(predictor: Any, demos: Sequence[Any] | None = None, *, signature: Any = None, **inputs: Any) -> int:
    """Tokens of the prompt ``predictor`` would send for ``inputs`` (all messages, all demos;
    ``demos`` replaces the predictor's own, ``signature`` its signature, as a per-call override does)."""
    adapter = dspy.settings.adapter or dspy.ChatAdapter()
    shown = list(getattr(predictor, "demos", []) or []) if demos is None else list(demos)
    messages = adapter.format(signature or predictor.signature, shown, inputs)
    total = 0
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, list):  # multi-part content: count the text parts
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        total += count_tokens(str(content)) + 4  # role/turn markers
    return total


def answer_notes(notes: str, max_tokens: int, trace: Any) -> str:
    """The notes an answer prompt shows: :func:`cap_notes` to ``max_tokens``, what it drops recorded
    as a ``notes_cap`` event of ``trace``."""
    if not notes:
        return ""
    kept, dropped = cap_notes(notes, max_tokens)
    if dropped:
        trace.add("notes_cap", max_tokens=max_tokens, kept=len(kept), dropped=len(dropped))
    return "\n".join(kept)


def cap_notes(notes: str, max_tokens: int) -> tuple[list[str], list[str]]:
    """The notes' lines, in order, while they fit in ``max_tokens`` (cl100k): returns the kept
    lines and the dropped ones.

    Notes are written turn by turn, so the earliest lines come from the question's own search.
    A line that does not fit ends the notes (no later, shorter line jumps ahead of it).

    Example:
        >>> cap_notes("- Rome is the capital of Italy.\\n- Paris is the capital of France.", 9)
        (['- Rome is the capital of Italy.'], ['- Paris is the capital of France.'])
        >>> cap_notes("- a", 0)
        ([], ['- a'])
    """
    lines = note_lines(notes)
    kept, used = 0, 0
    for line in lines:
        used += count_tokens(line) + 1  # the line break
        if used > max_tokens:
            break
        kept += 1
    return lines[:kept], lines[kept:]


def demo_tokens(predictor: Any, demos: Sequence[Any] | None = None) -> list[int]:
    """Prompt tokens each demo adds to ``predictor``'s prompts (default: its own demos).

    Demos are rendered as messages of their own, so their costs add up: under a budget the
    sum comes out of the evidence (``PromptBudget`` counts it as overhead).
    """
    shown = list(predictor.demos if demos is None else demos)
    empty = {name: "" for name in predictor.signature.input_fields}
    base = prompt_tokens(predictor, demos=[], **empty)
    return [prompt_tokens(predictor, demos=[demo], **empty) - base for demo in shown]


@dataclass
class PackResult:
    """The selected chunks (best first) and the accounting behind them."""

    chunks: list[Chunk]
    prompt_tokens: int
    context_budget: int
    overhead: int
    candidates: int


class PromptBudget:
    """Token accounting for the answer prompt of one question.

    Args:
        predictor: the answer ``dspy.Predict`` (its signature and demos define the overhead).
        question: the question (part of the fixed overhead).
        budget: total prompt tokens allowed.
        notes: notes rendered before the chunks (part of the overhead).
        signature: the signature the prompt is sent with when it is not the predictor's own
            (``AnswerStep.signature_for(question)``: an "auto" layout adds a question preview).
    """

    def __init__(self, predictor: Any, question: str, budget: int, *, notes: str = "", signature: Any = None) -> None:
        self.predictor = predictor
        self.signature = signature or predictor.signature
        self.question = question
        self.budget = budget
        self.notes = notes
        self.overhead = self._tokens(format_context([], notes)[0])
        self.context_budget = budget - self.overhead

    def chunk_costs(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Prompt tokens each chunk adds (its rendered block plus slack)."""
        blocks = [render_chunk(f"c{i + 1}", c.title, c.text) for i, c in enumerate(chunks)]
        return np.asarray(count_tokens_batch(blocks), dtype=np.int64) + _BLOCK_SLACK

    def require_fits(self, costs: np.ndarray) -> None:
        """Raise a clear error when not even the smallest candidate fits next to the fixed prompt."""
        if len(costs) and self.context_budget < int(costs.min()):
            need = self.overhead + int(costs.min())
            raise InputError(
                f"{self.budget} tokens cannot hold the answer prompt ({self.overhead} tokens without context) "
                f"plus even the smallest candidate chunk ({int(costs.min())} tokens); use a budget of at least "
                f"{need} (counted with cl100k; the LM's own tokenizer may count up to ~15% more, so its context "
                f"window must hold about {int(need * TOKENIZER_SLACK) + 1} tokens plus the answer)",
                argument="budget",
            )

    def total(self, chunks: Sequence[Chunk]) -> int:
        """Exact prompt tokens with these chunks as context."""
        return self._tokens(format_context(list(chunks), self.notes)[0])

    def _tokens(self, context: str) -> int:
        # demos as the prompt will show them (a question preview filled in), so the budget counts what is sent
        return prompt_tokens(self.predictor, answer_demos(self.predictor, self.signature), signature=self.signature,
                             **answer_inputs(self.signature, self.question, context))


def pack(
    chunks: Sequence[Chunk],
    scores: Sequence[float],
    budget: PromptBudget,
    *,
    transform: str = "exp",
    temperature: float = 0.05,
    method: str = "exact",
) -> PackResult:
    """Select the chunks that maximise calibrated relevance within the prompt budget.

    Methods:
        ``"protected"`` (default): keep the longest prefix of the ranking that fits, then run the
            exact knapsack on the remaining candidates with the leftover budget. Its selection is
            a superset of the strict rank-order prefix, so it can never lose evidence that prefix
            had, and it is the knapsack variant that never falls below rank-order filling
            (docs/design.md#selection-and-budgets, ``ragnet eval retrieval``).
        ``"exact"`` / ``"greedy"``: knapsack over all candidates.
        ``"rank"``: take chunks in the order given, skipping any that no longer fit (the
            rank-order-filling baseline).

    Raises:
        InputError: the budget cannot hold the prompt's fixed part plus the smallest candidate.
    """
    chunks = list(chunks)
    if not chunks:
        return PackResult([], budget.total([]), budget.context_budget, budget.overhead, 0)
    costs = budget.chunk_costs(chunks)
    budget.require_fits(costs)
    # One dispatcher for the program and `ragnet eval retrieval` (ragnet.core.selection.select).
    order = selection.select(costs, budget.context_budget, method, scores=np.asarray(scores, dtype=np.float64),
                             transform=transform, temperature=temperature).tolist()
    selected = [chunks[i] for i in order]
    total = budget.total(selected)
    while selected and total > budget.budget:  # repair: the per-chunk estimate was a little optimistic
        selected.pop()
        total = budget.total(selected)
    return PackResult(selected, total, budget.context_budget, budget.overhead, len(chunks))
