"""One row of ``results.jsonl``: every metric of one program run on one question.

:func:`score_prediction` scores a ``dspy.Prediction`` (``answer``, ``context``, ``trace``,
``usage``) against a benchmark record (a ``QARecord``, a ``dspy.Example`` with the same
fields, or anything with ``question``/``answers`` and gold fields): answer metrics
(:mod:`ragnet.eval.metrics.answer_match`), the judge (:mod:`ragnet.eval.metrics.llm_judge`), evidence metrics
(:mod:`ragnet.eval.metrics.gold_evidence`) and the cost figures of ``pred.usage``. :func:`error_scores`
gives a failed run the same fields, all wrong.

Example:
    >>> row = score_prediction({"answers": ["Rome"], "gold_titles": ["Rome"]},
    ...                        {"answer": "Rome.", "context": ["Rome#0", "Oslo#0"], "trace": [], "usage": {}})
    >>> row["em"], row["gold_all"], row["chunks"], row["usage"]["lm_calls"]
    (1.0, 1.0, 2, 0)
"""

from __future__ import annotations

from typing import Any

from ragnet.eval.metrics.answer_match import contains_match, exact_match, f1
from ragnet.eval.metrics.gold_evidence import context_redundancy, gold_chunks, gold_present, stage_retention
from ragnet.eval.metrics.llm_judge import AnswerJudge
from ragnet.eval.run.records import get_field, gold_answers

__all__ = ["ACCURACY_KEYS", "COST_KEYS", "LIVE_COST_KEYS", "error_scores", "score_prediction"]

#: Per-question accuracy figures of a row (an error row has them all at 0).
ACCURACY_KEYS = ("em", "f1", "contains", "llm_match")
#: Cost figures copied from ``pred.usage`` into a row.
COST_KEYS = (
    "searches", "turns", "lm_calls", "cached_calls", "input_tokens", "output_tokens",
    "context_tokens", "seconds", "lm_errors",
)
#: Cost figures a DSPy cache hit understates (no tokens, ~0 s); averaged over live rows only.
LIVE_COST_KEYS = frozenset({"input_tokens", "output_tokens", "seconds"})


def score_prediction(record: Any, pred: Any, index: Any = None, judge: AnswerJudge | None = None) -> dict[str, Any]:
    """Every metric of one run, as a JSON-ready dict (one line of ``results.jsonl``).

    Keys: ``answer, em, f1, contains, llm_match`` (None without a judge), ``judge`` (a
    ``JudgeResult`` dict or None), ``gold_all, gold_fraction, n_gold``, ``stages`` (see
    ``ragnet.eval.metrics.gold_evidence.stage_retention``), ``redundancy``, ``chunks``, and the cost
    figures of ``COST_KEYS`` under ``usage``, with its LM calls' keys and seconds under
    ``usage["calls"]`` when the program's usage lists them (``ragnet.lm.usage.UsageMeter``).
    """
    answer = str(get_field(pred, "answer", "") or "")
    answers = gold_answers(record)
    context = [str(c) for c in get_field(pred, "context", []) or []]
    trace = list(get_field(pred, "trace", []) or [])
    usage = dict(get_field(pred, "usage", {}) or {})
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
    if usage.get("calls"):  # each LM call's key and seconds: prices cache hits (stats.priced_latency)
        row["usage"]["calls"] = [{"key": c["key"], "seconds": c["seconds"], "cached": c["cached"]}
                                 for c in usage["calls"]]
    if judge is not None:
        result = judge.judge(str(get_field(record, "question", "")), answers, answer)
        row["llm_match"] = result.match
        row["judge"] = result.to_dict()
    return row


def error_scores(record: Any, *, judged: bool) -> dict[str, Any]:
    """The scores of a run that raised: every accuracy figure 0 (it counts as wrong), gold
    recall 0 over the record's gold documents, ``llm_match`` None when nothing is judged.

    Example:
        >>> error_scores({"gold_titles": ["A", "B"]}, judged=False)["n_gold"]
        2
    """
    return {"n_gold": len(gold_chunks(record)), "em": 0.0, "f1": 0.0, "contains": 0.0,
            "llm_match": 0.0 if judged else None, "gold_all": 0.0, "gold_fraction": 0.0}
