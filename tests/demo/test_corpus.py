"""Tests for the synthetic yearbook corpus and its four-level questions."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from ragnet.demo.corpus import (
    CITIES,
    GAZETTEER,
    YEARS,
    DemoQuestion,
    demo_questions,
    generate_questions,
    generate_yearbooks,
    write_demo_corpus,
    write_demo_questions,
)
from ragnet.corpus.tokens import count_tokens
from ragnet.errors import InputError

NUMBER = re.compile(r"(?<![\w.,])[+-]?\d+(?:,\d{3})*(?:\.\d+)?")
SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z])")


@pytest.fixture(scope="module")
def docs():
    return generate_yearbooks()


@pytest.fixture(scope="module")
def by_id(docs):
    return {d.id: d for d in docs}


@pytest.fixture(scope="module", params=[0, 1, 7])
def questions(request):
    return generate_questions(seed=request.param, per_level=8), request.param


def _num(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _values(fact: str) -> list[Fraction]:
    """Numbers stated in a fact, other than its year."""
    year = re.search(r"\b(19|20)\d\d\b", fact).group(0)
    return [_num(n) for n in NUMBER.findall(fact) if n != year]


def _sentences(text: str) -> list[str]:
    out = []
    for para in text.split("\n\n"):
        body = para.split("\n", 1)[1]  # first line is the section heading
        out.extend(SENTENCE_END.split(body))
    return out


def _mask(text: str, city: str, year: int) -> str:
    return NUMBER.sub("#", text.replace(str(year), "<YEAR>").replace(city, "<CITY>"))


# --------------------------------------------------------------------------- documents


def test_one_yearbook_per_city_and_year_with_title_and_metadata(docs):
    assert len(docs) == len(CITIES) * len(YEARS) == 30
    assert len({d.id for d in docs}) == len(docs)
    for doc in docs:
        city, year = doc.metadata["city"], doc.metadata["year"]
        assert doc.metadata == {"city": city, "year": year}
        assert city in CITIES and year in YEARS
        assert doc.title == f"{city} Statistical Yearbook {year}"
        assert doc.id == f"yearbook-{city.lower()}-{year}"


def test_same_seed_gives_identical_corpus_and_questions(docs):
    assert generate_yearbooks(seed=0) == docs
    assert generate_questions(seed=3) == generate_questions(seed=3)


def test_different_seeds_give_different_numbers_same_templates(docs):
    other = generate_yearbooks(seed=1)
    assert [d.id for d in other] == [d.id for d in docs]
    for a, b in zip(docs, other):
        assert a.text != b.text
        assert _mask(a.text, a.metadata["city"], a.metadata["year"]) == _mask(
            b.text, b.metadata["city"], b.metadata["year"]
        )
    assert generate_questions(seed=0) != generate_questions(seed=1)


def test_a_value_does_not_depend_on_the_other_cities_or_years(by_id):
    alone = generate_yearbooks(cities=["Corvale"], years=[2021])[0]
    assert alone.text == by_id["yearbook-corvale-2021"].text


def test_yearbooks_of_a_city_differ_only_in_numbers_and_year(docs):
    by_city: dict[str, list] = {}
    for doc in docs:
        by_city.setdefault(doc.metadata["city"], []).append(doc)
    for city, books in by_city.items():
        masked = {_mask(d.text, city, d.metadata["year"]) for d in books}
        assert len(masked) == 1, city
        assert len({d.text for d in books}) == len(books)
    # ... and across cities too: one set of templates for the whole corpus
    assert len({_mask(d.text, d.metadata["city"], d.metadata["year"]) for d in docs}) == 1


def test_every_sentence_names_its_city_and_year(docs):
    for doc in docs:
        sentences = _sentences(doc.text)
        assert len(sentences) >= 25
        for sentence in sentences:
            assert doc.metadata["city"] in sentence, sentence
            assert str(doc.metadata["year"]) in sentence, sentence


def test_sections_are_paragraphs_of_two_to_four_sentences(docs):
    paragraphs = docs[0].text.split("\n\n")
    headings = [p.split("\n", 1)[0] for p in paragraphs]
    assert {"Population", "Economy", "Transport", "Education", "Health", "Environment"} <= set(headings)
    for para in paragraphs:
        assert 2 <= len(SENTENCE_END.split(para.split("\n", 1)[1])) <= 4


def test_no_number_in_the_text_looks_like_another_year(docs):
    """Counts >= 1,000 carry separators, so year extraction sees only the yearbook's year."""
    for doc in docs:
        bare = set(re.findall(r"(?<![\d,.])\d{4}(?![\d,])", doc.text))
        assert bare == {str(doc.metadata["year"])}, doc.id


