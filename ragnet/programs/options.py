"""The option objects of ragnet's programs: their settings grouped by concern.

A program takes a few of these instead of one constructor argument per switch, the way it takes
its answer step (:class:`ragnet.signatures.AnswerStep`)::

    OneShotRAG(index, pack=Pack(budget=1000, sentences=True), hops=Hops(3))
    IterativeRAG(index, budget=1000, pack=Pack(sentences=True), loop=Loop(max_turns=3), lm_steps=LMSteps(delete=False))

Each is a frozen dataclass checked when it is made: a bad value is refused naming its field
(``argument 'pack.method'``). A field left None is the program's to fill, where programs differ
(the pack's budget, the search pool, the turn cap, the contextualize step); the program holds
the filled objects (``program.pack.budget``). The registry's presets set fields of them
(``oneshot:rank-fill`` is ``pack.method = "rank"``), and ``build_program`` takes a field by its
name (``build_program("iterative", index, max_turns=3)``). A program refuses a field it does
not read set away from its default (``ReflectiveRAG`` has no fallback search), so a setting
never silently does nothing.

One name per concept, in every program that reads it:

========================  =============  ==========================================================
name                      object         meaning
========================  =============  ==========================================================
budget                    Pack           tokens of the whole answer prompt (each program's
                                         ``budget=`` is a shortcut for it)
sentences                 Pack           fill the budget with the candidates' best sentences
method                    Pack           how whole chunks fill it (see :data:`METHODS`)
transform, temperature    Pack           relevance calibration (``ragnet.core.calibrate``)
notes_share               Pack           the largest share of the budget the notes may take
pool                      Search         hits of the question's own search that start the pack
bm25_weight               Search         the hybrid weight, ``bm25_weight * BM25 + (1 - bm25_weight)
                                         * cosine`` (``Index.search``'s ``bm25_weight``)
rules, max_add            Search         the metadata rule filter, and how many chunks it may add
focus                     Search         fill the pack from the one document most best hits come from
k                         Hops, Loop     chunks per search (``BasicRAG``'s own ``k`` too)
searches                  Hops           LM-free bridge searches after a first selection
max_turns                 Loop           the most search turns of an agent
n_queries, query_form     Loop           queries a rewrite samples; its form (:data:`QUERY_FORMS`)
fallback, dedup           Loop           turn 1 searches the question too; skip seen chunks
bridge, stop_on_repeat    Loop           bridge search when the rewrite gives nothing; stop on a
                                         repeated verdict
protect                   Loop           the delete step's guard (the closest chunks it may not delete)
step_tokens               Loop           the most chunk tokens one loop step reads (best sentences)
max_reflections           Reflection     ReflectiveRAG's Refine rounds
beta, tau                 Reflection     its convergence rule: Δ's confidence weight, the stop below it
noise_removal             Reflection     prune the final set before answering, at temperature alpha,
alpha, keep                              keeping the share keep
filter, crop, max_crops   LMSteps        the one-shot's LLM filter and crop
contextualize             LMSteps        the notes step (the one-shot's ``notes`` preset, the agents')
recheck, recheck_share    LMSteps        the one-shot's second answer from a denser pack
rewrite, sufficiency      LMSteps        the agents' query rewrite and sufficiency verdict
delete                    LMSteps        IterativeRAG's chunk_delete
========================  =============  ==========================================================

Example:
    >>> Pack(budget=1000, sentences=True).budget
    1000
    >>> Loop(max_turns=3).fill(max_turns=5).max_turns, Loop().fill(max_turns=5).max_turns
    (3, 5)
    >>> Pack(method="best")
    Traceback (most recent call last):
    ...
    ragnet.errors.InputError: argument 'pack.method': unknown method 'best'; choose from protected, exact, greedy, rank
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

from ragnet.core.calibrate import TRANSFORMS
from ragnet.errors import InputError

__all__ = ["DEFAULT_METHOD", "DEFAULT_NOTES_SHARE", "DEFAULT_TEMPERATURE", "DEFAULT_TRANSFORM", "METHODS",
           "QUERY_FORMS", "Hops", "LMSteps", "Loop", "Options", "Pack", "Reflection", "Search", "check_fraction",
           "check_option", "check_positive_int", "option_fields"]

# Selection and relevance calibration chosen with `ragnet eval retrieval`: "protected" + exp(T=0.1)
# is the knapsack variant that never falls below rank-order filling (docs/design.md#selection-and-budgets).
DEFAULT_METHOD = "protected"
DEFAULT_TRANSFORM = "exp"
DEFAULT_TEMPERATURE = 0.1
METHODS = ("protected", "exact", "greedy", "rank")
# The notes' share of the answer budget (whole lines, earliest first): a quarter keeps the
# notes short and leaves most of a reader-sized budget to the evidence.
DEFAULT_NOTES_SHARE = 0.25
#: The rewrite step's forms: ``sampled`` (RewriteQuery: ``n_queries`` candidates with
#: probabilities, verbalized sampling, for LMs that follow it) or ``one`` (NextQuery: the name to
#: look up next and one query, a form small step LMs follow).
QUERY_FORMS = ("sampled", "one")

OptionsT = TypeVar("OptionsT", bound="Options")


def check_positive_int(value: Any, name: str, minimum: int = 1) -> int:
    """Validate an integer argument, naming it in the error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"must be an integer >= {minimum}, got {value!r}", argument=name)
    return value


