"""RouterRAG — one search where one suffices, the multi-step program where the question needs more.

The one-shot (``oneshot:sentences``) holds every gold document of most multi-hop questions after
one search and one LM call. The rest mostly name an entity only through another ("the spouse of
the director of film West of Shanghai"); their second document takes a search aimed at a name
the first search found. Small local LMs decide poorly whether to search again, so the router
decides without an LM, from the first search itself:

1. the **simple** program's retrieval runs (its search, rules and sentence selection, no LM call)
   and is recorded in the trace as usual (its events marked ``probe`` when the hard route then
   runs, so they are not read as the hard program's);
2. :func:`route_signals` reads that first context: the question's form, how many context
   documents the question names, the names the evidence gives that the question does not (and
   whether they are documents the collection holds), and the score profile;
3. the rule (:class:`ragnet.core.routing.RouteRule`, or any callable) picks the route, recorded
   as a ``route`` event (the route, the rule's reason, the signals) and as ``route`` on the
   Prediction;
4. **simple**: the simple program answers from that first context (one search, one LM call);
   **hard**: the hard program runs on its own from the question. It searches afresh: a program
   built from a spec takes no first search from outside, and the repeat costs a search, no LM call.

Why ``oneshot:sentences+hops`` is the default hard route: of the multi-step programs measured on
dev questions it is the one that finds the second document most often, at the one-shot's cost of
one LM call (docs/results/README.md, "Bridge hops"), and it rarely displaces first-hop evidence.
With it the router saves the bridge searches and that rare displacement; with an agent as the
hard route (preset ``router:iterative``: ``iterative:no-rewrite+no-delete+sentences``) it also saves the
agent's LM calls on every question routed simple.

Both routes share the router's answer step (its presets: ``router:cot``, ``router:qlast``), so
``ragnet optimize --step answer`` compiles one reader for both; :meth:`RouterRAG.steps` lists
every step of both routes, and a compiled step is installed into each route that has it.

Example:
    >>> router = RouterRAG(index, budget=1000)
    >>> router.simple.pack.sentences, router.hard.hops.searches
    (True, 3)
    >>> route, reason, signals, context = router.route("What is the capital of Italy?")   # no LM call
    >>> route in ("simple", "hard")
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ragnet._text import normalize_text
from ragnet.core.bridge_keys import bridge_entities
from ragnet.core.routing import ROUTES, RouteRule, RouteSignals, question_form
from ragnet.core.title_keys import mention_pattern, title_keys
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.programs.base import RAGProgram, RunResult
from ragnet.programs.bridge_search import title_test
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.oneshot import OneShotRAG
from ragnet.programs.options import Hops, Pack, Search, check_positive_int
from ragnet.programs.stages import DEFAULT_BUDGET  # both routes answer within the router's budget
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, Step

__all__ = ["DEFAULT_BUDGET", "DEFAULT_HARD", "DEFAULT_SIMPLE", "RouterRAG", "route_signals"]

DEFAULT_SIMPLE = "oneshot:sentences"
DEFAULT_HARD = "oneshot:sentences+hops"
# Bridge names recorded in the signals (a rule may read fewer; RouteRule reads its bridge_names)
SIGNAL_NAMES = 3

Rule = Callable[[RouteSignals], "tuple[str, str] | str"]


def route_signals(question: str, context: list[Chunk], index: ProgramIndex | None, *,
                  names: int = SIGNAL_NAMES) -> RouteSignals:
    """The router's signals from a first context (best first), with no LM call.

    Args:
        question: the question.
        context: the first search's selected chunks, best first (their ``score`` and ``dense_score``
            as the search gave them).
        index: the index (its title catalog says which names are documents; without one no
            name is).
        names: how many of the evidence's best bridge names to record.

    Example:
        >>> from ragnet.corpus.types import Chunk
        >>> film = Chunk(id="k#0", doc_id="k", title="Kiss and Tell", text="Kiss and Tell stars Shirley Temple.",
        ...              tokens=8, score=1.0, dense_score=0.6)
        >>> s = route_signals("Which post did the star of Kiss and Tell hold?", [film], None)
        >>> s.form, s.named, s.bridges, s.bridge_titles, s.top_cosine
        ('nested', 1, ('Shirley Temple',), (), 0.6)
    """
    is_title = title_test(index)
    found = bridge_entities(question, [c.text for c in context], is_title=is_title,
                            exclude=[c.title for c in context], k=names)
    asked = normalize_text(question)
    best: dict[str, Chunk] = {}
    for chunk in context:
        if chunk.title not in best or chunk.score > best[chunk.title].score:
            best[chunk.title] = chunk
    named = sum(1 for title in best if _names(asked, title))
    scores = sorted((c.score for c in best.values()), reverse=True)
    cosines = [c.dense_score for c in context if c.dense_score is not None]
    return RouteSignals(
        form=question_form(question),
        named=named,
        bridges=tuple(found),
        bridge_titles=tuple(n for n in found if is_title is not None and is_title(normalize_text(n))),
        top_cosine=max(cosines) if cosines else None,
        title_gap=scores[0] - scores[1] if len(scores) > 1 else 0.0,
        titles=len(best),
    )


def _label(program: Any) -> str:
    """How the trace names a route: the spec it was built from, else its class."""
    return str(getattr(program, "spec", None) or type(program).__name__)


def _names(asked: str, title: str) -> bool:
    """Whether the casefolded question names ``title`` (whole words; a trailing parenthetical,
    "Ed Wood (film)", may be left out)."""
    return any(mention_pattern(key).search(asked) for key in title_keys(title))


class RouterRAG(RAGProgram):
    """Answer from one search, or run the multi-step program, as an LM-free rule decides per question.

    Args:
        index: a ``ragnet.Index``.
        budget: the answer prompt's budget of both routes (where their strategy takes one).
        simple: the one-search route, a ``OneShotRAG`` whose retrieval makes no LM call (no
            ``llm-filter`` or ``crop``): its first search is what the rule reads, and what the
            simple route answers from. None: ``oneshot:sentences`` at ``budget``.
        hard: the multi-step route, any ragnet program but a router. None:
            ``oneshot:sentences+hops`` at ``budget`` (see the module docstring). From specs, build
            the router with :func:`ragnet.programs.registry.build_program` (``"router:iterative"``,
            or ``hard="iterative:no-rewrite+no-delete+sentences"`` as an override): the registry builds the
            routes, the router takes programs.
        rule: a :class:`ragnet.core.routing.RouteRule` (None: its defaults), or any callable
            ``(RouteSignals) -> (route, reason)`` (or just the route) with route ``"simple"`` or ``"hard"``.
        search: the search of the default routes (:class:`ragnet.programs.options.Search`).
        retries: as in :class:`ragnet.programs.RAGProgram`, for both routes.
        answer: the answer step of the default routes (routes given as programs keep their own;
            the registry gives both the router's). Where it leaves the question's place open,
            each route shows it where its strategy does.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"answer": "Rome", "evidence_ids": ["rome#0"]}])):
        ...     pred = RouterRAG(index, budget=1000)(question="Is Rome the capital of Italy?")
        >>> pred.route, [e["rule"] for e in pred.trace if e["step"] == "route"]   # a comparison of named documents
        ('simple', ['default'])
    """

    default_question_at = "auto"  # the default simple route's (OneShotRAG's)

    def __init__(
        self,
        index: ProgramIndex,
        budget: int = DEFAULT_BUDGET,
        *,
        simple: RAGProgram | None = None,
        hard: RAGProgram | None = None,
        rule: RouteRule | Rule | None = None,
        search: Search = Search(),
        retries: int = 1,
        answer: AnswerStep | None = None,
    ) -> None:
        super().__init__(index, search=search, retries=retries, answer=answer)
        self.budget = check_positive_int(budget, "budget")
        if rule is not None and not callable(rule):
            raise InputError(f"expected a RouteRule or a callable, got {type(rule).__name__}", argument="rule")
        self.rule = rule if rule is not None else RouteRule()
        given = answer if answer is not None else AnswerStep()
        if simple is None:
            simple = OneShotRAG(index, budget=self.budget, pack=Pack(sentences=True), search=self.search,
                                retries=retries, answer=given)
            simple.spec = DEFAULT_SIMPLE
        if not isinstance(simple, OneShotRAG) or simple.max_lm_calls() != 1:
            raise InputError(f"the simple route must be a OneShotRAG whose retrieval makes no LM call (no llm-filter, "
                             f"crop or full), e.g. {DEFAULT_SIMPLE!r}, not {_label(simple)}: the router reads its "
                             f"first search before any LM call", argument="simple")
        if hard is None:
            hard = OneShotRAG(index, budget=self.budget, pack=Pack(sentences=True), hops=Hops(3), search=self.search,
                              retries=retries, answer=simple.answer)
            hard.spec = DEFAULT_HARD
        if not isinstance(hard, RAGProgram) or isinstance(hard, RouterRAG):
            raise InputError(f"the hard route must be a ragnet program other than a router, not {_label(hard)}",
                             argument="hard")
        self.simple, self.hard = simple, hard
        self.simple_spec, self.hard_spec = _label(simple), _label(hard)
        self.answer = self.simple.answer

    # -- what other code asks of a program ------------------------------------------------
    def routes(self) -> dict[str, RAGProgram]:
        """The route programs by name, ``{"simple": ..., "hard": ...}``."""
        return {name: self.__dict__[name] for name in ROUTES if name in self.__dict__}

    def steps(self) -> dict[str, Step]:
        """Every LM step of both routes by name (one entry where both routes have a step of that
        name: the simple route's); :meth:`set_step` installs into each route that has it."""
        out: dict[str, Step] = {}
        for program in self.routes().values():
            for name, step in program.steps().items():
                out.setdefault(name, step)
        return out

    def set_step(self, name: str, step: Any) -> None:
        """Install a compiled step into every route that has a step ``name``."""
        if name not in self.steps():
            raise InputError(f"RouterRAG has no {name} step; its routes' steps: {', '.join(self.steps())}",
                             argument="step")
        for program in self.routes().values():
            if name in program.steps():
                program.set_step(name, step)

    def _retry_holders(self) -> list[Any]:
        """Both routes: setting the router's retries sets theirs, and so every step's."""
        return list(self.routes().values())

    def max_lm_calls(self) -> int:
        return max(program.max_lm_calls() for program in self.routes().values())

    # -- routing -----------------------------------------------------------------------------
    def route(self, question: str, trace: Trace | None = None) -> tuple[str, str, RouteSignals, list[Chunk]]:
        """The route for ``question``, the rule's reason, the signals and the first context, with
        no LM call (the simple route's retrieval, recorded in ``trace``)."""
        context = self.simple.retrieve(question, trace if trace is not None else Trace())
        names = max(SIGNAL_NAMES, getattr(self.rule, "bridge_names", 0))
        signals = route_signals(question, context, self.index, names=names)
        decided = self.rule(signals)
        route, reason = (decided, getattr(self.rule, "__name__", "rule")) if isinstance(decided, str) else decided
        if route not in ROUTES:
            raise InputError(f"the rule returned route {route!r}; expected one of {', '.join(ROUTES)}", argument="rule")
        return route, str(reason), signals, context

    def _run(self, question: str, trace: Trace) -> RunResult:
        first = len(trace.events)
        route, reason, signals, context = self.route(question, trace)
        if route == "hard":
            # the first search was the router's probe, not the hard program's: marked, so that a reader of
            # the trace (and eval's stage counts) can tell its search and selection from the program's
            for event in trace.events[first:]:
                event["probe"] = True
        trace.add("route", route=route, rule=reason, signals=signals.to_dict(),
                  program=self.simple_spec if route == "simple" else self.hard_spec)
        if route == "simple":
            answer, evidence = self.simple._answer(question, context, trace)
            result = RunResult(answer=answer, evidence=evidence, context=context)
        else:
            result = self.hard._run(question, trace)
        result.extra = {**result.extra, "route": route}
        return result
