"""Retrieval laziness: does the agent still search again when its context is long?

The iterative study ("cast a small net many times") reports that the follow-up search rate of
its agent fell from 95% with 3k tokens of context to 90% at 6k, 50% at 9k and 25% at 12k, and
motivates ``chunk_delete`` with it. This module reproduces that experiment on benchmark
questions with gold evidence, for ragnet's agent decision, the ``AssessSufficiency`` step of
``IterativeRAG`` (``Refine`` = the agent issues a follow-up search):

1. **Partial evidence.** Each multi-hop question keeps only part of its gold paragraphs
   (one of HotpotQA's two, chosen with the seed); the rest is withheld, so searching again
   is the right decision.
2. **Padding.** Irrelevant paragraphs fill the context up to each target size (total context
   tokens, cl100k, as the step sees them, gold included). Padding comes from *other*
   questions of the same split, and never names this question's gold titles or answers, so it
   cannot supply the withheld evidence.
3. **Position.** ``position="early"`` (default) puts the kept gold paragraph at a seeded place
   inside the smallest pad level, and larger levels extend the same context: the way an
   agent's context grows after a first, partial hit (and the local model reuses the shared
   prompt prefix). ``position="random"`` places it anywhere, independently per level.
4. **Controls.** The gold-only context (pad 0) and the full gold evidence (pad 0), so one can
   see whether the decisions depend on the evidence at all.

Decisions are counted as the step returned them; an LM failure that ended in the step's safe
default (``Refine``) is an *LM error*, reported apart and never counted as a follow-up search.

Run it from a clone (the experiment lives outside the ``ragnet`` package)::

    python -m benchmarks.laziness --data hotpotqa_dev_distractor --split dev -n 10 --lm local --out DIR

Example:
    >>> from ragnet.eval.run.datasets import QARecord
    >>> q = QARecord(id="q1", question="Where was the director of Jaws born?", answers=["Cincinnati"],
    ...              gold_titles=["Jaws (film)", "Steven Spielberg"],
    ...              context=[{"title": "Jaws (film)", "text": "Jaws is a 1975 film directed by Steven Spielberg."},
    ...                       {"title": "Steven Spielberg", "text": "Steven Spielberg was born in Cincinnati."}])
    >>> other = QARecord(id="q2", question="?", answers=["x"], gold_titles=[],
    ...                  context=[{"title": f"Filler {i}", "text": "Nothing to see here. " * 20} for i in range(40)])
    >>> cases, skipped = build_cases([q], pads=[300], pool_records=[q, other], seed=0)
    >>> [(c.evidence, c.pad, len(c.withheld_titles)) for c in cases]
    [('partial', 0, 1), ('partial', 300, 1), ('full', 0, 0)]
    >>> cases[1].context_tokens <= 300
    True
"""

from __future__ import annotations

import random
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import typer

from ragnet.corpus.tokens import count_tokens
from ragnet.corpus.types import Chunk
from ragnet.errors import InputError
from ragnet.eval.metrics.stats import wilson_interval
from ragnet.eval.report.markdown_tables import markdown_table, percent

__all__ = [
    "POSITIONS",
    "STUDY_RATES",
    "LazinessCase",
    "PaddingPool",
    "assess_case",
    "build_cases",
    "format_laziness_report",
    "padding_trend",
    "run_laziness",
    "summarize_laziness",
    "wilson_interval",
]

# Follow-up search rate of the study's agent by context size (tokens).
STUDY_RATES: dict[int, float] = {3000: 0.95, 6000: 0.90, 9000: 0.50, 12000: 0.25}
POSITIONS = ("early", "random")
EVIDENCE = ("partial", "full")

# Placeholder short id of the widest kind the contexts use: "[c999]" costs as many cl100k
# tokens as "[c1]", so a block's estimate does not depend on where it ends up.
_BLOCK = "[c999] {title}: {text}"
_SEPARATOR_TOKENS = 0  # the blank line between blocks merges with the text before it (".\n\n")
_MIN_MATCH = 4  # gold titles / answers shorter than this are too generic to screen padding with


