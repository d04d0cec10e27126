"""``ragnet eval retrieval``: gold-evidence recall of context selections, with no LM.

For each question one candidate pool is retrieved per retrieval mode (``lam``), and every
selection rule is computed from that pool in numpy, so a few hundred questions take minutes.
A selection fills a *context* token budget (the sum of ``chunk.tokens`` of the selected
chunks; no prompt overhead), which keeps the figures comparable across programs and LMs.

Metrics per question, averaged over the questions that have gold titles:

* **all-gold recall**: every gold title has at least one chunk in the selection;
* **gold fraction**: the share of gold titles with a chunk in the selection.

Selections (``selections=``):

``top5``
    the 5 best-ranked candidates, whatever the budget.
``rank-fill``
    candidates in rank order, skipping any that no longer fit (the baseline OneShotRAG's
    knapsack must never fall below).
``rank-prefix``
    candidates in rank order, stopping at the first that does not fit.
``knapsack``
    Token-Constrained Top-Kmax (``ragnet.core.knapsack.select``, exact) on calibrated
    relevance, once per entry of ``transforms``.
``protected``
    the ``rank-prefix`` selection kept as is, then the knapsack on the leftover budget over
    the remaining candidates. It is a superset of ``rank-prefix``, so its recall can never be
    below that of the strict-prefix fill on any question.

Variants: the metadata rule filter (``rules``: drop contradicting chunks, add title/entity
matches, as OneShotRAG does) and noise removal (``noise``: ReflectiveRAG's ρ filter keeping 70 %
of the pool) are applied to the pool before selection. The full grid (selections x transforms
x budgets) runs for every ``lam``; the rule/noise variants run for top-5, rank-fill and the best
knapsack and protected transforms of that ``lam``.

Example:
    >>> import tempfile
    >>> from ragnet import Document, Index
    >>> from ragnet.eval.run.datasets import QARecord
    >>> docs = [Document(id=t, title=t, text=f"{t} is a city in Europe.") for t in ("Paris", "Rome", "Oslo")]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
    >>> questions = [QARecord(id="q1", question="Tell me about Rome", answers=["x"], gold_titles=["Rome"])]
    >>> result = run_retrieval_eval(index, questions, budgets=[100], show_progress=False)
    >>> print(format_retrieval_report(result).splitlines()[0])
    ### Gold-evidence recall: 1 questions, 3 candidates per question (search pool 100)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from ragnet.core import selection
from ragnet.core import noise as noise_mod
from ragnet.core.calibrate import TRANSFORMS as _KNOWN_TRANSFORMS
from ragnet.errors import InputError
from ragnet.eval.metrics.gold_evidence import gold_chunk_ids, gold_sentence_texts
from ragnet.eval.report.markdown_tables import DASH, markdown_table, percent
from ragnet.eval.run.evaluator import Evaluator

__all__ = [
    "DEFAULT_TRANSFORMS",
    "SELECTIONS",
    "RetrievalEvaluator",
    "format_retrieval_report",
    "gold_chunk_ids",
    "run_retrieval_eval",
]

#: Selection rules this module knows, in report order.
SELECTIONS = ("top5", "rank-fill", "rank-prefix", "knapsack", "protected")
#: Relevance calibrations compared by default: ``(transform, temperature)``.
DEFAULT_TRANSFORMS: tuple[tuple[str, float], ...] = (
    ("raw", 1.0),
    ("exp", 0.02),
    ("exp", 0.05),
    ("exp", 0.1),
    ("exp", 0.2),
    ("rank", 1.0),
    ("rank", 0.5),
)
TOP_K = 5
#: Each selection rule of this module, as a method of ``ragnet.core.selection.select`` (the
#: dispatcher ``ragnet.programs.packing.pack`` calls too).
_METHOD = {"top5": "top", "rank-fill": "rank", "rank-prefix": "rank-prefix", "knapsack": "exact",
           "protected": "protected"}


# --------------------------------------------------------------------------- pools and selections


@dataclass
class _Pool:
    """One question's candidates in rank order, as arrays."""

    tokens: np.ndarray  # int64
    scores: np.ndarray  # float64
    gold: np.ndarray  # int64: gold document index, or -1

    @classmethod
    def of(cls, chunks: Sequence[Any], gold_of: dict[str, int]) -> "_Pool":
        return cls(
            tokens=np.fromiter((max(1, int(c.tokens)) for c in chunks), dtype=np.int64, count=len(chunks)),
            scores=np.fromiter((float(c.score) for c in chunks), dtype=np.float64, count=len(chunks)),
            gold=np.fromiter((gold_of.get(c.id, -1) for c in chunks), dtype=np.int64, count=len(chunks)),
        )


