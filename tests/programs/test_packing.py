"""Budget packing: every method respects the prompt budget; "protected" keeps the rank prefix."""

from __future__ import annotations

import random

import dspy
import pytest

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.programs.packing import PromptBudget, pack, prompt_tokens
from ragnet.signatures import GenerateAnswer, format_context


def make_chunks(seed: int, n: int = 30) -> list[Chunk]:
    rng = random.Random(seed)
    chunks = []
    for i in range(n):
        words = " ".join(f"word{rng.randint(0, 500)}" for _ in range(rng.randint(5, 120)))
        chunks.append(Chunk(id=f"d{i}#0", doc_id=f"d{i}", title=f"Doc {i}", text=words, tokens=len(words.split()) * 2,
                            score=1.0 - i / n))
    return chunks


@pytest.fixture
def predictor():
    return dspy.Predict(GenerateAnswer)


def strict_prefix(chunks, budget):
    costs = budget.chunk_costs(chunks).tolist()
    out, used = [], 0
    for c, cost in zip(chunks, costs):
        if used + cost > budget.context_budget:
            break
        out.append(c.id)
        used += cost
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["protected", "exact", "greedy", "rank"])
def test_every_method_fits_the_prompt_budget(predictor, seed, method):
    chunks = make_chunks(seed)
    budget = PromptBudget(predictor, "What links doc 3 and doc 7?", 1200)
    result = pack(chunks, [c.score for c in chunks], budget, method=method, temperature=0.1)
    assert result.chunks and result.prompt_tokens <= 1200
    context, _ = format_context(result.chunks)
    assert prompt_tokens(predictor, question="What links doc 3 and doc 7?", context=context) == result.prompt_tokens


@pytest.mark.parametrize("seed", range(10))
def test_protected_contains_the_strict_rank_prefix(predictor, seed):
    chunks = make_chunks(seed)
    budget = PromptBudget(predictor, "q?", 1500)
    result = pack(chunks, [c.score for c in chunks], budget, method="protected", temperature=0.1)
    ids = [c.id for c in result.chunks]
    prefix = strict_prefix(chunks, budget)
    assert ids[: len(prefix)] == prefix
    rank = pack(chunks, [c.score for c in chunks], budget, method="rank")
    assert len(result.chunks) >= len(prefix) and len(rank.chunks) >= len(prefix)


def test_budget_below_overhead_plus_smallest_chunk_names_the_argument(predictor):
    chunks = make_chunks(0)
    budget = PromptBudget(predictor, "q?", 200)
    with pytest.raises(InputError) as err:
        pack(chunks, [c.score for c in chunks], budget)
    assert err.value.argument == "budget" and "at least" in str(err.value)


def test_empty_candidates_give_an_empty_context(predictor):
    result = pack([], [], PromptBudget(predictor, "q?", 1000))
    assert result.chunks == [] and result.candidates == 0