# ----------------------------------------------------------------------------- paragraphs


@dataclass(frozen=True)
class _Paragraph:
    title: str
    text: str
    source: str  # question id it came from
    tokens: int  # estimated tokens of its block in a formatted context, separator included


def _paragraph_text(para: Mapping[str, Any]) -> str:
    return str(para.get("text") or "".join(para.get("sentences") or [])).strip()


def _block_tokens(title: str, text: str) -> int:
    return count_tokens(_BLOCK.format(title=" ".join(title.split()), text=text)) + _SEPARATOR_TOKENS


def _screen_terms(record: Any) -> list[str]:
    """Lower-cased strings whose presence makes a paragraph relevant to ``record``: its gold
    titles (and their base names, ``"Ed Wood (film)"`` -> ``"ed wood"``) and its answers
    (except yes/no)."""
    terms: set[str] = set()
    for title in record.gold_titles or []:
        for t in (title, re.sub(r"\s*\([^)]*\)\s*$", "", title)):
            t = " ".join(t.casefold().split())
            if len(t) >= _MIN_MATCH:
                terms.add(t)
    for answer in record.answers or []:
        a = " ".join(str(answer).casefold().split())
        if len(a) >= _MIN_MATCH and a not in {"yes", "no"}:
            terms.add(a)
    return sorted(terms)


class PaddingPool:
    """Paragraphs of many questions, to pad one question's context with irrelevant text.

    Paragraphs are de-duplicated by title. For a given question, :meth:`candidates` leaves out
    that question's own paragraphs (gold and distractors), any paragraph whose title is one of
    its gold titles, and any paragraph that mentions a gold title or an answer, so padding can
    never hold the withheld evidence.

    Args:
        records: ``QARecord``s with ``context`` paragraphs (typically the whole split).

    Example:
        >>> from ragnet.eval.run.datasets import QARecord
        >>> a = QARecord(id="a", question="?", answers=["Paris"], gold_titles=["France"],
        ...              context=[{"title": "France", "text": "Its capital is Paris."}])
        >>> b = QARecord(id="b", question="?", answers=["x"], gold_titles=[],
        ...              context=[{"title": "Rome", "text": "Capital of Italy."},
        ...                       {"title": "Trip", "text": "We flew to Paris."}])
        >>> [p.title for p in PaddingPool([a, b]).candidates(a)]
        ['Rome']
    """

    def __init__(self, records: Iterable[Any]) -> None:
        self._paragraphs: list[tuple[str, str, str]] = []
        self._lower: list[str] = []
        seen: set[str] = set()
        for rec in records:
            for para in rec.context or []:
                title = str(para.get("title") or "")
                key = title.casefold()
                text = _paragraph_text(para)
                if not text or key in seen:
                    continue
                seen.add(key)
                self._paragraphs.append((title, text, str(rec.id)))
                self._lower.append(f"{title}\n{text}".casefold())
        self._tokens: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._paragraphs)

    def paragraph(self, i: int) -> _Paragraph:
        title, text, source = self._paragraphs[i]
        if i not in self._tokens:
            self._tokens[i] = _block_tokens(title, text)
        return _Paragraph(title, text, source, self._tokens[i])

    def candidate_ids(self, record: Any) -> list[int]:
        """Indices of the paragraphs irrelevant to ``record``, in pool order."""
        own = {str(p.get("title") or "").casefold() for p in record.context or []}
        own |= {t.casefold() for t in record.gold_titles or []}
        terms = _screen_terms(record)
        out = []
        for i, (title, _, source) in enumerate(self._paragraphs):
            if source == str(record.id) or title.casefold() in own:
                continue
            lower = self._lower[i]
            if any(t in lower for t in terms):
                continue
            out.append(i)
        return out

    def candidates(self, record: Any) -> list[_Paragraph]:
        """The irrelevant paragraphs for ``record``, in pool order."""
        return [self.paragraph(i) for i in self.candidate_ids(record)]


# ----------------------------------------------------------------------------- cases


