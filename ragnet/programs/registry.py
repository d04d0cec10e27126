"""Build programs by strategy name, with presets that compose.

A spec is ``"<strategy>"`` or ``"<strategy>:<preset>[+<preset>...]"``, e.g. ``"oneshot:no-filter"``,
``"iterative:no-delete+sentences"`` or ``"oneshot:sentences+qlast"``. Strategy presets
(:data:`PRESETS`) set fields of the program's option objects (``"pack.sentences"``, see
:mod:`ragnet.programs.options`) or its own constructor arguments (the router's ``hard``), never
forks of the code; answer presets (:data:`ANSWER_PRESETS`) set the options of the
:class:`ragnet.signatures.AnswerStep` and apply to every strategy. Two presets that set one option
to different values are refused.

Example:
    >>> sorted(PRESETS["iterative"])[:3]
    ['lean', 'no-bridge', 'no-contextualize']
    >>> parse_spec("oneshot:sentences+qlast")
    ('oneshot', ('sentences', 'qlast'))
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

from ragnet.errors import InputError
from ragnet.programs import STRATEGIES
from ragnet.programs.options import option_fields
from ragnet.programs.stages import DEFAULT_BUDGET
from ragnet.signatures.answer import AnswerStep

#: Presets of the answer step, for every strategy: ``cot`` reasons before it answers; the ``q…``
#: presets say where the answer prompt shows the question (see ``AnswerStep``'s ``question_at``).
ANSWER_PRESETS: dict[str, dict[str, Any]] = {
    "cot": {"reasoning": True},
    "qfirst": {"question_at": "first"},
    "qlast": {"question_at": "last"},
    "qboth": {"question_at": "both"},
    "qauto": {"question_at": "auto"},
    # where the best chunk is shown: first whatever the documents (the order before "auto"), or next to the question
    "rank-order": {"evidence_order": "rank"},
    "best-last": {"evidence_order": "nearest"},
    # the reader copies the line that states the answer, then answers from it
    "quote": {"quote": True},
}

#: The step view of the agents' ``lean`` preset (``Loop.step_tokens``): about the size of the
#: answer's context at the local budget, so a small step LM reads what a small reader reads.
LEAN_STEP_TOKENS = 800

#: Presets of each strategy: the ablations of its studies, as fields of its option objects
#: (``"<argument>.<field>"``) or constructor arguments.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "basic": {"k3": {"k": 3}, "k10": {"k": 10}},
    "oneshot": {
        "no-filter": {"search.rules": False},
        "rank-fill": {"pack.method": "rank"},
        "knapsack": {"pack.method": "exact"},
        "greedy": {"pack.method": "greedy"},
        "llm-filter": {"lm_steps.filter": True},
        "crop": {"lm_steps.crop": True},
        "full": {"lm_steps.filter": True, "lm_steps.crop": True},
        "sentences": {"pack.sentences": True},
        # three LM-free bridge searches fold second-hop documents into the pack (oneshot:sentences+hops)
        "hops": {"hops.searches": 3},
        # the pack from the one document most of the best hits come from, when one holds most
        "focus": {"search.focus": True},
        # one Contextualize call writes notes from the selected chunks, read whole, above the pack
        "notes": {"lm_steps.contextualize": True},
        # no shown sentence states the answer: ask once more from a denser pack (half the budget)
        "recheck": {"lm_steps.recheck": True},
    },
    "iterative": {
        "no-fallback": {"loop.fallback": False},
        "no-delete": {"lm_steps.delete": False},
        "no-dedup": {"loop.dedup": False},
        "no-contextualize": {"lm_steps.contextualize": False},
        "no-sufficiency": {"lm_steps.sufficiency": False},
        "plain": {"loop.fallback": False, "lm_steps.delete": False, "loop.dedup": False,
                  "lm_steps.contextualize": False, "loop.bridge": False},
        "unguarded-delete": {"loop.protect": 0},
        # follow-up searches by the LM-free bridge search alone (no rewrite call), or by the LM alone
        "no-rewrite": {"lm_steps.rewrite": False},
        "no-bridge": {"loop.bridge": False},
        # the rewrite step writes one query naming what to look up next (NextQuery), for small step LMs
        "one-query": {"loop.query_form": "one"},
        # the kept chunks' best sentences packed into the answer budget (give one: --budget)
        "sentences": {"pack.sentences": True},
        # the final sentence pack starts from the one-shot's 100 candidates (iterative:sentences+pool)
        "pool": {"search.pool": 100},
        # ask the sufficiency step every turn, even once it repeats its verdict (the study's loop)
        "no-repeat-stop": {"loop.stop_on_repeat": False},
        # every loop step reads the chunks' best sentences, at most LEAN_STEP_TOKENS tokens, not the chunks whole
        "lean": {"loop.step_tokens": LEAN_STEP_TOKENS},
    },
    "reflective": {"no-noise": {"reflection.noise_removal": False},
                   "no-reflection": {"reflection.max_reflections": 0},
                   "no-bridge": {"loop.bridge": False}, "sentences": {"pack.sentences": True},
                   "no-repeat-stop": {"loop.stop_on_repeat": False}, "one-query": {"loop.query_form": "one"},
                   "lean": {"loop.step_tokens": LEAN_STEP_TOKENS}},
    "combined": {"no-rules": {"search.rules": False}, "no-contextualize": {"lm_steps.contextualize": False},
                 "sentences": {"pack.sentences": True}, "no-rewrite": {"lm_steps.rewrite": False},
                 "no-bridge": {"loop.bridge": False}, "no-repeat-stop": {"loop.stop_on_repeat": False},
                 "one-query": {"loop.query_form": "one"}, "lean": {"loop.step_tokens": LEAN_STEP_TOKENS}},
    # the hard route of RouterRAG: bridge hops in the one-shot pack (its default), or an agent (no delete step:
    # a small step LM proposes only protected chunks, so the step costs a call a turn and deletes nothing)
    "router": {"hops": {"hard": "oneshot:sentences+hops"}, "iterative": {"hard": "iterative:no-rewrite+no-delete+sentences"},
               "combined": {"hard": "combined:sentences+no-rewrite"}},
}

# Strategies whose constructor takes a token budget. IterativeRAG and ReflectiveRAG read everything
# they kept when given none (their studies' design) and pack it into the budget when given one.
BUDGETED = {"oneshot", "combined", "iterative", "reflective", "router"}

#: ``ragnet ask --strategy auto``: the strategy spec and answer budget ragnet recommends for a
#: small local reader (a dense context of selected sentences, docs/design.md#selection-and-budgets,
#: with the LM-free bridge searches folded into the same pack: the second hop of multi-hop
#: questions at no LM cost, docs/design.md#agent-loops) and for any other reader (the studies' pack of whole chunks, for readers that use a long context).
#: A small local reader gets the same footing whatever strategy is named: a budgeted strategy given
#: no budget answers at the local budget, with :data:`LOCAL_PACKING` where the strategy has it
#: (:func:`resolve_strategy`); other readers keep each strategy's own default.
RECOMMENDED = {"local": ("oneshot:sentences+hops", 1000), "other": ("oneshot", DEFAULT_BUDGET)}
#: The local budget over a collection of documents with sections (:func:`has_sections`: manuals,
#: reports, PDFs with outlines, HTML, DOCX and Markdown). A larger budget there was chosen and confirmed
#: on the same questions; on the check split it answered about as many for far more of the reader's
#: time (fewer two-part answers are cut, though), so manuals answer at the passage budget
#: (docs/results/README.md, "Held out by design"). Kept as its own value: it is where a budget for
#: documents with sections is set if a later measurement shows one pays for its time.
SECTIONED_LOCAL_BUDGET = 1000
#: The packing preset a named budgeted strategy gets for a small local reader given no budget.
LOCAL_PACKING = "sentences"


def parse_spec(spec: str) -> tuple[str, tuple[str, ...]]:
    """Split ``"strategy:preset+preset"`` into the strategy and its presets; validate both, and
    refuse presets that set one option to different values.

    Example:
        >>> parse_spec("basic"), parse_spec("basic:cot+qlast")
        (('basic', ()), ('basic', ('cot', 'qlast')))
    """
    name, _, tail = spec.strip().partition(":")
    if name == "oracle":  # ragnet.eval.run.oracle: it reads each question's gold evidence
        raise InputError("'oracle' answers from each question's gold evidence, so it runs only in "
                         "`ragnet eval --strategies oracle`", argument="strategy")
    if name not in STRATEGIES:
        raise InputError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}", argument="strategy")
    presets = tuple(p.strip() for p in tail.split("+")) if tail.strip() else ()
    for preset in presets:
        if preset not in PRESETS.get(name, {}) and preset not in ANSWER_PRESETS:
            own = ", ".join(PRESETS.get(name, {})) or "none"
            raise InputError(f"unknown preset {preset!r} in {spec!r}; presets for {name}: {own}; for every strategy: "
                             f"{', '.join(ANSWER_PRESETS)} (combine them with '+')", argument="strategy")
    _merge(spec, name, presets)
    return name, presets


def _merge(spec: str, name: str, presets: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The constructor options and the answer-step options ``presets`` set, refusing two that disagree."""
    options: dict[str, Any] = {}
    answer: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for preset in presets:
        into, values = (answer, ANSWER_PRESETS[preset]) if preset in ANSWER_PRESETS else (options, PRESETS[name][preset])
        for key, value in values.items():
            if key in into and into[key] != value:
                raise InputError(f"presets {set_by[key]!r} and {preset!r} of {spec!r} set {key} to {into[key]!r} "
                                 f"and {value!r}; keep one", argument="strategy")
            into[key], set_by[key] = value, preset
    return options, answer


