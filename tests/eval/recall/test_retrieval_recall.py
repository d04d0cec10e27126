"""``ragnet.eval.recall.retrieval_recall``: gold recall of context selections, with no LM.

Selection rules are checked on hand-made pools; the end-to-end run uses a six-document
corpus indexed with the real bundled embedder (built once for this module).
"""

from __future__ import annotations

import numpy as np
import pytest

from ragnet.core import selection
from ragnet.corpus.types import Document
from ragnet.errors import InputError
from ragnet.eval.run.datasets import QARecord
from ragnet.eval.recall.retrieval_recall import (
    _Pool,
    _select_all,
    format_retrieval_report,
    gold_chunk_ids,
    run_retrieval_eval,
)

_DOCS = [
    ("Penicillin", "Alexander Fleming discovered penicillin in 1928, the first widely used antibiotic."),
    ("Alexander Fleming", "Alexander Fleming was a Scottish physician and microbiologist born in Darvel in 1881."),
    ("Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas."),
    ("Chess", "Chess is a strategy board game for two players on a checkered board of 64 squares."),
    ("Coffee", "Coffee is brewed from roasted beans of the Coffea plant and contains caffeine."),
    (
        "Amazon River",
        " ".join(
            [
                "The Amazon River in South America carries more water than any other river in the world.",
                "It flows through Peru, Colombia and Brazil before it reaches the Atlantic Ocean.",
                "Its basin holds the largest tropical rainforest on Earth, home to countless species.",
                "Explorers argued for centuries about where the river begins in the Andes mountains.",
            ]
        ),
    ),
]


def _q(qid: str, question: str, gold: list[str]) -> QARecord:
    return QARecord(id=qid, question=question, answers=["x"], gold_titles=gold)