@dataclass
class LazinessCase:
    """One context shown to the agent's decision step.

    Attributes:
        question_id / question: the benchmark question.
        evidence: ``"partial"`` (part of the gold withheld) or ``"full"`` (all gold; a control).
        pad: target context size in tokens (0 = gold paragraphs only).
        chunks: the context, in order, as ``Chunk`` objects (gold chunk ids start ``gold:``).
        kept_titles / withheld_titles: gold paragraphs shown / left out.
        gold_positions: 0-based places of the gold chunks in ``chunks``.
        context_tokens: tokens (cl100k) of the formatted context the step reads.
        gold_depth: where the first gold chunk starts, as a share of the context tokens
            (0.0 = at the very start).
    """

    question_id: str
    question: str
    evidence: str
    pad: int
    chunks: list[Chunk]
    kept_titles: list[str]
    withheld_titles: list[str]
    gold_positions: list[int]
    context_tokens: int
    gold_depth: float
    padding_sources: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """Stable id of the case within a run: ``"<question id>|<evidence>|<pad>"``."""
        return f"{self.question_id}|{self.evidence}|{self.pad}"

    def context_text(self) -> str:
        """The context exactly as IterativeRAG shows it to AssessSufficiency (no notes)."""
        from ragnet.signatures.formatting import format_context

        return format_context(self.chunks)[0]

    def describe(self) -> dict[str, Any]:
        """JSON-ready description (without the paragraph texts)."""
        return {
            "key": self.key,
            "id": self.question_id,
            "question": self.question,
            "evidence": self.evidence,
            "pad": self.pad,
            "kept_titles": self.kept_titles,
            "withheld_titles": self.withheld_titles,
            "gold_positions": self.gold_positions,
            "chunks": len(self.chunks),
            "context_tokens": self.context_tokens,
            "gold_depth": round(self.gold_depth, 4),
        }


def gold_paragraphs(record: Any) -> list[_Paragraph]:
    """The record's gold paragraphs in its ``context``: by ``gold_paragraph_idxs`` where the set
    gives them (MuSiQue reuses titles), else by ``gold_titles``, in that order."""
    context = record.context or []
    idxs = getattr(record, "gold_paragraph_idxs", None)
    if idxs:
        paras = [context[i] for i in idxs if isinstance(i, int) and 0 <= i < len(context)]
    else:
        by_title: dict[str, Mapping[str, Any]] = {}
        for p in context:
            by_title.setdefault(str(p.get("title") or "").casefold(), p)
        paras = [by_title[t.casefold()] for t in record.gold_titles or [] if t.casefold() in by_title]
    out: list[_Paragraph] = []
    for para in paras:
        title, text = str(para.get("title") or ""), _paragraph_text(para)
        if text and all(o.title != title or o.text != text for o in out):
            out.append(_Paragraph(title, text, str(record.id), _block_tokens(title, text)))
    return out


def _chunk(para: _Paragraph, gold: bool) -> Chunk:
    prefix = "gold" if gold else "pad"
    return Chunk(id=f"{prefix}:{para.title}", doc_id=para.title, title=para.title, text=para.text,
                 tokens=para.tokens - _SEPARATOR_TOKENS)


def _fit_prefix(seq: list[tuple[_Paragraph, bool]], target: int) -> list[tuple[_Paragraph, bool]]:
    """Longest prefix of ``seq`` whose estimated tokens stay within ``target``."""
    total, out = 0, []
    for para, gold in seq:
        if total + para.tokens > target:
            break
        total += para.tokens
        out.append((para, gold))
    return out


