"""``ragnet demo``: the synthetic yearbooks, where plain top-k retrieval gets the year or the city
wrong, and what each strategy puts in front of the reader.

The corpus (:mod:`ragnet.demo.corpus`) is thirty near-identical yearbooks: six cities, five
years, the same sentence templates. A question names its city and year, and plain top-5
retrieval often returns the same city's yearbook for another year (or the same year of
another city). The demo picks, per level, the questions where that happens, so the table
shows the mechanism rather than the reader's noise:

1. **Evidence, no LM** (every question picked): how many gold yearbooks and how many gold
   *facts* (the sentences that hold the answer) reach the reader's context with plain top-5,
   OneShotRAG on whole chunks (metadata rules + knapsack), and OneShotRAG with sentence
   selection, at the same token budget.
2. **Answers** (three questions among those where top-5 misses gold evidence, taken from
   each level in turn: L3, L4, L3 on this corpus): basic and OneShotRAG with sentence selection
   answer with the default reader (the 1.5B local model when fetched); accuracy next to the
   evidence each had.

The slow part is the local LM on a few CPU cores (docs/results/demo-profile), so the default
run answers 3 questions with two one-call strategies, which keeps a fresh run to a few minutes;
``--answers N`` answers more, and ``ragnet demo --full`` adds IterativeRAG, ReflectiveRAG and
CombinedRAG and answers every picked question (much longer).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ragnet.corpus.outputs import INDEX_MANIFEST
from ragnet.errors import InputError
from ragnet.lm.config import LMOptions, get_lm

__all__ = ["DEFAULT_ANSWERS", "DEFAULT_STRATEGIES", "FULL_STRATEGIES", "answered_questions", "build_demo_index",
           "build_demo_program", "pick_questions", "run_demo"]

DEFAULT_STRATEGIES = ("basic", "oneshot")
FULL_STRATEGIES = ("basic", "oneshot", "iterative", "reflective", "combined")
# Yearbook sections are ~70-token paragraphs; 128-token chunks hold one or two sections, which
# keeps prompts (and a small model's CPU time) small.
DEMO_CHUNK_TOKENS, DEMO_OVERLAP = 128, 16
DEMO_BUDGET = 1000  # the answer prompt's budget for the budgeted strategies (same for every one)
# Questions answered by default: each costs one slow reader call per strategy on CPU, and a fresh
# run must stay within a few minutes (docs/results/demo-profile).
DEFAULT_ANSWERS = 3


def build_demo_index(workdir: Path, *, show_progress: bool = True):
    """Write the corpus and (re)build its index when the corpus changed; returns (index, corpus path)."""
    from ragnet.corpus.loader import load_documents
    from ragnet.corpus.metadata import Gazetteer
    from ragnet.demo.corpus import GAZETTEER, write_demo_corpus
    from ragnet.index import Index

    corpus = write_demo_corpus(workdir / "corpus")
    digest = hashlib.sha256(corpus.read_bytes() + f"{DEMO_CHUNK_TOKENS}/{DEMO_OVERLAP}".encode()).hexdigest()[:16]
    index_dir = workdir / f"index-{digest}"
    if (index_dir / INDEX_MANIFEST).is_file():
        index = Index.load(index_dir)
        if index.gazetteer is not None and index.sentences_current():
            return index, corpus
    docs = load_documents(corpus)
    index = Index.build(docs, index_dir, chunk_tokens=DEMO_CHUNK_TOKENS, overlap=DEMO_OVERLAP,
                        gazetteer=Gazetteer(GAZETTEER), show_progress=show_progress)
    return index, corpus


def build_demo_program(spec: str, index: Any, *, budget: int = DEMO_BUDGET, max_turns: int = 2, answer_lm: Any = None):
    """The program ``ragnet demo`` runs for ``spec``: the strategy with the demo's lean settings."""
    from ragnet.programs.registry import build_program

    # Lean settings so the agents finish in seconds per question on 2 CPU cores with a 0.5B
    # model: fewer turns, 3 sampled sub-queries instead of 5, 3 chunks per cast.
    overrides = {
        "oneshot": {"sentences": True},
        "iterative": {"max_turns": max_turns, "n_queries": 3, "k": 3},
        "combined": {"max_turns": max_turns, "n_queries": 3, "k": 3, "sentences": True},
        "reflective": {"max_reflections": max(0, max_turns - 1), "n_queries": 3, "k": 3},
    }
    kwargs = dict(overrides.get(spec.partition(":")[0], {}))
    return build_program(spec, index, budget=budget, reader=answer_lm, **kwargs)