def check_fraction(value: Any, name: str, low: float = 0.0, high: float = 1.0) -> float:
    """Validate a float argument in ``[low, high]``, naming it in the error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"must be a number, got {value!r}", argument=name) from None
    if not low <= v <= high:
        raise InputError(f"must be between {low} and {high}, got {v}", argument=name)
    return v


def check_option(value: Any, kind: type[OptionsT], name: str) -> OptionsT:
    """``value`` when it is a ``kind`` option object, else an InputError naming ``name``."""
    if not isinstance(value, kind):
        raise InputError(f"expected a ragnet.{kind.__name__}, got {type(value).__name__}", argument=name)
    return value


class Options:
    """What the option objects share: the program fills the fields left None, and refuses the
    fields it does not read set away from their default."""

    #: The constructor argument the object is given as (``"pack"``), for error messages.
    argument = ""

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # a checked, normalised value of a frozen field

    def fill(self: OptionsT, **defaults: Any) -> OptionsT:
        """This object with the fields it leaves None set to ``defaults`` (the program's)."""
        return replace(self, **{name: value for name, value in defaults.items() if getattr(self, name) is None})

    def changed(self) -> dict[str, Any]:
        """The fields set away from their defaults, by name.

        Example:
            >>> Loop(k=3, protect=0).changed()
            {'k': 3, 'protect': 0}
        """
        default = type(self)()
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) != getattr(default, f.name)}

    def unread(self: OptionsT, reads: Iterable[str], program: str) -> OptionsT:
        """This object, refused when it sets a field ``program`` does not read (all but ``reads``)
        away from its default: a setting that would do nothing."""
        reads = set(reads)
        ignored = [name for name in self.changed() if name not in reads]
        if ignored:
            raise InputError(f"{program} does not read {', '.join(ignored)}; it reads {', '.join(sorted(reads))}",
                             argument=f"{self.argument}.{ignored[0]}")
        return self