def _make_case(record: Any, evidence: str, pad: int, seq: list[tuple[_Paragraph, bool]],
               kept: list[_Paragraph], withheld: list[_Paragraph]) -> LazinessCase:
    from ragnet.signatures.formatting import format_context

    seq = list(seq)
    while True:  # the estimate is per block; trim padding until the exact count fits
        chunks = [_chunk(p, g) for p, g in seq]
        text = format_context(chunks)[0]
        tokens = count_tokens(text)
        if pad <= 0 or tokens <= pad:
            break
        pads = [i for i, (_, g) in enumerate(seq) if not g]
        if not pads:  # pragma: no cover - gold alone was checked to fit
            break
        del seq[pads[-1]]
    positions = [i for i, (_, g) in enumerate(seq) if g]
    depth = 0.0
    if positions and positions[0] > 0:
        before = format_context(chunks[: positions[0]])[0]
        depth = count_tokens(before) / max(tokens, 1)
    return LazinessCase(
        question_id=str(record.id), question=record.question, evidence=evidence, pad=pad, chunks=chunks,
        kept_titles=[p.title for p in kept], withheld_titles=[p.title for p in withheld] if evidence == "partial" else [],
        gold_positions=positions, context_tokens=tokens, gold_depth=depth,
        padding_sources=sorted({p.source for p, g in seq if not g}),
    )


def _parse_levels(values: Iterable[Any], argument: str) -> list[int]:
    out: list[int] = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(f"pad sizes must be integers >= 0 (tokens), got {v!r}", argument=argument)
        if v not in out:
            out.append(v)
    return sorted(out)


