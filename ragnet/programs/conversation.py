"""Follow-up questions: a program asked with the conversation before the question.

A chat asks "and its default?" after "what does the -d option do?". ragnet answers from the
documents, not from the conversation, so :class:`FollowUp` first makes the follow-up one
standalone question (the ``condense`` step, :mod:`ragnet.signatures.condense`, compilable with
``ragnet optimize --step condense``), then runs the program on it. A small local LM rewrites
poorly, so two signals that cost no LM call back the rewrite up while the program searches:

* the earlier questions' key terms join every search query (not the question the reader sees),
  so the documents of the conversation's subject stay among the candidates;
* the chunks the previous answer cited join the candidates (given by ``/ask``'s history; a chat
  client echoes only text back, so there the previous question's best hits stand in for them).

Without history, ``FollowUp(program)(question=q)`` is ``program(question=q)``: same prompts, same
prediction. With it, the prediction also carries ``standalone_question`` and its trace opens
with the ``condense`` step and a ``follow_up`` event (the terms and chunks carried over).

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet.programs import BasicRAG
    >>> lm = DummyLM([{"standalone_question": "What is the capital of France?"},
    ...               {"answer": "Paris", "evidence_ids": ["c1"]}])
    >>> with dspy.context(lm=lm):
    ...     pred = FollowUp(BasicRAG(index, k=2))(question="And of France?",
    ...                                           history=[{"question": "What is the capital of Italy?", "answer": "Rome"}])
    >>> pred.standalone_question, pred.answer, [e["step"] for e in pred.trace][:2]
    ('What is the capital of France?', 'Paris', ['lm_step', 'follow_up'])
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import dspy

from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.programs.trace import Trace
from ragnet.signatures.condense import CondenseStep, asked_terms, joined_question
from ragnet.signatures.step import recording

__all__ = ["FollowUp", "FollowUpSignals", "Turn", "as_turns", "history_text", "signals_search"]

#: Earlier turns shown to the condense step (the newest ones).
TURNS_SHOWN = 3
#: Characters of an earlier answer shown to the condense step.
ANSWER_CHARS = 300
#: Earlier turns one request may send.
MAX_TURNS = 50
#: Chunks carried over from the previous turn when it cited none (its question's best hits).
CARRIED_HITS = 3


@dataclass(frozen=True)
class Turn:
    """One earlier turn: the question asked, the answer given, the chunk ids the answer cited."""

    question: str
    answer: str = ""
    cited: tuple[str, ...] = ()


@dataclass(frozen=True)
class FollowUpSignals:
    """What a follow-up's searches carry over from the conversation: ``terms`` join each query,
    the chunks ``carried`` join each candidate list."""

    terms: str = ""
    carried: tuple[str, ...] = ()


_SIGNALS: contextvars.ContextVar[FollowUpSignals | None] = contextvars.ContextVar("ragnet_follow_up", default=None)


def _cited_ids(citations: Any) -> tuple[str, ...]:
    ids = []
    for c in citations or ():
        cid = c.get("id") if isinstance(c, dict) else c
        if isinstance(cid, str) and cid:
            ids.append(cid)
    return tuple(ids)


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{what} must be text, got {type(value).__name__}", argument="history")
    return value.strip()


def as_turns(history: Iterable[Any] | None) -> list[Turn]:
    """Earlier turns from :class:`Turn` objects, ``{"question", "answer", "citations"}`` dicts
    (``/ask``'s ``history``; ``citations`` as chunk ids or the citation objects ragnet returned)
    or bare question strings, oldest first; turns without a question are skipped.

    Raises:
        InputError: more than :data:`MAX_TURNS` turns, or a turn that is not one of those shapes.
    """
    turns: list[Turn] = []
    for item in list(history or ()):
        if isinstance(item, Turn):
            turn = item
        elif isinstance(item, str):
            turn = Turn(item.strip())
        elif isinstance(item, dict):
            turn = Turn(_text(item.get("question"), "a turn's question"), _text(item.get("answer"), "a turn's answer"),
                        _cited_ids(item.get("citations", item.get("cited"))))
        else:
            raise InputError(f"a turn must be a question or {{question, answer, citations}}, got "
                             f"{type(item).__name__}", argument="history")
        if turn.question:
            turns.append(turn)
    if len(turns) > MAX_TURNS:
        raise InputError(f"{len(turns)} earlier turns, more than the {MAX_TURNS} allowed", argument="history")
    return turns


def history_text(turns: Sequence[Turn]) -> str:
    """The newest :data:`TURNS_SHOWN` turns as the condense step reads them, oldest first; each
    answer cut to :data:`ANSWER_CHARS` characters and without its Sources list."""
    lines = []
    for turn in turns[-TURNS_SHOWN:]:
        lines.append(f"User: {' '.join(turn.question.split())}")
        answer = " ".join(turn.answer.split("\n\nSources:")[0].split())
        if answer:
            lines.append(f"Assistant: {answer[:ANSWER_CHARS]}{'…' if len(answer) > ANSWER_CHARS else ''}")
    return "\n".join(lines)


def signals_search(index: Any, query: str, *, k: int, exclude: Iterable[str] = (), bm25_weight: float = 0.4
                   ) -> list[Chunk]:
    """``index.search`` as a program searches: inside a follow-up (:class:`FollowUp`), the
    conversation's key terms join ``query`` and the carried chunks take the last places of the
    hits (at most one in ten, at least one), never one of ``exclude``."""
    signals = _SIGNALS.get()
    if signals is None:
        return index.search(query, k=k, exclude=exclude, bm25_weight=bm25_weight)
    exclude = set(exclude)
    searched = f"{query} {signals.terms}" if signals.terms else query
    hits = index.search(searched, k=k, exclude=exclude, bm25_weight=bm25_weight)
    have = {h.id for h in hits}
    carried = [cid for cid in signals.carried if cid not in have and cid not in exclude and cid in index]
    carried = carried[:max(1, k // 10)]
    if not carried:
        return hits
    return hits[:max(0, k - len(carried))] + index.get(carried)


def _carried_terms(question: str, turns: Sequence[Turn]) -> str:
    """The earlier questions' key terms (newest first) that ``question`` does not name."""
    have = asked_terms(question)
    terms: list[str] = []
    for turn in reversed(turns[-TURNS_SHOWN:]):
        for term in sorted(asked_terms(turn.question), key=turn.question.casefold().find):
            if term not in have and term not in terms:
                terms.append(term)
    return " ".join(terms)


class FollowUp(dspy.Module):
    """``program`` asked with the conversation before the question (see the module docstring).

    Args:
        program: a ragnet program (``ragnet.RAG(...)``, ``OneShotRAG(index)``, ...).
        condense: whether the condense step rewrites the follow-up (False: the program is asked
            :func:`ragnet.signatures.condense.joined_question`, no LM call).
    """

    def __init__(self, program: Any, *, condense: bool = True) -> None:
        super().__init__()
        self.program = program
        self.condense = CondenseStep(enabled=condense)

    def steps(self) -> dict[str, Any]:
        """The condense step and the program's steps, by name (what ``ragnet optimize --step`` compiles)."""
        return {"condense": self.condense, **self.program.steps()}

    def set_step(self, name: str, step: Any) -> None:
        """Install a compiled copy of step ``name`` (the condense step here, any other in the program)."""
        if name != "condense":
            self.program.set_step(name, step)
            return
        self.condense.install(step)

    @property
    def answer(self) -> Any:
        """The program's answer step (what a streamed answer listens to)."""
        return self.program.answer

    def forward(self, question: str, history: Iterable[Any] | None = None) -> dspy.Prediction:
        turns = as_turns(history)
        if not turns:
            return self.program(question=question)
        question = _text(question, "the question")
        trace = Trace()
        with recording(trace):
            if self.condense.enabled:
                standalone = self.condense(question=question, history=history_text(turns),
                                           previous_question=turns[-1].question).standalone_question
            else:
                standalone = joined_question(question, turns[-1].question)
        index = self.program.index
        carried = turns[-1].cited or tuple(h.id for h in index.search(turns[-1].question, k=CARRIED_HITS))
        signals = FollowUpSignals(_carried_terms(standalone, turns), carried)
        trace.add("follow_up", question=question, standalone=standalone, terms=signals.terms,
                  carried=list(signals.carried))
        token = _SIGNALS.set(signals)
        try:
            pred = self.program(question=standalone)
        finally:
            _SIGNALS.reset(token)
        pred.trace = [*trace.to_list(), *pred.trace]
        pred.standalone_question = standalone
        return pred
