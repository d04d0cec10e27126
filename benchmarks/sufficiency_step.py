"""The agent's search-again decision, taken out of a program for the laziness experiment.

This is the one module of the study that reaches into programs: which attribute holds
the sufficiency step (``program.steps()["sufficiency"]``: its predictor and retry count), and how the
step is run (``ragnet.signatures.SufficiencyStep``). Everything else in the
experiment sees a predictor and plain dicts.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> step = decision_step()
    >>> step.info["program"], step.retries
    ('IterativeRAG', 1)
    >>> lm = DummyLM([{"verdict": "Refine", "confidence": "0.4", "missing": "the birthplace"}])
    >>> with dspy.context(lm=lm, adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
    ...     out = decide(step.predictor, "Where was he born?", "[c1] Ed Wood: a film director.")
    >>> out["verdict"], out["follow_up"], out["lm_calls"]
    ('Refine', True, 1)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragnet.errors import InputError

__all__ = ["DecisionStep", "decide", "decision_step"]


@dataclass
class DecisionStep:
    """A program's sufficiency predictor, its LM retries and where it came from.

    Attributes:
        predictor: the ``dspy.Predict`` of ``AssessSufficiency`` (compiled or not).
        retries: LM retries before the step falls back (the program's).
        info: ``{"program": class name, "file": compiled file or None, "sha256": its digest or None}``.
    """

    predictor: Any
    retries: int
    info: dict[str, Any] = field(default_factory=dict)

    def __iter__(self):  # ``predictor, retries, info = decision_step(...)``
        return iter((self.predictor, self.retries, self.info))


def decision_step(program_file: str | Path | None = None) -> DecisionStep:
    """The agent's sufficiency predictor: IterativeRAG's by default, or a compiled program's.

    A compiled file may hold any program with a sufficiency step (IterativeRAG, CombinedRAG,
    ReflectiveRAG).

    Raises:
        InputError: the file is unreadable, made for an unknown program, or for a program
            without a sufficiency step (naming those that have one).
    """
    from ragnet._hashing import sha256_file
    from ragnet.eval.run.eval_indexes import NoIndex
    from ragnet.programs import STRATEGIES, IterativeRAG

    if program_file is None:
        program = IterativeRAG(NoIndex())
        step = program.steps()["sufficiency"]
        return DecisionStep(step.predict, step.retries, {"program": "IterativeRAG", "file": None, "sha256": None})
    from ragnet.programs.persist import load_program, read_header

    header = read_header(program_file)
    classes = {cls.__name__: cls for cls in STRATEGIES.values()}
    cls = classes.get(str(header.get("program")))
    if cls is None:
        raise InputError(f"compiled for unknown program {header.get('program')!r}", path=program_file)
    program = cls(NoIndex())
    if "sufficiency" not in program.steps():
        with_step = ", ".join(n for n, c in classes.items() if "sufficiency" in c(NoIndex()).steps())
        raise InputError(f"compiled for {cls.__name__}, which has no sufficiency (search-again) step; "
                         f"use a program compiled for {with_step}", path=program_file)
    load_program(program, program_file)
    step = program.steps()["sufficiency"]
    return DecisionStep(step.predict, step.retries,
                        {"program": cls.__name__, "file": str(program_file), "sha256": sha256_file(program_file)})


def decide(predictor: Any, question: str, context: str, *, retries: int = 1) -> dict[str, Any]:
    """Ask the step whether to search again for ``question`` given ``context`` (formatted chunks).

    Returns ``verdict``, ``follow_up`` (True for ``Refine``: the agent searches again; False for
    ``Sufficient``; None when the step failed and fell back to its default), ``confidence``,
    ``missing``, ``fallback``, the step's ``outcome``, whether an answer was ``repaired``, the
    ``lm_errors``, and the call's tokens, LM calls, whether it was ``cached`` and its ``seconds``.
    """
    from ragnet.lm.usage import track_usage
    from ragnet.programs.trace import Trace
    from ragnet.signatures.step import recording
    from ragnet.signatures.sufficiency import SufficiencyStep

    step = SufficiencyStep(retries=retries)
    step.predict = predictor
    started = time.perf_counter()
    with recording(Trace()) as trace, track_usage() as meter:
        pred = step(question=question, context=context)
    seconds = time.perf_counter() - started
    usage = meter.to_dict()
    fallback = bool(getattr(pred, "fallback", False))
    steps = trace.of("lm_step")
    errors = trace.errors()
    return {
        "verdict": None if fallback else pred.verdict,
        "follow_up": None if fallback else pred.verdict == "Refine",
        "confidence": None if fallback else float(pred.confidence),
        "missing": None if fallback else str(pred.missing or ""),
        "fallback": fallback,
        "outcome": steps[-1]["outcome"] if steps else None,
        "repaired": any(e.get("action") == "repaired" for e in errors),
        "lm_errors": [{k: e.get(k) for k in ("error", "action", "attempt", "error_type")} for e in errors],
        "prompt_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "lm_calls": usage["lm_calls"],
        "cached": usage["lm_calls"] > 0 and usage["cached_calls"] == usage["lm_calls"],
        "seconds": round(seconds, 3),
    }