@dataclass(frozen=True)
class Pack(Options):
    """The answer pack: how the evidence fills the answer prompt.

    Attributes:
        budget: tokens of the whole answer prompt (instructions, demos, question, context;
            ``ragnet.programs.packing.PromptBudget``). None: the program's (4,000 for the
            one-shot and CombinedRAG; IterativeRAG and ReflectiveRAG then pack nothing and their
            answer reads everything they kept).
        sentences: fill the budget with the candidates' best sentences
            (``ragnet.programs.sentence_packing``; no LM call) instead of whole chunks; needs a budget.
        method: how whole chunks fill it: ``"protected"`` (rank prefix kept, exact knapsack on
            the leftover budget), ``"exact"`` / ``"greedy"`` knapsack, or ``"rank"`` (rank-order
            filling, the baseline); see ``ragnet.programs.packing.pack``.
        transform, temperature: relevance calibration of the search scores
            (``ragnet.core.calibrate``).
        notes_share: the largest share of the budget the notes may take (whole lines, earliest
            first); 0 leaves them out of the answer prompt, 1 never cuts them.

    Example:
        >>> Pack(sentences=True).fill(budget=4000)
        Pack(budget=4000, sentences=True, method='protected', transform='exp', temperature=0.1, notes_share=0.25)
    """

    budget: int | None = None
    sentences: bool = False
    method: str = DEFAULT_METHOD
    transform: str = DEFAULT_TRANSFORM
    temperature: float = DEFAULT_TEMPERATURE
    notes_share: float = DEFAULT_NOTES_SHARE

    argument = "pack"

    def __post_init__(self) -> None:
        if self.budget is not None:
            check_positive_int(self.budget, "pack.budget")
        self._set("sentences", bool(self.sentences))
        if self.method not in METHODS:
            raise InputError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}",
                             argument="pack.method")
        if self.transform not in TRANSFORMS:
            raise InputError(f"unknown transform {self.transform!r}; choose from {', '.join(TRANSFORMS)}",
                             argument="pack.transform")
        if isinstance(self.temperature, bool) or not isinstance(self.temperature, (int, float)) \
                or not self.temperature > 0:
            raise InputError(f"must be > 0, got {self.temperature!r}", argument="pack.temperature")
        self._set("temperature", float(self.temperature))
        self._set("notes_share", check_fraction(self.notes_share, "pack.notes_share"))

    def at(self, budget: int | None, default: int | None) -> Pack:
        """This pack at a program's ``budget=`` shortcut, else at its own budget, else at
        ``default`` (the program's); refused when the shortcut and the pack name two budgets, or
        when sentences are asked for with no budget to fill."""
        if budget is not None:
            check_positive_int(budget, "budget")
            if self.budget is not None and self.budget != budget:
                raise InputError(f"budget={budget} and pack=Pack(budget={self.budget}) name two budgets; give one",
                                 argument="budget")
        pack = replace(self, budget=budget) if budget is not None else self.fill(budget=default)
        if pack.sentences and pack.budget is None:
            raise InputError("sentence selection packs the answer context into a token budget; give a budget "
                             "(1,000 tokens suits a small local reader)", argument="budget")
        return pack


@dataclass(frozen=True)
class Search(Options):
    """The search: how candidates are retrieved and ruled.

    Attributes:
        pool: hits of the question's own hybrid search that start the pack. None: the program's
            (the one-shot's candidates, 100; IterativeRAG's 0: its sentence pack draws on what the
            turns gathered, and with a pool the one-shot's candidates start it, preset ``pool``).
        bm25_weight: the hybrid weight, ``bm25_weight * BM25 + (1 - bm25_weight) * cosine`` (0.4, as
            in ReflectiveRAG); ``Index.search`` takes it under the same name.
        rules: apply the metadata rule filter (drop candidates whose years or places contradict
            the question, add chunks whose title or entities match it).
        max_add: the most chunks the rules may add from the index.
        focus: fill the pack from one document when most of the question's best hits come from it
            (:func:`ragnet.core.document_focus.focus_document`; preset ``focus``).
    """

    pool: int | None = None
    bm25_weight: float = 0.4
    rules: bool = True
    max_add: int = 10
    focus: bool = False

    argument = "search"

    def __post_init__(self) -> None:
        if self.pool is not None:
            check_positive_int(self.pool, "search.pool", minimum=0)
        self._set("bm25_weight", check_fraction(self.bm25_weight, "search.bm25_weight"))
        self._set("rules", bool(self.rules))
        self._set("focus", bool(self.focus))
        check_positive_int(self.max_add, "search.max_add", minimum=0)


