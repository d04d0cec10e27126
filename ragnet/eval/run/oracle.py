"""The ``oracle`` strategy of ``ragnet eval``: the reader given only a question's gold evidence.

Beside ``basic`` and ``oneshot:sentences``, the oracle row is the ceiling that splits the gap
to a perfect score in two: what the oracle still gets wrong is the reader's, and what a
strategy loses against the oracle is its retrieval's. It needs each question's gold labels, so
it is an evaluation tool rather than a strategy a user would ``ragnet ask`` with; it lives here,
and :class:`~ragnet.eval.run.qa_evaluator.QAEvaluator` builds it with the questions it evaluates.

The gold context of a question (:func:`gold_context`), one ``[cN] Title: text`` block per gold
document as the one-shot shows its selected sentences:

``passages``
    a question over a folder of documents (:mod:`ragnet.eval.run.doc_questions`) whose gold places
    quote their words: each quote, under the title and with the id and location of the index
    chunk that holds it (the chunk of its file, and page or section, whose text contains it).
``sentences``
    the gold supporting sentences (``gold_sentences``: ``[title, sentence index]``), read from
    the sentence lists of the question's own paragraphs (the dataset's split), or, for a
    pooled-corpus set whose questions carry no paragraphs (2Wiki pooled), from ragnet's sentence
    split of the gold document as the index holds it. Non-adjacent sentences of
    one document are joined with the one-shot's gap mark. Each block keeps the id of the index
    chunk that holds it, so gold recall is scored as for every other strategy.
``documents``
    where a question has no sentence-level gold, or one of its gold sentences cannot be found:
    its gold documents (``gold_passage_ids``, else ``gold_titles``; as
    :func:`ragnet.eval.metrics.gold_evidence.gold_chunks` finds them) whole, the first chunk of every
    document before the second of any.
``none``
    no gold evidence at all: the question gets an empty answer without an LM call (it counts as
    wrong, so every column of a report covers the same questions), and the trace says why.

Either context is filled into the same answer-prompt budget as the budgeted strategies, in gold
order (rank-order filling), and answered by one call of the same :class:`ragnet.AnswerStep`,
composed from the spec's answer presets and ``--answer-lm`` exactly as for the other strategies.

Example:
    >>> import tempfile, dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet import Document, Index
    >>> from ragnet.eval.run.datasets import QARecord
    >>> paras = {"Rome": ["Rome is the capital of Italy.", "It has the Colosseum."],
    ...          "Oslo": ["Oslo is the capital of Norway."]}
    >>> index = Index.build([Document(id=t, title=t, text=" ".join(s)) for t, s in paras.items()],
    ...                     tempfile.mkdtemp() + "/i", show_progress=False)
    >>> q = QARecord(id="q", question="What is the capital of Italy?", answers=["Rome"], gold_titles=["Rome"],
    ...              gold_sentences=[["Rome", 0]], context=[{"title": t, "sentences": s} for t, s in paras.items()])
    >>> with dspy.context(lm=DummyLM([{"answer": "Rome", "evidence_ids": ["c1"]}])):
    ...     pred = OracleRAG(index, [q], budget=1000)(question=q.question)
    >>> pred.answer, pred.oracle, pred.passages[0]["text"]
    ('Rome', 'sentences', 'Rome is the capital of Italy.')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragnet._text import normalize_text
from ragnet.corpus.sentence_split import split_sentences
from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.eval.metrics.gold_evidence import document_chunk_ids, gold_chunks, gold_sentences
from ragnet.eval.run.records import get_field
from ragnet.programs.base import RAGProgram, RunResult
from ragnet.programs.citations import showing
from ragnet.programs.options import check_positive_int
from ragnet.programs.packing import pack
from ragnet.programs.sentence_packing import join_sentences
from ragnet.programs.trace import Trace
from ragnet.signatures import AnswerStep

__all__ = ["MODES", "ORACLE", "GoldContext", "OracleRAG", "build_oracle", "gold_context", "is_oracle",
           "oracle_layout", "parse_oracle_spec"]

#: The strategy name ``ragnet eval --strategies`` knows the oracle by.
ORACLE = "oracle"
#: What an oracle row's context was built from, best first.
MODES = ("passages", "sentences", "documents", "none")


# --------------------------------------------------------------------------- the gold context


@dataclass
class GoldContext:
    """A question's gold context: ``mode`` (one of :data:`MODES`), the ``chunks`` to show the
    reader (gold order), and ``detail``, what the ``oracle`` trace event records (the sentences
    with where their text came from, the documents, and why a mode was not used)."""

    mode: str
    chunks: list[Chunk]
    detail: dict[str, Any] = field(default_factory=dict)


def _chunks_of(index: Any, key: str) -> list[Chunk]:
    """The index chunks of the document ``key`` names, in document order."""
    return sorted(index.get(document_chunk_ids(index, key)), key=lambda c: c.position)


def _gold_pairs(record: Any) -> list[tuple[str, int]]:
    """The record's well-formed ``[title, sentence index]`` pairs, repeats dropped."""
    out: dict[tuple[str, int], None] = {}
    for item in get_field(record, "gold_sentences", None) or []:
        if (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[1], int)
                and not isinstance(item[1], bool) and item[1] >= 0):
            out[(str(item[0]), int(item[1]))] = None
    return list(out)


