"""Rule-based chunk and question metadata: years, dates, entities, places."""

from __future__ import annotations

import json

import pytest

from ragnet.corpus.metadata import (
    METADATA_KEYS,
    Gazetteer,
    extract_metadata,
    extract_query_metadata,
)
from ragnet.errors import InputError


@pytest.fixture()
def gaz() -> Gazetteer:
    return Gazetteer(["Paris", "Rome", "New York", "New York City", "St. Louis", "Los Angeles"])


# ---------------------------------------------------------------- shape


def test_keys_and_json_compatible(gaz):
    meta = extract_metadata("Paris hosted the 2024 Olympics on July 26, 2024.", "Paris 2024", gaz)
    assert tuple(meta) == METADATA_KEYS
    assert json.loads(json.dumps(meta)) == meta
    assert all(isinstance(v, list) for v in meta.values())


def test_empty_text_gives_empty_lists():
    meta = extract_metadata("", "")
    assert meta == {key: [] for key in METADATA_KEYS}


# ---------------------------------------------------------------- years


def test_years_sorted_unique_within_range():
    meta = extract_metadata("Founded 1999, moved 1066 and 2100; again 1999. Not 999, 2101 or 0999.")
    assert meta["years"] == [1066, 1999, 2100]


@pytest.mark.parametrize(
    "text",
    ["pi is 3.1415", "it cost $1999", "grew 2000% fast", "code 12345", "id #1984", "pop 1,500,000", "v2019x"],
)
def test_numbers_that_are_not_years(text):
    assert extract_metadata(text)["years"] == []


def test_year_ranges_and_punctuation():
    assert extract_metadata("He reigned 1509–1547 (or 1509-1547).")["years"] == [1509, 1547]


def test_title_years_are_the_title_only():
    meta = extract_metadata("The 1998 final was replayed.", title="World Cup 2002")
    assert meta["years"] == [1998, 2002]
    assert meta["title_years"] == [2002]


# ---------------------------------------------------------------- dates


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("born March 4, 2019 in town", ["2019-03-04"]),
        ("born March 4 2019 in town", ["2019-03-04"]),
        ("born 4 March 2019 in town", ["2019-03-04"]),
        ("signed on the 4th of July, 1776.", ["1776-07-04"]),
        ("released Sept. 21st, 2001.", ["2001-09-21"]),
        ("released in March 2019.", ["2019-03"]),
        ("released in Dec. 1999.", ["1999-12"]),
        ("logged 2019-03-04 and 2020/1/2", ["2019-03-04", "2020-01-02"]),
        ("on February 30, 2019 nothing happened", ["2019-02"]),
        ("in march 2019 (lower case) it rained", []),
        ("the 2019-13-45 build", []),
    ],
)
def test_dates(text, expected):
    assert extract_metadata(text)["dates"] == expected


def test_date_years_are_years_too():
    meta = extract_metadata("Scott Derrickson (born July 16, 1966) is a director.")
    assert meta["dates"] == ["1966-07-16"]
    assert meta["years"] == [1966]


# ---------------------------------------------------------------- entities


def test_entities_multiword_normalised():
    text = "Ed Wood is a film by Tim  Burton, starring Johnny Depp. Depp's role won praise."
    ents = extract_metadata(text)["entities"]
    assert {"ed wood", "tim burton", "johnny depp", "depp"} <= set(ents)
    assert ents == sorted(set(ents))


def test_entities_connectors_join_names():
    ents = extract_metadata("He worked for the Bank of America and visited Leonardo da Vinci Airport.")["entities"]
    assert "bank of america" in ents
    assert "leonardo da vinci airport" in ents
    assert "he" not in ents


def test_sentence_initial_stopwords_are_not_entities():
    text = "However, the plan failed. The Beatles played. In Paris it rained. They left."
    ents = extract_metadata(text)["entities"]
    assert "beatles" in ents and "paris" in ents
    for word in ("however", "the", "the beatles", "in", "in paris", "they"):
        assert word not in ents


def test_month_and_weekday_names_are_not_entities():
    ents = extract_metadata("It opened in March. On Monday the Mayor of Lyon spoke.")["entities"]
    assert "march" not in ents and "monday" not in ents
    assert "mayor of lyon" in ents


