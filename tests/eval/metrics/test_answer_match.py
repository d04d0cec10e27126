"""Answer metrics: SQuAD normalisation plus dspy's Unicode NFD step, checked against dspy's own
``normalize_text`` and against stored result rows (the step changes no stored figure): a sample of
25 rows of every results folder, kept in ``tests/eval/data`` since the rows left docs/results, and
any full row files a checkout has (``python -m benchmarks.fetch_rows`` restores them)."""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import pytest
from dspy.evaluate.metrics import normalize_text

from ragnet.eval.metrics.answer_match import contains_match, exact_match, f1, normalize_answer

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = Path(__file__).resolve().parent / "data" / "result_rows.jsonl.gz"
COMMITTED = sorted([SAMPLE, *(ROOT / "docs" / "results").glob("*/results.jsonl"),
                    *(ROOT / "docs" / "results").glob("*/results.jsonl.gz")])


def test_composed_and_decomposed_accents_now_match():
    composed, decomposed = "Ren\u00e9e Fleming", "Rene\u0301e Fleming"
    assert composed != decomposed and unicodedata.normalize("NFD", composed) == decomposed
    assert exact_match(composed, [decomposed]) == 1.0
    assert f1(f"{composed} sang", [decomposed]) == pytest.approx(0.8)
    assert contains_match(f"It was {decomposed}.", [composed]) == 1.0
    assert exact_match("Zo\u00eb", ["Zoe\u0308"]) == 1.0 and exact_match("Zo\u00eb", ["Zoe"]) == 0.0  # accents kept


@pytest.mark.parametrize("text", [
    "The Eiffel Tower!", "  a  b   c ", "Ca\u0301diz, Spain", "Señor Frogs", "An apple a day", "Ŧhe ÅNSWER.",
    "U.S.A. (1776)", "naïve café", "theatre", "",
])
def test_normalisation_is_dspys(text):
    assert normalize_answer(text) == normalize_text(text)


def test_committed_em_and_f1_are_unchanged():
    checked = 0
    for path in COMMITTED:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
        for line in text.splitlines():
            row = json.loads(line)
            if row.get("error") or "answers" not in row or "em" not in row:
                continue  # laziness rows, error rows
            where = (row.get("folder", path.parent.name), row["id"])
            if any(g.strip() and not normalize_answer(g) for g in row["answers"]):
                continue  # a punctuation-only gold ("||"): compared as written since rows stored before could not match it
            assert exact_match(row["answer"], row["answers"]) == row["em"], where
            assert round(f1(row["answer"], row["answers"]), 6) == row["f1"], where
            if "contains" in row:
                assert contains_match(row["answer"], row["answers"]) == row["contains"], where
            checked += 1
    assert checked >= 400


@pytest.mark.parametrize("answer, golds, em, contains", [
    ("||", ["||"], 1.0, 1.0),
    ("Write `||` before them.", ["||"], 0.0, 1.0),
    ("|||", ["||"], 0.0, 0.0),
    ("$", ["||"], 0.0, 0.0),  # two different punctuation-only answers were once an exact match (both normalise to "")
    ("'^$'", ["^$"], 1.0, 1.0),
])
def test_punctuation_only_gold_answers_are_compared_as_written(answer, golds, em, contains):
    assert exact_match(answer, golds) == em
    assert contains_match(answer, golds) == contains
    assert f1(answer, golds) == em


@pytest.mark.parametrize("answer, golds, strict", [
    # the dev set's answers the lenient match takes and a reader's user would not
    ("depth", ["-depth"], 0.0), ("t", ["-t", "--no-time-strict"], 0.0), ("wget@", ["-wget@"], 0.0),
    ("0", ["-1"], 0.0), ("1", ["-1"], 0.0), ("16", ["1.6"], 0.0),
    # and the ones it should keep: quotes, case, a sentence around the answer, a Unicode minus
    ("The '--sandbox' option rejects such scripts.", ["--sandbox"], 1.0), ("-T", ["-t"], 1.0),
    ("A NUM of \u22121 is treated as infinity", ["\u22121", "-1"], 1.0), ("Since: 1.6.", ["1.6"], 1.0),
    ("'$d;N'", ["$d;N"], 1.0), ("Use || here", ["||"], 1.0), ("the ~/.ssh/config file.", ["~/.ssh/config"], 1.0),
    ("file name, line number, byte offset", ["file name, line number, and byte offset"], 0.0),
])
def test_the_strict_match_keeps_signs_dashes_and_points(answer, golds, strict):
    from ragnet.eval.metrics.answer_match import strict_contains_match

    assert strict_contains_match(answer, golds) == strict
    assert strict <= contains_match(answer, golds)  # strict never takes an answer the lenient match refuses


def test_optimize_can_compile_against_the_strict_match():
    import dspy

    from ragnet.eval.metrics.program_metrics import PROGRAM_METRICS, program_metric

    metric = program_metric("strict")
    gold = dspy.Example(question="Default of --max-count?", answers=["-1"]).with_inputs("question")
    assert "strict" in PROGRAM_METRICS and metric.name == "strict"
    assert metric(gold, dspy.Prediction(answer="It is -1.")) == 1.0
    one = dspy.Prediction(answer="1")
    assert metric(gold, one) == 0.0 and program_metric("contains")(gold, one) == 1.0