#: Shortest overlap taken as a chunk window's repeat of its predecessor's end (shorter matches are chance).
_MIN_OVERLAP = 20


def _join_windows(texts: Sequence[str]) -> str:
    """A document's text from its chunks, in order: each window is an exact substring of the
    document that starts inside the previous one (``ragnet.corpus.chunking``), so the longest end
    of the text so far that the next window starts with is its overlap, taken once; a window
    that repeats none of it is joined with a space.

    Example:
        >>> _join_windows(["Rome is old. It has the Colosseum and many", "the Colosseum and many churches."])
        'Rome is old. It has the Colosseum and many churches.'
    """
    out = texts[0] if texts else ""
    for text in texts[1:]:
        head, start = text[:_MIN_OVERLAP], max(0, len(out) - len(text))
        pos = out.find(head, start) if len(head) == _MIN_OVERLAP else -1
        while pos != -1 and not text.startswith(out[pos:]):
            pos = out.find(head, pos + 1)
        out = out[:pos] + text if pos != -1 else f"{out} {text}"
    return out


def _split_document(index: Any, title: str) -> list[str] | None:
    """Sentences of the document ``title`` as the index holds it (its chunks joined back into
    its text, then ragnet's sentence split); None when the index has no such document, or its
    chunks do not start at the document's start."""
    chunks = _chunks_of(index, title)
    if not chunks or chunks[0].position != 0 or len({c.doc_id for c in chunks}) != 1:
        return None
    return split_sentences(_join_windows([c.text for c in chunks]))


def _sentences(record: Any, index: Any) -> tuple[list[tuple[str, int, str, str]], list[str]]:
    """Each gold sentence as ``(title, index, text, source)``, and why any could not be read."""
    from_dataset = {(str(t), i): text for t, i, text in gold_sentences(record)}
    listed = {str(p.get("title")) for p in get_field(record, "context", None) or []
              if isinstance(p, dict) and isinstance(p.get("sentences"), list)}
    found, missing = [], []
    for title, i in _gold_pairs(record):
        if (title, i) in from_dataset:
            found.append((title, i, from_dataset[(title, i)], "dataset"))
        elif title in listed:
            missing.append(f"{title!r} has no sentence {i} in the question's paragraphs")
        else:
            split = _split_document(index, title)
            if split is None:
                missing.append(f"{title!r} is neither among the question's paragraphs nor a document of the index")
            elif i < len(split):
                found.append((title, i, split[i], "split"))
            else:
                missing.append(f"{title!r} has {len(split)} sentences in the index, no sentence {i}")
    return found, missing


