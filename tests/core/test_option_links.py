"""Option links: a sentence naming an option of one of the best sentences keeps a share of its value."""

from __future__ import annotations

import numpy as np

from ragnet.core.option_links import link_floor, option_names

ALL = np.array([True, True, True, True])


def test_option_names_are_short_and_long_options_not_hyphenated_words_or_numbers():
    text = "Set '-nd' (--no-directories=on) on/off--the same as -x; a non-network e-mail, -1 or - 2."
    assert option_names(text) == {"-nd", "--no-directories", "-x"}


def test_a_sentence_naming_an_anchors_option_keeps_a_share_of_the_anchors_value():
    texts = ["'-o LOGFILE' Log all messages to LOGFILE.", "Unrelated prose.", "Sorted tables.",
             "logfile = FILE the same as '-o FILE'."]
    values = np.array([0.9, 0.3, 0.2, 0.01])
    out = link_floor(values, texts, ALL, share=0.5, anchors=1)
    assert out.tolist() == [0.9, 0.3, 0.2, 0.45]
    assert link_floor(values, texts, ALL, share=0.0).tolist() == values.tolist()  # off


def test_only_the_best_sentences_lend_and_a_value_never_falls():
    texts = ["prose", "see -q", "more prose", "-q quiet"]
    values = np.array([0.9, 0.8, 0.7, 0.05])
    assert link_floor(values, texts, ALL, anchors=1)[3] == 0.05  # -q is not in the best sentence
    assert link_floor(values, texts, ALL, anchors=2)[3] == 0.4  # it is in the second best
    assert (link_floor(values, texts, ALL, anchors=4) >= values).all()


def test_an_option_named_everywhere_links_nothing():
    texts = ["-v verbose", *(f"line {i} with -v" for i in range(5)), "-x the target"]
    values = np.array([0.9, 0.1, 0.1, 0.1, 0.1, 0.1, 0.02])
    out = link_floor(values, texts, np.ones(7, dtype=bool), anchors=1, max_mentions=3)
    assert out.tolist() == values.tolist()
    assert link_floor(values, texts, np.ones(7, dtype=bool), anchors=1, max_mentions=6)[1] == 0.45


def test_sentences_of_documents_without_sections_do_not_link():
    texts = ["'-o LOGFILE' Log all messages.", "same as '-o FILE'."]
    values = np.array([0.9, 0.01])
    assert link_floor(values, texts, np.array([True, False])).tolist() == [0.9, 0.01]
    assert link_floor(values, texts, np.array([False, True])).tolist() == [0.9, 0.01]