def test_title_entities():
    meta = extract_metadata("He directed films.", title="Ed Wood (film)")
    assert meta["title_entities"] == ["ed wood"]
    assert meta["entities"] == ["ed wood"]  # title entities count as the chunk's entities too


def test_unicode_capitals():
    ents = extract_metadata("we drove to Žilina, then to Ústí and Örebro.")["entities"]
    assert {"žilina", "ústí", "örebro"} <= set(ents)


# ---------------------------------------------------------------- places and gazetteer


def test_places_need_a_gazetteer(gaz):
    text = "She moved from Rome to New York City."
    assert extract_metadata(text)["places"] == []
    assert extract_metadata(text, gazetteer=gaz)["places"] == ["new york city", "rome"]


def test_places_in_title(gaz):
    meta = extract_metadata("The Arch stands by the river.", title="St Louis landmarks", gazetteer=gaz)
    assert meta["title_places"] == ["st. louis"]
    assert meta["places"] == ["st. louis"]


def test_gazetteer_find_word_boundaries_and_case(gaz):
    assert gaz.find("Romeo and Juliet, not ROME; paris-based firms; parisian cafes") == ["rome", "paris"]


def test_gazetteer_longest_match_first(gaz):
    assert gaz.find("New York City is larger than New York state") == ["new york city", "new york"]


def test_gazetteer_punctuation_insensitive(gaz):
    assert gaz.find("the St Louis Cardinals and st. louis blues") == ["st. louis"]
    assert "ST. LOUIS" in gaz and "Berlin" not in gaz


def test_gazetteer_names_normalised_and_deduplicated():
    g = Gazetteer(["  New   York ", "new york", "", "Paris"])
    assert len(g) == 2
    assert g.names == ["new york", "paris"]


def test_gazetteer_rejects_bad_input():
    with pytest.raises(InputError, match="single string"):
        Gazetteer("Paris")
    with pytest.raises(InputError, match="must be strings"):
        Gazetteer(["Paris", 3])
    with pytest.raises(InputError, match="Gazetteer"):
        extract_metadata("text", gazetteer=["Paris"])


def test_gazetteer_from_file(tmp_path):
    path = tmp_path / "places.txt"
    path.write_text("\ufeff# capitals\nParis\n\n  Rome  \nNew York City\n", encoding="utf-8")
    g = Gazetteer.from_file(path)
    assert g.names == ["new york city", "paris", "rome"]
    assert g.find("rome then paris") == ["rome", "paris"]


def test_gazetteer_from_file_errors(tmp_path):
    with pytest.raises(InputError, match="not found") as info:
        Gazetteer.from_file(tmp_path / "missing.txt")
    assert "missing.txt" in str(info.value)
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    with pytest.raises(InputError, match="no names"):
        Gazetteer.from_file(empty)
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"Paris\n\xff\xfe\x00\x01")
    with pytest.raises(InputError, match=r"bin.txt:2: not a UTF-8 text file \(binary\?\)"):
        Gazetteer.from_file(binary)


# ---------------------------------------------------------------- questions


def test_query_metadata(gaz):
    q = extract_query_metadata("Which team won the 2019 final in Paris on May 5, 2019?", gaz)
    assert tuple(q) == METADATA_KEYS
    assert q["years"] == [2019]
    assert q["dates"] == ["2019-05-05"]
    assert q["places"] == ["paris"]
    assert q["entities"] == ["paris"]
    assert q["title_years"] == q["title_entities"] == q["title_places"] == []


@pytest.mark.parametrize(
    "question",
    ["Who directed Ed Wood?", "What year did Ed Wood premiere?", "Were Ed Wood and Tim Burton friends?"],
)
def test_question_words_are_not_entities(question):
    ents = extract_query_metadata(question)["entities"]
    assert "ed wood" in ents
    assert not {"who", "what", "were", "who directed", "what year"} & set(ents)


def test_query_and_chunk_normalise_alike():
    chunk = extract_metadata("THE Exorcism of Emily Rose was released in 2005.")
    question = extract_query_metadata("When was The Exorcism of Emily Rose released?")
    assert "exorcism of emily rose" in chunk["entities"]
    assert "exorcism of emily rose" in question["entities"]
