"""Training and validation examples for compilation, built from benchmark questions.

* :func:`qa_examples`: one ``dspy.Example(question -> answers)`` per question, for compiling a
  whole program against an answer or evidence metric.
* :func:`sufficiency_cases`: AssessSufficiency cases built from a question's own context
  paragraphs (no index): all gold paragraphs plus distractors -> ``Sufficient``; all but one
  gold paragraph plus distractors -> ``Refine``. Both kinds show the same number of
  paragraphs, so length gives nothing away, and labels alternate so any list of questions
  gives a balanced set (the counts differ by at most one).
* :func:`crop_cases`: CropChunk cases, one per gold paragraph, labelled with the gold
  sentences of HotpotQA-style ``gold_sentences``.
* :func:`answer_cases`: GenerateAnswer cases from gold sentences and a distractor.
* :func:`rewrite_cases`: follow-up query cases, one per question whose first context (the
  one-shot's, no LM) lacks a gold document, labelled with the missing document's title.
* :func:`condense_cases`: condense step cases from a follow-ups file (:func:`load_followups`),
  labelled with the standalone question.
* :func:`quote_records`: questions over a folder of documents (``ragnet optimize --docs``) in
  the benchmark shape the step cases read: each gold place's quote a paragraph, other
  questions' quotes the distractors.

Everything is deterministic: the same records in the same order and the same seed give the
same cases.

Example:
    >>> from ragnet.eval.run.datasets import QARecord
    >>> ctx = [{"title": t, "text": f"{t} is a thing."} for t in "ABCDE"]
    >>> rec = QARecord(id="q1", question="How are A and B related?", answers=["x"], gold_titles=["A", "B"], context=ctx)
    >>> cases = sufficiency_cases([rec], paragraphs=3, both=True)
    >>> [(c.verdict, sorted(c.present_titles), c.missing_titles) for c in cases]
    [('Sufficient', ['A', 'B'], []), ('Refine', ['A'], ['B'])]
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from ragnet.errors import InputError
from ragnet.signatures.formatting import format_chunks

__all__ = ["FollowUpRecord", "answer_cases", "condense_cases", "crop_cases", "load_followups", "qa_examples",
           "quote_records", "rewrite_cases", "sufficiency_cases"]


def qa_examples(records: Iterable[Any]) -> list[dspy.Example]:
    """One ``dspy.Example`` per benchmark question; the program's input is ``question``.

    Example:
        >>> from ragnet.eval.run.datasets import QARecord
        >>> ex = qa_examples([QARecord(id="q1", question="Who?", answers=["A"])])[0]
        >>> ex.inputs().toDict(), ex.answers
        ({'question': 'Who?'}, ['A'])
    """
    return [
        dspy.Example(id=r.id, question=r.question, answers=list(r.answers), gold_titles=list(r.gold_titles or []),
                     gold_passage_ids=list(getattr(r, "gold_passage_ids", None) or []),
                     gold_sentences=r.gold_sentences).with_inputs("question")
        for r in records
    ]


def _text(para: dict[str, Any]) -> str:
    return str(para.get("text") or "".join(para.get("sentences") or "")).strip()


def _words(para: dict[str, Any]) -> int:
    return len(_text(para).split())


def sufficiency_cases(
    records: Iterable[Any],
    *,
    paragraphs: int = 4,
    seed: int = 0,
    max_words: int = 200,
    both: bool = False,
) -> list[dspy.Example]:
    """Balanced AssessSufficiency cases from questions with context paragraphs (see module docstring).

    Args:
        records: ``QARecord``s (or objects with ``id``, ``question``, ``gold_titles``, ``context``).
            Labels alternate over the records that yield a case, in the order given.
        paragraphs: paragraphs shown per case (gold + distractors), at least ``len(gold) + 1``.
        seed: seeds which distractors are shown, which gold paragraph a Refine case drops and the
            paragraph order.
        max_words: questions whose gold paragraphs are longer are skipped and longer distractors
            are not used (keeps prompts short for small local models).
        both: build a Sufficient and a Refine case from every question instead of one.

    Returns:
        ``dspy.Example``s with inputs ``question`` and ``context`` (chunks rendered as programs
        render them, ``[c1] Title: text``), labels ``verdict``, ``confidence`` (1.0) and
        ``missing``, plus ``id``, ``qid``, ``gold_titles``, ``present_titles``, ``missing_titles``.

    Raises:
        InputError: ``paragraphs`` is too small, or no record has context paragraphs with its
            gold titles (e.g. a pooled-corpus set).
    """
    if isinstance(paragraphs, bool) or not isinstance(paragraphs, int) or paragraphs < 3:
        raise InputError(f"must be an integer >= 3, got {paragraphs!r}", argument="paragraphs")
    cases: list[dspy.Example] = []
    built = 0
    seen = 0
    for rec in records:
        seen += 1
        made = _sufficiency_pair(rec, paragraphs=paragraphs, seed=seed, max_words=max_words)
        if made is None:
            continue
        sufficient, refine = made
        if both:
            cases.extend([sufficient, refine])
        else:
            cases.append(sufficient if built % 2 == 0 else refine)
        built += 1
    if seen and not cases:
        raise InputError(
            "no question yields a sufficiency case: the data needs per-question context paragraphs that include "
            "the gold titles (e.g. hotpotqa_dev_distractor or 2wikimultihopqa_dev), with gold paragraphs of at "
            f"most {max_words} words and enough distractors for {paragraphs} paragraphs", argument="data")
    return cases


def _sufficiency_pair(rec: Any, *, paragraphs: int, seed: int, max_words: int) -> tuple[dspy.Example, dspy.Example] | None:
    context = list(getattr(rec, "context", None) or [])
    gold_titles = list(dict.fromkeys(str(t) for t in (getattr(rec, "gold_titles", None) or [])))
    by_title: dict[str, dict[str, Any]] = {}
    for para in context:
        by_title.setdefault(str(para.get("title", "")), para)
    if len(gold_titles) < 2 or any(t not in by_title for t in gold_titles):
        return None  # one-paragraph questions cannot be made partial; missing gold cannot be labelled
    if len(gold_titles) + 1 > paragraphs:
        return None
    golds = [by_title[t] for t in gold_titles]
    if any(_words(p) > max_words or not _text(p) for p in golds):
        return None
    distractors = [p for t, p in by_title.items() if t not in gold_titles and _text(p) and _words(p) <= max_words]
    n_distract = paragraphs - len(golds) + 1  # what a Refine case needs
    if len(distractors) < n_distract:
        return None
    rng = random.Random(f"ragnet-sufficiency:{seed}:{rec.id}")
    chosen = rng.sample(distractors, n_distract)
    dropped = rng.randrange(len(golds))
    missing_title = gold_titles[dropped]
    kept_golds = [p for i, p in enumerate(golds) if i != dropped]

    def make(label: str, paras: list[dict[str, Any]], missing: list[str]) -> dspy.Example:
        order = list(paras)
        random.Random(f"ragnet-sufficiency-order:{seed}:{rec.id}:{label}").shuffle(order)
        text, _ = format_chunks([{"id": f"p{i}", "title": p.get("title", ""), "text": _text(p)}
                                 for i, p in enumerate(order)])
        return dspy.Example(
            id=f"{rec.id}:{label[0]}",
            qid=str(rec.id),
            question=str(rec.question),
            context=text,
            verdict=label,
            confidence=1.0,
            missing=f"information about {missing[0]}" if missing else "",
            gold_titles=gold_titles,
            present_titles=[str(p.get("title", "")) for p in order if str(p.get("title", "")) in gold_titles],
            missing_titles=missing,
        ).with_inputs("question", "context")

    sufficient = make("Sufficient", golds + chosen[: paragraphs - len(golds)], [])
    refine = make("Refine", kept_golds + chosen, [missing_title])
    return sufficient, refine


def crop_cases(
    records: Iterable[Any],
    *,
    max_words: int = 250,
    min_sentences: int = 2,
) -> list[dspy.Example]:
    """CropChunk cases: one per gold paragraph with sentence-level gold labels.

    A paragraph is used when it has at least ``min_sentences`` sentences, at most ``max_words``
    words, at least one valid gold sentence index and at least one non-gold sentence (otherwise
    there is nothing to crop).

    Returns:
        ``dspy.Example``s with inputs ``question``, ``title``, ``chunk`` (the paragraph text),
        label ``relevant_text`` (the gold sentences), plus ``id``, ``qid``, ``sentences`` and
        ``gold_idx``.

    Raises:
        InputError: no record has sentence-level gold (``gold_sentences`` and paragraphs with
            ``sentences``).
    """
    cases: list[dspy.Example] = []
    seen = 0
    for rec in records:
        seen += 1
        gold: dict[str, set[int]] = {}
        for item in getattr(rec, "gold_sentences", None) or []:
            if isinstance(item, Sequence) and len(item) == 2 and isinstance(item[1], int):
                gold.setdefault(str(item[0]), set()).add(int(item[1]))
        for para in getattr(rec, "context", None) or []:
            title = str(para.get("title", ""))
            sentences = [str(s) for s in (para.get("sentences") or [])]
            idx = sorted(i for i in gold.get(title, ()) if 0 <= i < len(sentences) and sentences[i].strip())
            if not idx or len(sentences) < min_sentences or len(idx) == len(sentences):
                continue
            chunk = "".join(sentences).strip()
            if len(chunk.split()) > max_words:
                continue
            cases.append(dspy.Example(
                id=f"{rec.id}:{title}",
                qid=str(rec.id),
                question=str(rec.question),
                title=title,
                chunk=chunk,
                sentences=sentences,
                gold_idx=idx,
                relevant_text=" ".join(sentences[i].strip() for i in idx),
            ).with_inputs("question", "title", "chunk"))
    if seen and not cases:
        raise InputError(
            "no question yields a crop case: the data needs sentence-level gold (gold_sentences with "
            "[title, sentence index]) and context paragraphs with 'sentences' (e.g. hotpotqa_dev_distractor)",
            argument="data")
    return cases


def answer_cases(
    records: Iterable[Any],
    *,
    distractors: int = 1,
    seed: int = 0,
    max_words: int = 60,
) -> list[dspy.Example]:
    """GenerateAnswer cases: a question, a short context built from its gold supporting
    sentences plus a distractor sentence, and the gold answers.

    The context looks like what sentence selection hands the reader (``[c1] Title: sentence …``
    blocks) but stays short, so a compiled demo costs few prompt tokens: the point of compiling
    the answer step on a small model is to teach it the short-answer form, not the evidence.
    Every demo goes into every answer prompt, and the answer prompt is the reader's budget, so
    the defaults keep a demo compact (more distractors and words make each demo cost more).
    Distractors are lead sentences of the question's non-gold paragraphs. Block order is
    shuffled with ``seed``.

    Returns:
        ``dspy.Example``s with inputs ``question`` and ``context``, labels ``answer`` (the first
        gold answer, what a labelled demo shows) and ``evidence_ids`` (the short ids of the gold
        blocks), and ``answers`` (plus ``id``, ``gold_titles``) for the answer metrics.

    Raises:
        InputError: no record has sentence-level gold.

    Example:
        >>> from ragnet.eval.run.datasets import QARecord
        >>> ctx = [{"title": "Paris", "sentences": ["Paris is in France.", " It is big."]},
        ...        {"title": "Rome", "sentences": ["Rome is in Italy."]}]
        >>> rec = QARecord(id="q", question="Where is Paris?", answers=["France"], gold_titles=["Paris"],
        ...                gold_sentences=[["Paris", 0]], context=ctx)
        >>> case = answer_cases([rec], distractors=1)[0]
        >>> print(case.context)
        [c1] Paris: Paris is in France.
        <BLANKLINE>
        [c2] Rome: Rome is in Italy.
        >>> case.answers, case.evidence_ids
        (['France'], ['c1'])
    """
    rng = random.Random(seed)
    cases: list[dspy.Example] = []
    seen = 0
    for rec in records:
        seen += 1
        paragraphs = {str(p.get("title", "")): p for p in getattr(rec, "context", None) or []}
        gold: dict[str, list[int]] = {}
        for item in getattr(rec, "gold_sentences", None) or []:
            if isinstance(item, Sequence) and len(item) == 2 and isinstance(item[1], int):
                gold.setdefault(str(item[0]), []).append(int(item[1]))
        blocks = []
        for title, idx in gold.items():
            sentences = [str(s).strip() for s in (paragraphs.get(title) or {}).get("sentences") or []]
            kept = [sentences[i] for i in sorted(set(idx)) if 0 <= i < len(sentences) and sentences[i]]
            if kept:
                blocks.append({"id": title, "title": title, "text": " … ".join(kept)})
        if not blocks or sum(len(b["text"].split()) for b in blocks) > max_words:
            continue
        others = [t for t in paragraphs if t not in gold]
        for title in rng.sample(others, min(distractors, len(others))):
            lead = next((str(s).strip() for s in paragraphs[title].get("sentences") or [] if str(s).strip()), "")
            if lead:
                blocks.append({"id": title, "title": title, "text": lead})
        rng.shuffle(blocks)
        context, id_map = format_chunks(blocks)
        # `answer` (the first gold answer) makes a labelled demo show the short form to copy, and
        # `evidence_ids` (the gold blocks) makes it complete: a demo missing an output field is
        # shown as "Not supplied for this particular example", which a small reader copied into
        # its own evidence ids while bootstrapping.
        cases.append(dspy.Example(id=str(rec.id), question=str(rec.question), context=context,
                                  answer=str(rec.answers[0]) if rec.answers else "",
                                  evidence_ids=[short for short, title in id_map.items() if title in gold],
                                  answers=list(rec.answers), gold_titles=list(rec.gold_titles or []))
                     .with_inputs("question", "context"))
    if seen and not cases:
        raise InputError("no question yields an answer case: the data needs gold_sentences and context paragraphs "
                         "with 'sentences' (e.g. hotpotqa_dev_distractor)", argument="data")
    return cases


def rewrite_cases(
    records: Iterable[Any],
    *,
    index: Any,
    budget: int = 1000,
    k: int = 5,
    seed: int = 0,
) -> list[dspy.Example]:
    """Follow-up query cases for the rewrite step, measured as ``ragnet eval hops`` measures them.

    For each question, the first context is what ``oneshot:sentences`` at ``budget`` answers from
    (:func:`ragnet.eval.recall.hop_recall.first_context`, no LM). A question whose first context holds every
    gold document needs no hop and yields no case. The others become cases with the rewrite
    step's inputs (``question``, ``context`` as the agents show it, ``previous_queries`` = the
    question, ``n`` = 1) and a label: the title of a missing gold document, preferring one the
    context names (the bridge entity a demo should teach the step to pick out), as ``entity`` and
    ``query`` (the one-query form) and as ``queries`` (the sampled form). ``missing`` (gold key ->
    chunk ids) and ``exclude`` (the first context's chunk ids) let :func:`ragnet.optimize.step_metrics.hop_metric`
    score a query by a real search.

    Raises:
        InputError: no question needs a hop (or none has gold documents in ``index``).
    """
    from ragnet.eval.metrics.gold_evidence import gold_chunks
    from ragnet.eval.recall.hop_recall import first_context, missing_gold
    from ragnet.signatures import format_context

    del seed  # the cases are a function of the questions and the index alone; kept for the case-builder API
    cases: list[dspy.Example] = []
    seen = 0
    for rec in records:
        seen += 1
        context = first_context(index, rec.question, budget, k=k)
        missing = missing_gold(gold_chunks(rec, index), context)
        if not missing:
            continue
        shown = format_context(context)[0]
        titles = [index.chunk(min(ids)).title or key for key, ids in missing.items()]
        label = next((t for t in titles if t and t.casefold() in shown.casefold()), titles[0])
        cases.append(dspy.Example(id=str(rec.id), question=str(rec.question), context=shown,
                                  previous_queries=[str(rec.question)], n=1, entity=label, query=label,
                                  queries=[{"query": label, "probability": 1.0}], named=label.casefold() in shown.casefold(),
                                  missing={key: sorted(ids) for key, ids in missing.items()},
                                  exclude=[c.id for c in context])
                     .with_inputs("question", "context", "previous_queries", "n"))
    if seen and not cases:
        raise InputError("no question yields a rewrite case: every first context already holds the gold documents, "
                         "or the index holds none of them", argument="data")
    return cases


def quote_records(questions: Sequence[Any], *, distractors: int = 3, seed: int = 0) -> list[Any]:
    """Questions over a folder of documents (:class:`ragnet.eval.run.doc_questions.DocQuestion`)
    with the fields the step cases read, built from their gold quotes: ``context`` holds one
    paragraph per gold place with a quote (titled by the place, ``file › section, p. N``, as a
    citation names it) and ``distractors`` quotes of other questions' places (seeded);
    ``gold_sentences`` and ``gold_titles`` name the question's own. A question whose places
    quote nothing is left out: there is no evidence to show.

    Example:
        >>> from ragnet.eval.run.doc_questions import DocQuestion, GoldPlace
        >>> qs = [DocQuestion(id="a", question="Default depth?", answers=["3000"],
        ...                   places=(GoldPlace("x.html", section=("Options",), quote="The default is 3000."),)),
        ...       DocQuestion(id="b", question="Which flag?", answers=["-v"],
        ...                   places=(GoldPlace("y.pdf", page=2, quote="Use -v to see more."),))]
        >>> rec = quote_records(qs, distractors=1)[0]
        >>> [p["title"] for p in rec.context], rec.gold_sentences, rec.gold_titles
        (['x.html › Options', 'y.pdf, p. 2'], [['x.html › Options', 0]], ['x.html › Options'])
        >>> print(answer_cases(quote_records(qs, distractors=1))[1].context)
        [c1] y.pdf, p. 2: Use -v to see more.
        <BLANKLINE>
        [c2] x.html › Options: The default is 3000.
    """
    import dataclasses

    rng = random.Random(seed)
    quoted = [(q, {p.key(): p.quote.strip() for p in q.places if p.quote.strip()}) for q in questions]
    everywhere = sorted({(key, text) for _, own in quoted for key, text in own.items()})
    out = []
    for question, own in quoted:
        if not own:
            continue
        others = [(key, text) for key, text in everywhere if key not in own]
        picked = rng.sample(others, min(distractors, len(others)))
        context = [{"title": key, "sentences": [text]} for key, text in [*own.items(), *picked]]
        out.append(dataclasses.replace(question, context=context, gold_sentences=[[key, 0] for key in own],
                                       gold_titles=list(own)))
    return out


@dataclass(frozen=True)
class FollowUpRecord:
    """One conversation of a follow-ups file (``benchmarks/realdocs/followups.jsonl``): the
    follow-up ``question``, the earlier turns ``history`` (``{"question", "answer"?}``, oldest
    first) and the ``standalone_question`` a perfect rewrite would ask."""

    id: str
    question: str
    history: tuple[dict[str, Any], ...]
    standalone_question: str


def load_followups(path: str | Path) -> list[FollowUpRecord]:
    """The conversations of a follow-ups file (JSON lines with ``id``, ``question``, ``history``
    and ``standalone_question``).

    Raises:
        InputError: a missing or empty file, or a line that is not such an object (naming its line).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("no such follow-ups file", path=path, argument="data")
    records: list[FollowUpRecord] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            history = tuple(dict(turn) for turn in row["history"])
            record = FollowUpRecord(str(row["id"]), str(row["question"]), history, str(row["standalone_question"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"line {number} is not a follow-up (id, question, history, standalone_question): "
                             f"{type(exc).__name__}: {exc}", path=path) from None
        if not record.question.strip() or not history or not record.standalone_question.strip():
            raise InputError(f"line {number}: a follow-up needs a question, a history and a standalone_question",
                             path=path)
        records.append(record)
    if not records:
        raise InputError("no follow-ups in the file", path=path, argument="data")
    return records


def condense_cases(records: Iterable[FollowUpRecord], **_: Any) -> list[dspy.Example]:
    """Cases for the condense step: its inputs as :class:`ragnet.programs.conversation.FollowUp`
    builds them (the history's text and the follow-up), labelled with the standalone question."""
    from ragnet.programs.conversation import as_turns, history_text

    cases = []
    for rec in records:
        turns = as_turns(rec.history)
        cases.append(dspy.Example(id=rec.id, question=rec.question, history=history_text(turns),
                                  standalone_question=rec.standalone_question)
                     .with_inputs("question", "history"))
    return cases
