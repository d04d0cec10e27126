"""Sentence-level evidence: are all gold *supporting sentences* inside a small context? No LM.

HotpotQA and 2WikiMultihopQA name the sentences that support each answer (``gold_sentences``:
``[title, sentence index]`` into the question's ``context`` paragraphs). A paragraph in
context is not the same as its evidence reaching a reader with a small budget, so this
measures, per question, whether *every* gold sentence's text appears in the selected context
(whitespace- and case-normalised, within that title's chunks), at several context budgets.

Candidates are those OneShotRAG starts from: the hybrid top-``pool`` (λ = 0.4) after the
metadata rules. Budgets count the rendered context as the reader sees it: each chunk as a
``[cN] Title: text`` block plus its separator (cl100k tokens), for every selection alike.

Selections:

``top5``           the five best candidates whole, whatever the budget (plain RAG);
``rank-fill``      whole candidates in rank order, skipping those that no longer fit;
``rank-cut``       whole candidates in rank order; the first that does not fit is cut at a
                   sentence boundary, and the fill stops there;
``knapsack``       OneShotRAG's paragraph selection (protected knapsack, ``exp`` T = 0.1);
``sentences``      sentence selection (:func:`ragnet.programs.sentence_packing.select_sentences`)
                   without the bridge-link bonus;
``sentences+links`` sentence selection as ``OneShotRAG(pack=Pack(sentences=True))`` runs it.

Example:
    >>> import tempfile
    >>> from ragnet import Document, Index
    >>> from ragnet.eval.run.datasets import QARecord
    >>> paras = {"Rome": ["Rome is the capital of Italy.", "It has the Colosseum."],
    ...          "Oslo": ["Oslo is the capital of Norway.", "It is cold."]}
    >>> docs = [Document(id=t, title=t, text=" ".join(s)) for t, s in paras.items()]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
    >>> q = QARecord(id="q", question="What is the capital of Italy?", answers=["Rome"], gold_titles=["Rome"],
    ...              gold_sentences=[["Rome", 0]], context=[{"title": t, "sentences": s} for t, s in paras.items()])
    >>> result = run_sentence_evidence(index, [q], budgets=[20], show_progress=False)
    >>> result["recall"]["sentences+links"]["20"], result["recall"]["rank-fill"]["20"]
    (1.0, 0.0)
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ragnet._text import normalize_text
from ragnet.core import selection
from ragnet.corpus.tokens import count_tokens_batch
from ragnet.errors import InputError
from ragnet.eval.metrics.gold_evidence import gold_sentence_texts
from ragnet.eval.report.markdown_tables import markdown_table, percent

__all__ = ["SELECTIONS", "format_sentence_report", "run_sentence_evidence"]

SELECTIONS = ("top5", "rank-fill", "rank-cut", "knapsack", "sentences", "sentences+links")
DEFAULT_BUDGETS = (512, 1000, 2000, 4000)


def _covered(gold: list[tuple[str, str]], chunks: Sequence[Any]) -> bool:
    by_title: dict[str, str] = {}
    for c in chunks:
        by_title[c.title] = by_title.get(c.title, "") + " " + normalize_text(c.text)
    return all(text in by_title.get(title, "") for title, text in gold)


def _rank_cut(chunks: Sequence[Any], blocks: np.ndarray, headers: np.ndarray, budget: int) -> list[Any]:
    from ragnet.corpus.sentence_split import sentence_spans

    out, used = [], 0
    for chunk, block, header in zip(chunks, blocks.tolist(), headers.tolist()):
        if used + block <= budget:
            out.append(chunk)
            used += block
            continue
        left, kept = budget - used - header, []
        spans = sentence_spans(chunk.text)
        sizes = count_tokens_batch([chunk.text[a:b] for a, b in spans]) if spans else []
        for (a, b), size in zip(spans, sizes):
            if size + 1 > left:
                break
            kept.append(chunk.text[a:b])
            left -= size + 1
        if kept:
            out.append(chunk.with_text(" ".join(kept), 0))
        break
    return out


def run_sentence_evidence(
    index: Any,
    questions: Sequence[Any],
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    pool: int = 100,
    lam: float = 0.4,
    rules: bool = True,
    show_progress: bool = True,
) -> dict[str, Any]:
    """All-gold-supporting-sentence recall of each selection at each context budget.

    Args:
        index: the pooled index (with its sentence store; without one, sentences are embedded
            per question, which is slower but gives the same result).
        questions: records with ``gold_sentences`` and ``context`` sentences; others are skipped.
        budgets: context budgets in rendered-context tokens.
        pool: hybrid candidates per question (OneShotRAG's default, 100).
        lam: hybrid BM25 weight.
        rules: apply the metadata rules to the candidates, as OneShotRAG does.
        show_progress: a tqdm bar.

    Returns:
        ``{"questions", "skipped", "budgets", "recall": {selection: {budget: share}},
        "tokens": {selection: {budget: mean context tokens}}, "select_ms": {"p50", "p95"},
        "seconds"}``. ``select_ms`` times the sentence selection alone (features, values,
        knapsack), per question and budget.

    Raises:
        InputError: no question has gold sentences.
    """
    from tqdm.auto import tqdm

    from ragnet.core.calibrate import relevance
    from ragnet.eval.metrics.stats import percentile
    from ragnet.programs.stages import apply_metadata_rules
    from ragnet.programs.sentence_packing import crop_to_sentences, select_sentences
    from ragnet.programs.trace import Trace
    from ragnet.signatures.formatting import chunk_header, render_chunk

    budgets = [int(b) for b in budgets]
    if not budgets or any(b < 1 for b in budgets):
        raise InputError(f"budgets must be positive integers, got {budgets}", argument="budgets")
    records = [(r, gold_sentence_texts(r)) for r in questions]
    skipped = sum(1 for _, g in records if not g)
    records = [(r, g) for r, g in records if g]
    if not records:
        raise InputError("no question has gold supporting sentences (gold_sentences with context sentences)",
                         argument="questions")
    started = time.perf_counter()
    hits = [0.0] * 0
    recall = {s: {b: [] for b in budgets} for s in SELECTIONS}
    tokens = {s: {b: [] for b in budgets} for s in SELECTIONS}
    select_ms: list[float] = []
    for record, gold in tqdm(records, desc="Sentence evidence", unit="q", disable=not show_progress):
        question = str(record.question).strip()
        cands = index.search(question, k=min(pool, len(index)), bm25_weight=lam)
        if rules:
            cands = apply_metadata_rules(index, question, cands, Trace(), bm25_weight=lam)
        if not cands:
            for s in SELECTIONS:
                for b in budgets:
                    recall[s][b].append(0.0)
                    tokens[s][b].append(0)
            continue
        blocks = np.asarray(count_tokens_batch([render_chunk(f"c{i + 1}", c.title, c.text)
                                                for i, c in enumerate(cands)])) + 2
        headers = np.asarray(count_tokens_batch([chunk_header(f"c{i + 1}", c.title) for i, c in enumerate(cands)])) + 2
        scores = np.asarray([c.score or 0.0 for c in cands], dtype=np.float64)
        rel = relevance(scores, "exp", 0.1)

        def rendered(chosen: Sequence[Any]) -> int:
            return int(sum(count_tokens_batch([render_chunk(f"c{i + 1}", c.title, c.text)
                                               for i, c in enumerate(chosen)]))
                       + 2 * len(chosen))

        for b in budgets:
            choices = {
                "top5": list(cands[:5]),
                "rank-fill": [cands[i] for i in selection.rank_fill(blocks, b)],
                "rank-cut": _rank_cut(cands, blocks, headers, b),
                "knapsack": [cands[i] for i in selection.protected(rel, blocks, b)],
            }
            for name, bonus in (("sentences", 0.0), ("sentences+links", None)):
                t0 = time.perf_counter()
                opts = {} if bonus is None else {"link_bonus": bonus}
                choice = select_sentences(cands, question, index, b, **opts)
                if bonus is None:
                    select_ms.append(1000 * (time.perf_counter() - t0))
                choices[name] = crop_to_sentences(cands, choice.candidates, choice.picked)[0]
            for name, chosen in choices.items():
                recall[name][b].append(float(_covered(gold, chosen)))
                tokens[name][b].append(rendered(chosen))
    del hits
    return {
        "questions": len(records),
        "skipped": skipped,
        "pool": pool,
        "rules": rules,
        "budgets": budgets,
        "recall": {s: {str(b): round(float(np.mean(v)), 4) for b, v in d.items()} for s, d in recall.items()},
        "tokens": {s: {str(b): round(float(np.mean(v)), 1) for b, v in d.items()} for s, d in tokens.items()},
        "select_ms": {"p50": percentile(select_ms, 50), "p95": percentile(select_ms, 95)},
        "seconds": round(time.perf_counter() - started, 1),
    }


def format_sentence_report(result: dict[str, Any]) -> str:
    """Markdown: recall per selection and budget, mean context tokens, selection time."""
    budgets = [str(b) for b in result["budgets"]]
    head = ["selection", *[f"{int(b):,} tok" for b in budgets]]
    rows = [[name, *[percent(result["recall"][name][b]) for b in budgets]] for name in SELECTIONS]
    size_rows = [[name, *[f"{result['tokens'][name][b]:,.0f}" for b in budgets]] for name in SELECTIONS]
    ms = result["select_ms"]
    return "\n".join([
        f"### All gold supporting sentences in context: {result['questions']} questions "
        f"({result['pool']} hybrid candidates{', metadata rules' if result['rules'] else ''})",
        "",
        *markdown_table(head, rows),
        "",
        "Mean rendered context tokens (`[cN] Title: text` blocks):",
        "",
        *markdown_table(["selection", *[f"{int(b):,}" for b in budgets]], size_rows),
        "",
        f"Sentence selection time per question and budget (features, values, knapsack; candidates and rules "
        f"excluded): p50 {ms['p50']:.1f} ms, p95 {ms['p95']:.1f} ms. {result['skipped']} question(s) without gold "
        f"sentences skipped. Time: {result['seconds']} s.",
    ])