def build_cases(
    questions: Sequence[Any],
    *,
    pads: Iterable[int] = (3000, 6000, 9000, 12000),
    full_gold_pads: Iterable[int] = (),
    controls: bool = True,
    pool_records: Sequence[Any] | None = None,
    seed: int = 0,
    position: str = "early",
) -> tuple[list[LazinessCase], list[dict[str, Any]]]:
    """Build the contexts of the experiment, question by question.

    Args:
        questions: ``QARecord``s with ``context`` paragraphs and at least two gold titles;
            others are skipped (returned with a reason).
        pads: target context sizes (tokens) for the partial-evidence contexts; 0 = gold only.
        full_gold_pads: extra sizes at which the full gold evidence is shown too.
        controls: add the two pad-0 controls (partial gold only; full gold only).
        pool_records: where padding comes from (default: ``questions``); pass the whole split.
        seed: makes the kept gold paragraph, the padding and the gold position reproducible.
        position: ``"early"`` (nested contexts, gold inside the smallest level) or ``"random"``.

    Returns:
        ``(cases, skipped)``: cases ordered question by question, smallest context first
        (so a local model can reuse the shared prompt prefix), and ``{"id", "reason"}`` for
        each skipped question.

    Raises:
        InputError: bad ``pads`` / ``position``, or a pad too small for a question's gold
            paragraphs (the message gives the smallest workable size).
    """
    if position not in POSITIONS:
        raise InputError(f"must be one of {', '.join(POSITIONS)}, got {position!r}", argument="position")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"must be an integer, got {seed!r}", argument="seed")
    partial_levels = _parse_levels(pads, "pads")
    full_levels = _parse_levels(full_gold_pads, "full-gold-pads")
    if controls:
        partial_levels = sorted({0, *partial_levels})
        full_levels = sorted({0, *full_levels})
    if not partial_levels and not full_levels:
        raise InputError("no pad sizes to measure", argument="pads")
    pool = PaddingPool(pool_records if pool_records is not None else questions)
    conditions = [("partial", p) for p in partial_levels] + [("full", p) for p in full_levels]
    conditions.sort(key=lambda c: (c[0] == "full", c[1]))

    cases: list[LazinessCase] = []
    skipped: list[dict[str, Any]] = []
    too_small: dict[str, tuple[int, int, str]] = {}  # argument -> (pad, tokens needed, question id)
    for record in questions:
        golds = gold_paragraphs(record)
        if len(golds) < 2:
            skipped.append({"id": str(record.id), "reason": f"{len(golds)} gold paragraph(s) in its context; "
                            "partial evidence needs at least 2"})
            continue
        rng = random.Random(f"ragnet-laziness:{seed}:{record.id}")
        n_keep = max(1, len(golds) // 2)
        kept_idx = sorted(rng.sample(range(len(golds)), n_keep))
        kept = [golds[i] for i in kept_idx]
        withheld = [g for i, g in enumerate(golds) if i not in kept_idx]
        padding = pool.candidate_ids(record)
        rng.shuffle(padding)
        kept_tokens = sum(p.tokens for p in kept)
        full_tokens = kept_tokens + sum(p.tokens for p in withheld)

        # Check every level can hold its gold paragraphs (with a little room for the estimate).
        problem = False
        for evidence, pad in conditions:
            need = kept_tokens if evidence == "partial" else full_tokens
            if 0 < pad < need:
                arg = "pads" if evidence == "partial" else "full-gold-pads"
                prev = too_small.get(arg)
                if prev is None or need > prev[1]:  # the question needing most, at its smallest failing pad
                    too_small[arg] = (pad, need, str(record.id))
                problem = True
        if problem:
            continue

        # Padding paragraphs are materialised lazily: only as many as the largest level needs.
        largest = max(p for _, p in conditions)
        pad_paras: list[_Paragraph] = []
        total = 0
        for i in padding:
            if total >= largest:
                break
            para = pool.paragraph(i)
            pad_paras.append(para)
            total += para.tokens
        pad_seq = [(p, False) for p in pad_paras]

        # Room before the gold block so that it sits inside every level's context (8 tokens of
        # slack for the per-block estimate).
        rooms = [pad - (kept_tokens if evidence == "partial" else full_tokens) - 8
                 for evidence, pad in conditions if pad > 0]
        if position == "early" and rooms:
            room = min(rooms)
            fits, used = 0, 0
            for para in pad_paras:
                if used + para.tokens > room:
                    break
                used += para.tokens
                fits += 1
            g = rng.randint(0, fits)
        else:
            g = 0
        for evidence, pad in conditions:
            gold_block = [(p, True) for p in (kept if evidence == "partial" else kept + withheld)]
            if pad == 0:
                seq = gold_block
            elif position == "early":
                seq = _fit_prefix(pad_seq[:g] + gold_block + pad_seq[g:], pad)
            else:
                level_rng = random.Random(f"ragnet-laziness:{seed}:{record.id}:{evidence}:{pad}")
                need = sum(p.tokens for p, _ in gold_block)
                fill = _fit_prefix(pad_seq, pad - need)
                at = level_rng.randint(0, len(fill))
                seq = fill[:at] + gold_block + fill[at:]
            cases.append(_make_case(record, evidence, pad, seq, kept, withheld))
    if too_small:
        parts = []
        for arg, (pad, need, qid) in sorted(too_small.items()):
            what = "kept gold paragraph(s)" if arg == "pads" else "full gold evidence"
            parts.append(f"argument {arg!r}: {pad} tokens cannot hold the {what} of question {qid} "
                         f"({need} tokens); use sizes of at least {need}, or 0 for the gold-only control")
        raise InputError("; ".join(parts))
    return cases, skipped


# ----------------------------------------------------------------------------- running


def assess_case(predictor: Any, case: LazinessCase, *, retries: int = 1) -> dict[str, Any]:
    """Ask the decision step about one context; returns the per-case result record.

    ``follow_up`` is True for ``Refine`` (the agent searches again), False for
    ``Sufficient``, and None when the step failed and fell back to its default (see
    ``benchmarks.sufficiency_step.decide`` for every field).
    """
    from benchmarks.sufficiency_step import decide

    return {**case.describe(), **decide(predictor, case.question, case.context_text(), retries=retries)}


def run_laziness(
    predictor: Any,
    cases: Sequence[LazinessCase],
    *,
    retries: int = 1,
    done: Mapping[str, dict[str, Any]] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    show_progress: bool = True,
) -> list[dict[str, Any]]:
    """Assess every case (skipping keys already in ``done``); returns results in case order.

    Args:
        predictor: the AssessSufficiency predictor (e.g. ``IterativeRAG(...).sufficiency.predict``).
        cases: from :func:`build_cases`.
        retries: LM retries before the step falls back (as in the programs).
        done: results of an earlier, interrupted run, by case key; they are reused.
        on_result: called with each new result as soon as it exists (e.g. to append it to a file).
        show_progress: tqdm bar.
    """
    from tqdm.auto import tqdm

    done = dict(done or {})
    results: list[dict[str, Any]] = []
    with tqdm(total=len(cases), desc="Sufficiency decisions", unit="ctx", disable=not show_progress) as bar:
        for case in cases:
            if case.key in done:
                results.append(done[case.key])
                bar.update(1)
                continue
            bar.set_postfix_str(f"{case.evidence} pad {case.pad}", refresh=False)
            result = assess_case(predictor, case, retries=retries)
            results.append(result)
            if on_result is not None:
                on_result(result)
            bar.update(1)
    return results


# ----------------------------------------------------------------------------- aggregation


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize_laziness(results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (evidence, pad) condition: follow-up search rate among decided cases, LM errors apart.

    Example:
        >>> rows = summarize_laziness([
        ...     {"evidence": "partial", "pad": 3000, "follow_up": True, "fallback": False, "seconds": 1.0},
        ...     {"evidence": "partial", "pad": 3000, "follow_up": False, "fallback": False, "seconds": 3.0},
        ...     {"evidence": "partial", "pad": 3000, "follow_up": None, "fallback": True, "seconds": 9.0}])
        >>> r = rows[0]
        >>> r["n"], r["decided"], r["follow_ups"], r["rate"], r["lm_errors"], r["study_rate"]
        (3, 2, 1, 0.5, 1, 0.95)
    """
    groups: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["evidence"], int(r["pad"])), []).append(r)
    rows = []
    for (evidence, pad), items in sorted(groups.items(), key=lambda kv: (kv[0][0] != "partial", kv[0][1])):
        decided = [r for r in items if not r.get("fallback") and r.get("follow_up") is not None]
        follow = sum(1 for r in decided if r["follow_up"])
        ci = wilson_interval(follow, len(decided))
        fresh = [r["seconds"] for r in items if not r.get("cached") and "seconds" in r]
        rows.append({
            "evidence": evidence,
            "pad": pad,
            "n": len(items),
            "decided": len(decided),
            "follow_ups": follow,
            "rate": follow / len(decided) if decided else None,
            "ci95": list(ci) if ci else None,
            "study_rate": STUDY_RATES.get(pad) if evidence == "partial" else None,
            "lm_errors": sum(1 for r in items if r.get("fallback")),
            "repaired_or_retried": sum(1 for r in items if r.get("repaired") or r.get("outcome") == "retried"),
            "median_context_tokens": _median([r["context_tokens"] for r in items if "context_tokens" in r]),
            "median_prompt_tokens": _median([r["prompt_tokens"] for r in items if r.get("prompt_tokens")]),
            "mean_gold_depth": statistics.fmean([r["gold_depth"] for r in items]) if items and all(
                "gold_depth" in r for r in items) else None,
            "mean_confidence": statistics.fmean([r["confidence"] for r in decided if r.get("confidence") is not None])
            if any(r.get("confidence") is not None for r in decided) else None,
            "median_seconds": _median(fresh),
            "cached": sum(1 for r in items if r.get("cached")),
        })
    return rows


def _rate(x: float | None) -> str:
    """A rate as this report shows it: whole percent with a sign, an em dash when undefined."""
    return percent(x, 0, symbol=True, missing="—")


def evidence_dependence(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Follow-up rate with partial minus with full gold at pad 0 (None without both controls).

    A model whose decisions read the evidence searches more often when evidence is missing
    (a clearly positive gap); a gap near 0 means its "follow-up searches" are not decisions
    about the evidence, and the padded rates say little about laziness.
    """
    by = {(r["evidence"], r["pad"]): r for r in rows}
    partial, full = by.get(("partial", 0)), by.get(("full", 0))
    if not partial or not full or partial["rate"] is None or full["rate"] is None:
        return None
    return {"partial_rate": partial["rate"], "full_rate": full["rate"], "gap": partial["rate"] - full["rate"]}


def padding_trend(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Follow-up rate at the smallest and the largest padded partial-gold context (None with
    fewer than two padded levels that have a rate). Laziness is this rate falling as the
    context grows: the study's agent went from 95% at 3k tokens to 25% at 12k.

    Example:
        >>> padding_trend([{"evidence": "partial", "pad": 3000, "rate": 1.0, "study_rate": 0.95},
        ...                {"evidence": "partial", "pad": 12000, "rate": 0.25, "study_rate": 0.25}])["change"]
        -0.75
    """
    padded = sorted((r for r in rows if r["evidence"] == "partial" and r["pad"] and r["rate"] is not None),
                    key=lambda r: r["pad"])
    if len(padded) < 2:
        return None
    first, last = padded[0], padded[-1]
    return {"first_pad": first["pad"], "first_rate": first["rate"], "last_pad": last["pad"],
            "last_rate": last["rate"], "change": round(last["rate"] - first["rate"], 6),
            "study_first": first.get("study_rate"), "study_last": last.get("study_rate")}


def format_laziness_report(summary: Mapping[str, Any]) -> str:
    """Markdown: the table, the controls' reading, and how the contexts were built."""
    table = []
    for r in summary["conditions"]:
        evidence = "partial gold" if r["evidence"] == "partial" else "full gold (control)"
        pad = f"{r['pad']:,}" if r["pad"] else "0 (gold only)"
        ci = f"{_rate(r['ci95'][0])}–{_rate(r['ci95'][1])}" if r["ci95"] else "—"
        secs = "—" if r["median_seconds"] is None else f"{r['median_seconds']:.1f}"
        ctx = "—" if r["median_context_tokens"] is None else f"{r['median_context_tokens']:,.0f}"
        rate = _rate(r["rate"])
        if r["rate"] is not None:
            rate = f"{rate} ({r['follow_ups']}/{r['decided']})"
        table.append([evidence, pad, str(r["n"]), ctx, rate, ci, _rate(r["study_rate"]), str(r["lm_errors"]), secs])
    lines = markdown_table(["Evidence", "Pad (tokens)", "n", "Context tokens (median)", "Follow-up search rate",
                            "95% CI", "Study", "LM errors", "Median s"], table)
    out = ["\n".join(lines), ""]
    trend = summary.get("padding_trend")
    if trend is not None:
        study = ""
        if trend["study_first"] is not None and trend["study_last"] is not None:
            study = f" (study: {_rate(trend['study_first'])} → {_rate(trend['study_last'])})"
        if trend["change"] <= -0.2:
            reading = "the agent stops searching more often as the context grows, with half the evidence missing"
        elif trend["change"] >= 0.2:
            reading = "the agent searches more often as the context grows: no laziness"
        else:
            reading = "no clear change with context size"
        out.append(f"Padding (partial gold): follow-up rate {_rate(trend['first_rate'])} at {trend['first_pad']:,} "
                   f"tokens → {_rate(trend['last_rate'])} at {trend['last_pad']:,}{study}: {reading}.")
        out.append("")
    dep = summary.get("evidence_dependence")
    if dep is not None:
        verdict = ("the decisions do depend on the evidence" if dep["gap"] >= 0.2 else
                   "the decisions do not track the evidence (withholding gold does not make a follow-up "
                   "search clearly more likely): a follow-up search is this model's default rather than a "
                   "judgement that evidence is missing, so the padded rates measure how far a longer "
                   "context moves it off that default")
        out.append(f"Controls (pad 0): follow-up rate {_rate(dep['partial_rate'])} with partial gold vs "
                   f"{_rate(dep['full_rate'])} with full gold (gap {percent(dep['gap'], 0, sign=True)} points): {verdict}.")
        out.append("")
    cfg = summary.get("config", {})
    notes = [
        "Follow-up search = the agent's AssessSufficiency step answered `Refine` (IterativeRAG then "
        "searches again). The rate counts decided cases only; LM errors (the step failed and fell back "
        "to its default) are counted apart.",
        f"Partial gold: {cfg.get('keep', 'one of two')} gold paragraph(s) kept, the rest withheld; "
        "padding = paragraphs of other questions of the split that mention none of this question's gold "
        "titles or answers. Pad = target size of the whole context (cl100k tokens, gold included).",
        f"Gold position: {cfg.get('position', 'early')}"
        + (" (seeded place inside the smallest pad level; larger levels extend the same context)"
           if cfg.get("position", "early") == "early" else " (seeded place anywhere, per level)")
        + f"; seed {cfg.get('seed', 0)}.",
        "Study: the iterative study's agent (hosted LM) at 3k/6k/9k/12k tokens of context. "
        "Median seconds count calls that were not answered from the cache.",
    ]
    out.extend(f"- {n}" for n in notes)
    return "\n".join(out)


#: The command line's name in reports (``summary.json``'s ``command``).
PROG = "python -m benchmarks.laziness"


def command(
    ctx: typer.Context,
    data: str = typer.Option("hotpotqa_dev_distractor", help="Dataset (name under the data dir, folder or questions.jsonl); needs multi-hop questions with gold paragraphs in their context."),
    split: str = typer.Option("dev", help="Question split: dev or acceptance (padding comes from the same split)."),
    n: int = typer.Option(20, "-n", help="Questions to measure (the split's first n with at least two gold paragraphs)."),
    pads: str = typer.Option("3000,6000,9000,12000", help="Comma-separated context sizes (tokens) for the partial-evidence contexts (the default: the study's)."),
    full_gold_pads: str = typer.Option("", help="Extra context sizes at which the full gold evidence is shown too (comma-separated)."),
    controls: bool = typer.Option(True, "--controls/--no-controls", help="Add the pad-0 controls: partial gold only, and full gold only."),
    position: str = typer.Option("early", help="Gold position: early (seeded place inside the smallest pad level; larger levels extend the same context) or random (anywhere, per level)."),
    lm: Optional[str] = typer.Option(None, help="LM: 'local' (default, llama.cpp), local:NAME, or any litellm model id; env RAGNET_LM."),
    program_file: Optional[Path] = typer.Option(None, "--program", help="Compiled program JSON (`ragnet optimize`) whose sufficiency step to use."),
    seed: int = typer.Option(0, help="Seed for the kept gold paragraph, the padding and the gold position."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.md, summary.json and results.jsonl here (a new, empty or earlier run folder; an interrupted run resumes)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Benchmark data folder (default ../shared/data or $RAGNET_DATA)."),
    n_ctx: Optional[int] = typer.Option(None, "--n-ctx", help="Local model context window (default: sized to the largest prompt)."),
    timeout: float = typer.Option(300.0, help="Seconds per LM call (the longest contexts are slow to read on a CPU)."),
    retries: Optional[int] = typer.Option(None, help="LM retries before the step falls back (default: the program's, 1)."),
    fresh: bool = typer.Option(False, "--fresh", help="Discard results in --out from an earlier run instead of resuming."),
) -> None:
    """Follow-up search rate of the agent as padding grows, next to the iterative study's."""
    from benchmarks.laziness_evaluator import LazinessEvaluator, parse_pads
    from ragnet.cli.common import command_line, say
    from ragnet.eval.run.run_folder import claim_folder

    if out is not None:
        claim_folder(out)
    typed = command_line(ctx)  # "ragnet --data ...": the root is this command
    evaluator = LazinessEvaluator.from_data(
        data, split=split, data_dir=data_dir, n=n, pads=parse_pads(pads, "pads"),
        full_gold_pads=parse_pads(full_gold_pads, "full-gold-pads"), controls=controls, position=position,
        seed=seed, program=program_file, lm=lm, n_ctx=n_ctx, timeout=timeout, retries=retries,
        command=PROG + typed[len("ragnet"):], log=say)
    summary = evaluator(out, fresh=fresh)
    typer.echo(format_laziness_report(summary))
    if out is not None:
        typer.echo(f"wrote {out / 'report.md'}, {out / 'summary.json'} and {out / 'results.jsonl'}")


def app() -> typer.Typer:
    """The command line (``python -m benchmarks.laziness``): ragnet's error handling, so bad input
    is one ``error: ...`` line and exit status 2."""
    from ragnet.cli.common import new_app

    root = new_app("Retrieval laziness: the agent's follow-up search rate as its context grows.",
                   no_args_is_help=False)
    root.callback(invoke_without_command=True)(command)
    return root


if __name__ == "__main__":
    app()(prog_name=PROG)
