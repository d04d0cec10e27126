"""Case builders: balanced, correctly labelled, deterministic sufficiency cases; crop cases."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from ragnet.errors import InputError
from ragnet.eval.run.datasets import QARecord
from ragnet.optimize.cases import crop_cases, qa_examples, sufficiency_cases
from tests.optimize.conftest import make_records
from tests.required import skip_or_fail


def _titles(context: str) -> list[str]:
    return [block.split("] ", 1)[1].split(":", 1)[0] for block in context.split("\n\n")]


def test_sufficiency_cases_alternate_labels_and_are_balanced(records):
    cases = sufficiency_cases(records, paragraphs=4)
    assert len(cases) == len(records)
    assert [c.verdict for c in cases[:4]] == ["Sufficient", "Refine", "Sufficient", "Refine"]
    counts = Counter(c.verdict for c in cases)
    assert counts["Sufficient"] == counts["Refine"] == 10
    odd = sufficiency_cases(records[:7], paragraphs=4)
    assert abs(sum(c.verdict == "Sufficient" for c in odd) - sum(c.verdict == "Refine" for c in odd)) == 1


def test_sufficiency_labels_follow_the_gold_paragraphs_shown(records):
    cases = sufficiency_cases(records, paragraphs=4, both=True)
    assert len(cases) == 2 * len(records)
    for case in cases:
        shown = _titles(case.context)
        gold_shown = [t for t in shown if t in case.gold_titles]
        assert len(shown) == 4  # both kinds show the same number of paragraphs
        assert sorted(gold_shown) == sorted(case.present_titles)
        if case.verdict == "Sufficient":
            assert sorted(gold_shown) == sorted(case.gold_titles) and case.missing_titles == [] and case.missing == ""
        else:
            assert len(gold_shown) == len(case.gold_titles) - 1
            assert case.missing_titles == [t for t in case.gold_titles if t not in shown]
            assert case.missing_titles[0] in case.missing
        assert set(case.inputs().keys()) == {"question", "context"}
        assert case.context.startswith("[c1] ")


def test_sufficiency_cases_are_deterministic_and_seeded(records):
    a = [c.toDict() for c in sufficiency_cases(records, seed=3)]
    assert a == [c.toDict() for c in sufficiency_cases(records, seed=3)]
    assert a != [c.toDict() for c in sufficiency_cases(records, seed=4)]


def test_sufficiency_skips_unusable_questions_and_refuses_when_none_remain(records):
    single_gold = QARecord(id="x", question="?", answers=["a"], gold_titles=["Gold 0a"], context=records[0].context)
    no_context = QARecord(id="y", question="?", answers=["a"], gold_titles=["A", "B"], context=None)
    cases = sufficiency_cases([single_gold, no_context, records[0]], paragraphs=4)
    assert [c.qid for c in cases] == ["q00"]
    with pytest.raises(InputError, match="per-question context paragraphs"):
        sufficiency_cases([single_gold, no_context])
    with pytest.raises(InputError) as err:
        sufficiency_cases(records, paragraphs=2)
    assert err.value.argument == "paragraphs"
    with pytest.raises(InputError, match="at most 3 words"):
        sufficiency_cases(records, paragraphs=4, max_words=3)  # every gold paragraph is too long


def test_crop_cases_carry_gold_sentences(records):
    cases = crop_cases(records)
    assert len(cases) == 2 * len(records)
    first = [c for c in cases if c.qid == "q00"]
    assert [c.gold_idx for c in first] == [[0], [1]]
    assert first[1].relevant_text == "GOLD fact two of q0 is here."
    assert first[1].chunk == "Filler sentence 0b. GOLD fact two of q0 is here. More filler."
    assert set(first[0].inputs().keys()) == {"question", "title", "chunk"}
    with pytest.raises(InputError, match="sentence-level gold"):
        crop_cases([QARecord(id="z", question="?", answers=["a"], context=[{"title": "T", "text": "x"}])])


def test_qa_examples_take_the_question_as_input():
    ex = qa_examples(make_records(1))[0]
    assert ex.inputs().toDict() == {"question": ex.question}
    assert ex.answers == ["answer 0"] and ex.gold_titles == ["Gold 0a", "Gold 0b"]


HOTPOT = Path(os.environ.get("RAGNET_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))


@pytest.fixture
def hotpot_questions() -> Path:
    """The HotpotQA dev questions file. Skips when it is missing, unless RAGNET_REQUIRE_LIVE=1
    (set by `make test`; CI has ../shared beside the clone), as the live-model fixture does."""
    path = HOTPOT / "hotpotqa_dev_distractor" / "questions.jsonl"
    if not path.is_file():
        skip_or_fail(f"benchmark data {path} is missing (set RAGNET_DATA)")
    return path


def test_hotpotqa_dev_cases_are_balanced_and_labelled_from_their_gold(hotpot_questions):
    from ragnet.eval.run.datasets import load_questions

    records = load_questions(hotpot_questions, split="dev", limit=60)
    cases = sufficiency_cases(records, paragraphs=4)
    counts = Counter(c.verdict for c in cases)
    assert len(cases) >= 50 and abs(counts["Sufficient"] - counts["Refine"]) <= 1
    for case in cases:
        shown = [t for t in case.gold_titles if f"] {t}: " in case.context]
        assert case.context.count("\n\n[c") == 3  # four paragraphs
        assert (case.verdict == "Sufficient") == (len(shown) == len(case.gold_titles))
        assert case.verdict == "Sufficient" or len(shown) == len(case.gold_titles) - 1