def _label(transform: str, temperature: float) -> str:
    return "raw" if transform in ("raw", "linear") else f"{transform} T={temperature:g}"


def _select_all(
    pool: _Pool,
    budgets: Sequence[int],
    selections: Sequence[str],
    transforms: Sequence[tuple[str, float]],
) -> dict[tuple[str, int], np.ndarray]:
    """Every selection of ``pool``: ``{(name, budget): indices}`` (``ragnet.core.selection.select``)."""
    out: dict[tuple[str, int], np.ndarray] = {}
    rels = {_label(t, temp): selection.relevance(pool.scores, t, temp) for t, temp in transforms}
    for budget in budgets:
        for sel in selections:
            if sel in ("knapsack", "protected"):
                for t, temp in transforms:
                    label = _label(t, temp)
                    out[(f"{sel} {label}", budget)] = selection.select(pool.tokens, budget, _METHOD[sel], rel=rels[label])
            else:
                out[(sel, budget)] = selection.select(pool.tokens, budget, _METHOD[sel], k=TOP_K)
    return out


class _Tally:
    """Running sums per (mode, selection, budget) cell."""

    def __init__(self) -> None:
        self.cells: dict[tuple, dict[str, float]] = {}
        self.per_question: dict[tuple, list[int]] = {}

    def add(self, key: tuple, pool: _Pool, sel: np.ndarray, n_gold: int) -> None:
        found = np.unique(pool.gold[sel][pool.gold[sel] >= 0]).size if sel.size else 0
        all_gold = int(found == n_gold)
        cell = self.cells.setdefault(key, {"all_gold": 0.0, "gold_fraction": 0.0, "tokens": 0.0, "chunks": 0.0, "n": 0})
        cell["all_gold"] += all_gold
        cell["gold_fraction"] += found / n_gold
        cell["tokens"] += float(pool.tokens[sel].sum()) if sel.size else 0.0
        cell["chunks"] += sel.size
        cell["n"] += 1
        self.per_question.setdefault(key, []).append(all_gold)


# --------------------------------------------------------------------------- the run


def _check_args(budgets, selections, lam_values, transforms, pool, keep) -> tuple:
    try:
        budgets = tuple(int(b) for b in budgets)
    except (TypeError, ValueError):
        raise InputError(f"budgets must be whole numbers of tokens, got {budgets!r}", argument="budgets") from None
    if not budgets or any(b < 1 for b in budgets):
        raise InputError(f"budgets must be positive token counts, got {budgets!r}", argument="budgets")
    selections = (selections,) if isinstance(selections, str) else tuple(selections)
    unknown = [s for s in selections if s not in SELECTIONS]
    if unknown or not selections:
        raise InputError(
            f"unknown selection {unknown[0] if unknown else None!r}; choose from {', '.join(SELECTIONS)}",
            argument="selections",
        )
    lam_values = tuple(float(x) for x in lam_values)
    if not lam_values or any(not 0.0 <= x <= 1.0 for x in lam_values):
        raise InputError(f"lam values must lie in [0, 1], got {lam_values!r}", argument="lam_values")
    parsed = []
    for item in transforms:
        t, temp = (item, 1.0) if isinstance(item, str) else tuple(item)
        if t not in _KNOWN_TRANSFORMS:
            raise InputError(
                f"unknown transform {t!r}; choose from {', '.join(_KNOWN_TRANSFORMS)}", argument="transforms"
            )
        if not float(temp) > 0:
            raise InputError(f"temperature must be > 0, got {temp!r} for {t}", argument="transforms")
        parsed.append((t, float(temp)))
    if any(s in ("knapsack", "protected") for s in selections) and not parsed:
        raise InputError("knapsack selections need at least one transform", argument="transforms")
    if isinstance(pool, bool) or not isinstance(pool, int) or pool < 1:
        raise InputError(f"pool must be a positive integer, got {pool!r}", argument="pool")
    if not 0 < float(keep) <= 1:
        raise InputError(f"keep must be in (0, 1], got {keep!r}", argument="keep")
    return budgets, selections, lam_values, tuple(parsed)


