"""Keep a compiled program's few-shot demos within a prompt-token cap.

Demos travel with every prompt a predictor sends. A budgeted program (OneShotRAG,
CombinedRAG) counts its whole answer prompt against the reader's budget
(:class:`ragnet.programs.packing.PromptBudget`), so each demo token is a token of evidence the
reader no longer sees: a few bootstrapped answer demos can fill most of a small budget.
:func:`cap_demos` keeps a predictor's demos while their tokens fit the cap, skips any that would
overflow it, and reports what it kept. It takes them in the optimizer's order (bootstrapped ones,
which passed the metric, come first), except that answer demos take turns by answer kind, the
commoner kind first: a cut-down set should look like the set it was cut from. A cap that kept
only a yes/no demo taught a small reader to answer "yes" or "no" to most questions
(``docs/results/hotpotqa-dev-compiled-reader/``).

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
    >>> kinds = [dspy.Example(answer=a) for a in ("yes", "Paris", "no", "1912", "Ub Iwerks")]
    >>> [d.answer for d in by_answer_kind(kinds)]    # spans (3) before yes/no (2), taking turns
    ['Paris', 'yes', '1912', 'no', 'Ub Iwerks']
"""

from __future__ import annotations

from typing import Any, Sequence

from ragnet.programs.options import check_positive_int
from ragnet.programs.packing import demo_tokens

__all__ = ["CALL_DATA", "by_answer_kind", "cap_demos", "demo_tokens", "drop_call_data"]

#: What a bootstrapped demo can carry from its LM call besides the signature's fields: the token
#: logprobs the answer step reads for its confidence. Never shown in a prompt, never worth saving.
CALL_DATA = ("logprobs",)


def _answer_kind(demo: Any) -> str | None:
    """``"yes/no"`` or ``"span"`` for a demo with an ``answer``; None for other steps' demos."""
    try:
        answer = demo.get("answer")
    except AttributeError:
        return None
    if answer is None:
        return None
    return "yes/no" if str(answer).strip().strip(".").lower() in ("yes", "no") else "span"


def by_answer_kind(demos: Sequence[Any]) -> list[Any]:
    """``demos`` with answer kinds taking turns, the commoner kind first (ties: the kind seen
    first), each kind in its own order; demos of other steps (no ``answer``) keep their order."""
    kinds = [_answer_kind(d) for d in demos]
    if any(k is None for k in kinds) or len(set(kinds)) < 2:
        return list(demos)
    groups: dict[str, list[Any]] = {}
    for demo, kind in zip(demos, kinds):
        groups.setdefault(kind, []).append(demo)
    order = sorted(groups, key=lambda k: -len(groups[k]))  # stable: ties keep first appearance
    out: list[Any] = []
    for turn in range(max(len(g) for g in groups.values())):
        out.extend(groups[k][turn] for k in order if turn < len(groups[k]))
    return out


def cap_demos(program: Any, max_tokens: int) -> dict[str, dict[str, int]]:
    """Drop demos from each predictor of ``program`` until they take at most ``max_tokens``.

    Demos that all fit are kept as they are. Otherwise they are taken in their order, answer kinds
    taking turns (:func:`by_answer_kind`), first fit: a demo that would overflow the cap is
    skipped, a later shorter one may still fit. ``max_tokens`` = 0 removes every demo. The cap is per
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
        if sum(costs) > max_tokens:  # some must go: let answer kinds take turns for the room
            cost_of = {id(demo): cost for demo, cost in zip(demos, costs)}
            demos = by_answer_kind(demos)
            costs = [cost_of[id(demo)] for demo in demos]
        kept, used = [], 0
        for demo, cost in zip(demos, costs):
            if used + cost <= max_tokens:
                kept.append(demo)
                used += cost
        predictor.demos = kept
        report[name] = {"kept": len(kept), "dropped": len(demos) - len(kept), "tokens": used,
                        "tokens_before": sum(costs)}
    return report


def drop_call_data(program: Any) -> None:
    """Remove :data:`CALL_DATA` from every demo of ``program``'s predictors (in place): a demo the
    optimizer bootstrapped from a reader that reports logprobs would otherwise save them.

    Example:
        >>> import dspy
        >>> from ragnet.signatures import AnswerStep
        >>> step = AnswerStep()
        >>> step.predict.demos = [dspy.Example(question="Who?", answer="A", logprobs={"content": []}),
        ...                       {"question": "Where?", "answer": "B", "logprobs": None}]
        >>> drop_call_data(step)
        >>> [sorted(d.keys()) for d in step.predict.demos]
        [['answer', 'question'], ['answer', 'question']]
    """
    for _, predictor in program.named_predictors():
        predictor.demos = [
            demo if not any(key in demo for key in CALL_DATA)
            else {k: v for k, v in demo.items() if k not in CALL_DATA} if isinstance(demo, dict)
            else demo.without(*[key for key in CALL_DATA if key in demo])
            for demo in predictor.demos or []]
