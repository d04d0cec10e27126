"""Build programs by strategy name, with the ablation presets that mirror the studies' tables.

A spec is ``"<strategy>"`` or ``"<strategy>:<preset>"``, e.g. ``"oneshot:no-filter"`` or
``"iterative:no-fallback"``. Presets are constructor switches, never forks of the code.

Example:
    >>> sorted(PRESETS["iterative"])[:3]
    ['no-contextualize', 'no-dedup', 'no-delete']
"""

from __future__ import annotations

import inspect
from typing import Any

from ragnet.errors import InputError
from ragnet.programs import STRATEGIES

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # "cot" presets: the answer step reasons before it answers (``answer_reasoning``); the "q…"
    # presets say where the answer prompt shows the question (``answer_question_at``). OneShotRAG
    # and CombinedRAG choose per question by default ("qauto"); before, they put it after the
    # context ("qlast", kept so that runs recorded under those names resume);
    # "qfirst" restores the layout of results measured before 2026-11-26 and readers compiled with
    # it; "qboth" shows it on both sides for every question.
    "basic": {"k3": {"k": 3}, "k10": {"k": 10}, "cot": {"answer_reasoning": True},
              "qlast": {"answer_question_at": "last"}, "qboth": {"answer_question_at": "both"},
              "qauto": {"answer_question_at": "auto"}},
    "oneshot": {
        "no-filter": {"rules": False},
        "rank-fill": {"method": "rank"},
        "knapsack": {"method": "exact"},
        "greedy": {"method": "greedy"},
        "llm-filter": {"filter": True},
        "crop": {"crop": True},
        "full": {"filter": True, "crop": True},
        "sentences": {"sentences": True},
        "sentences-cot": {"sentences": True, "answer_reasoning": True},
        "qlast": {"answer_question_at": "last"},
        "sentences-qlast": {"sentences": True, "answer_question_at": "last"},
        "qfirst": {"answer_question_at": "first"},
        "sentences-qfirst": {"sentences": True, "answer_question_at": "first"},
        "qboth": {"answer_question_at": "both"},
        "sentences-qboth": {"sentences": True, "answer_question_at": "both"},
        "qauto": {"answer_question_at": "auto"},
        "sentences-qauto": {"sentences": True, "answer_question_at": "auto"},
    },
    "iterative": {
        "no-fallback": {"fallback": False},
        "no-delete": {"delete": False},
        "no-dedup": {"dedup": False},
        "no-contextualize": {"contextualize": False},
        "no-sufficiency": {"sufficiency": False},
        "plain": {"fallback": False, "delete": False, "dedup": False, "contextualize": False},
        "unguarded-delete": {"protect": 0},
        # the kept chunks' best sentences packed into the answer budget (give one: --budget)
        "sentences": {"sentences": True},
        "no-delete-sentences": {"delete": False, "sentences": True},
    },
    "reflective": {"no-noise": {"noise_removal": False}, "no-reflection": {"max_reflections": 0}},
    "combined": {"no-rules": {"rules": False}, "no-contextualize": {"contextualize": False},
                 "sentences": {"sentences": True},
                 "qlast": {"answer_question_at": "last"},
                 "sentences-qlast": {"sentences": True, "answer_question_at": "last"},
                 "qfirst": {"answer_question_at": "first"},
                 "sentences-qfirst": {"sentences": True, "answer_question_at": "first"},
                 "qboth": {"answer_question_at": "both"},
                 "sentences-qboth": {"sentences": True, "answer_question_at": "both"},
                 "qauto": {"answer_question_at": "auto"},
                 "sentences-qauto": {"sentences": True, "answer_question_at": "auto"}},
}

# Strategies whose constructor takes a token budget. IterativeRAG reads everything it kept when
# it is given none (the study's design) and packs it into the budget when given one.
BUDGETED = {"oneshot", "combined", "iterative"}