def top_k_misses(index: Any, question: Any, k: int = 5) -> bool:
    """Whether plain top-``k`` retrieval misses a gold yearbook or a gold fact of ``question``
    (on the demo corpus top-5 finds the right yearbooks for almost every L1/L2 question and
    misses a yearbook or the section holding the answer for about a quarter of L3/L4 ones)."""
    hits = index.search(question.question, k=k)
    if not set(question.gold_doc_ids) <= {h.doc_id for h in hits}:
        return True
    return _facts_in([{"text": h.text} for h in hits], question) < 1.0


def pick_questions(index: Any, per_level: int, *, k: int = 5, pool_per_level: int = 60) -> list[Any]:
    """Per level, the first ``per_level`` demo questions whose top-``k`` misses gold evidence.

    Drawn from a fixed pool (seed 0), in order, so every run picks the same questions; levels
    with too few such questions (L1/L2: top-5 rarely misses) are filled with the pool's next ones.
    """
    from ragnet.demo.corpus import demo_questions

    pool = demo_questions(n_per_level=max(pool_per_level, per_level))
    picked: list[Any] = []
    for level in sorted({q.level for q in pool}):
        mine = [q for q in pool if q.level == level]
        hard = [q for q in mine if top_k_misses(index, q, k)]
        picked.extend((hard + [q for q in mine if q not in hard])[:per_level])
    return picked


def answered_questions(hard: Sequence[Any], answers: int) -> list[Any]:
    """The ``answers`` questions the demo answers: those plain top-5 gets wrong (``hard``), taken
    from each level in turn (first of every level, then the second, ...), in level order.

    Example:
        >>> from types import SimpleNamespace as Q
        >>> qs = [Q(id=i, level=lv) for i, lv in enumerate([3, 3, 3, 4, 4])]
        >>> [q.id for q in answered_questions(qs, 3)]
        [0, 3, 1]
    """
    by_level: dict[int, list[Any]] = {}
    for q in hard:
        by_level.setdefault(q.level, []).append(q)
    turns = [q for i in range(max(map(len, by_level.values()), default=0))
             for lv in sorted(by_level) for q in by_level[lv][i:i + 1]]
    return turns[:answers]


def _facts_in(passages: Sequence[dict[str, Any]], question: Any) -> float:
    """Share of the question's gold facts found verbatim in the passages' texts."""
    text = " ".join(" ".join(str(p.get("text", "")).split()) for p in passages)
    facts = [" ".join(f.split()) for f in question.gold_facts]
    return sum(f in text for f in facts) / len(facts) if facts else 0.0


def _docs_in(doc_ids: set[str], question: Any) -> float:
    gold = set(question.gold_doc_ids)
    return len(gold & doc_ids) / len(gold) if gold else 0.0


