"""Answer-quality metrics: SQuAD-normalised exact match and token F1, plus a lenient
"gold answer contained in prediction" match used for short generated answers.

Example:
    >>> exact_match("The Eiffel Tower!", ["eiffel tower"])
    1.0
    >>> round(f1("Paris, France", ["Paris"]), 3)
    0.667
"""

from __future__ import annotations

import math
import re
import string
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower-case, drop punctuation and articles, collapse whitespace."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, golds: Iterable[str]) -> float:
    """Best token-level F1 of the prediction against any gold answer."""
    pred = normalize_answer(prediction).split()
    return max((_f1(pred, normalize_answer(g).split()) for g in golds), default=0.0)


def contains_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when any normalised gold answer appears as a whole-word span of the normalised prediction."""
    pred = f" {normalize_answer(prediction)} "
    return float(any(normalize_answer(g) and f" {normalize_answer(g)} " in pred for g in golds))


# =========================================================================== evaluation metrics
#
# Everything below scores one program run (a ``dspy.Prediction`` with ``answer``, ``context``,
# ``trace``, ``usage``) against one benchmark record, and aggregates those scores. A record is a
# ``ragnet.eval.datasets.QARecord`` or a ``dspy.Example`` with the same fields
# (``ragnet.eval.datasets.to_examples``).

#: Pipeline stages read from a trace, in order (only those a program ran are reported).
STAGES = ("retrieved", "filter", "crop", "select", "delete", "noise", "final")
#: Cost figures copied from ``pred.usage`` into a row.
COST_KEYS = (
    "searches", "turns", "lm_calls", "cached_calls", "input_tokens", "output_tokens",
    "context_tokens", "seconds", "lm_errors",
)
#: Cost figures a DSPy cache hit understates (no tokens, ~0 s); averaged over live rows only.
_LIVE_COST_KEYS = frozenset({"input_tokens", "output_tokens", "seconds"})


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """A field of a QARecord, dspy.Example, Prediction or dict."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    try:
        value = getattr(obj, name)
    except (AttributeError, KeyError):
        return default
    return default if value is None else value


def _answers(example: Any) -> list[str]:
    answers = _get(example, "answers", None)
    if answers is None:
        answers = _get(example, "answer", [])
    return [answers] if isinstance(answers, str) else [str(a) for a in answers]


def _doc_of(chunk_id: str) -> str:
    """Document id of a chunk id ``"{doc_id}#{position}"``."""
    head, sep, tail = str(chunk_id).rpartition("#")
    return head if sep and tail.isdigit() else str(chunk_id)