def _sentence_chunks(found: Sequence[tuple[str, int, str, str]], index: Any) -> tuple[list[Chunk], list[dict]]:
    """One chunk per index chunk holding gold sentences (gold order), holding only those
    sentences; and the trace's record of each sentence."""
    groups: dict[str, tuple[Chunk, list[tuple[int, str]]]] = {}
    record = []
    for title, i, text, source in found:
        chunks = _chunks_of(index, title)
        base = next((c for c in chunks if normalize_text(text) in normalize_text(c.text)), chunks[0] if chunks else None)
        if base is None:  # the gold document is not in this index: shown all the same, under its title
            base = Chunk(id=f"{title}#0", doc_id=title, title=title, text="", tokens=0)
        groups.setdefault(base.id, (base, []))[1].append((i, text))
        record.append({"title": title, "index": i, "id": base.id, "from": source})
    out = []
    for base, sentences in groups.values():
        positions, texts = zip(*sorted(dict(sentences).items()))
        text = join_sentences(texts, positions)
        out.append(showing(base, text, count_tokens(text), texts))
    return out, record


def _document_chunks(record: Any, index: Any) -> tuple[list[Chunk], list[str]]:
    """The gold documents' chunks, the first of every document before the second of any; and
    the gold keys found. A gold document absent from the index is read from the question's own
    paragraph of that id or title, when it has one."""
    from ragnet.eval.run.datasets import paragraph_text

    paragraphs = [p for p in get_field(record, "context", None) or [] if isinstance(p, dict)]
    docs: list[list[Chunk]] = []
    keys = []
    for key, ids in gold_chunks(record, index).items():
        chunks = sorted(index.get(ids), key=lambda c: c.position) if ids else []
        if not chunks:
            para = next((p for p in paragraphs if str(p.get("id", p.get("title"))) == key
                         or str(p.get("title")) == key), None)
            text = paragraph_text(para).strip() if para else ""
            if text:
                title = str(para["title"])
                chunks = [Chunk(id=f"{key}#0", doc_id=key, title=title, text=text, tokens=count_tokens(text))]
        if chunks:
            docs.append(chunks)
            keys.append(key)
    longest = max((len(d) for d in docs), default=0)
    return [d[j] for j in range(longest) for d in docs if j < len(d)], keys


def _passage_chunks(record: Any, index: Any) -> tuple[list[Chunk], list[dict]]:
    """The quotes of a document question's gold places, each in the index chunk that holds it
    (see the module docstring), and the trace's record of each: its file and the chunk found."""
    from ragnet.eval.run.doc_questions import at_place

    chunks, record_out = [], []
    for place in getattr(record, "places", ()) or ():
        quote = " ".join(place.quote.split())
        if not quote:
            continue
        base = None
        for chunk in index.chunks:
            if at_place(chunk.metadata.get("location"), place) and normalize_text(quote) in normalize_text(chunk.text):
                base = chunk
                break
        if base is None:
            base = Chunk(id=f"{place.file}#gold", doc_id=place.file, title=place.file, text="", tokens=0,
                         metadata={"location": {"file": place.file, **({"page": place.page} if place.page else {})}})
        chunks.append(showing(base, quote, count_tokens(quote), [quote]))
        record_out.append({"file": place.file, "role": place.role, "id": base.id})
    return chunks, record_out


def gold_context(record: Any, index: Any) -> GoldContext:
    """The context the oracle shows the reader for ``record`` (see the module docstring): its
    gold sentences, else its gold documents, else nothing.

    Args:
        record: a ``QARecord`` (or a ``dspy.Example`` or dict with the same gold fields).
        index: the index the question is evaluated over (its chunk ids name the evidence).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> from ragnet.corpus.types import Chunk
        >>> chunks = {"Rome#0": Chunk(id="Rome#0", doc_id="Rome", title="Rome", text="Rome is in Italy. It is old.", tokens=8)}
        >>> index = NS(chunks=list(chunks.values()), get=lambda ids: [chunks[i] for i in ids])
        >>> rec = {"gold_titles": ["Rome"], "gold_sentences": [["Rome", 1]]}
        >>> ctx = gold_context(rec, index)
        >>> ctx.mode, [c.text for c in ctx.chunks], ctx.detail["sentences"][0]["from"]
        ('sentences', ['It is old.'], 'split')
        >>> gold_context({"gold_titles": ["Rome"]}, index).mode, gold_context({"gold_titles": ["Oslo"]}, index).mode
        ('documents', 'none')
    """
    detail: dict[str, Any] = {}
    passages, found_in = _passage_chunks(record, index)
    if passages:
        return GoldContext("passages", passages, {"passages": found_in})
    found, missing = _sentences(record, index)
    if found and not missing:
        chunks, sentences = _sentence_chunks(found, index)
        return GoldContext("sentences", chunks, {"sentences": sentences})
    if missing:
        detail["sentences_missing"] = missing
    elif not _gold_pairs(record):
        detail["no_sentences"] = "the question has no sentence-level gold (gold_sentences)"
    chunks, keys = _document_chunks(record, index)
    if chunks:
        return GoldContext("documents", chunks, {**detail, "documents": keys})
    gold = list(gold_chunks(record))
    detail["no_documents"] = (f"none of its gold documents ({', '.join(gold)}) is in the index or its paragraphs"
                              if gold else "the question names no gold documents (gold_titles, gold_passage_ids)")
    return GoldContext("none", [], detail)