def spec_options(spec: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The strategy of ``spec``, the options its presets set (``"<argument>.<field>"`` of an
    option object, or a constructor argument) and the answer-step options they set.

    Example:
        >>> spec_options("oneshot:sentences+qlast+cot")
        ('oneshot', {'pack.sentences': True}, {'question_at': 'last', 'reasoning': True})
    """
    name, presets = parse_spec(spec)
    return (name, *_merge(spec, name, presets))


def _answer_step(spec: str, answer_options: dict[str, Any], reader: Any, answer: Any) -> AnswerStep:
    """The answer step a program of ``spec`` gets: ``answer`` as given, or one composed from the
    spec's answer presets and ``reader``."""
    if answer is None:
        return AnswerStep(lm=reader, **answer_options)
    if answer_options or reader is not None:
        given = " and a reader" if reader is not None else ""
        raise InputError(f"{spec!r}: an answer step was given{given}, and its presets set answer options too; "
                         f"set them in one place", argument="answer")
    return answer


def build_program(spec: str, index: Any, *, budget: int | None = None, reader: Any = None, **overrides: Any):
    """Instantiate a program from a spec.

    Args:
        spec: ``"strategy[:preset[+preset...]]"`` (see the module docstring).
        index: the ``ragnet.Index`` it answers over.
        budget: the answer-prompt budget of budgeted strategies (ignored by the others).
        reader: the LM of the answer step (an LM spec, a ``dspy.BaseLM`` or a
            :class:`ragnet.lm.config.LazyLM`); None answers with the configured LM.
        **overrides: over the presets': constructor arguments (an option object such as
            ``pack=Pack(...)`` as given, and then no preset may set its fields) or fields of the
            program's option objects by name (``max_turns=3``, ``sentences=False``; each name
            means one field, :mod:`ragnet.programs.options`). ``answer=AnswerStep(...)`` replaces
            the composed answer step; then neither the spec nor ``reader`` may set its options.

    Example:
        >>> program = build_program("oneshot:sentences+qlast", index, budget=1000)
        >>> program.pack.sentences, program.answer.question_at, program.budget
        (True, 'last', 1000)
        >>> build_program("iterative:no-delete", index, max_turns=3).loop.max_turns
        3
    """
    name, settings, answer_options = spec_options(spec)
    program_class = STRATEGIES[name]
    if budget is not None and name in BUDGETED:
        settings["budget"] = budget
    answer = _answer_step(spec, answer_options, reader, overrides.pop("answer", None))
    settings.update(_by_name(spec, program_class, overrides))
    if name == "router":
        _router_routes(settings, index, answer)
    program = program_class(index, answer=answer, **_arguments(spec, program_class, settings))
    program.spec = spec.strip()
    return program


def _by_name(spec: str, program_class: type, overrides: dict[str, Any]) -> dict[str, Any]:
    """``overrides`` as settings: a constructor argument as given, a field of one of the program's
    option objects as ``"<argument>.<field>"``; anything else is refused."""
    own = set(inspect.signature(program_class.__init__).parameters) - {"self", "index", "answer"}
    fields = option_fields(program_class)
    out: dict[str, Any] = {}
    for key, value in overrides.items():
        if key in own:
            out[key] = value
        elif key in fields:
            out[f"{fields[key][0]}.{key}"] = value
        else:
            raise InputError(f"{spec}: {program_class.__name__} takes no {key!r}; its options: "
                             f"{', '.join(sorted(own | set(fields)))}", argument="strategy")
    return out


def _arguments(spec: str, program_class: type, settings: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments of ``settings``: each option object made from its default with the
    fields the settings give it (an object given whole takes no fields besides)."""
    defaults = {n: p.default for n, p in inspect.signature(program_class.__init__).parameters.items()}
    kwargs: dict[str, Any] = {}
    fields: dict[str, dict[str, Any]] = {}
    for key, value in settings.items():
        argument, dot, field = key.partition(".")
        if dot:
            fields.setdefault(argument, {})[field] = value
        else:
            kwargs[key] = value
    for argument, values in fields.items():
        if argument in kwargs:
            raise InputError(f"{spec!r}: {argument}= was given, and {', '.join(values)} of it are set too (by the "
                             f"spec's presets or by name); set them in one place", argument=argument)
        kwargs[argument] = replace(defaults[argument], **values)
    return kwargs


def _router_routes(settings: dict[str, Any], index: Any, answer: AnswerStep) -> None:
    """Replace a router's route specs in ``settings`` (``simple``, ``hard``) by the programs they
    name, built at the router's budget, with its search settings and retries and its answer step:
    the registry builds programs from specs, ``RouterRAG`` takes programs. A route's strategy keeps
    its own question place, so the hard route shares the simple route's answer step only where
    both place it alike."""
    from ragnet.programs.router import DEFAULT_HARD, DEFAULT_SIMPLE

    given = settings.get("search")  # a Search object, or its fields by name
    shared = given.changed() if given is not None else {}
    shared.update({key.partition(".")[2]: value for key, value in settings.items() if key.startswith("search.")})
    if "retries" in settings:
        shared["retries"] = settings["retries"]
    simple = None
    for role, default in (("simple", DEFAULT_SIMPLE), ("hard", DEFAULT_HARD)):
        spec = settings.get(role, default)
        if not isinstance(spec, str) or not spec.strip():
            raise InputError(f"expected a strategy spec such as {default!r}, got {spec!r}", argument=role)
        try:
            name, _, answer_options = spec_options(spec)
        except InputError as exc:
            raise InputError(exc.message, argument=role) from None
        if name == "router":
            raise InputError(f"{spec!r}: a route cannot be another router", argument=role)
        if role == "simple" and name != "oneshot":
            raise InputError(f"{spec!r}: the simple route must be a oneshot spec whose retrieval makes no LM call, "
                             f"e.g. {DEFAULT_SIMPLE!r}", argument=role)
        if answer_options:
            raise InputError(f"{spec!r} sets answer options ({', '.join(sorted(answer_options))}); both routes share "
                             f"the router's answer step: give them to the router (e.g. router:cot)", argument=role)
        # one reader to compile where both strategies place the question alike (a program copies an
        # answer step whose open layout it fills differently)
        same = simple is not None and STRATEGIES[name].default_question_at == simple.default_question_at
        step = simple.answer if same else answer
        budget = settings.get("budget", DEFAULT_BUDGET) if name in BUDGETED else None
        route = build_program(spec, index, budget=budget, answer=step, **shared)
        settings[role] = route
        simple = simple or route


def answer_layout(spec: str, **overrides: Any) -> dict[str, Any]:
    """How the answer prompt of the program ``spec`` builds is laid out, without building it:
    ``{"question_at": "first" | "last" | "both" | "auto", "reasoning": ..., "evidence_order": ...}`` from the presets,
    an ``answer`` override and the strategy's ``default_question_at``. Evaluation records it so
    that a resumed run never mixes answers given to differently laid-out prompts under one label.

    Example:
        >>> answer_layout("oneshot:sentences")
        {'question_at': 'auto', 'reasoning': False, 'evidence_order': 'auto'}
        >>> answer_layout("oneshot:sentences+qfirst+cot+rank-order")
        {'question_at': 'first', 'reasoning': True, 'evidence_order': 'rank'}
    """
    name, _, answer_options = spec_options(spec)
    answer = _answer_step(spec, answer_options, None, overrides.get("answer"))
    return answer.prompt_layout(STRATEGIES[name].default_question_at)


def recommended_strategy(reader: Any = None, index: Any = None) -> tuple[str, int]:
    """The strategy spec and budget ragnet recommends for the LM that answers (an LM spec such as
    ``"local"`` or ``"openai/gpt-4o"``, a ``dspy.LM``, or None for ``$RAGNET_LM`` / the local
    default) over ``index`` (None: a collection of plain passages); see :data:`RECOMMENDED` and
    :data:`SECTIONED_LOCAL_BUDGET`.

    Example:
        >>> recommended_strategy("local:qwen2.5-coder-1.5b"), recommended_strategy("openai/gpt-4o-mini")
        (('oneshot:sentences+hops', 1000), ('oneshot', 4000))
    """
    kind = _reader_kind(reader)
    spec, budget = RECOMMENDED[kind]
    return spec, _local_budget(index) if kind == "local" else budget


def _local_budget(index: Any) -> int:
    """The small local reader's budget over ``index`` (:data:`SECTIONED_LOCAL_BUDGET` over documents with sections)."""
    return SECTIONED_LOCAL_BUDGET if index is not None and has_sections(index) else RECOMMENDED["local"][1]


def has_sections(index: Any, sample: int = 256) -> bool:
    """Whether most chunks of ``index`` carry a heading path (documents with sections, not plain
    passages), judged on up to ``sample`` chunks spread evenly over the index (over the chosen
    files of a scoped one, ``rows_in_scope``) so that a large index is not read whole. An index
    without a chunk store (``index.chunks``) has none.

    Example:
        >>> from types import SimpleNamespace
        >>> from ragnet.corpus.types import Chunk
        >>> def chunk(i, headings):
        ...     return Chunk(id=f"m#{i}", doc_id="m", title="m", text="...", tokens=1,
        ...                  metadata={"location": {"headings": headings}} if headings else {})
        >>> has_sections(SimpleNamespace(chunks=[chunk(0, ["2 Usage"]), chunk(1, ["2 Usage"]), chunk(2, None)]))
        True
        >>> has_sections(SimpleNamespace(chunks=[chunk(0, None), chunk(1, ["Intro"])])), has_sections(object())
        (False, False)
    """
    chunks = getattr(index, "chunks", None)
    try:
        n = len(chunks)
    except TypeError:
        return False
    pool = getattr(index, "rows_in_scope", None)
    pool = range(n) if pool is None else pool
    m = len(pool)
    if n == 0 or m == 0:
        return False
    rows = sorted({pool[round(i * (m - 1) / max(min(m, sample) - 1, 1))] for i in range(min(m, sample))})
    sectioned = sum(1 for row in rows if getattr(chunks[row], "headings", ()))
    return 2 * sectioned > len(rows)


def _reader_kind(reader: Any) -> str:
    """``"local"`` for ragnet's local engine (a spec, a ``dspy.LM``, or None for ``$RAGNET_LM`` / the
    local default), else ``"other"``: the key of :data:`RECOMMENDED`."""
    from ragnet.lm.config import parse_lm_spec

    if isinstance(reader, str) or reader is None:
        local = parse_lm_spec(reader)[0] == "local"
    else:  # a dspy.LM: ragnet's local models are served as "llamacpp/<name>"
        local = str(getattr(reader, "model", "")).startswith("llamacpp/")
    return "local" if local else "other"


def resolve_strategy(strategy: str, budget: int | None = None, reader: Any = None,
                     index: Any = None) -> tuple[str, int | None]:
    """The spec and budget a run uses, for the LM that answers (``reader``: an LM spec, a
    ``dspy.BaseLM``, a :class:`ragnet.lm.config.LazyLM` or None; see :func:`recommended_strategy`)
    over ``index`` (None: plain passages; an index of documents with sections gets the larger local budget).

    * ``"auto"``: ragnet's recommendation for the reader, with the recommended budget unless one
      is given.
    * a budgeted strategy (:data:`BUDGETED`) named for a small local reader with no budget: the
      local budget (:data:`RECOMMENDED`, :data:`SECTIONED_LOCAL_BUDGET` over documents with
      sections), and :data:`LOCAL_PACKING` added to its presets where the strategy has that
      preset. A small reader answers best from a short, dense context
      (docs/design.md#selection-and-budgets), whichever strategy gathered it, so the agents
      answer over the same budget of selected sentences as the one-shot.
    * anything else (a budget given, another reader, an unbudgeted strategy): as given.

    Example:
        >>> resolve_strategy("auto", None, "local"), resolve_strategy("AUTO", 2000, "openai/gpt-4o")
        (('oneshot:sentences+hops', 1000), ('oneshot', 2000))
        >>> resolve_strategy("iterative:no-delete", None, "local"), resolve_strategy("reflective", None, "local")
        (('iterative:no-delete+sentences', 1000), ('reflective:sentences', 1000))
        >>> resolve_strategy("iterative", None, "openai/gpt-4o"), resolve_strategy("iterative", 2000, "local")
        (('iterative', None), ('iterative', 2000))
        >>> resolve_strategy("basic", None, "local")
        ('basic', None)
    """
    if strategy.strip().casefold() == "auto":
        spec, recommended = recommended_strategy(getattr(reader, "spec", reader), index)
        return spec, budget if budget is not None else recommended
    if budget is not None:
        return strategy, budget
    name, presets = parse_spec(strategy)
    if name not in BUDGETED or _reader_kind(getattr(reader, "spec", reader)) != "local":
        return strategy, budget
    if LOCAL_PACKING in PRESETS.get(name, {}) and LOCAL_PACKING not in presets:
        presets += (LOCAL_PACKING,)
    return (f"{name}:{'+'.join(presets)}" if presets else name), _local_budget(index)


def all_specs() -> list[str]:
    """Every strategy and strategy-preset spec, for help texts (answer presets combine with any of them)."""
    return [s for name in STRATEGIES for s in [name, *(f"{name}:{p}" for p in PRESETS.get(name, {}))]]
