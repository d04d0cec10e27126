"""Statistics of evaluation rows: percentiles, per-strategy aggregates, paired comparisons
with a sign test, and Wilson intervals for rates.

Example:
    >>> percentile([1, 2, 3, 4], 50), sign_test(9, 1) < 0.05
    (2.5, True)
    >>> [round(x, 3) for x in wilson_interval(8, 8)]
    [0.676, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragnet.eval.metrics.gold_evidence import STAGES
from ragnet.eval.metrics.row_scores import ACCURACY_KEYS, COST_KEYS, LIVE_COST_KEYS

__all__ = ["aggregate", "call_prices", "mean", "paired_bootstrap", "paired_comparison", "percentile", "priced_latency",
           "sign_test", "wilson_interval"]


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (``q`` in 0..100), None for no values.

    Example:
        >>> percentile([1, 2, 3, 4], 50), percentile([1, 2, 3, 4], 95)
        (2.5, 3.85)
    """
    xs = sorted(float(v) for v in values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo), 6)


def mean(values: Sequence[float | None]) -> float | None:
    """Mean of the values that are not None, rounded to 6 places; None when there are none.

    Example:
        >>> mean([1, None, 2]), mean([None])
        (1.5, None)
    """
    xs = [float(v) for v in values if v is not None]
    return round(sum(xs) / len(xs), 6) if xs else None


def _hist(values: Sequence[int]) -> dict[str, int]:
    out: dict[int, int] = {}
    for v in values:
        out[int(v)] = out.get(int(v), 0) + 1
    return {str(k): out[k] for k in sorted(out)}


def aggregate(rows: Sequence[dict[str, Any]], extra: Sequence[str] = ()) -> dict[str, Any]:
    """Aggregate rows of one strategy (see ``ragnet.eval.metrics.row_scores.score_prediction``; error rows
    have ``error``).

    Accuracy figures count a row whose program raised as wrong (0), so a strategy cannot gain by
    crashing on hard questions. A row whose LM failed (``error_kind == "lm"``: no key, server
    down, timeout; the answer was a fallback) is an outage, not a mistake: it is left out of
    the accuracy figures and counted in ``lm_failures`` (``scored`` is the number of rows they
    average over). Cost and latency figures use the rows that ran. ``gold_*`` average over
    questions with gold documents; ``llm_match`` is None when no row was judged.

    Args:
        rows: the rows.
        extra: further per-row accuracy fields (added by scoring hooks, e.g. ``"correct"``),
            averaged like ``em``.

    Example:
        >>> agg = aggregate([{"em": 1.0, "f1": 1.0, "contains": 1.0, "llm_match": None, "usage": {"seconds": 2}},
        ...                  {"error": "boom"}])
        >>> agg["n"], agg["errors"], agg["em"], agg["latency_p50"]
        (2, 1, 0.5, 2.0)
    """
    ok = [r for r in rows if not r.get("error")]
    scored = [r for r in rows if r.get("error_kind") != "lm"]
    n = len(rows)
    out: dict[str, Any] = {"n": n, "errors": n - len(ok), "lm_failures": n - len(scored), "scored": len(scored)}

    def acc(key: str) -> float | None:
        if not scored:
            return None
        if key == "llm_match" and not any(r.get("llm_match") is not None for r in ok):
            return None
        if key in extra and not any(key in r for r in scored):  # a hook that scores only some records
            return None
        return round(sum(float(r.get(key) or 0.0) for r in scored) / len(scored), 6)

    for key in (*ACCURACY_KEYS, *extra):
        out[key] = acc(key)
    gold_rows = [r for r in rows if (r.get("n_gold") or 0) > 0]  # error rows carry n_gold too
    out["gold_questions"] = len(gold_rows)
    out["gold_all"] = mean([r.get("gold_all") or 0.0 for r in gold_rows]) if gold_rows else None
    out["gold_fraction"] = mean([r.get("gold_fraction") or 0.0 for r in gold_rows]) if gold_rows else None
    out["redundancy"] = mean([r.get("redundancy") for r in ok])
    out["chunks"] = mean([r.get("chunks", 0) for r in ok])
    usage = [r.get("usage") or {} for r in ok]
    # DSPy's cache answers a repeated call instantly and reports no tokens, so rows that used any
    # cached call would drag the token and latency figures towards zero. Those figures use the
    # rows that made every call live (all rows when none did; ``cost_rows`` says how many).
    live = [u for u in usage if not u.get("cached_calls")]
    out["cost_all_cached"] = bool(usage) and not live  # every row used the cache: figures understate
    live = live or usage
    out["cost_rows"] = len(live)
    for key in COST_KEYS:
        source = live if key in LIVE_COST_KEYS else usage
        out[key] = mean([u.get(key, 0) or 0 for u in source])
    out["total_input_tokens"] = sum(int(u.get("input_tokens", 0) or 0) for u in usage)
    out["total_output_tokens"] = sum(int(u.get("output_tokens", 0) or 0) for u in usage)
    out["total_lm_errors"] = sum(int(u.get("lm_errors", 0) or 0) for u in usage)
    seconds = [float(u.get("seconds", 0) or 0) for u in live]
    out["latency_p50"] = percentile(seconds, 50)
    out["latency_p95"] = percentile(seconds, 95)
    out["program_seconds"] = round(sum(float(u.get("seconds", 0) or 0) for u in usage), 4)
    judged = [r["judge"] for r in ok if r.get("judge")]
    out["judge_calls"] = sum(1 for j in judged if j.get("called"))
    out["judge_seconds"] = round(sum(float(j.get("seconds", 0) or 0) for j in judged), 4)
    out["judge_fallbacks"] = sum(1 for j in judged if j.get("fallback"))
    # Sanity flag for weak judges: "match" for an answer sharing no token with any gold answer.
    out["judge_zero_f1_matches"] = sum(
        1 for r in ok if (r.get("judge") or {}).get("called") and r.get("llm_match") == 1.0 and not r.get("f1"))
    out["turns_hist"] = _hist([u.get("turns", 0) or 0 for u in usage])
    out["searches_hist"] = _hist([u.get("searches", 0) or 0 for u in usage])
    out["stages"] = _aggregate_stages(ok)
    return out


