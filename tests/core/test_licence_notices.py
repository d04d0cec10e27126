"""Copyright and licence notices told from prose: what sentence selection gives no value."""

from __future__ import annotations

import pytest

from ragnet.core.licence_notices import asks_about_licence, is_licence_notice

NOTICES = [
    "Copyright © 1999–2002, 2005, 2008–2022 Free Software Foundation, Inc.",
    "Copyright c© 2001–2022 Free Software Foundation, Inc.",  # pypdf's reading of a PDF's ©
    "Copyright (C) 1998 Ken Pizzini",
    "Permission is granted to copy, distribute and/or modify this document under the terms of the GNU "
    "Free Documentation License, Version 1.3 or any later version published by the Free Software Foundation;",
    "with no Invariant Sections, no Front-Cover Texts, and no Back-Cover Texts.",
    "A copy of the license is included in the section entitled “GNU Free Documentation License”.",
    "This program is free software; you can redistribute it and/or modify it under the terms of the GPL.",
    "It is distributed WITHOUT ANY WARRANTY; without even the implied warranty of MERCHANTABILITY.",
    "# SPDX-License-Identifier: MIT",
]
PROSE = [
    "This manual is for version 3.8 of GNU Grep.",
    "grep is distributed under the GPL.",
    "The --version option prints the version, copyright and licence of sed.",
    "Each file's permission bits are granted by the umask.",
    "The copyright holder may relicense the code.",
    "",
]


@pytest.mark.parametrize("sentence", NOTICES)
def test_notices_are_told(sentence):
    assert is_licence_notice(sentence)


@pytest.mark.parametrize("sentence", PROSE)
def test_prose_about_versions_licences_and_permissions_is_not_a_notice(sentence):
    assert not is_licence_notice(sentence)


@pytest.mark.parametrize("question, asks", [
    ("Under which licence may the sed manual be copied?", True),
    ("Who holds the copyright of the bc manual?", True),
    ("Does grep come with a warranty?", True),
    ("Which GFDL version covers this manual?", True),
    ("Which file permissions does install give by default?", False),
    ("What is the default value of HISTORY?", False),
])
def test_questions_about_the_licence_are_told(question, asks):
    assert asks_about_licence(question) is asks


def test_a_sentence_citing_a_copyright_year_is_prose():
    """HotpotQA's "Young America" passage dates its play "(Copyright 1931, …)" mid-sentence; only a
    line that opens with the copyright (a sample script's ``# Copyright (C) 1998`` too) is a notice."""
    assert not is_licence_notice("Young America is a 1932 film from the play by Fred Ballard (Copyright 1931, Premier).")
    assert is_licence_notice("#!/bin/sed -f\n# Copyright (C) 1998 Paolo Bonzini")