def evidence_table(index: Any, questions: Sequence[Any], budget: int = DEMO_BUDGET) -> dict[str, dict[str, float]]:
    """Gold yearbooks and gold facts in the reader's context, with no LM call: plain top-5,
    OneShotRAG on whole chunks, OneShotRAG with sentence selection (same prompt budget).

    Returns ``{selection: {"docs", "facts", "tokens", "by_level": {level: facts}}}``.
    """
    from ragnet.corpus.tokens import count_tokens
    from ragnet.programs import OneShotRAG, Pack

    selections: dict[str, Callable[[str], list[Any]]] = {
        "top-5 (basic)": lambda q: index.search(q, k=5),
        "oneshot, whole chunks": OneShotRAG(index, budget=budget).retrieve,
        "oneshot, sentences": OneShotRAG(index, budget, pack=Pack(sentences=True)).retrieve,
    }
    out: dict[str, dict[str, Any]] = {}
    for name, select in selections.items():
        docs, facts, tokens, by_level = [], [], [], {}
        for q in questions:
            chunks = select(q.question)
            passages = [{"text": c.text} for c in chunks]
            docs.append(_docs_in({c.doc_id for c in chunks}, q))
            facts.append(_facts_in(passages, q))
            tokens.append(sum(count_tokens(c.text) for c in chunks))
            by_level.setdefault(q.level, []).append(facts[-1])
        out[name] = {"docs": _mean(docs), "facts": _mean(facts), "tokens": _mean(tokens),
                     "by_level": {lv: _mean(v) for lv, v in sorted(by_level.items())}}
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def run_demo(
    workdir: str | Path,
    *,
    lms: LMOptions | None = None,
    answers: int = DEFAULT_ANSWERS,
    evidence_per_level: int = 3,
    strategies: Sequence[str] | None = None,
    full: bool = False,
    budget: int = DEMO_BUDGET,
    max_turns: int = 2,
    echo: Callable[[Any], None] | None = None,
) -> dict[str, Any]:
    """Index the demo corpus, show the evidence each selection gives the reader, answer, print.

    Args:
        workdir: where the corpus, its index and the run folder (``results/``) go.
        lms: the steps' LM, the reader and their connection (default: the local model and
            ragnet's default reader for it, ``LMOptions(answer_lm="auto")``).
        answers: questions answered, among the picked questions plain top-5 gets wrong, taken
            from each level in turn (:func:`answered_questions`; levels where top-5 gets every
            question right are not answered); ``full`` answers every picked question.
        evidence_per_level: questions per level in the evidence table (no LM).
        strategies: strategy specs to answer with (default: basic, oneshot; with ``full``, all five).
        full: every strategy on every picked question.
        budget: the answer prompt's token budget of the budgeted strategies.
        max_turns: turn cap of the agent loops.
        echo: prints a line or a rich renderable (default: a rich console on stdout).

    Returns:
        The answers' evaluation summary (``ragnet.eval.report.summary``) with ``summary["evidence"]``
        (:func:`evidence_table`) and ``summary["questions"]`` (the picked questions' ids).
    """
    from ragnet.programs.registry import parse_spec

    if answers < 1:
        raise InputError("must be at least 1", argument="answers")
    if evidence_per_level < 1:
        raise InputError("must be at least 1", argument="evidence-per-level")
    strategies = list(strategies or (FULL_STRATEGIES if full else DEFAULT_STRATEGIES))
    for spec in strategies:
        parse_spec(spec)
    echo = echo if echo is not None else _console()
    workdir = Path(workdir)
    started = time.perf_counter()
    index, corpus = build_demo_index(workdir)
    echo(f"[bold]corpus[/bold] {corpus} -> {len(index)} chunks ({time.perf_counter() - started:.1f}s)")

    # 1. evidence, no LM
    picked = pick_questions(index, evidence_per_level)
    evidence = evidence_table(index, picked, budget)
    hard = [q for q in picked if top_k_misses(index, q)]
    echo(_evidence_view(evidence, picked, hard, budget))

    # 2. answers
    lms = lms if lms is not None else LMOptions(answer_lm="auto")
    lms.configure()
    reader = lms.reader_lm()
    questions = picked if full else answered_questions(hard, answers)
    evaluator = _answers_evaluator(questions, strategies, index, reader, budget=budget, max_turns=max_turns, echo=echo)
    summary = evaluator(workdir / "results", fresh=True)  # a show, not a resumable experiment: cache makes reruns fast
    summary["evidence"] = evidence
    summary["questions"] = [q.id for q in picked]
    reader_name = reader.name if reader is not None else str(getattr(get_lm(), "model", lms.lm))
    echo(_answers_view(summary, evaluator.rows, questions, reader_name, budget))
    _cache_note(evaluator.rows, echo)
    left = [s for s in FULL_STRATEGIES if s not in {parse_spec(x)[0] for x in strategies}]
    if not full:
        echo(f"left out to keep the demo to a few minutes: {', '.join(left) or 'nothing'}"
             f"{'; ' if left else ''}answers for {len(questions)} of the {len(picked)} picked questions "
             "(`--answers N` answers more). `ragnet demo --full` runs every strategy on every picked question.")
    echo(f"total {time.perf_counter() - started:.0f}s; per-question answers in "
         f"{workdir / 'results' / 'results.jsonl'}")
    return summary


def _console() -> Callable[[Any], None]:
    """Print with rich, 150 columns wide when stdout is no terminal (logs, CI: rich would
    squeeze the tables into 80)."""
    from rich.console import Console

    console = Console()
    return (console if console.is_terminal else Console(width=150)).print


def _evidence_view(evidence: dict[str, dict[str, Any]], picked: Sequence[Any], hard: Sequence[Any], budget: int) -> Any:
    """The evidence table (:func:`evidence_table`) as a rich table."""
    from rich.table import Table

    levels = sorted({q.level for q in picked})
    table = Table(title=f"evidence in the reader's context ({len(picked)} questions, top-5 misses gold evidence "
                        f"in {len(hard)}; budget {budget} tokens; no LM)")
    for col in ["selection", "gold yearbooks", "gold facts", *[f"facts L{lv}" for lv in levels], "context tokens"]:
        table.add_column(col, justify="left" if col == "selection" else "right")
    for name, row in evidence.items():
        table.add_row(name, f"{row['docs']:.0%}", f"{row['facts']:.0%}",
                      *[f"{row['by_level'].get(lv, 0):.0%}" for lv in levels], f"{row['tokens']:,.0f}")
    return table