def call_prices(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each LM call's live time: ``call key -> median seconds`` over the calls that ran live in
    ``rows`` (any strategy; a row lists its calls under ``usage["calls"]``, ``ragnet.lm.usage``).

    Example:
        >>> call_prices([{"usage": {"calls": [{"key": "a", "seconds": 2.0, "cached": False},
        ...                                   {"key": "b", "seconds": 0.0, "cached": True}]}},
        ...              {"usage": {"calls": [{"key": "a", "seconds": 4.0, "cached": False}]}}])
        {'a': 3.0}
    """
    live: dict[str, list[float]] = {}
    for r in rows:
        for call in (r.get("usage") or {}).get("calls") or ():
            if not call.get("cached"):
                live.setdefault(call["key"], []).append(float(call["seconds"]))
    return {key: percentile(secs, 50) for key, secs in live.items()}


def priced_latency(rows: Sequence[dict[str, Any]], prices: dict[str, float]) -> dict[str, Any]:
    """One strategy's latency with each cache hit priced at the live time of the same call.

    DSPy's cache answers a call another strategy already made in ~0 s, so a strategy that shares
    calls with another (a router's routes with the programs it routes to, a reader prompt two
    programs build alike) looks almost free, and ``aggregate`` can only leave such rows out. Here a
    row's wall time gets, for each cached call, the live seconds that call took elsewhere
    (:func:`call_prices`) in place of its cache hit. A call the strategy itself made live in some
    row (a repeat within its own run) stays a hit, as it would run alone. A row with a hit that no
    row paid for live (cached by an earlier run) stays unpriced and is left out.

    Returns:
        ``{"rows", "of", "hits_priced", "p50", "p95", "mean"}``: rows priced (including those with
        no cached call) of the rows that ran, cache hits priced, and the seconds (None without rows).

    Example:
        >>> row = {"usage": {"seconds": 0.5, "cached_calls": 1,
        ...                  "calls": [{"key": "a", "seconds": 0.01, "cached": True}]}}
        >>> priced_latency([row, {"usage": {"seconds": 3.0}}], {"a": 10.0})["p50"]
        6.745
    """
    ok = [r for r in rows if not r.get("error")]
    own = call_prices(ok)
    seconds: list[float] = []
    hits = 0
    for r in ok:
        usage = r.get("usage") or {}
        wall = float(usage.get("seconds", 0) or 0)
        listed = [c for c in usage.get("calls") or () if c.get("cached")]
        if len(listed) != int(usage.get("cached_calls", 0) or 0):
            continue  # hits not listed: a row written before calls were kept
        cached = [c for c in listed if c["key"] not in own]
        if any(c["key"] not in prices for c in cached):
            continue  # a hit no row of this run paid for live
        seconds.append(wall + sum(prices[c["key"]] - float(c["seconds"]) for c in cached))
        hits += len(cached)
    return {"rows": len(seconds), "of": len(ok), "hits_priced": hits, "p50": percentile(seconds, 50),
            "p95": percentile(seconds, 95), "mean": mean(seconds)}


def _aggregate_stages(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per stage: mean chunks, mean gold documents present, and gold retention (gold present at
    the stage / gold present among everything retrieved, summed over questions)."""
    out: dict[str, dict[str, Any]] = {}
    retrieved_gold = sum(int((r.get("stages") or {}).get("retrieved", {}).get("gold", 0)) for r in rows)
    for stage in STAGES:
        cells = [(r.get("stages") or {}).get(stage) for r in rows]
        cells = [c for c in cells if c]
        if not cells:
            continue
        gold = sum(int(c.get("gold", 0)) for c in cells)
        entry: dict[str, Any] = {
            "questions": len(cells),
            "chunks": mean([c.get("chunks", 0) for c in cells]),
            "gold": mean([c.get("gold", 0) for c in cells]),
            "gold_retention": round(gold / retrieved_gold, 6) if retrieved_gold and len(cells) == len(rows) else None,
        }
        for extra in ("removed", "cropped", "added", "dropped", "tokens_saved"):
            if any(extra in c for c in cells):
                entry[extra] = mean([c.get(extra, 0) for c in cells])
        out[stage] = entry
    return out


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign-test p-value for paired wins/losses (ties left out).

    Example:
        >>> sign_test(9, 1) < 0.05, sign_test(3, 2) > 0.5
        (True, True)
    """
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return round(min(1.0, 2 * tail), 6)


def paired_comparison(rows: Sequence[dict[str, Any]], baseline: Sequence[dict[str, Any]], metric: str) -> dict[str, Any]:
    """Compare two strategies on the questions both answered: mean difference of ``metric``
    (error rows count 0), per-question wins/losses/ties and the sign-test p-value.

    Example:
        >>> paired_comparison([{"id": "a", "em": 1.0}], [{"id": "a", "em": 0.0}], "em")["wins"]
        1
    """
    base = {r["id"]: float(r.get(metric) or 0.0) for r in baseline if r.get("error_kind") != "lm"}
    mine = {r["id"]: float(r.get(metric) or 0.0) for r in rows if r.get("error_kind") != "lm"}
    shared = [i for i in mine if i in base]
    wins = sum(1 for i in shared if mine[i] > base[i])
    losses = sum(1 for i in shared if mine[i] < base[i])
    delta = (sum(mine[i] - base[i] for i in shared) / len(shared)) if shared else 0.0
    return {
        "metric": metric, "questions": len(shared), "delta": round(delta, 6),
        "wins": wins, "losses": losses, "ties": len(shared) - wins - losses,
        "p_value": sign_test(wins, losses),
        "bootstrap": paired_bootstrap([mine[i] - base[i] for i in shared]),
    }


def paired_bootstrap(differences: Sequence[float], *, resamples: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Paired bootstrap of a mean difference: 95% interval and two-sided p-value.

    The p-value is twice the share of resampled means on the other side of zero from the
    observed mean (at least ``1 / resamples``); ``None`` figures for no differences.

    Example:
        >>> result = paired_bootstrap([0.5, 0.2, 0.0, 0.3, 0.4, 0.1, 0.6, 0.0])
        >>> result["p_value"] < 0.05, result["low"] > 0
        (True, True)
    """
    import numpy as np

    d = np.asarray(list(differences), dtype=np.float64)
    if d.size == 0:
        return {"mean": None, "low": None, "high": None, "p_value": None, "resamples": resamples}
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    observed = float(d.mean())
    if observed == 0:
        p = 1.0
    else:
        other_side = float(np.mean(means <= 0)) if observed > 0 else float(np.mean(means >= 0))
        p = min(1.0, max(2 * other_side, 1.0 / resamples))
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": round(observed, 6), "low": round(float(low), 6), "high": round(float(high), 6),
            "p_value": round(p, 6), "resamples": resamples}


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of a proportion; None when ``n`` is 0.

    Example:
        >>> [round(x, 3) for x in wilson_interval(8, 8)]
        [0.676, 1.0]
    """
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