@dataclass(frozen=True)
class Hops(Options):
    """The one-shot's bridge hops: LM-free searches for the names its first selection gives and
    the question does not (``ragnet.programs.bridge_search.bridge_searches``), whose hits join the
    candidates at ``HOP_WEIGHT`` of their score.

    Attributes:
        searches: bridge searches (0: none; the ``hops`` preset: 3).
        k: chunks per bridge search.

    Example:
        >>> Hops(3)
        Hops(searches=3, k=5)
    """

    searches: int = 0
    k: int = 5

    argument = "hops"

    def __post_init__(self) -> None:
        check_positive_int(self.searches, "hops.searches", minimum=0)
        check_positive_int(self.k, "hops.k")


@dataclass(frozen=True)
class Loop(Options):
    """An agent's turn loop (IterativeRAG and CombinedRAG read every field; ReflectiveRAG reads
    ``k``, ``n_queries``, ``query_form``, ``bridge``, ``stop_on_repeat`` and ``step_tokens``).

    Attributes:
        max_turns: the most search turns. None: the program's (IterativeRAG 5, CombinedRAG 3).
        k: chunks per ``chunk_search``.
        n_queries: queries a rewrite samples (verbalized sampling).
        query_form: the rewrite step's form, ``"sampled"`` or ``"one"`` (:data:`QUERY_FORMS`;
            preset ``one-query``).
        fallback: turn 1 searches the original question too, guarding against query drift.
        dedup: a search skips the chunks earlier searches returned (the next-ranked unseen
            chunks come back instead).
        bridge: search the best bridge entity of the evidence (no LM call) when the rewrite gives
            no new query, or on every turn after the first without the rewrite step.
        stop_on_repeat: stop when the sufficiency step says "Refine" with the same missing fact
            two turns running (``ragnet.programs.agent.verdict_unchanged``).
        protect: the guard of IterativeRAG's delete step: the question's top-``k`` hits, the best
            hit of every search, the ``protect`` chunks closest to the question and the chunks the
            question or the evidence names are never deleted; 0 lets the LM delete anything
            (preset ``unguarded-delete``).
        step_tokens: the most tokens of chunk text one LM step of the loop (rewrite, notes,
            delete, sufficiency) reads: the chunks it is shown cut to their best sentences for the
            question (``ragnet.programs.sentence_packing.sentence_view``, no LM call), as the
            answer's sentence pack cuts them. None: every chunk whole, as in the studies. Each step
            call of a small local LM reads its prompt at about 100 tokens a second on one core, and
            a kept context of 25 chunks is about 6,000 tokens (preset ``lean``: 800).
    """

    max_turns: int | None = None
    k: int = 5
    n_queries: int = 5
    query_form: str = "sampled"
    fallback: bool = True
    dedup: bool = True
    bridge: bool = True
    stop_on_repeat: bool = True
    protect: int = 2
    step_tokens: int | None = None

    argument = "loop"

    def __post_init__(self) -> None:
        if self.max_turns is not None:
            check_positive_int(self.max_turns, "loop.max_turns")
        check_positive_int(self.k, "loop.k")
        check_positive_int(self.n_queries, "loop.n_queries")
        if self.query_form not in QUERY_FORMS:
            raise InputError(f"must be one of {', '.join(QUERY_FORMS)}, not {self.query_form!r}",
                             argument="loop.query_form")
        for name in ("fallback", "dedup", "bridge", "stop_on_repeat"):
            self._set(name, bool(getattr(self, name)))
        check_positive_int(self.protect, "loop.protect", minimum=0)
        if self.step_tokens is not None:
            check_positive_int(self.step_tokens, "loop.step_tokens", minimum=50)


