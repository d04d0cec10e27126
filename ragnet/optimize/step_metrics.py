"""Step metrics: what an optimizer compiles one step against (``ragnet optimize --step``).

Each is a :class:`~ragnet.eval.metrics.program_metrics.Metric`, the type of the whole-program
metrics (``f1``, ``em``, ``llm_match``, ``recall``, ...: :func:`~ragnet.eval.metrics.program_metrics.program_metric`,
shared with ``ragnet eval``). ``verdict_metric`` and ``crop_metric`` score one step on the cases
built by :mod:`ragnet.optimize.cases`; ``hop_metric`` scores a follow-up query by a real search
of the index.

Example:
    >>> import dspy
    >>> verdict_metric()(dspy.Example(verdict="Refine"), dspy.Prediction(verdict="Sufficient"), trace=[])
    False
    >>> crop_score(["A is 1.", " B is 2.", " C is 3."], [1], "B is 2. C is 3.")["score"]
    0.8333333333333334
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragnet._text import normalize_text
from ragnet.eval.metrics.program_metrics import Metric

__all__ = ["condense_metric", "condense_score", "crop_metric", "crop_score", "hop_metric", "verdict_metric"]


# ----------------------------------------------------------------------------- step metrics


def _verdict_feedback(example: Any, pred: Any, value: float) -> str:
    gold, said = example.get("verdict"), pred.get("verdict")
    present = ", ".join(example.get("present_titles") or []) or "none"
    if gold == "Sufficient":
        why = (f"every paragraph the question needs is in the context (gold paragraphs: {present}), so the "
               f"answer can be stated from the context alone")
    else:
        missing = ", ".join(example.get("missing_titles") or []) or "one gold paragraph"
        why = (f"the paragraph about {missing} is not in the context, so one step of the question cannot be "
               f"answered from it; related paragraphs about other entities do not count")
    verdict = "correct" if value >= 1.0 else "wrong"
    return f"The verdict {said!r} is {verdict}: the right verdict is {gold!r} because {why}."


def verdict_metric() -> Metric:
    """Sufficiency step: 1.0 when the predicted verdict equals the case's gold ``verdict``.

    Example:
        >>> import dspy
        >>> verdict_metric()(dspy.Example(verdict="Refine"), dspy.Prediction(verdict="Refine"))
        1.0
    """
    return Metric("verdict_accuracy", lambda ex, pred: float(pred.get("verdict") == ex.get("verdict")),
                  threshold=1.0, feedback=_verdict_feedback)


def crop_score(sentences: Sequence[str], gold_idx: Sequence[int], output: str, *, beta: float = 2.0) -> dict[str, float]:
    """Crop quality against gold sentences: recall, precision and their F-beta (recall-weighted).

    A source sentence counts as kept when its (whitespace-normalised, case-folded) text occurs
    in ``output``. ``recall`` = kept gold / gold; ``precision`` = kept gold / kept, so keeping
    the whole chunk is penalised by the share of non-gold sentences; ``score`` is F-beta with
    beta = 2 (losing evidence costs more than keeping a spare sentence), 0 when no gold sentence
    is kept.

    Example:
        >>> s = ["A is 1.", " B is 2.", " C is 3.", " D is 4."]
        >>> crop_score(s, [1], "A is 1. B is 2. C is 3. D is 4.")   # kept everything
        {'recall': 1.0, 'precision': 0.25, 'score': 0.625}
    """
    out = normalize_text(output)
    kept = {i for i, s in enumerate(sentences) if normalize_text(s) and normalize_text(s) in out}
    gold = {int(i) for i in gold_idx if 0 <= int(i) < len(sentences)}
    hit = len(kept & gold)
    recall = hit / len(gold) if gold else 0.0
    precision = hit / len(kept) if kept else 0.0
    b2 = beta * beta
    score = (1 + b2) * precision * recall / (b2 * precision + recall) if hit else 0.0
    return {"recall": recall, "precision": precision, "score": score}


def _crop_feedback(example: Any, pred: Any, value: float) -> str:
    detail = crop_score(example.sentences, example.gold_idx, str(pred.get("relevant_text", "") or ""))
    gold = " ".join(example.sentences[i].strip() for i in example.gold_idx)
    return (f"Score {value:.2f} (recall {detail['recall']:.2f}, precision {detail['precision']:.2f}). The sentences "
            f"that answer the question are: {gold!r}. Copy those verbatim and leave out the rest.")


def crop_metric() -> Metric:
    """Crop step: :func:`crop_score` of ``pred.relevant_text`` against the case's gold sentences."""
    return Metric(
        "crop_f2",
        lambda ex, pred: crop_score(ex.sentences, ex.gold_idx, str(pred.get("relevant_text", "") or ""))["score"],
        threshold=0.8,
        feedback=_crop_feedback,
    )


def _hop_feedback(example: Any, pred: Any, value: float) -> str:
    query = pred.get("best") or "(none)"
    if value >= 1.0:
        return f"The query {query!r} found the missing document."
    return (f"The query {query!r} did not find the missing document. The context names "
            f"{example.get('entity')!r}, which the question does not name: search for that name.")


def hop_metric(index: Any = None, k: int = 5) -> Metric:
    """Rewrite step: 1.0 when searching the step's ``best`` query (``k`` chunks, the case's first
    context left out) retrieves a gold document the first context lacked (the hop recall of
    ``ragnet eval hops``, one query per case).

    Example:
        >>> hop_metric().name
        'hop_recall'
    """
    from ragnet.eval.recall.hop_recall import hop_hit

    def score(example: Any, pred: Any) -> float:
        if index is None:
            raise ValueError("hop_metric needs the index the cases were built on")
        missing = {key: set(ids) for key, ids in (example.get("missing") or {}).items()}
        return float(hop_hit(index, pred.get("best"), missing, example.get("exclude") or (), k=k))

    return Metric("hop_recall", score, threshold=1.0, feedback=_hop_feedback)


def condense_score(gold: str, rewrite: str, follow_up: str) -> float:
    """A standalone rewrite of ``follow_up`` against the ``gold`` one: the mean of two recalls, of
    the terms the conversation supplies (the gold's terms the follow-up lacks: what "it" stands
    for) and of the terms the follow-up asks with that the gold keeps (what is asked). A rewrite
    that restates the earlier question scores the first and loses the second.

    Example:
        >>> gold = "What is the long form of flex's -d option?"
        >>> condense_score(gold, "What is the long form of the flex -d option?", "And its long form?")
        1.0
        >>> condense_score(gold, "What does flex's -d option do?", "And its long form?")
        0.5
    """
    from ragnet.signatures.condense import asked_terms

    wanted, asked, said = asked_terms(gold), asked_terms(follow_up), asked_terms(rewrite)
    supplied, kept = wanted - asked, wanted & asked
    recalls = [len(part & said) / len(part) for part in (supplied, kept) if part]
    return sum(recalls) / len(recalls) if recalls else 1.0


def condense_metric() -> Metric:
    """Condense step: :func:`condense_score` of the rewrite against the case's standalone question
    (a demo needs 0.8)."""
    return Metric("condense_terms", lambda ex, pred: condense_score(ex.get("standalone_question") or "",
                                                                    pred.get("standalone_question") or "",
                                                                    ex.get("question") or ""), threshold=0.8)