#: ``ragnet ask --strategy auto``: the strategy spec and answer budget ragnet recommends for a
#: small local reader (a dense 1,000-token context of selected sentences, chosen on HotpotQA dev
#: with the 1.5B and 0.5B local readers, README "Budgets") and for any other reader (the studies'
#: 4,000-token pack of whole chunks, for readers that can use a long context).
RECOMMENDED = {"local": ("oneshot:sentences", 1000), "other": ("oneshot", 4000)}


def parse_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"strategy:preset"``; validate both parts."""
    name, _, preset = spec.strip().partition(":")
    if name not in STRATEGIES:
        raise InputError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}", argument="strategy")
    if preset and preset not in PRESETS.get(name, {}):
        known = ", ".join(f"{name}:{p}" for p in PRESETS.get(name, {})) or "none"
        raise InputError(f"unknown preset {spec!r}; presets for {name}: {known}", argument="strategy")
    return name, preset or None


def build_program(spec: str, index: Any, *, budget: int | None = None, **overrides: Any):
    """Instantiate a program from a spec; ``budget`` applies to budgeted strategies only."""
    name, preset = parse_spec(spec)
    kwargs: dict[str, Any] = dict(PRESETS.get(name, {}).get(preset, {})) if preset else {}
    if budget is not None and name in BUDGETED:
        kwargs["budget"] = budget
    kwargs.update(overrides)
    try:
        return STRATEGIES[name](index, **kwargs)
    except TypeError as exc:  # an override the strategy does not take
        raise InputError(f"{spec}: {exc}", argument="strategy") from None


def answer_layout(spec: str, **overrides: Any) -> dict[str, Any]:
    """How the answer prompt of the program ``spec`` builds is laid out, without building it:
    ``{"question_at": "first" | "last" | "both" | "auto", "reasoning": ...}`` from the preset,
    ``overrides`` and the strategy's constructor defaults. Evaluation records it so that a
    resumed run never mixes answers given to differently laid-out prompts under one strategy name.

    Example:
        >>> answer_layout("oneshot:sentences"), answer_layout("basic")
        ({'question_at': 'auto', 'reasoning': False}, {'question_at': 'first', 'reasoning': False})
        >>> answer_layout("oneshot:sentences-qfirst", answer_reasoning=True)
        {'question_at': 'first', 'reasoning': True}
    """
    name, preset = parse_spec(spec)
    # __init__, not the class: dspy's metaclass __call__ takes *args, **kwargs
    params = inspect.signature(STRATEGIES[name].__init__).parameters
    chosen = {**(PRESETS[name][preset] if preset else {}), **overrides}
    def pick(key: str) -> Any:
        return chosen.get(f"answer_{key}", params[f"answer_{key}"].default)
    return {"question_at": str(pick("question_at")), "reasoning": bool(pick("reasoning"))}


def recommended_strategy(reader: Any = None) -> tuple[str, int]:
    """The strategy spec and budget ragnet recommends for the LM that answers (an LM spec such as
    ``"local"`` or ``"openai/gpt-4o"``, a ``dspy.LM``, or None for ``$RAGNET_LM`` / the local
    default); see :data:`RECOMMENDED`.

    Example:
        >>> recommended_strategy("local:qwen2.5-coder-1.5b"), recommended_strategy("openai/gpt-4o-mini")
        (('oneshot:sentences', 1000), ('oneshot', 4000))
    """
    from ragnet.lm.config import parse_lm_spec

    if isinstance(reader, str) or reader is None:
        local = parse_lm_spec(reader)[0] == "local"
    else:  # a dspy.LM: ragnet's local models are served as "llamacpp/<name>"
        local = str(getattr(reader, "model", "")).startswith("llamacpp/")
    return RECOMMENDED["local" if local else "other"]


def all_specs() -> list[str]:
    """Every strategy and preset spec, for help texts."""
    return [s for name in STRATEGIES for s in [name, *(f"{name}:{p}" for p in PRESETS.get(name, {}))]]