def test_token_size_spans_several_chunks(docs):
    sizes = [count_tokens(d.text) for d in docs]
    assert all(600 <= n <= 900 for n in sizes), sizes
    assert min(sizes) > 2 * 256


def test_gazetteer_names_the_cities(docs):
    assert set(GAZETTEER) == set(CITIES)
    for doc in docs:
        assert [c for c in GAZETTEER if c in doc.text] == [doc.metadata["city"]]


def test_write_demo_corpus_jsonl(tmp_path, docs):
    path = write_demo_corpus(tmp_path / "demo")
    assert path == tmp_path / "demo" / "yearbooks.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [set(r) for r in records] == [{"id", "title", "text", "metadata"}] * len(docs)
    assert [(r["id"], r["title"], r["text"], r["metadata"]) for r in records] == [
        (d.id, d.title, d.text, d.metadata) for d in docs
    ]
    assert not [p for p in path.parent.iterdir() if p.name != "yearbooks.jsonl"]  # no temp files left


def test_write_demo_corpus_is_loadable(tmp_path):
    from ragnet.corpus.loader import load_documents

    path = write_demo_corpus(tmp_path, cities=["Aldermoor", "Dunmarsh"], years=[2020, 2021])
    loaded = load_documents(path)
    assert [d.id for d in loaded] == [d.id for d in generate_yearbooks(["Aldermoor", "Dunmarsh"], [2020, 2021])]
    assert loaded[0].metadata["year"] == 2020


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"cities": []}, "cities"),
        ({"cities": "Aldermoor"}, "cities"),
        ({"cities": ["Aldermoor", "aldermoor"]}, "cities"),
        ({"cities": ["Area 51"]}, "cities"),
        ({"years": []}, "years"),
        ({"years": [2020, 2020]}, "years"),
        ({"years": ["2020"]}, "years"),
        ({"years": [3000]}, "years"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise_input_error(kwargs, argument):
    with pytest.raises(InputError) as err:
        generate_yearbooks(**kwargs)
    assert err.value.argument == argument


# --------------------------------------------------------------------------- questions


def test_levels_each_have_per_level_questions(questions):
    qs, _ = questions
    assert [q.level for q in qs] == [1] * 8 + [2] * 8 + [3] * 8 + [4] * 8
    assert len({q.id for q in qs}) == len(qs)
    assert len({q.question for q in qs}) == len(qs)
    assert all(isinstance(q, DemoQuestion) and q.answers and q.answer == q.answers[0] for q in qs)
    assert {q.type for q in qs if q.level == 2} == {"faster_growth", "births_vs_deaths", "ratio", "threshold"}
    assert {q.type for q in qs if q.level == 3} == {"compare_cities", "compare_years", "peak_year"}
    assert {q.type for q in qs if q.level == 4} == {"change", "sum_cities", "difference_cities"}


def test_gold_facts_are_verbatim_in_gold_documents(questions):
    qs, seed = questions
    by_id = {d.id: d for d in generate_yearbooks(seed=seed)}
    for q in qs:
        assert q.gold_facts and q.gold_doc_ids
        assert len(set(q.gold_doc_ids)) == len(q.gold_doc_ids)
        for fact in q.gold_facts:
            assert any(fact in by_id[d].text for d in q.gold_doc_ids), (q.id, fact)
        for doc_id in q.gold_doc_ids:
            assert any(fact in by_id[doc_id].text for fact in q.gold_facts), (q.id, doc_id)
        assert q.gold_titles == [by_id[d].title for d in q.gold_doc_ids]
        # the question names the city (or cities) and year(s) of its gold documents
        for doc_id in q.gold_doc_ids:
            meta = by_id[doc_id].metadata
            assert meta["city"] in q.question and str(meta["year"]) in q.question, q.question


def test_multi_chunk_levels_span_several_documents(questions):
    qs, _ = questions
    for q in qs:
        if q.level in (1, 2):
            assert len(q.gold_doc_ids) == 1 and len(q.gold_facts) == 1, q
        else:
            assert len(q.gold_doc_ids) >= 2 and len(q.gold_facts) >= 2, q


def test_l1_answer_occurs_in_its_gold_fact(questions):
    qs, _ = questions
    for q in (q for q in qs if q.level == 1):
        assert q.answers[0] in q.gold_facts[0], q
        assert any("," not in a for a in q.answers)  # a variant without separators


def _check_l2(q: DemoQuestion) -> None:
    (fact,) = q.gold_facts
    vals = _values(fact)
    if q.type == "faster_growth":
        bus, rail = vals
        assert q.answer == ("bus ridership" if bus > rail else "rail ridership")
    elif q.type == "births_vs_deaths":
        births, deaths = vals
        assert q.answer == ("births" if births > deaths else "deaths")
    elif q.type == "ratio":
        pupils, teachers = vals
        ratio = pupils / teachers
        assert abs(_num(q.answer) - ratio) <= Fraction(1, 20)
    elif q.type == "threshold":
        threshold = _num(re.search(r"above (\d+)%", q.question).group(1))
        (value,) = vals
        assert q.answer == ("yes" if value > threshold else "no")
    else:  # pragma: no cover
        raise AssertionError(q.type)


def _check_l3(q: DemoQuestion) -> None:
    vals = [v for fact in q.gold_facts for v in _values(fact)]
    assert len(vals) == len(q.gold_facts)
    assert len(set(vals)) == len(vals) or vals.count(max(vals)) == 1
    best = q.gold_facts[vals.index(max(vals))]
    assert q.answer in best
    if q.type == "compare_cities":
        assert q.answer in CITIES
    else:
        assert q.answer in {str(y) for y in YEARS}


def _check_l4(q: DemoQuestion) -> None:
    a, b = [v for fact in q.gold_facts for v in _values(fact)]
    expected = {"change": b - a, "sum_cities": a + b, "difference_cities": abs(a - b)}[q.type]
    assert _num(q.answer) == expected, q
    if q.type == "change" and expected > 0:
        assert q.answer.startswith("+")


def test_answers_are_computable_from_gold_facts(questions):
    qs, _ = questions
    for q in qs:
        {1: lambda q: None, 2: _check_l2, 3: _check_l3, 4: _check_l4}[q.level](q)


def test_answer_variants_are_formatting_only(questions):
    qs, _ = questions
    for q in (q for q in qs if q.level in (1, 4)):
        canonical = _num(NUMBER.search(q.answer).group(0))
        for variant in q.answers:
            assert abs(_num(NUMBER.search(variant).group(0))) == abs(canonical), (q.answer, variant)
            words = variant.split()
            assert len(set(words)) == len(words), variant  # a unit at most once


def test_generate_questions_from_docs_checks_the_seed():
    docs = generate_yearbooks(["Aldermoor", "Brightwater"], [2021, 2022], seed=5)
    qs = generate_questions(docs, seed=5, per_level=2)
    assert qs == generate_questions(cities=["Aldermoor", "Brightwater"], years=[2021, 2022], seed=5, per_level=2)
    with pytest.raises(InputError, match="seed=6"):
        generate_questions(docs, seed=6, per_level=2)


def test_small_corpora_get_feasible_question_types():
    one_city = generate_questions(cities=["Aldermoor"], years=[2020, 2021, 2022], per_level=3)
    assert {q.type for q in one_city if q.level == 3} == {"compare_years", "peak_year"}
    assert {q.type for q in one_city if q.level == 4} == {"change"}
    one_year = generate_questions(cities=["Aldermoor", "Corvale"], years=[2021], per_level=2)
    assert {q.type for q in one_year if q.level == 3} == {"compare_cities"}
    with pytest.raises(InputError):
        generate_questions(cities=["Aldermoor"], years=[2021])


@pytest.mark.parametrize("per_level", [0, -1, 1.5, True])
def test_bad_per_level(per_level):
    with pytest.raises(InputError) as err:
        generate_questions(per_level=per_level)
    assert err.value.argument == "per_level"


def test_demo_questions_are_fixed():
    qs = demo_questions()
    assert qs == demo_questions(2) == generate_questions(seed=0, per_level=2)
    assert [q.level for q in qs] == [1, 1, 2, 2, 3, 3, 4, 4]


def test_write_demo_questions_uses_the_eval_schema(tmp_path):
    path = write_demo_questions(tmp_path, per_level=1)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 4
    for rec, q in zip(records, generate_questions(per_level=1)):
        assert {"id", "question", "answers", "gold_titles", "gold_sentences", "type", "level", "context"} <= set(rec)
        assert rec["gold_passage_ids"] == q.gold_doc_ids and rec["gold_facts"] == q.gold_facts


def test_choice_questions_name_their_wrong_options():
    from ragnet.demo.corpus import choice_correct, generate_questions

    questions = generate_questions(per_level=8)
    choice = [q for q in questions if q.wrong_answers]
    assert {q.type for q in choice} >= {"faster_growth", "compare_cities", "compare_years"}
    for q in choice:
        assert not set(q.wrong_answers) & set(q.answers)
        assert all(w.split()[0] in q.question for w in q.wrong_answers)
        assert choice_correct(q.answers[0], q) == 1.0
        # naming every option is not a choice
        assert choice_correct(f"{q.answers[0]} or {q.wrong_answers[0]}", q) == 0.0
