"""``ragnet bench update`` on a tiny folder: the figures it reports, and the update equal to a full build."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fpdf")


def test_update_bench_reports_the_update_and_the_full_build(tmp_path):
    from ragnet.bench.update import run_update_bench

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": f"Paragraph {i} tells of the town of Vel{i} and its river, "
                                                  f"which floods every spring since {1800 + i}."}) + "\n"
                              for i in range(40)))
    result = run_update_bench(tmp_path / "work", pdfs=3, pages=2, paragraphs=2, corpus=corpus, check=True,
                              log=lambda _: None)
    assert result["update"]["changed"] == 1 and result["update"]["unchanged"] == 2
    assert 0 < result["update"]["chunks_embedded"] <= result["chunks_after"]
    assert result["noop_written"] is False and result["full_build_s"] > 0 and result["update_s"] > 0
    assert "embed_s" in result["update_phases_s"]
    assert result["check"]["same_top10_ids"] == result["check"]["queries"]


def test_the_pdf_text_comes_from_the_corpus_paragraphs_it_can_use(tmp_path):
    """The helpers ``ragnet bench update`` and the PDF ingestion study (``benchmarks/``) share."""
    from ragnet.bench.update import corpus_paragraphs, drawable
    from ragnet.errors import InputError

    long = " ".join(f"word{i}" for i in range(400))  # > 1,200 characters: cut at a word
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"text": t}) for t in
                                ["too short to use", "  eight   words make a paragraph we can use  ", long]) + "\n")
    paras = corpus_paragraphs(corpus, 5)
    assert paras[0] == "eight words make a paragraph we can use" and len(paras) == 5
    assert len(paras[1]) <= 1200 and long.startswith(paras[1] + " ")  # cut between two words
    assert paras[2:] == paras[:2] + paras[:1]  # a small corpus is cycled
    assert drawable(["plain text"]) == ["plain text"]
    (tmp_path / "empty.jsonl").write_text(json.dumps({"text": "short"}) + "\n")
    with pytest.raises(InputError, match="no paragraphs of at least 8 words"):
        corpus_paragraphs(tmp_path / "empty.jsonl", 3)