@dataclass(frozen=True)
class Reflection(Options):
    """ReflectiveRAG's reflections, convergence rule and noise removal.

    Attributes:
        max_reflections: the most Refine rounds (each adds one search; preset ``no-reflection``: 0).
        beta: the weight of the confidence change in Δ.
        tau: stop when Δ falls below it.
        noise_removal: prune the final set with ``ragnet.core.noise.filter`` (preset ``no-noise``: off).
        alpha, keep: the noise removal's temperature and kept share.
    """

    max_reflections: int = 3
    beta: float = 0.5
    tau: float = 0.05
    noise_removal: bool = True
    alpha: float = 5.0
    keep: float = 0.7

    argument = "reflection"

    def __post_init__(self) -> None:
        check_positive_int(self.max_reflections, "reflection.max_reflections", minimum=0)
        self._set("beta", check_fraction(self.beta, "reflection.beta", 0.0, 10.0))
        self._set("tau", check_fraction(self.tau, "reflection.tau", 0.0, 10.0))
        self._set("noise_removal", bool(self.noise_removal))
        self._set("alpha", check_fraction(self.alpha, "reflection.alpha", 0.0, 100.0))
        self._set("keep", check_fraction(self.keep, "reflection.keep", 0.01, 1.0))


@dataclass(frozen=True)
class LMSteps(Options):
    """Which of a program's optional LM steps run (each costs LM calls; the answer step always runs).

    Attributes:
        filter: the one-shot's FilterChunks step on the candidates the rules kept.
        crop: the one-shot's CropChunk step, in relevance order until the budget could be filled.
        max_crops: the most chunks cropped per question.
        contextualize: the notes step. None: the program's (off in the one-shot, where one call
            writes notes from its pack, preset ``notes``; on in the agents, which keep notes turn by turn).
        recheck: when no sentence of the one-shot's context states its answer, ask once more from
            a denser pack and keep that answer when its context states it (preset ``recheck``).
        recheck_share: the share of the budget the denser pack fills.
        rewrite: the agents' query rewrite (off: turn 1 searches the question, later turns the
            bridge search).
        sufficiency: the agents' sufficiency verdict, which may stop the loop early.
        delete: IterativeRAG's chunk_delete after each search (preset ``no-delete``: off, what a
            small step LM does best with).
    """

    filter: bool = False
    crop: bool = False
    max_crops: int = 20
    contextualize: bool | None = None
    recheck: bool = False
    recheck_share: float = 0.5
    rewrite: bool = True
    sufficiency: bool = True
    delete: bool = True

    argument = "lm_steps"

    def __post_init__(self) -> None:
        for name in ("filter", "crop", "recheck", "rewrite", "sufficiency", "delete"):
            self._set(name, bool(getattr(self, name)))
        if self.contextualize is not None:
            self._set("contextualize", bool(self.contextualize))
        check_positive_int(self.max_crops, "lm_steps.max_crops", minimum=0)
        self._set("recheck_share", check_fraction(self.recheck_share, "lm_steps.recheck_share", low=0.05))


def option_fields(program: type) -> dict[str, tuple[str, type[Options]]]:
    """``{field: (argument, option class)}`` for every field of the option objects ``program``'s
    constructor takes (read from its defaults): where a setting named by its field goes.

    Example:
        >>> from ragnet.programs import OneShotRAG
        >>> option_fields(OneShotRAG)["sentences"], option_fields(OneShotRAG)["k"]
        (('pack', <class 'ragnet.programs.options.Pack'>), ('hops', <class 'ragnet.programs.options.Hops'>))
    """
    out: dict[str, tuple[str, type[Options]]] = {}
    for name, parameter in inspect.signature(program.__init__).parameters.items():
        if isinstance(parameter.default, Options):
            kind = type(parameter.default)
            for f in fields(kind):
                if f.name in out:  # one name, one meaning: a field two of its objects have would be ambiguous
                    raise TypeError(f"{program.__name__}: {f.name} is a field of both {out[f.name][0]} and {name}")
                out[f.name] = (name, kind)
    return out
