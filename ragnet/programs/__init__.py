"""DSPy programs: BasicRAG (baseline), OneShotRAG, IterativeRAG, ReflectiveRAG, CombinedRAG, and RouterRAG
(one search or a multi-step program per question, chosen without an LM).

Each is a ``dspy.Module`` whose LM steps are step modules (``ragnet.signatures.Step``: one
``dspy.Predict`` over a ragnet signature, its validator, default and retries), held under the
step's name (``program.answer``, ``program.sufficiency``, ...; ``program.steps()`` lists them),
so ``dspy`` optimizers can compile them, and ``save``/``load`` store prompts and demos as JSON.
Calling a program returns a ``dspy.Prediction`` with ``answer``, ``evidence``, ``context``,
``notes``, ``trace`` and ``usage``.

A program's settings are option objects grouped by concern (:mod:`ragnet.programs.options`:
``Pack``, ``Search``, ``Hops``, ``Loop``, ``Reflection``, ``LMSteps``), and its index is anything
with the members of :class:`ragnet.programs.index_protocol.ProgramIndex` (a ``ragnet.Index``).
"""

from ragnet.programs.agent import AgentRAG
from ragnet.programs.base import RAGProgram
from ragnet.programs.basic import BasicRAG
from ragnet.programs.combined import CombinedRAG
from ragnet.programs.index_protocol import ProgramIndex
from ragnet.programs.iterative import IterativeRAG
from ragnet.programs.oneshot import OneShotRAG
from ragnet.programs.options import Hops, LMSteps, Loop, Pack, Reflection, Search
from ragnet.programs.reflective import ReflectiveRAG
from ragnet.programs.router import RouterRAG
from ragnet.programs.trace import Trace

STRATEGIES = {
    "basic": BasicRAG,
    "oneshot": OneShotRAG,
    "iterative": IterativeRAG,
    "reflective": ReflectiveRAG,
    "combined": CombinedRAG,
    "router": RouterRAG,
}

__all__ = ["AgentRAG", "RAGProgram", "BasicRAG", "OneShotRAG", "IterativeRAG", "ReflectiveRAG", "CombinedRAG",
           "RouterRAG", "Trace", "STRATEGIES", "Pack", "Search", "Hops", "Loop", "Reflection", "LMSteps",
           "ProgramIndex"]