def _fold(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def gold_chunks(record: Any, index: Any = None) -> dict[str, set[str]]:
    """Gold documents of ``record`` and the chunk ids that hold them: ``{gold key: {chunk ids}}``.

    Gold documents are ``gold_passage_ids`` when given and present in the index, else
    ``gold_titles`` (matched against chunk ``doc_id``, then title; see
    ``ragnet.eval.retrieval.gold_chunk_ids``). Without an index every set is empty and
    :func:`gold_present` matches the keys against the document part of chunk ids instead
    (exact for sets whose document id is the title or the passage id).

    Example:
        >>> gold_chunks({"gold_titles": ["Paris"]})
        {'Paris': set()}
    """
    passages = [str(p) for p in _get(record, "gold_passage_ids", None) or []]
    titles = [str(t) for t in _get(record, "gold_titles", None) or []]
    if index is None:
        return {k: set() for k in (passages or titles)}
    from ragnet.eval.retrieval import gold_chunk_ids

    if passages:
        found = gold_chunk_ids(_Keys(passages, []), index)
        if any(found.values()) or not titles:
            return {k: set(v) for k, v in found.items()}
    return {k: set(v) for k, v in gold_chunk_ids(_Keys(None, titles), index).items()}


@dataclass
class _Keys:
    gold_passage_ids: list[str] | None
    gold_titles: list[str]


def gold_recall(record: Any, chunk_ids: Sequence[str], index: Any = None) -> dict[str, Any]:
    """Gold-evidence recall of a context: ``{"all": 0/1, "fraction": share, "n_gold": n}``.

    ``all`` and ``fraction`` are None for a record without gold documents.

    Example:
        >>> gold_recall({"gold_titles": ["Paris", "Rome"]}, ["Paris#0", "Oslo#1"])
        {'all': 0.0, 'fraction': 0.5, 'n_gold': 2}
    """
    gold = gold_chunks(record, index)
    if not gold:
        return {"all": None, "fraction": None, "n_gold": 0}
    present = gold_present(gold, chunk_ids)
    return {"all": float(present == len(gold)), "fraction": present / len(gold), "n_gold": len(gold)}


def gold_present(gold: dict[str, set[str]], chunk_ids: Sequence[str]) -> int:
    """How many gold documents have at least one chunk among ``chunk_ids``.

    A gold key with no known chunks (no index given) matches chunk ids of its document
    (``"Paris#0"`` for ``"Paris"``, case-insensitively).

    Example:
        >>> gold_present({"Paris": set(), "Rome": {"r#0"}}, ["paris#0", "r#1"])
        1
    """
    ids = set(chunk_ids)
    docs = None
    n = 0
    for key, chunks in gold.items():
        if chunks:
            n += bool(chunks & ids)
        else:
            if docs is None:
                docs = {_fold(_doc_of(c)) for c in ids}
            n += _fold(key) in docs
    return n


def stage_retention(trace: Sequence[dict[str, Any]], context: Sequence[str],
                    gold: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """Chunks and gold documents present after each pipeline stage of one run.

    Stages (those the trace shows, in order): ``retrieved`` (every chunk any search returned),
    ``filter`` (kept + added by the last filter event), ``crop`` (same chunks; ``cropped`` counts
    the shortened ones), ``select`` (the budgeted selection), ``delete`` (the previous stage minus
    every ``chunk_delete``; ``removed`` counts them), ``noise`` (noise-removal survivors) and
    ``final`` (the answer context).

    Example:
        >>> trace = [{"step": "search", "retrieved": ["A#0", "B#0", "C#0"]},
        ...          {"step": "delete", "deleted": ["A#0"]}]
        >>> stage_retention(trace, ["B#0", "C#0"], {"A": set(), "B": set()})["delete"]
        {'chunks': 2, 'gold': 1, 'removed': 1}
    """
    out: dict[str, dict[str, int]] = {}
    retrieved = list(dict.fromkeys(c for e in trace if e.get("step") == "search" for c in e.get("retrieved") or []))
    out["retrieved"] = {"chunks": len(retrieved), "gold": gold_present(gold, retrieved)}
    current = retrieved
    filters = [e for e in trace if e.get("step") == "filter"]
    if filters:
        last = filters[-1]
        added = [a["id"] if isinstance(a, dict) else a for a in last.get("added") or []]
        current = list(dict.fromkeys(list(last.get("kept") or []) + added))
        out["filter"] = {"chunks": len(current), "gold": gold_present(gold, current),
                         "added": len(added), "dropped": len(last.get("dropped") or [])}
    crops = [e for e in trace if e.get("step") == "crop"]
    if crops:
        cropped = [c for e in crops for c in e.get("cropped") or []]
        out["crop"] = {"chunks": len(current), "gold": gold_present(gold, current), "cropped": len(cropped),
                       "tokens_saved": sum(int(c.get("tokens_before", 0)) - int(c.get("tokens_after", 0))
                                           for c in cropped if isinstance(c, dict))}
    selects = [e for e in trace if e.get("step") == "select"]
    if selects:
        current = list(selects[-1].get("kept") or [])
        out["select"] = {"chunks": len(current), "gold": gold_present(gold, current)}
    deletes = [e for e in trace if e.get("step") == "delete"]
    if deletes:
        deleted = {c for e in deletes for c in e.get("deleted") or []}
        current = [c for c in current if c not in deleted]
        out["delete"] = {"chunks": len(current), "gold": gold_present(gold, current), "removed": len(deleted)}
    noise_events = [e for e in trace if e.get("step") == "noise"]
    if noise_events:
        current = list(noise_events[-1].get("kept") or [])
        out["noise"] = {"chunks": len(current), "gold": gold_present(gold, current),
                        "removed": len(noise_events[-1].get("removed") or [])}
    out["final"] = {"chunks": len(context), "gold": gold_present(gold, context)}
    return out


def context_redundancy(index: Any, chunk_ids: Sequence[str]) -> float | None:
    """Mean pairwise cosine of the context's chunk embeddings (``core.noise.redundancy_ratio``);
    None for fewer than two chunks (undefined, left out of averages)."""
    ids = [c for c in dict.fromkeys(chunk_ids)]
    if index is None or len(ids) < 2:
        return None
    from ragnet.core.noise import redundancy_ratio

    try:
        vecs = index.vectors(ids)
    except KeyError:
        return None
    return round(float(redundancy_ratio(vecs)), 6)


# --------------------------------------------------------------------------- LLM judge


@dataclass
class JudgeResult:
    """One judge decision: ``match`` (0/1), whether the LM was ``called``, its ``seconds``,
    LM calls and tokens, and whether the judge fell back to "no match" after failures."""

    match: float
    called: bool
    seconds: float = 0.0
    lm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rationale: str = ""
    fallback: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class AnswerJudge:
    """LLM match through ``JudgeAnswer``; an exact match is a match without an LM call.

    Usable as a DSPy metric: ``AnswerJudge()(example, pred) -> 1.0 | 0.0``.

    Args:
        lm: the judge's ``dspy.LM`` (None: the configured LM).
        retries: retries of an off-format judge answer before it counts as "no match".

    Example:
        >>> AnswerJudge()({"question": "?", "answers": ["Paris"]}, {"answer": "paris"})
        1.0
    """

    def __init__(self, lm: Any = None, retries: int = 1) -> None:
        import dspy

        from ragnet.signatures.judge import JudgeAnswer

        self.lm = lm
        self.retries = retries
        self.predictor = dspy.Predict(JudgeAnswer, max_tokens=160)

    def judge(self, question: str, answers: Sequence[str], prediction: str) -> JudgeResult:
        """Decide one answer; see the class docstring."""
        if exact_match(prediction, answers):
            return JudgeResult(match=1.0, called=False, rationale="exact match")
        if not str(prediction or "").strip():
            return JudgeResult(match=0.0, called=False, rationale="empty prediction")
        import contextlib

        import dspy

        from ragnet.lm.usage import track_usage
        from ragnet.signatures.judge import run_judge

        started = time.perf_counter()
        ctx = dspy.context(lm=self.lm) if self.lm is not None else contextlib.nullcontext()
        with ctx, track_usage() as meter:
            out = run_judge(self.predictor, question, list(answers), str(prediction), trace=None, retries=self.retries)
        usage = meter.to_dict()
        return JudgeResult(
            match=float(bool(out.match)), called=True, seconds=round(time.perf_counter() - started, 4),
            lm_calls=usage["lm_calls"], input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
            rationale=str(getattr(out, "rationale", "") or ""), fallback=bool(getattr(out, "fallback", False)),
        )

    def __call__(self, example: Any, pred: Any, trace: Any = None) -> float:
        return self.judge(str(_get(example, "question", "")), _answers(example), str(_get(pred, "answer", ""))).match


# --------------------------------------------------------------------------- DSPy metrics


def em_metric(example: Any, pred: Any, trace: Any = None) -> float:
    """DSPy metric: exact match of ``pred.answer`` against ``example.answers``.

    Example:
        >>> em_metric({"answers": ["Paris"]}, {"answer": "Paris."})
        1.0
    """
    return exact_match(str(_get(pred, "answer", "")), _answers(example))


def f1_metric(example: Any, pred: Any, trace: Any = None) -> float:
    """DSPy metric: token F1 of ``pred.answer`` against ``example.answers``."""
    return f1(str(_get(pred, "answer", "")), _answers(example))


def contains_metric(example: Any, pred: Any, trace: Any = None) -> float:
    """DSPy metric: a gold answer appears as a whole-word span of ``pred.answer``."""
    return contains_match(str(_get(pred, "answer", "")), _answers(example))


def gold_recall_metric(example: Any, pred: Any, trace: Any = None, *, index: Any = None) -> float:
    """DSPy metric: 1.0 when every gold document has a chunk in ``pred.context`` (0.0 without gold).

    Example:
        >>> gold_recall_metric({"gold_titles": ["Paris"]}, {"context": ["Paris#0"]})
        1.0
    """
    value = gold_recall(example, list(_get(pred, "context", []) or []), index)["all"]
    return float(value or 0.0)


def gold_fraction_metric(example: Any, pred: Any, trace: Any = None, *, index: Any = None) -> float:
    """DSPy metric: share of gold documents with a chunk in ``pred.context``."""
    value = gold_recall(example, list(_get(pred, "context", []) or []), index)["fraction"]
    return float(value or 0.0)


def stage_gold_metric(stage: str, index: Any = None):
    """A DSPy metric: the share of the example's gold documents still present after ``stage``
    (one of :data:`STAGES`) in ``pred.trace``; 0.0 when the run has no such stage.

    Example:
        >>> m = stage_gold_metric("retrieved")
        >>> m({"gold_titles": ["A", "B"]}, {"trace": [{"step": "search", "retrieved": ["A#0"]}], "context": []})
        0.5
    """
    if stage not in STAGES:
        from ragnet.errors import InputError

        raise InputError(f"unknown stage {stage!r}; choose from {', '.join(STAGES)}", argument="stage")

    def metric(example: Any, pred: Any, trace: Any = None) -> float:
        gold = gold_chunks(example, index)
        if not gold:
            return 0.0
        stages = stage_retention(list(_get(pred, "trace", []) or []), list(_get(pred, "context", []) or []), gold)
        cell = stages.get(stage)
        return cell["gold"] / len(gold) if cell else 0.0

    metric.__name__ = f"gold_after_{stage}"
    return metric


def redundancy_metric(index: Any):
    """A DSPy metric (lower is better) scoring the redundancy of ``pred.context`` in ``index``."""

    def metric(example: Any, pred: Any, trace: Any = None) -> float:
        value = context_redundancy(index, list(_get(pred, "context", []) or []))
        return float(value or 0.0)

    metric.__name__ = "redundancy"
    return metric


def usage_metric(key: str):
    """A DSPy metric returning one cost figure of ``pred.usage`` (e.g. ``"lm_calls"``, ``"seconds"``)."""

    def metric(example: Any, pred: Any, trace: Any = None) -> float:
        return float((_get(pred, "usage", {}) or {}).get(key, 0) or 0)

    metric.__name__ = f"usage_{key}"
    return metric


# --------------------------------------------------------------------------- one row


def score_prediction(record: Any, pred: Any, index: Any = None, judge: AnswerJudge | None = None) -> dict[str, Any]:
    """Every metric of one run, as a JSON-ready dict (one line of ``results.jsonl``).

    Keys: ``answer, em, f1, contains, llm_match`` (None without a judge), ``judge`` (a
    :class:`JudgeResult` dict or None), ``gold_all, gold_fraction, n_gold``, ``stages`` (see
    :func:`stage_retention`), ``redundancy``, ``chunks``, and the cost figures of ``COST_KEYS``
    under ``usage``.
    """
    answer = str(_get(pred, "answer", "") or "")
    answers = _answers(record)
    context = [str(c) for c in _get(pred, "context", []) or []]
    trace = list(_get(pred, "trace", []) or [])
    usage = dict(_get(pred, "usage", {}) or {})
    gold = gold_chunks(record, index)
    present = gold_present(gold, context)
    row: dict[str, Any] = {
        "answer": answer,
        "em": exact_match(answer, answers),
        "f1": round(f1(answer, answers), 6),
        "contains": contains_match(answer, answers),
        "llm_match": None,
        "judge": None,
        "gold_all": float(present == len(gold)) if gold else None,
        "gold_fraction": round(present / len(gold), 6) if gold else None,
        "n_gold": len(gold),
        "stages": stage_retention(trace, context, gold),
        "redundancy": context_redundancy(index, context),
        "chunks": len(context),
        "usage": {k: usage.get(k, 0) for k in COST_KEYS},
    }
    if judge is not None:
        result = judge.judge(str(_get(record, "question", "")), answers, answer)
        row["llm_match"] = result.match
        row["judge"] = result.to_dict()
    return row


# --------------------------------------------------------------------------- aggregates


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


def _mean(values: Sequence[float | None]) -> float | None:
    xs = [float(v) for v in values if v is not None]
    return round(sum(xs) / len(xs), 6) if xs else None


def _hist(values: Sequence[int]) -> dict[str, int]:
    out: dict[int, int] = {}
    for v in values:
        out[int(v)] = out.get(int(v), 0) + 1
    return {str(k): out[k] for k in sorted(out)}


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate rows of one strategy (see :func:`score_prediction`; error rows have ``error``).

    Accuracy figures count an error row as wrong (0), so a strategy cannot gain by crashing
    on hard questions; cost and latency figures use the rows that ran. ``gold_*`` average over
    questions with gold documents; ``llm_match`` is None when no row was judged.

    Example:
        >>> agg = aggregate([{"em": 1.0, "f1": 1.0, "contains": 1.0, "llm_match": None, "usage": {"seconds": 2}},
        ...                  {"error": "boom"}])
        >>> agg["n"], agg["errors"], agg["em"], agg["latency_p50"]
        (2, 1, 0.5, 2.0)
    """
    ok = [r for r in rows if not r.get("error")]
    n = len(rows)
    out: dict[str, Any] = {"n": n, "errors": n - len(ok)}

    def acc(key: str) -> float | None:
        if not rows:
            return None
        if key == "llm_match" and not any(r.get("llm_match") is not None for r in ok):
            return None
        return round(sum(float(r.get(key) or 0.0) for r in rows) / n, 6)

    for key in ("em", "f1", "contains", "llm_match"):
        out[key] = acc(key)
    gold_rows = [r for r in rows if (r.get("n_gold") or 0) > 0]  # error rows carry n_gold too
    out["gold_questions"] = len(gold_rows)
    out["gold_all"] = _mean([r.get("gold_all") or 0.0 for r in gold_rows]) if gold_rows else None
    out["gold_fraction"] = _mean([r.get("gold_fraction") or 0.0 for r in gold_rows]) if gold_rows else None
    out["redundancy"] = _mean([r.get("redundancy") for r in ok])
    out["chunks"] = _mean([r.get("chunks", 0) for r in ok])
    usage = [r.get("usage") or {} for r in ok]
    # DSPy's cache answers a repeated call instantly and reports no tokens, so rows that used any
    # cached call would drag the token and latency figures towards zero. Those figures use the
    # rows that made every call live (all rows when none did; ``cost_rows`` says how many).
    live = [u for u in usage if not u.get("cached_calls")]
    out["cost_all_cached"] = bool(usage) and not live  # every row used the cache: figures understate
    live = live or usage
    out["cost_rows"] = len(live)
    for key in COST_KEYS:
        source = live if key in _LIVE_COST_KEYS else usage
        out[key] = _mean([u.get(key, 0) or 0 for u in source])
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
            "chunks": _mean([c.get("chunks", 0) for c in cells]),
            "gold": _mean([c.get("gold", 0) for c in cells]),
            "gold_retention": round(gold / retrieved_gold, 6) if retrieved_gold and len(cells) == len(rows) else None,
        }
        for extra in ("removed", "cropped", "added", "dropped", "tokens_saved"):
            if any(extra in c for c in cells):
                entry[extra] = _mean([c.get(extra, 0) for c in cells])
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
    (error rows count 0), per-question wins/losses/ties and the sign-test p-value."""
    base = {r["id"]: float(r.get(metric) or 0.0) for r in baseline}
    mine = {r["id"]: float(r.get(metric) or 0.0) for r in rows}
    shared = [i for i in mine if i in base]
    wins = sum(1 for i in shared if mine[i] > base[i])
    losses = sum(1 for i in shared if mine[i] < base[i])
    delta = (sum(mine[i] - base[i] for i in shared) / len(shared)) if shared else 0.0
    return {
        "metric": metric, "questions": len(shared), "delta": round(delta, 6),
        "wins": wins, "losses": losses, "ties": len(shared) - wins - losses,
        "p_value": sign_test(wins, losses),
    }