QUESTIONS = [
    _q("q1", "Who discovered penicillin, and where was its discoverer born?", ["Penicillin", "Alexander Fleming"]),
    _q("q2", "Which countries does the Amazon River flow through?", ["Amazon River"]),
    _q("q3", "How high is Mount Everest?", ["Mount Everest", "Not In The Index"]),
    _q("q4", "A question without gold evidence", []),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    from ragnet.index import Index

    docs = [Document(id=title, title=title, text=text) for title, text in _DOCS]
    path = tmp_path_factory.mktemp("retrieval") / "idx"
    return Index.build(docs, path, chunk_tokens=32, overlap=0, show_progress=False)


@pytest.fixture(scope="module")
def total_tokens(index) -> int:
    return sum(c.tokens for c in index.chunks)


def _rows(result, **match):
    return [r for r in result["rows"] if all(r[k] == v for k, v in match.items())]


def _cell(result, mode, selection, budget):
    (row,) = _rows(result, mode=mode, selection=selection, budget=budget)
    return row


# --------------------------------------------------------------------------- gold mapping


def test_gold_chunk_ids_maps_titles_to_every_chunk_of_the_document(index):
    amazon = [c.id for c in index.chunks if c.doc_id == "Amazon River"]
    assert len(amazon) > 1  # the long document was split, so "at least one chunk" matters
    got = gold_chunk_ids(QUESTIONS[1], index)
    assert got == {"Amazon River": amazon}


def test_gold_chunk_ids_missing_title_maps_to_empty_and_title_fallback(index):
    got = gold_chunk_ids(QUESTIONS[2], index)
    assert got["Not In The Index"] == []
    assert got["Mount Everest"] == [c.id for c in index.chunks if c.doc_id == "Mount Everest"]
    # A key that is not a doc id but a title (any case) still matches.
    rec = _q("t", "q", ["mount EVEREST"])
    assert gold_chunk_ids(rec, index) == {"mount EVEREST": got["Mount Everest"]}


def test_gold_chunk_ids_prefers_passage_ids(index):
    rec = QARecord(id="p", question="q", answers=["x"], gold_titles=["Chess"], gold_passage_ids=["Coffee"])
    assert list(gold_chunk_ids(rec, index)) == ["Coffee"]


# --------------------------------------------------------------------------- selection rules


TOKENS = np.array([50, 40, 30, 20, 10], dtype=np.int64)
_rank_fill, _rank_prefix, _protected = selection.rank_fill, selection.rank_prefix, selection.protected


def _relevance(scores, transform, temperature):
    return selection.relevance(scores, transform, temperature)


def _knapsack(rel, tokens, budget):
    return selection.select(tokens, budget, "exact", rel=rel)


def test_rank_fill_skips_what_no_longer_fits():
    assert _rank_fill(TOKENS, 75).tolist() == [0, 3]  # 50, skip 40 and 30, take 20 (70), skip 10
    assert _rank_fill(TOKENS, 100).tolist() == [0, 1, 4]  # 50 + 40 + 10
    assert _rank_fill(TOKENS, 5).tolist() == []


def test_rank_prefix_stops_at_the_first_misfit():
    assert _rank_prefix(TOKENS, 75).tolist() == [0]
    assert _rank_prefix(TOKENS, 90).tolist() == [0, 1]
    assert _rank_prefix(TOKENS, 1000).tolist() == [0, 1, 2, 3, 4]


def test_knapsack_and_protected_by_hand():
    scores = np.array([1.0, 0.9, 0.85, 0.8, 0.12])
    rel = _relevance(scores, "raw", 1.0)
    # Budget 60: {2,3,4} = 1.77 beats {1,3} = 1.7, {2,3} = 1.65 and rank-fill's {0,4} = 1.12.
    assert sorted(_knapsack(rel, TOKENS, 60).tolist()) == [2, 3, 4]
    assert _rank_fill(TOKENS, 60).tolist() == [0, 4]
    # Protected keeps the strict prefix [0] (50 tokens), then fills the leftover 10 from items 1..4.
    assert sorted(_protected(rel, TOKENS, 60).tolist()) == [0, 4]
    # Budget 90: {1,2,3} = 2.55 beats {0,1} = 1.9 and {0,2,4} = 1.97; the prefix {0,1} uses it all.
    assert sorted(_knapsack(rel, TOKENS, 90).tolist()) == [1, 2, 3]
    assert sorted(_protected(rel, TOKENS, 90).tolist()) == [0, 1]


def test_protected_is_a_superset_of_the_strict_prefix():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        tokens = rng.integers(1, 300, size=n)
        scores = np.sort(rng.random(n))[::-1]
        budget = int(rng.integers(1, 3000))
        rel = _relevance(scores, "exp", 0.05)
        prot = set(_protected(rel, tokens, budget).tolist())
        assert set(_rank_prefix(tokens, budget).tolist()) <= prot
        assert tokens[list(prot)].sum() <= budget if prot else True


def test_every_selection_respects_the_budget_except_top5():
    rng = np.random.default_rng(1)
    transforms = (("raw", 1.0), ("exp", 0.05), ("rank", 0.5), ("linear", 1.0))
    selections = ("top5", "rank-fill", "rank-prefix", "knapsack", "protected")
    for _ in range(50):
        n = int(rng.integers(0, 40))
        pool = _Pool(
            tokens=rng.integers(1, 300, size=n).astype(np.int64),
            scores=np.sort(rng.random(n))[::-1],
            gold=np.full(n, -1, dtype=np.int64),
        )
        budgets = (1, 100, 500, 2000)
        picked = _select_all(pool, budgets, selections, transforms)
        for (name, budget), sel in picked.items():
            assert len(set(sel.tolist())) == sel.size
            if name == "top5":
                assert sel.tolist() == list(range(min(5, n)))
            else:
                assert int(pool.tokens[sel].sum()) <= budget, (name, budget)


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def result(index, total_tokens):
    return run_retrieval_eval(
        index,
        QUESTIONS,
        budgets=(1, 40, total_tokens),
        transforms=(("exp", 0.05), ("rank", 1.0)),
        show_progress=False,
    )


def test_counts_and_skips(index, result):
    assert result["questions"] == 3
    assert result["skipped_no_gold"] == 1
    assert result["gold_missing_from_index"] == 1
    assert result["pool"] == len(index)  # the whole (tiny) index is the candidate pool


def test_hand_computable_recall(result, total_tokens):
    """q1 and q2 are answerable, q3's second gold document is not in the index."""
    for mode in ("dense", "hybrid λ=0.4"):
        # Budget 1: nothing fits, nothing found.
        for name in ("rank-fill", "rank-prefix", "knapsack exp T=0.05", "protected rank T=1"):
            cell = _cell(result, mode, name, 1)
            assert (cell["all_gold"], cell["gold_fraction"], cell["mean_chunks"]) == (0.0, 0.0, 0.0)
        # The whole corpus fits: every gold document present; q3 has half its gold.
        for name in ("rank-fill", "rank-prefix", "knapsack exp T=0.05", "protected rank T=1"):
            cell = _cell(result, mode, name, total_tokens)
            assert cell["all_gold"] == pytest.approx(2 / 3, abs=1e-4)
            assert cell["gold_fraction"] == pytest.approx((1 + 1 + 0.5) / 3, abs=1e-4)
            assert cell["mean_tokens"] == total_tokens


def test_top5_ignores_the_budget(result):
    for mode in ("dense", "hybrid λ=0.4"):
        cells = _rows(result, mode=mode, selection="top5")
        assert len(cells) == 3
        assert len({(c["all_gold"], c["gold_fraction"], c["mean_tokens"], c["mean_chunks"]) for c in cells}) == 1
        assert cells[0]["mean_chunks"] == 5
        assert cells[0]["gold_fraction"] > 0  # even at a 1-token budget


def test_rank_fill_matches_a_manual_fill_over_search(index, result):
    """The middle budget, recomputed by hand from ``index.search``."""
    budget = 40
    for lam, mode in ((0.0, "dense"), (0.4, "hybrid λ=0.4")):
        all_gold, fractions = [], []
        for rec in QUESTIONS[:3]:
            used, found = 0, set()
            for chunk in index.search(rec.question, k=len(index), bm25_weight=lam):
                if used + chunk.tokens <= budget:
                    used += chunk.tokens
                    found.add(chunk.doc_id)
            hit = [t for t in rec.gold_titles if t in found]
            all_gold.append(len(hit) == len(rec.gold_titles))
            fractions.append(len(hit) / len(rec.gold_titles))
        cell = _cell(result, mode, "rank-fill", budget)
        assert cell["all_gold"] == pytest.approx(np.mean(all_gold), abs=1e-4)
        assert cell["gold_fraction"] == pytest.approx(np.mean(fractions), abs=1e-4)


def test_every_budget_is_respected_on_average(result):
    for row in result["rows"]:
        if row["selection"] != "top5":
            assert row["mean_tokens"] <= row["budget"]


def test_variants_and_summary(result):
    modes = {r["mode"] for r in result["rows"]}
    assert {"dense", "dense + rules", "dense + noise", "dense + rules + noise", "hybrid λ=0.4 + rules"} <= modes
    for mode in modes:
        assert _rows(result, mode=mode, selection="rank-fill")
    assert set(result["dominance"]["hybrid λ=0.4"]) == {
        "knapsack exp T=0.05", "knapsack rank T=1", "protected exp T=0.05", "protected rank T=1",
    }
    rec = result["recommendation"]
    assert rec is not None and rec["lam"] == 0.4 and rec["method"] in ("knapsack", "protected")
    report = format_retrieval_report(result)
    assert report.count("\n| dense | rank-fill |") == 1
    assert "| mode | selection | 1 | 40 |" in report
    assert "Recommendation" in report


def test_deterministic(index, result, total_tokens):
    again = run_retrieval_eval(
        index,
        QUESTIONS,
        budgets=(1, 40, total_tokens),
        transforms=(("exp", 0.05), ("rank", 1.0)),
        show_progress=False,
    )
    strip = lambda r: {k: v for k, v in r.items() if k != "seconds"}  # noqa: E731
    assert strip(again) == strip(result)


def test_rejects_bad_arguments(index):
    with pytest.raises(InputError, match="selection"):
        run_retrieval_eval(index, QUESTIONS, selections=("best",), show_progress=False)
    with pytest.raises(InputError, match="budgets"):
        run_retrieval_eval(index, QUESTIONS, budgets=(0,), show_progress=False)
    with pytest.raises(InputError, match="transform"):
        run_retrieval_eval(index, QUESTIONS, transforms=(("softmax", 1.0),), show_progress=False)
    with pytest.raises(InputError, match="lam"):
        run_retrieval_eval(index, QUESTIONS, lam_values=(1.5,), show_progress=False)
    with pytest.raises(InputError, match="gold"):
        run_retrieval_eval(index, [QUESTIONS[3]], show_progress=False)


def test_sentence_evidence_section_is_reported_for_sets_with_gold_sentences(tmp_path):
    from ragnet import Document, Index
    from ragnet.eval.recall.retrieval_recall import RetrievalEvaluator
    from ragnet.eval.run.datasets import QARecord

    paras = {"Rome": ["Rome is the capital of Italy.", "It has the Colosseum."],
             "Oslo": ["Oslo is the capital of Norway.", "It is cold in winter."]}
    docs = [Document(id=t, title=t, text=" ".join(s)) for t, s in paras.items()]
    index = Index.build(docs, tmp_path / "i", show_progress=False)
    context = [{"title": t, "sentences": s} for t, s in paras.items()]
    questions = [QARecord(id="q1", question="What is the capital of Italy?", answers=["Rome"], gold_titles=["Rome"],
                          gold_sentences=[["Rome", 0]], context=context),
                 QARecord(id="q2", question="Is Oslo cold?", answers=["yes"], gold_titles=["Oslo"],
                          gold_sentences=[["Oslo", 0], ["Oslo", 1]], context=context)]
    evaluator = RetrievalEvaluator(index, questions, budgets=[100], rules=[False], noise=[False],
                                   sentence_budgets=[18, 200], show_progress=False)
    summary = evaluator(tmp_path / "out")
    ev = summary["sentence_evidence"]
    assert ev["questions"] == 2 and ev["budgets"] == [18, 200]
    assert ev["recall"]["rank-fill"]["200"] == 1.0 and ev["recall"]["sentences+links"]["200"] == 1.0
    assert ev["recall"]["rank-fill"]["18"] == 0.0  # no whole paragraph fits 18 tokens
    assert ev["recall"]["sentences+links"]["18"] == 0.5  # one gold sentence does; q2 needs two
    assert all(ev["tokens"][s]["18"] <= 18 for s in ("rank-fill", "rank-cut", "knapsack", "sentences", "sentences+links"))
    report = (tmp_path / "out" / "report.md").read_text()
    assert "All gold supporting sentences in context: 2 questions" in report and "| sentences+links |" in report


def test_gold_chunk_ids_cache_follows_the_chunks_and_leaves_the_index_alone():
    import gc
    from types import SimpleNamespace as NS

    from ragnet.eval.metrics import gold_evidence

    class Toy:
        def __init__(self, chunks):
            self.chunks = chunks

    toy = Toy([NS(id="a#0", doc_id="a", title="A")])
    rec = _q("t", "q", ["A", "B"])
    assert gold_chunk_ids(rec, toy) == {"A": ["a#0"], "B": []}
    toy.chunks = toy.chunks + [NS(id="b#0", doc_id="b", title="B")]  # more chunks: the map is rebuilt
    assert gold_chunk_ids(rec, toy) == {"A": ["a#0"], "B": ["b#0"]}
    assert vars(toy) == {"chunks": toy.chunks}  # nothing hung on the index
    assert toy in gold_evidence._DOC_MAPS
    del toy
    gc.collect()
    assert len(gold_evidence._DOC_MAPS) == 0 or all(type(k).__name__ != "Toy" for k in gold_evidence._DOC_MAPS)
