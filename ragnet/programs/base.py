"""What every ragnet program shares: the answer step, searches that are traced, and the
``dspy.Prediction`` every program returns (``answer``, ``evidence``, ``context`` ids,
``passages`` as the reader saw them, ``citations``, ``notes``, ``strategy`` (what ran: the spec
and its budget), ``trace``, ``usage``).

``evidence`` names the chunks that support the answer, chosen after it without an LM (those
whose sentences state it, best-supporting first; see
:func:`ragnet.programs.citations.supported_evidence`). ``citations`` is one plain dict
per ``evidence`` id, in that order: the chunk's ``id``, ``doc_id`` and ``title``, where in the
source it is from when the index knows it (``file``, ``page``, ``page_end``, ``headings``,
``line``), and the ``sentences`` of it the reader saw (the selected ones for a sentence-packed
context), the one supporting the answer first. A failed answer has no evidence and no citations.
See :mod:`ragnet.programs.citations`.

Programs subclass :class:`RAGProgram` and implement ``_run(question, trace) -> RunResult``.
The base ``forward`` validates the question, meters LM usage and wall time, and assembles
the Prediction, so each program holds only its own control flow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping, TypeVar

import dspy

from ragnet._text import is_blank
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.lm.usage import track_usage
from ragnet.programs.citations import citations, supported_evidence
from ragnet.programs.conversation import signals_search
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.options import Options, Search, check_option, check_positive_int
from ragnet.programs.packing import PromptBudget
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep, Step, recording


OptionsT = TypeVar("OptionsT", bound=Options)


@dataclass
class RunResult:
    """What a program's ``_run`` hands back to ``forward``."""

    answer: str
    evidence: list[str]
    context: list[Chunk]
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class RAGProgram(dspy.Module):
    """Base class of ragnet's programs.

    Args:
        index: a ``ragnet.Index`` (any :class:`ragnet.programs.index_protocol.ProgramIndex`; not
            a DSPy parameter: saving a program stores prompts and demos only, never the index).
        search: the search's options (:class:`ragnet.programs.options.Search`): its hybrid
            ``bm25_weight`` and, for the programs that gather candidates, their pool and rules.
        retries: LM retries per step before falling back to a safe default (an ``answer`` step
            that names its own keeps them).
        answer: the answer step with its options (its LM, chain of thought, where the prompt shows
            the question; :class:`ragnet.signatures.AnswerStep`); None is ``AnswerStep()``. Where
            the step leaves the question's place open, the program's :attr:`default_question_at`
            decides.
    """

    #: Where the answer prompt shows the question when the answer step leaves it open: "first"
    #: here (BasicRAG); the programs that pack a budget (the one-shot, the agents, the router) say
    #: "auto", which places it per question.
    default_question_at: ClassVar[str] = "first"
    #: The spec the program was built from (``ragnet.RAG`` and the registry set it); None for a
    #: program constructed directly, which :meth:`ran_as` names by its class.
    spec: str | None = None
    #: The fields of its option objects the program reads, by constructor argument, where it reads
    #: only some (an argument not named here: every field). Another field set away from its default
    #: would do nothing, and is refused (:meth:`ragnet.programs.options.Options.unread`).
    reads: ClassVar[Mapping[str, tuple[str, ...]]] = {}

    def __init__(self, index: ProgramIndex, *, search: Search = Search(), retries: int = 1,
                 answer: AnswerStep | None = None) -> None:
        super().__init__()
        # the one check of the index (a Protocol is not checked when called): a wrong argument fails here, by name
        if index is None or not hasattr(index, "search"):
            raise InputError("expected a ragnet.Index (from Index.build or Index.load)", argument="index")
        if answer is not None and not isinstance(answer, AnswerStep):
            raise InputError(f"expected a ragnet.AnswerStep, got {type(answer).__name__}", argument="answer")
        self.index = index
        self.search = self._hold("search", search, Search)
        self.retries = retries
        answer = answer if answer is not None else AnswerStep()
        self.answer = answer.for_program(question_at=self.default_question_at, retries=self.retries)

    def _hold(self, argument: str, value: Any, kind: type[OptionsT], **defaults: Any) -> OptionsT:
        """Option object ``value`` of constructor argument ``argument``, as the program holds it:
        checked to be a ``kind``, refused where it sets a field the program does not read
        (:attr:`reads`), and its fields left None filled with ``defaults`` (the program's)."""
        value = check_option(value, kind, argument)
        if argument in self.reads:
            value.unread(self.reads[argument], type(self).__name__)
        return value.fill(**defaults)

    @property
    def retries(self) -> int:
        """LM retries of every step before it falls back; setting it sets every step's."""
        return self._retries

    @retries.setter
    def retries(self, value: int) -> None:
        self._retries = check_positive_int(value, "retries", minimum=0)
        for holder in self._retry_holders():
            holder.retries = self._retries

    def _retry_holders(self) -> list[Any]:
        """What setting :attr:`retries` passes it on to: every LM step (a router: its routes)."""
        return list(self.steps().values())

    def answer_settings(self):
        """The DSPy settings the answer step runs under (and its prompt budget is measured in)."""
        return self.answer.settings()

    def _answer_budget(self, question: str, budget: int, notes: str = "") -> PromptBudget:
        """``budget`` tokens of answer prompt for ``question`` (with ``notes``), measured with the
        adapter, signature and demos that will send it."""
        with self.answer_settings():
            return PromptBudget(self.answer.predict, question, budget, notes=notes,
                                signature=self.answer.signature_for(question))

    # -- what other code asks of a program ------------------------------------------------
    def steps(self) -> dict[str, Step]:
        """The program's LM steps by name (``"answer"``, ``"sufficiency"``, ``"crop"``, ...): each
        a :class:`ragnet.signatures.Step` held under its own name, on or off. What ``ragnet
        optimize --step`` compiles and installs."""
        return {attr: value for attr, value in vars(self).items() if isinstance(value, Step)}

    def save(self, path: Any, save_program: bool = False, **kwargs: Any) -> Any:
        """DSPy's save, state only: prompts and demos as JSON (``ragnet.optimize.save_program`` adds
        ragnet's header). ``save_program=True`` is refused: it would cloudpickle the whole module,
        index included, and ragnet never pickles."""
        if save_program:
            raise InputError("ragnet programs are saved as JSON state (prompts and demos), never pickled with "
                             "their index; use save_program=False or ragnet.optimize.save_program(program, path)",
                             argument="save_program")
        return super().save(path, save_program=False, **kwargs)

    def set_step(self, name: str, step: Step | dspy.Predict) -> None:
        """Install a compiled copy of step ``name``'s predictor (demos, instructions, settings)
        from ``step`` (a compiled :class:`Step`, or its ``dspy.Predict``); the step keeps its
        switch and retries."""
        current = self.steps().get(name)
        if current is None:
            raise InputError(f"{type(self).__name__} has no {name} step; its steps: {', '.join(self.steps())}",
                             argument="step")
        current.install(step)

    def ran_as(self) -> str:
        """What runs, as ``ask`` prints it and every prediction's ``strategy`` records it: the spec
        (else the class name) and the answer budget, e.g. ``"oneshot:sentences+hops@1000"``."""
        name = self.spec or type(self).__name__
        budget = getattr(self, "budget", None)
        return f"{name}@{budget}" if budget else name

    def max_lm_calls(self) -> int:
        """Upper bound of the LM calls one question costs with the current switches (retries
        not counted): what ``ragnet optimize`` multiplies to print its expected cost."""
        return 1

    # -- the one method subclasses implement ---------------------------------------------
    def _run(self, question: str, trace: Trace) -> RunResult:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- DSPy entry point -----------------------------------------------------------------
    def forward(self, question: str) -> dspy.Prediction:
        """Answer ``question``; returns a ``dspy.Prediction`` (see module docstring)."""
        if not isinstance(question, str) or is_blank(question):
            raise InputError("must be a non-empty string", argument="question")
        question = question.strip()
        trace = Trace()
        started = time.perf_counter()
        with recording(trace), track_usage() as meter:  # every step records into this call's trace
            result = self._run(question, trace)
        usage = meter.to_dict()
        usage["seconds"] = round(time.perf_counter() - started, 4)
        usage["searches"] = len(trace.of("search"))
        usage["turns"] = max([e.get("turn", 0) for e in trace.events] + [0])
        usage["context_tokens"] = sum(c.tokens for c in result.context)
        usage["lm_errors"] = len(trace.errors())
        return dspy.Prediction(
            answer=result.answer,
            evidence=result.evidence,
            context=[c.id for c in result.context],
            # the context as the reader saw it (sentence selection and crops shorten chunk texts)
            passages=[{"id": c.id, "title": c.title, "text": c.text} for c in result.context],
            # where each evidence chunk is from and the sentences of it the reader saw
            citations=citations(result.evidence, result.context, result.answer, question),
            notes=result.notes,
            strategy=self.ran_as(),
            # the reader's probability of its final answer's tokens, where its LM reports logprobs
            confidence=next((e.get("confidence") for e in reversed(trace.of("answer"))), None),
            trace=trace.to_list(),
            usage=usage,
            **result.extra,
        )

    # -- shared steps ----------------------------------------------------------------------
    def _search(
        self,
        query: str,
        trace: Trace,
        *,
        k: int,
        turn: int = 1,
        exclude: Iterable[str] = (),
        fallback: bool = False,
        **event: Any,
    ) -> list[Chunk]:
        """Hybrid search, recorded as a ``search`` event (with ``event``'s extra fields); inside a
        follow-up, with the conversation's signals (:func:`ragnet.programs.conversation.signals_search`)."""
        hits = signals_search(self.index, query, k=k, exclude=exclude, bm25_weight=self.search.bm25_weight)
        trace.add("search", turn=turn, query=query, retrieved=[h.id for h in hits], fallback=fallback, **event)
        return hits

    def _answer(self, question: str, chunks: list[Chunk], trace: Trace, *, notes: str = "") -> tuple[str, list[str]]:
        """Run GenerateAnswer; evidence = the chunks whose sentences state the answer (the reader's
        cited ones first), else the cited ids, or the whole context when nothing valid was cited
        (:func:`ragnet.programs.citations.supported_evidence`, no LM call); none when the answer
        step failed (there is no answer to support)."""
        pred = self.answer(question=question, context=chunks, notes=notes)
        failed = bool(getattr(pred, "fallback", False))
        cited = [cid for cid in (pred.evidence_ids or []) if cid in {c.id for c in chunks}]
        answer = str(pred.answer or "")
        evidence = [] if failed else supported_evidence(answer, question, chunks, cited)
        trace.add(
            "answer",
            evidence=evidence,
            reader_cited=cited,
            cited=bool(cited),
            fallback=failed,
            context=[c.id for c in chunks],
            lm=self.answer.lm.name if self.answer.lm is not None else None,
            **({"confidence": round(pred.confidence, 4)} if getattr(pred, "confidence", None) is not None else {}),
            **self.answer.written_first(pred),
            **_layout_fields(self.answer, question, chunks),
        )
        return answer, evidence


def _layout_fields(step: Any, question: str, chunks: list[Chunk]) -> dict[str, Any]:
    """The answer event's record of where the prompt showed the question: nothing for GenerateAnswer's
    own order, ``question_at`` otherwise, and ``question_at_rule: "auto"`` when the step chose it per
    question; ``best_last: True`` when the chunks were shown best last, next to the question."""
    where = step.layout_for(question)
    fields: dict[str, Any] = {"question_at": where} if where != "first" else {}
    if step.question_at == "auto":
        fields["question_at_rule"] = "auto"
    if step.best_last(question, chunks):
        fields["best_last"] = True
    return fields