# --------------------------------------------------------------------------- the program


def _question_key(question: Any) -> str:
    return " ".join(str(question).split())


def _gold_fields(record: Any) -> tuple:
    return (repr(get_field(record, "gold_sentences", None)), tuple(get_field(record, "gold_titles", None) or ()),
            tuple(get_field(record, "gold_passage_ids", None) or ()))


class OracleRAG(RAGProgram):
    """The reader given only each question's gold evidence (see the module docstring).

    A ``dspy.Module`` like every ragnet program, so ``dspy.Evaluate`` runs it; the gold comes
    with it: each question it is asked is looked up among ``gold`` by its text.

    Args:
        index: the ``ragnet.Index`` the questions are evaluated over (for the gold documents'
            text and the chunk ids that score gold recall; it is never searched).
        gold: the questions with their gold labels (``QARecord``\\ s, ``dspy.Example``\\ s or
            dicts with ``question`` and ``gold_sentences`` / ``gold_titles`` /
            ``gold_passage_ids``, and ``context`` paragraphs where the set has them).
        budget: total tokens of the answer prompt, as for ``OneShotRAG``; gold evidence beyond
            it is left out (the trace names it).
        retries, answer: as in :class:`ragnet.programs.RAGProgram`. Where the answer step
            leaves the question's place open, the oracle shows it "auto", as the one-shot does.

    Raises:
        InputError: (when called) a question that is not among ``gold``, or that several
            questions of ``gold`` with different gold labels read.
    """

    default_question_at = "auto"
    #: Prediction fields ``ragnet eval`` copies into each row.
    row_fields: ClassVar[tuple[str, ...]] = ("oracle",)

    def __init__(self, index: Any, gold: Iterable[Any], budget: int = 4000, *, retries: int = 1,
                 answer: AnswerStep | None = None) -> None:
        super().__init__(index, retries=retries, answer=answer)
        self.budget = check_positive_int(budget, "budget")
        self._gold: dict[str, Any] = {}
        self._ambiguous: set[str] = set()
        for record in gold if gold is not None else ():
            key = _question_key(get_field(record, "question", ""))
            if not key:
                raise InputError("every gold record needs its question text", argument="gold")
            if key in self._gold and _gold_fields(self._gold[key]) != _gold_fields(record):
                self._ambiguous.add(key)
            self._gold.setdefault(key, record)
        if not self._gold:
            raise InputError("the oracle needs the questions' gold labels; none were given", argument="gold")

    def _record(self, question: str) -> Any:
        key = _question_key(question)
        if key in self._ambiguous:
            raise InputError(f"several gold records with different gold labels read {question!r}; "
                             "give OracleRAG one of them", argument="question")
        if key not in self._gold:
            raise InputError(f"no gold labels for {question!r}: the oracle answers only the questions it was "
                             "given (gold=...)", argument="question")
        return self._gold[key]

    def _run(self, question: str, trace: Trace) -> RunResult:
        gold = gold_context(self._record(question), self.index)
        if gold.mode == "none":
            trace.add("oracle", mode="none", **gold.detail)
            return RunResult(answer="", evidence=[], context=[], extra={"oracle": "none"})
        budget = self._answer_budget(question, self.budget)
        result = pack(gold.chunks, [0.0] * len(gold.chunks), budget, method="rank")
        kept = {c.id for c in result.chunks}
        left_out = [c.id for c in gold.chunks if c.id not in kept]
        trace.add("oracle", mode=gold.mode, **gold.detail, **({"over_budget": left_out} if left_out else {}))
        trace.add("select", kept=[c.id for c in result.chunks], candidates=result.candidates,
                  tokens=result.prompt_tokens, budget=self.budget, method="oracle")
        answer, evidence = self._answer(question, result.chunks, trace)
        return RunResult(answer=answer, evidence=evidence, context=result.chunks, extra={"oracle": gold.mode})


