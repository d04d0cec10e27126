"""Bridge entities: LM-free follow-up searches from the names the evidence gives."""

from __future__ import annotations

from ragnet.core.bridge_keys import bridge_entities, bridge_query, identifiers, name_phrases, section_references

Q = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
FILM = ("Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as Corliss Archer. "
        "It was directed by Richard Wallace.")


def test_name_phrases_skip_openers_possessives_dates_and_short_words():
    assert name_phrases("In 1945 the Bank of England's governor met Vincent van Gogh on 3 March 1890. It rained.") == [
        "Bank of England", "Vincent van Gogh"]
    assert name_phrases("Apollo 11 landed. He said: Up!") == ["Apollo 11"]


def test_names_the_question_gives_are_not_bridges():
    names = bridge_entities(Q, [FILM], k=5)
    assert names[:2] == ["Shirley Temple", "Richard Wallace"]  # multi-word names first, in mention order
    assert not {"Kiss and Tell", "Corliss Archer"} & set(names)


def test_titles_in_the_collection_and_earlier_texts_rank_first():
    later = "Richard Wallace directed many films."
    assert bridge_entities(Q, [FILM, later], k=1) == ["Richard Wallace"]  # named twice
    titles = {"shirley temple"}
    assert bridge_entities(Q, [FILM, later], k=1, is_title=lambda key: key in titles) == ["Shirley Temple"]


def test_excluded_names_and_spellings_are_given_once():
    assert "Shirley Temple" not in bridge_entities(Q, [FILM], exclude=["Shirley Temple (actress)"], k=5)
    assert bridge_entities("Who?", ["Ed Wood met ED WOOD."], k=5) == ["Ed Wood"]
    assert bridge_entities(Q, [], k=3) == [] and bridge_entities(Q, [FILM], k=0) == []


def test_the_query_keeps_the_question():
    assert bridge_query("Shirley Temple", Q) == f"Shirley Temple {Q}"


def test_a_name_never_spans_a_line_break():
    text = "# Deploys\n\nA deploy needs one approval.\nOn-call\nThis week: Jonas Berg."
    assert name_phrases(text) == ["Deploys", "On-call", "Jonas Berg"]


# -- the links of a manual: identifiers and section references (issue 46, item 3)


def test_identifiers_are_options_code_names_constants_and_variables():
    text = ("Set --log-file (or -l) to write logs; LOG_DIR and ${XDG_DATA_HOME} decide where. "
            "Call asn1_create_element() before fs.readFile, e.g. in main.")
    assert identifiers(text) == ["--log-file", "LOG_DIR", "XDG_DATA_HOME", "asn1_create_element", "fs.readFile"]


def test_prose_has_no_identifiers():
    assert identifiers("Kiss and Tell is a 1945 film, i.e. a comedy; e.g. Shirley Temple starred.") == []


def test_an_identifier_the_evidence_gives_outranks_its_capitalised_words():
    evidence = ["Use the --jobs option to run commands in parallel. Note that Ninja picks a default."]
    assert bridge_entities("Which option runs commands in parallel, and what is its default?", evidence,
                           k=1) == ["--jobs"]


def test_an_identifier_the_question_names_is_not_a_bridge():
    evidence = ["The --jobs option sets MAX_JOBS."]
    assert bridge_entities("What does --jobs set?", evidence, k=3) == ["MAX_JOBS"]


def test_section_references_are_found_in_order():
    assert section_references("See Section 2.6, section 3 and § 4.1; not version 2.6.") == ["2.6", "3", "4.1"]


def test_wikipedia_artefacts_are_not_identifiers():
    # an emptied pronunciation "()" after a name, and two sentences run together
    assert identifiers("Doctor Stranger () is a 2014 South Korean series.") == []
    assert identifiers("He worked in television.Besides, he wrote.") == []


def test_hosts_and_files_in_urls_are_not_identifiers():
    text = "See http://austingroupbugs.net/view.php?id=528 or ftp://fly.srk.fer.hr/ and mail bug@gnu.org; edit mime.cache."
    assert identifiers(text) == ["mime.cache"]