def _answers_evaluator(questions: Sequence[Any], strategies: Sequence[str], index: Any, reader: Any, *, budget: int,
                       max_turns: int, echo: Callable[..., None]) -> Any:
    """The evaluator that answers ``questions`` with each strategy, scoring the multiple-choice
    answer and the gold facts its context held, and printing one line per answer (the demo's progress)."""
    from ragnet.demo.corpus import choice_correct
    from ragnet.eval.run.eval_settings import EvalSettings
    from ragnet.eval.run.qa_evaluator import QAEvaluator

    by_id = {q.id: q for q in questions}

    def score(record: Any, pred: Any, idx: Any) -> dict[str, float]:
        return {"correct": choice_correct(pred.answer, record),
                "gold_facts": _facts_in(pred.get("passages") or [], record)}

    def print_row(row: dict[str, Any]) -> None:
        usage = row.get("usage") or {}
        mark = "ERR" if row.get("error") else ("ok " if row.get("correct") else "no ")
        echo(f"{row['strategy']:<12} L{row['level']} {mark} {usage.get('seconds', 0):6.1f}s "
             f"{usage.get('lm_calls', 0):2d} LM calls  {by_id[row['id']].question} -> {str(row.get('answer', ''))[:60]!r}",
             highlight=False)

    settings = EvalSettings(judge=False, scorers=[score], extra_metrics=("correct", "gold_facts"),
                            primary_metric="correct", plots=False, show_progress=False)
    return QAEvaluator(
        questions, strategies, index=index, name="demo", settings=settings,
        program_factory=lambda run, idx: build_demo_program(run.spec, idx, budget=budget, max_turns=max_turns,
                                                            answer_lm=reader),
        on_row=print_row, log=lambda msg: echo(msg),
    )


def _answers_view(summary: dict[str, Any], rows: Sequence[dict[str, Any]], questions: Sequence[Any],
                  reader_name: str, budget: int) -> Any:
    """The answers table: accuracy (by level), evidence and cost of each strategy, as a rich table."""
    from rich.table import Table

    table = Table(title=f"answers: {len(questions)} questions, reader {reader_name}, budget {budget} tokens")
    answered_levels = sorted({q.level for q in questions})  # levels with no answered question get no column
    for col in ["strategy", "accuracy", *[f"L{lv}" for lv in answered_levels], "gold yearbooks", "gold facts", "LM calls",
                "tokens in", "s/question", "LM errors"]:
        table.add_column(col, justify="right" if col != "strategy" else "left")
    for label, agg in summary["strategies"].items():
        mine = [r for r in rows if r["strategy"] == label and not r.get("error")]
        by_level = summary["by_level"][label]
        table.add_row(
            label, f"{agg['correct']:.0%}",
            *[f"{(by_level.get(str(lv)) or by_level.get(lv) or {}).get('correct', 0):.0%}" for lv in answered_levels],
            f"{agg['gold_fraction'] or 0:.0%}", f"{agg['gold_facts'] or 0:.0%}",
            f"{_mean([r['usage']['lm_calls'] for r in mine]):.1f}",
            f"{_mean([r['usage']['input_tokens'] for r in mine]):,.0f}",
            f"{_mean([r['usage']['seconds'] for r in mine]):.1f}", str(agg["total_lm_errors"] + agg["errors"]),
        )
    return table


def _cache_note(rows: Sequence[dict[str, Any]], echo: Callable[..., None]) -> None:
    """Say so when LM calls came from the DSPy cache: a cached call reports no tokens and ~0 s,
    and the table is then not a timing."""
    calls = sum(r["usage"]["lm_calls"] for r in rows if r.get("usage"))
    cached = sum(r["usage"].get("cached_calls", 0) for r in rows if r.get("usage"))
    if cached:
        from ragnet.lm.config import cache_dir

        echo(f"{cached} of {calls} LM calls were answered from the DSPy cache ({cache_dir()}); tokens "
             "and seconds count the live calls only. For a timing, set RAGNET_CACHE_DIR to an empty folder.")