# --------------------------------------------------------------------------- specs


def is_oracle(spec: str) -> bool:
    """Whether ``spec`` names the oracle (``"oracle"``, ``"oracle:qlast"``, ...).

    Example:
        >>> is_oracle("oracle:qlast+cot"), is_oracle("oneshot:sentences")
        (True, False)
    """
    return str(spec).strip().partition(":")[0].strip() == ORACLE


def parse_oracle_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"oracle[:preset+preset]"`` to the strategy name and the answer-step options its presets
    set (the oracle takes the answer presets only: it has no retrieval to switch).

    Example:
        >>> parse_oracle_spec("oracle:qlast+cot")
        ('oracle', {'question_at': 'last', 'reasoning': True})
    """
    from ragnet.programs.registry import ANSWER_PRESETS, _merge

    name, _, tail = str(spec).strip().partition(":")
    if name.strip() != ORACLE:
        raise InputError(f"{spec!r} is not an oracle spec", argument="strategy")
    presets = tuple(p.strip() for p in tail.split("+")) if tail.strip() else ()
    for preset in presets:
        if preset not in ANSWER_PRESETS:
            raise InputError(f"unknown preset {preset!r} in {spec!r}; the oracle takes the answer presets only: "
                             f"{', '.join(ANSWER_PRESETS)} (combine them with '+')", argument="strategy")
    return ORACLE, _merge(spec, ORACLE, presets)[1]  # the registry's own merge: conflicting presets refused alike


def _answer_step(spec: str, reader: Any, answer: Any) -> AnswerStep:
    from ragnet.programs import registry

    # composed by the registry's own rule, so `oracle+qlast` and --answer-lm mean what they mean elsewhere
    return registry._answer_step(spec, parse_oracle_spec(spec)[1], reader, answer)


def build_oracle(spec: str, index: Any, gold: Iterable[Any], *, budget: int | None = None, reader: Any = None,
                 **overrides: Any) -> OracleRAG:
    """An :class:`OracleRAG` from a spec, as ``ragnet.programs.registry.build_program`` builds
    the other strategies: ``reader`` answers (None: the configured LM), the spec's answer presets
    set the answer step's options, ``budget`` the prompt budget, ``overrides`` the rest
    (``answer=AnswerStep(...)`` replaces the composed step).

    Example:
        >>> build_oracle("oracle:qlast", index, [{"question": "Capital of Italy?", "gold_titles": ["Rome"]}],
        ...              budget=1000).answer.question_at
        'last'
    """
    answer = _answer_step(spec, reader, overrides.pop("answer", None))
    if budget is not None:
        overrides["budget"] = budget
    try:
        return OracleRAG(index, gold, answer=answer, **overrides)
    except TypeError as exc:  # an override the oracle does not take
        raise InputError(f"{spec}: {exc}", argument="strategy") from None


def oracle_layout(spec: str, **overrides: Any) -> dict[str, Any]:
    """How the oracle's answer prompt is laid out (``ragnet.programs.registry.answer_layout``
    for the oracle).

    Example:
        >>> oracle_layout("oracle:qlast")
        {'question_at': 'last', 'reasoning': False, 'evidence_order': 'auto'}
    """
    answer = _answer_step(spec, None, overrides.get("answer"))
    return answer.prompt_layout(OracleRAG.default_question_at)
