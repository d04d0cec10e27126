"""A real index over the synthetic yearbook corpus (built once per session) and a scripted LM."""

from __future__ import annotations

import contextlib

import dspy
import pytest

from ragnet.corpus.metadata import Gazetteer
from ragnet.demo.corpus import GAZETTEER, generate_yearbooks
from ragnet.index import Index
from tests.programs.scripted import ProgramLM


@pytest.fixture(scope="session")
def yearbook_index(tmp_path_factory):
    docs = generate_yearbooks(cities=["Aldermoor", "Brightwater", "Corvale"], years=[2020, 2021, 2022])
    path = tmp_path_factory.mktemp("idx") / "yearbooks"
    return Index.build(docs, path, gazetteer=Gazetteer(GAZETTEER), show_progress=False)


@pytest.fixture
def run_with():
    """``with run_with(ProgramLM(...)) as lm:`` configures DSPy with the scripted engine."""

    @contextlib.contextmanager
    def make(engine: ProgramLM):
        with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
            yield engine

    return make
