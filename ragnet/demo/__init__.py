"""``ragnet demo``: a deterministic synthetic corpus (city yearbooks) and the run that answers
its questions with every strategy, offline on the local LM.

* :mod:`ragnet.demo.corpus` - the yearbooks and their L1–L4 questions with computed answers;
* :mod:`ragnet.demo.run` - index, answer, score and print the side-by-side table.

Example:
    >>> from ragnet.demo import demo_questions
    >>> [q.level for q in demo_questions(1)]
    [1, 2, 3, 4]
"""

from __future__ import annotations

from ragnet.demo.corpus import DemoQuestion, choice_correct, demo_questions, generate_questions, generate_yearbooks
from ragnet.demo.run import DEFAULT_STRATEGIES, build_demo_index, build_demo_program, run_demo

__all__ = [
    "DEFAULT_STRATEGIES",
    "DemoQuestion",
    "build_demo_index",
    "build_demo_program",
    "choice_correct",
    "demo_questions",
    "generate_questions",
    "generate_yearbooks",
    "run_demo",
]
