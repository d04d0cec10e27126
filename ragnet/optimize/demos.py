"""Keep a compiled program's few-shot demos within a prompt-token cap.

Demos travel with every prompt a predictor sends. A budgeted program (OneShotRAG,
CombinedRAG) counts its whole answer prompt against the reader's budget
(:class:`ragnet.programs.packing.PromptBudget`), so each demo token is a token of evidence the
reader no longer sees: four bootstrapped answer demos took about 600 of a 1,000-token budget.
:func:`cap_demos` keeps a predictor's demos in the optimizer's order (bootstrapped ones, which
passed the metric, come first) while their tokens fit the cap, skips any that would overflow
it, and reports what it kept.

Tokens are counted as :func:`ragnet.programs.packing.prompt_tokens` counts them (cl100k, the
messages the active DSPy adapter builds), as the difference a demo makes to an empty prompt.

Example:
    >>> import dspy
    >>> from ragnet.signatures import AnswerStep
    >>> step = AnswerStep()
    >>> step.predict.demos = [dspy.Example(question="Who?", context="[c1] A: " + "word " * n, answer="A")
    ...                       for n in (10, 200, 20)]
    >>> costs = demo_tokens(step.predict)           # about 80, 270 and 90 tokens
    >>> costs[0] + costs[2] <= 200 < costs[0] + costs[1]
    True
    >>> report = cap_demos(step, 200)                # first fit: the long one is skipped
    >>> report["predict"]["kept"], report["predict"]["dropped"], len(step.predict.demos)
    (2, 1, 2)
"""

from __future__ import annotations

from typing import Any, Sequence

from ragnet.programs.base import check_positive_int

__all__ = ["cap_demos", "demo_tokens"]


def demo_tokens(predictor: Any, demos: Sequence[Any] | None = None) -> list[int]:
    """Prompt tokens each demo adds to ``predictor``'s prompts (default: its own demos)."""
    from ragnet.programs.packing import prompt_tokens

    shown = list(predictor.demos if demos is None else demos)
    empty = {name: "" for name in predictor.signature.input_fields}
    base = prompt_tokens(predictor, demos=[], **empty)
    return [prompt_tokens(predictor, demos=[demo], **empty) - base for demo in shown]


def cap_demos(program: Any, max_tokens: int) -> dict[str, dict[str, int]]:
    """Drop demos from each predictor of ``program`` until they take at most ``max_tokens``.

    Demos are kept in their order (first fit: a demo that would overflow the cap is skipped, a
    later shorter one may still fit). ``max_tokens`` = 0 removes every demo. The cap is per
    predictor, since each predictor's demos go into its own prompts.

    Returns:
        ``{predictor name: {"kept", "dropped", "tokens", "tokens_before"}}`` (tokens of the demos
        kept, and of all demos before capping).

    Raises:
        InputError: ``max_tokens`` is negative or not an integer.
    """
    check_positive_int(max_tokens, "demo-tokens", minimum=0)
    report: dict[str, dict[str, int]] = {}
    for name, predictor in program.named_predictors():
        demos = list(predictor.demos or [])
        costs = demo_tokens(predictor, demos)
        kept, used = [], 0
        for demo, cost in zip(demos, costs):
            if used + cost <= max_tokens:
                kept.append(demo)
                used += cost
        predictor.demos = kept
        report[name] = {"kept": len(kept), "dropped": len(demos) - len(kept), "tokens": used,
                        "tokens_before": sum(costs)}
    return report