def run_retrieval_eval(
    index: Any,
    questions: Sequence[Any],
    *,
    budgets: Sequence[int] = (1000, 2000, 4000, 8000),
    selections: Sequence[str] = SELECTIONS,
    lam_values: Sequence[float] = (0.0, 0.4),
    rules: Sequence[bool] = (False, True),
    noise: Sequence[bool] = (False, True),
    transforms: Sequence[tuple[str, float]] = DEFAULT_TRANSFORMS,
    pool: int = 100,
    search_pool: int = 100,
    max_add: int = 10,
    keep: float = 0.7,
    batch_size: int = 64,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Measure gold-evidence recall of each context selection rule; no LM is called.

    Args:
        index: a ``ragnet.Index`` holding the questions' gold documents.
        questions: ``QARecord``s (``question`` and ``gold_titles``/``gold_passage_ids``); questions
            without gold documents are skipped and counted.
        budgets: context token budgets (sum of ``chunk.tokens``).
        selections: any of ``SELECTIONS``.
        lam_values: hybrid BM25 weights to compare (0.0 = dense only).
        rules: rule-filter settings to try (``False`` is the plain grid, ``True`` a variant).
        noise: noise-removal settings to try.
        transforms: ``(transform, temperature)`` pairs for ``knapsack`` and ``protected``.
        pool: candidates kept per question (``index.search(k=pool)``); keep enough to fill the
            largest budget.
        search_pool: ``index.search``'s own ``pool`` (per-retriever candidates whose scores are
            min-max normalised together). Keep it at the value the program under study uses
            (OneShotRAG: the index default, 100), since it changes the hybrid scores.
        max_add: most chunks the rule filter adds.
        keep: share of the pool noise removal keeps.
        batch_size: questions per ``search_batch`` call.
        show_progress: tqdm bars.

    Returns:
        A JSON-compatible dict: ``rows`` (one per mode x selection x budget with ``all_gold``,
        ``gold_fraction``, ``mean_tokens``, ``mean_chunks``, and ``wins``/``losses`` against
        rank-fill of the same mode), ``best`` per mode and budget, ``dominance`` (for each
        knapsack/protected selection: is it >= rank-fill at every budget), a ``recommendation``
        for OneShotRAG, counts and ``seconds``.

    Raises:
        InputError: bad arguments or no question with gold documents.
    """
    budgets, selections, lam_values, transforms = _check_args(budgets, selections, lam_values, transforms, pool, keep)
    if isinstance(search_pool, bool) or not isinstance(search_pool, int) or search_pool < 1:
        raise InputError(f"search_pool must be a positive integer, got {search_pool!r}", argument="search_pool")
    started = time.perf_counter()
    records, golds, skipped, gold_missing = _gold_questions(questions, index)
    gold_of = [{cid: g for g, ids in enumerate(gold.values()) for cid in ids} for gold in golds]
    n_gold = [len(gold) for gold in golds]
    texts = [str(r.question).strip() for r in records]
    k = min(pool, len(index))

    t0 = time.perf_counter()
    candidates = _candidate_pools(index, texts, lam_values, k=k, search_pool=search_pool, batch_size=batch_size,
                                  show_progress=show_progress)
    search_s = time.perf_counter() - t0

    # The plain grid: every selection x transform x budget, per mode.
    t0 = time.perf_counter()
    tally = _Tally()
    with _bar(len(texts) * len(lam_values), "Selecting", show_progress) as bar:
        for lam in lam_values:
            for qi, chunks in enumerate(candidates[lam]):
                p = _Pool.of(chunks, gold_of[qi])
                for (name, budget), sel in _select_all(p, budgets, selections, transforms).items():
                    tally.add((lam, False, False, name, budget), p, sel, n_gold[qi])
                bar.update(1)
    grid_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    variants = [(r, n) for r in sorted({bool(r) for r in rules}) for n in sorted({bool(n) for n in noise}) if r or n]
    variant_sel: dict[float, list[str]] = {}
    if variants:
        variant_sel = _tally_variants(tally, index, texts, candidates, gold_of, n_gold, variants,
                                      lam_values=lam_values, budgets=budgets, selections=selections, transforms=transforms,
                                      max_add=max_add, keep=keep, show_progress=show_progress)
    variants_s = time.perf_counter() - t0

    result = _summarise(tally, records, lam_values, budgets, selections, transforms, variant_sel)
    result.update(
        questions=len(records),
        skipped_no_gold=skipped,
        gold_missing_from_index=gold_missing,
        pool=k,
        search_pool=search_pool,
        budgets=list(budgets),
        lam_values=list(lam_values),
        transforms=[[t, temp] for t, temp in transforms],
        max_add=max_add,
        keep=keep,
        seconds={
            "retrieve": round(search_s, 2),
            "grid": round(grid_s, 2),
            "variants": round(variants_s, 2),
            "total": round(time.perf_counter() - started, 2),
        },
    )
    return result


def _bar(total: int, desc: str, show_progress: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="q", disable=not show_progress)


def _gold_questions(questions: Sequence[Any], index: Any) -> tuple[list[Any], list[dict[str, list[str]]], int, int]:
    """The questions with gold documents, each one's gold chunk ids, how many questions had none
    (skipped), and how many have a gold document the index lacks.

    Raises:
        InputError: a question with gold documents has empty text, or no question has gold documents.
    """
    records, golds = [], []
    skipped = gold_missing = 0
    for rec in questions:
        gold = gold_chunk_ids(rec, index)
        if not gold:
            skipped += 1
            continue
        if not str(getattr(rec, "question", "") or "").strip():
            raise InputError(f"question {getattr(rec, 'id', '?')!r} has empty text", argument="questions")
        gold_missing += any(not ids for ids in gold.values())
        records.append(rec)
        golds.append(gold)
    if not records:
        raise InputError("no question has gold titles or passage ids to measure recall against", argument="questions")
    return records, golds, skipped, gold_missing


def _candidate_pools(index: Any, texts: Sequence[str], lam_values: Sequence[float], *, k: int, search_pool: int,
                     batch_size: int, show_progress: bool) -> dict[float, list[list[Any]]]:
    """One candidate pool per question and mode (``lam``), searched in batches."""
    candidates: dict[float, list[list[Any]]] = {}
    with _bar(len(texts) * len(lam_values), "Retrieving", show_progress) as bar:
        for lam in lam_values:
            hits: list[list[Any]] = []
            for start in range(0, len(texts), batch_size):
                part = texts[start : start + batch_size]
                hits.extend(index.search_batch(part, k=k, bm25_weight=lam, pool=search_pool))
                bar.update(len(part))
            candidates[lam] = hits
    return candidates


def _tally_variants(tally: _Tally, index: Any, texts: Sequence[str], candidates: dict[float, list[list[Any]]],
                    gold_of: Sequence[dict[str, int]], n_gold: Sequence[int], variants: Sequence[tuple[bool, bool]],
                    *, lam_values: Sequence[float], budgets: Sequence[int], selections: Sequence[str],
                    transforms: Sequence[tuple[str, float]], max_add: int, keep: float, show_progress: bool
                    ) -> dict[float, list[str]]:
    """Tally the rule / noise ``variants`` of the strongest selections of each mode (the plain
    grid's, already in ``tally``); returns those selections per mode."""
    qvecs = index.embedder.encode_queries(texts)
    trace_cls = apply_rules = None
    rule_index = _QueryVectors(index, texts, qvecs)
    if any(r for r, _ in variants):
        from ragnet.programs.stages import apply_metadata_rules as apply_rules
        from ragnet.programs.trace import Trace as trace_cls
    variant_sel: dict[float, list[str]] = {}
    with _bar(len(texts) * len(lam_values), "Rules/noise variants", show_progress) as bar:
        for lam in lam_values:
            names = _variant_selections(tally, lam, budgets, selections, transforms)
            variant_sel[lam] = names
            sel_kinds = tuple(s for s in selections if s in ("top5", "rank-fill"))
            var_transforms = _transforms_of(names, transforms)
            kinds = sel_kinds + tuple(
                s for s in ("knapsack", "protected") if any(n.startswith(s + " ") for n in names)
            )
            for qi, chunks in enumerate(candidates[lam]):
                ruled = None
                for use_rules, use_noise in variants:
                    cands = chunks
                    if use_rules:
                        if ruled is None:
                            ruled = apply_rules(
                                rule_index, texts[qi], list(chunks), trace_cls(), max_add=max_add, bm25_weight=lam
                            )
                        cands = ruled
                    if use_noise and cands:
                        kept = noise_mod.filter(qvecs[qi], index.vectors([c.id for c in cands]), keep=float(keep))
                        cands = [cands[i] for i in np.sort(kept)]
                    p = _Pool.of(cands, gold_of[qi])
                    for (name, budget), sel in _select_all(p, budgets, kinds, var_transforms).items():
                        if name in names:
                            tally.add((lam, use_rules, use_noise, name, budget), p, sel, n_gold[qi])
                bar.update(1)
    return variant_sel


class _QueryVectors:
    """The index, with ``embed_query`` answered from vectors embedded in one batch up front.

    The rule filter scores the chunks it adds by their cosine to the question; embedding each
    question again, one at a time, would cost more than the whole selection grid.
    """

    def __init__(self, index: Any, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._index = index
        self._vectors = dict(zip(texts, vectors))

    def embed_query(self, text: str) -> np.ndarray:
        vec = self._vectors.get(text)
        return vec if vec is not None else self._index.embed_query(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)


def _transforms_of(names: Iterable[str], transforms: Sequence[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    labels = {n.split(" ", 1)[1] for n in names if " " in n}
    return tuple((t, temp) for t, temp in transforms if _label(t, temp) in labels)


def _mean_all_gold(tally: _Tally, key_prefix: tuple, name: str, budgets: Sequence[int]) -> float:
    vals = [tally.cells[(*key_prefix, name, b)] for b in budgets if (*key_prefix, name, b) in tally.cells]
    return sum(c["all_gold"] / c["n"] for c in vals) / len(vals) if vals else -1.0


def _variant_selections(tally, lam, budgets, selections, transforms) -> list[str]:
    """top5, rank-fill, and the best knapsack / protected transform of this mode (plain grid)."""
    names = [s for s in ("top5", "rank-fill") if s in selections]
    for kind in ("knapsack", "protected"):
        if kind not in selections:
            continue
        best = max(
            (f"{kind} {_label(t, temp)}" for t, temp in transforms),
            key=lambda n: _mean_all_gold(tally, (lam, False, False), n, budgets),
        )
        names.append(best)
    return names


# --------------------------------------------------------------------------- summary


def _mode(lam: float, rules: bool, noise: bool) -> str:
    base = "dense" if lam == 0 else f"hybrid λ={lam:g}"
    extras = [x for x, on in (("rules", rules), ("noise", noise)) if on]
    return base + ("" if not extras else " + " + " + ".join(extras))


def _summarise(tally, records, lam_values, budgets, selections, transforms, variant_sel) -> dict[str, Any]:
    rows = []
    for key, cell in tally.cells.items():
        lam, use_rules, use_noise, name, budget = key
        base = tally.per_question.get((lam, use_rules, use_noise, "rank-fill", budget))
        mine = tally.per_question[key]
        wins = losses = None
        if base is not None:
            wins = sum(1 for a, b in zip(mine, base) if a > b)
            losses = sum(1 for a, b in zip(mine, base) if a < b)
        n = cell["n"]
        rows.append(
            {
                "mode": _mode(lam, use_rules, use_noise),
                "lam": lam,
                "rules": use_rules,
                "noise": use_noise,
                "selection": name,
                "budget": budget,
                "all_gold": round(cell["all_gold"] / n, 4),
                "gold_fraction": round(cell["gold_fraction"] / n, 4),
                "mean_tokens": round(cell["tokens"] / n, 1),
                "mean_chunks": round(cell["chunks"] / n, 2),
                "wins_vs_rank_fill": wins,
                "losses_vs_rank_fill": losses,
                "n": n,
            }
        )
    lookup = {(r["mode"], r["selection"], r["budget"]): r for r in rows}

    best: dict[str, dict[str, Any]] = {}
    for mode in dict.fromkeys(r["mode"] for r in rows):
        best[mode] = {}
        for b in budgets:
            cands = [r for r in rows if r["mode"] == mode and r["budget"] == b and r["selection"] != "top5"]
            if cands:
                top = max(cands, key=lambda r: (r["all_gold"], r["gold_fraction"]))
                best[mode][str(b)] = {"selection": top["selection"], "all_gold": top["all_gold"]}

    dominance: dict[str, dict[str, Any]] = {}
    for mode in best:
        dominance[mode] = {}
        names = sorted(
            {
                r["selection"]
                for r in rows
                if r["mode"] == mode and r["selection"].split(" ")[0] in ("knapsack", "protected")
            }
        )
        for name in names:
            margins = {}
            for b in budgets:
                mine, base = lookup.get((mode, name, b)), lookup.get((mode, "rank-fill", b))
                if mine and base:
                    margins[str(b)] = round(mine["all_gold"] - base["all_gold"], 4)
            if margins:
                dominance[mode][name] = {
                    "dominates_rank_fill": all(m >= 0 for m in margins.values()),
                    "margin": margins,
                    "mean_margin": round(sum(margins.values()) / len(margins), 4),
                }

    return {
        "rows": rows,
        "best": best,
        "dominance": dominance,
        "variant_selections": {_mode(lam, False, False): names for lam, names in variant_sel.items()},
        "recommendation": _recommend(dominance, lam_values),
    }


def _recommend(dominance: dict[str, dict[str, Any]], lam_values: Sequence[float]) -> dict[str, Any] | None:
    """The knapsack/protected selection with the best mean margin over rank-fill among those that are
    never below it, preferring the mode with the largest lam (OneShotRAG searches hybrid)."""
    for lam in sorted(lam_values, reverse=True):
        mode = _mode(lam, False, False)
        table = dominance.get(mode, {})
        safe = {n: d for n, d in table.items() if d["dominates_rank_fill"]}
        pick_from, dominated = (safe, True) if safe else (table, False)
        if not pick_from:
            continue
        name = max(pick_from, key=lambda n: (pick_from[n]["mean_margin"], n.startswith("protected")))
        kind, label = name.split(" ", 1)
        transform, _, temp = label.partition(" T=")
        return {
            "mode": mode,
            "lam": lam,
            "selection": name,
            "method": kind,
            "transform": transform,
            "temperature": float(temp) if temp else 1.0,
            "dominates_rank_fill": dominated,
            "margin": pick_from[name]["margin"],
        }
    return None


def format_retrieval_report(result: dict[str, Any]) -> str:
    """A markdown report of :func:`run_retrieval_eval`'s result.

    Each cell reads ``all-gold % (gold fraction %)``; the last columns give the mean tokens at
    the largest budget and whether a knapsack selection is at or above rank-fill at every budget.
    """
    budgets = result["budgets"]
    lines = [
        f"### Gold-evidence recall: {result['questions']} questions, {result['pool']} candidates per question "
        f"(search pool {result.get('search_pool', result['pool'])})",
        "",
        "Cells: all-gold recall % (gold fraction %) at each context budget (sum of chunk tokens).",
        "",
    ]
    header = ["mode", "selection", *(f"{b:,}" for b in budgets), "mean tokens @max", "≥ rank-fill everywhere"]
    by_key = {(r["mode"], r["selection"], r["budget"]): r for r in result["rows"]}
    table = []
    for mode in dict.fromkeys(r["mode"] for r in result["rows"]):
        names = list(dict.fromkeys(r["selection"] for r in result["rows"] if r["mode"] == mode))
        dom = result["dominance"].get(mode, {})
        for name in names:
            cells = []
            for b in budgets:
                r = by_key.get((mode, name, b))
                cells.append(DASH if r is None else f"{percent(r['all_gold'])} ({percent(r['gold_fraction'])})")
            last = by_key.get((mode, name, budgets[-1]))
            flag = ""
            if name in dom:
                flag = "yes" if dom[name]["dominates_rank_fill"] else "no"
            table.append([mode, name, *cells, str(last["mean_tokens"]) if last else DASH, flag])
    lines += markdown_table(header, table)
    lines += ["", "**Best selection per budget** (excluding top-5):", ""]
    for mode, per_budget in result["best"].items():
        parts = [f"{b}: {v['selection']} {percent(v['all_gold'])}" for b, v in per_budget.items()]
        lines.append(f"- {mode}: " + "; ".join(parts))
    rec = result.get("recommendation")
    lines.append("")
    if rec:
        margins = ", ".join(f"{b}: {percent(m, sign=True)}" for b, m in rec["margin"].items())
        verdict = "never below rank-fill" if rec["dominates_rank_fill"] else "NOT >= rank-fill at every budget"
        lines.append(
            f"**Recommendation** ({rec['mode']}): method={rec['method']}, transform={rec['transform']}, "
            f"temperature={rec['temperature']:g} — {verdict} (Δ all-gold points vs rank-fill: {margins})."
        )
        duels = [
            f"{b}: {r['wins_vs_rank_fill']}/{r['losses_vs_rank_fill']}"
            for b in budgets
            if (r := by_key.get((rec["mode"], rec["selection"], b))) and r["wins_vs_rank_fill"] is not None
        ]
        if duels:
            lines.append(f"Questions won/lost against rank-fill: {', '.join(duels)}.")
    skipped = result.get("skipped_no_gold", 0)
    missing = result.get("gold_missing_from_index", 0)
    lines.append("")
    lines.append(
        f"{skipped} question(s) without gold skipped; {missing} question(s) have a gold document missing "
        f"from the index. Time: {result['seconds']['total']} s."
    )
    return "\n".join(lines)


class RetrievalEvaluator(Evaluator):
    """:func:`run_retrieval_eval` as an :class:`~ragnet.eval.run.evaluator.Evaluator` (``ragnet eval
    retrieval``): nothing to resume (a few minutes of numpy), so the folder gets ``report.md``
    (a title, the command, :func:`format_retrieval_report`) and ``summary.json`` only.

    Args:
        index: a ``ragnet.Index`` holding the questions' gold documents.
        questions: ``QARecord``\\ s with gold titles or passage ids.
        command: the command line, written under the title of ``report.md``.
        show_progress: tqdm bars.
        **options: further arguments of :func:`run_retrieval_eval` (``budgets``, ``selections``, ...).

    Example:
        >>> import tempfile
        >>> from ragnet import Document, Index
        >>> from ragnet.eval.run.datasets import QARecord
        >>> docs = [Document(id=t, title=t, text=f"{t} is a city in Europe.") for t in ("Paris", "Rome", "Oslo")]
        >>> index = Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
        >>> questions = [QARecord(id="q1", question="Tell me about Rome", answers=["x"], gold_titles=["Rome"])]
        >>> evaluator = RetrievalEvaluator(index, questions, budgets=[100], rules=[False], noise=[False],
        ...                                show_progress=False)
        >>> summary = evaluator()
        >>> evaluator.metrics(summary)["hybrid λ=0.4/rank-fill@100/all_gold"]
        1.0
    """

    name = "retrieval"
    primary_metric = "all_gold"

    def __init__(self, index: Any, questions: Sequence[Any], *, command: str | None = None,
                 show_progress: bool = True, log: Any = None,
                 sentence_budgets: Sequence[int] | None = (512, 1000, 2000, 4000), **options: Any) -> None:
        super().__init__(log=log)
        self.index, self.questions, self.command = index, list(questions), command
        self.show_progress, self.options = show_progress, options
        self.sentence_budgets = list(sentence_budgets) if sentence_budgets else None

    def settings(self) -> dict[str, Any]:
        return {"index": str(getattr(self.index, "path", "")), "questions": len(self.questions), **self.options,
                "sentence_budgets": self.sentence_budgets, "command": self.command}

    def evaluate(self, folder: Any) -> dict[str, Any]:
        """Paragraph-level recall; plus sentence-level evidence (``summary["sentence_evidence"]``,
        :mod:`ragnet.eval.recall.sentence_recall`) when questions carry gold supporting sentences."""
        from ragnet.eval.recall.sentence_recall import run_sentence_evidence

        summary = run_retrieval_eval(self.index, self.questions, show_progress=self.show_progress, **self.options)
        if self.sentence_budgets and any(gold_sentence_texts(q) for q in self.questions):
            summary["sentence_evidence"] = run_sentence_evidence(
                self.index, self.questions, budgets=self.sentence_budgets, show_progress=self.show_progress)
        return summary

    def format_report(self, summary: dict[str, Any]) -> str:
        from ragnet.eval.recall.sentence_recall import format_sentence_report

        command = f"Command: `{self.command}`\n\n" if self.command else ""
        report = f"# Retrieval-only recall\n\n{command}{format_retrieval_report(summary)}\n"
        if summary.get("sentence_evidence"):
            report += "\n" + format_sentence_report(summary["sentence_evidence"]) + "\n"
        return report

    def metrics(self, summary: dict[str, Any]) -> dict[str, float]:
        """``{"<mode>/<selection>@<budget>/all_gold" (and /gold_fraction): value}`` for every cell."""
        out: dict[str, float] = {}
        for r in summary["rows"]:
            cell = f"{r['mode']}/{r['selection']}@{r['budget']}"
            out[f"{cell}/all_gold"] = r["all_gold"]
            out[f"{cell}/gold_fraction"] = r["gold_fraction"]
        return out
