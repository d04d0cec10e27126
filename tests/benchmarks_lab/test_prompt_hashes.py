"""``python -m benchmarks.prompt_hashes``: the recorder keeps each prompt a program sends and
answers in the reader's JSON form; ``differences`` names every question whose prompts moved."""

from __future__ import annotations

import dspy

from benchmarks.prompt_hashes import PromptRecorder, differences
from ragnet.lm.config import resolve_adapter
from ragnet.programs import BasicRAG
from tests.programs.conftest import yearbook_index  # noqa: F401 - the session fixture


def test_the_recorder_keeps_the_answer_prompt_and_the_program_reads_its_reply(yearbook_index):  # noqa: F811
    recorder = PromptRecorder()
    lm = recorder.lm()
    with dspy.context(lm=lm, adapter=resolve_adapter("auto", lm)):
        pred = BasicRAG(yearbook_index)(question="What was the population of Aldermoor in 2021?")
    assert pred.answer == "unknown" and len(recorder.prompts) == 1
    assert "Aldermoor" in recorder.prompts[0] and "JSON" in recorder.prompts[0]  # the local reader's layout


def test_differences_name_each_question_whose_prompts_moved():
    before = {"basic": {"q1": ["a"], "q2": ["b"]}, "router": {"q1": ["c"]}}
    assert differences(before, before) == []
    after = {"basic": {"q1": ["a"], "q2": ["B"]}, "router": {}}
    assert differences(before, after) == ["basic q2: 1 prompt(s) before, 1 after, hashes differ",
                                          "router q1: 1 prompt(s) before, 0 after, hashes differ"]
