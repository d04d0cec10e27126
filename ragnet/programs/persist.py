"""Save and load compiled programs with DSPy's JSON save/load, plus a ragnet header.

``save_program`` calls ``program.save(<tmp>.json)`` (DSPy's own state format: signatures'
instructions and demos, never pickle), adds ``metadata.ragnet = {program, version, format,
signatures}`` and renames the file into place atomically. ``load_program`` checks that header
first, so a file compiled for another program, another file format or other step signatures
fails with a clear message instead of a KeyError deep inside DSPy, then calls DSPy's
``program.load``.

Compiled prompts are tied to the steps' signatures (input and output field names): DSPy's load
would pour saved instructions and demos into whatever fields exist now. The header records each
step's ``"inputs -> outputs"``, and a file loads into any ragnet version whose steps still have
the same fields; a step whose fields changed is named in the error, with "recompile" as the fix.

Example:
    >>> import tempfile
    >>> from ragnet.programs import OneShotRAG
    >>> path = save_program(OneShotRAG(index), tempfile.mkdtemp() + "/oneshot.json")
    >>> type(load_program(OneShotRAG(index), path)).__name__
    'OneShotRAG'
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from ragnet._atomic import scratch_dir, write_json
from ragnet.errors import InputError
from ragnet.signatures.answer import describe_question_at, question_at

FORMAT_VERSION = 3  # each step is a module: its one predictor's state key is "<step>.predict"


def _step_name(parameter: str) -> str:
    """``"sufficiency.predict"`` -> ``"sufficiency"`` (a step's one predictor is named after the step)."""
    return parameter.removesuffix(".predict")


def _step_enabled(program: Any, name: str) -> bool:
    """Whether ``program``'s step ``name`` is on (a predictor that is not a ragnet step counts as on)."""
    step = program.steps().get(name) if hasattr(program, "steps") else None
    return bool(getattr(step, "enabled", True))


def step_signatures(program: Any) -> dict[str, str]:
    """``{step name: "input, ... -> output, ..."}`` for every predictor of ``program`` (a step
    module's one predictor, ``sufficiency.predict``, is named after its step).

    Example:
        >>> import dspy
        >>> class P(dspy.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.answer = dspy.Predict("question, context -> answer")
        >>> step_signatures(P())
        {'answer': 'question, context -> answer'}
    """
    return {
        _step_name(name): f"{', '.join(pred.signature.input_fields)} -> {', '.join(pred.signature.output_fields)}"
        for name, pred in program.named_predictors()
    }


def _header(program: Any) -> dict[str, Any]:
    import ragnet

    return {"program": type(program).__name__, "version": ragnet.__version__, "format": FORMAT_VERSION,
            "signatures": step_signatures(program)}


def save_program(program: Any, path: str | Path, **extra: Any) -> Path:
    """Save ``program``'s compiled state to ``path`` (must end in .json); extra keys go in the header."""
    path = Path(path)
    if path.suffix != ".json":
        raise InputError("compiled programs are saved as JSON; use a path ending in .json", argument="out")
    path.parent.mkdir(parents=True, exist_ok=True)
    # DSPy picks its format from the suffix, so its own save goes to a scratch ``.json`` in a
    # temporary folder next to the target, named as atomic writes name theirs (.NAME.PID.XXXX.tmp)
    # so that the next save cleans it up if this process is killed; the state plus the ragnet
    # header is then written atomically (temp + rename).
    with scratch_dir(path) as scratch:
        program.save(str(scratch / "state.json"))
        state = json.loads((scratch / "state.json").read_text(encoding="utf-8"))
    state.setdefault("metadata", {})["ragnet"] = {**_header(program), **extra}
    write_json(path, state)
    return path


def read_header(path: str | Path) -> dict[str, Any]:
    """The ragnet header of a saved program, with clear errors for unreadable files."""
    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path=path)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a saved ragnet program (invalid JSON: {exc})", path=path) from None
    header = state.get("metadata", {}).get("ragnet") if isinstance(state, dict) else None
    if not isinstance(header, dict):
        raise InputError("not a saved ragnet program (no metadata.ragnet header); save with `ragnet optimize`",
                         path=path)
    return header


def load_program(program: Any, path: str | Path) -> Any:
    """Load compiled state into ``program`` (same class and step signatures as saved); returns it.

    Raises:
        InputError: the file is missing, not JSON, truncated, has no ragnet header, or was
            saved for another program class, file format or step signatures; the message names
            the file (and the changed steps) and says what to do.
    """
    import ragnet

    path = Path(path)
    if path.suffix != ".json":
        raise InputError("compiled programs are JSON files ending in .json (saved by `ragnet optimize`)", path=path)
    header = read_header(path)
    if header.get("format") != FORMAT_VERSION:
        raise InputError(f"saved with program format {header.get('format')!r} (ragnet {header.get('version')}), "
                         f"this ragnet {ragnet.__version__} reads format {FORMAT_VERSION}; "
                         f"recompile it with `ragnet optimize`", path=path)
    if header.get("program") != type(program).__name__:
        raise InputError(
            f"compiled for {header.get('program')}, not {type(program).__name__}; "
            f"use the matching --strategy", path=path,
        )
    saved = dict(header.get("signatures") or {})
    current = step_signatures(program)
    # A step added to the class since the file was saved, and off in this program, has nothing
    # to load: it keeps its own (uncompiled) state, so files saved before it existed still load.
    added_off = {name for name in set(current) - set(saved) if not _step_enabled(program, name)}
    current = {name: sig for name, sig in current.items() if name not in added_off}
    names = set(saved) | set(current)
    changed = [f"{name} ({saved.get(name, 'absent')!r} saved, {current.get(name, 'absent')!r} now)"
               for name in sorted(names) if saved.get(name) != current.get(name)]
    layout = _question_moved(saved.get("answer"), current.get("answer"))
    if layout is not None and len(changed) == 1:  # the reader, compiled with the question elsewhere
        now = question_at(current["answer"].partition(" -> ")[0].split(", "))
        raise InputError(
            f"its answer step was compiled with the question {describe_question_at(layout)} ({saved['answer']!r}), "
            f"this program puts it {describe_question_at(now)}; load it into a program built with "
            f"AnswerStep(question_at={layout!r}){_SAME_READER.get(layout, '')} (the q{layout} preset, e.g. {_LAYOUT_EXAMPLE[layout]}), "
            f"or recompile it with `ragnet optimize`", path=path)
    if changed:
        raise InputError(
            f"compiled by ragnet {header.get('version')} for steps whose fields changed in ragnet "
            f"{ragnet.__version__}: {'; '.join(changed)}; recompile it with `ragnet optimize`", path=path,
        )
    try:
        if added_off:
            state = json.loads(path.read_text(encoding="utf-8"))
            own = program.dump_state()
            program.load_state({**state, **{name: own[name] for name in own if _step_name(name) in added_off}})
        else:
            program.load(str(path))
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise InputError(f"does not match {type(program).__name__}'s steps: {type(exc).__name__}: {exc}",
                         path=path) from None
    _warn_if_demos_shrink_the_evidence(program, path)
    return program


#: A preset that builds a program with each answer layout, for the refusal's hint.
_LAYOUT_EXAMPLE = {"first": "oneshot:sentences+qfirst", "last": "basic:qlast", "both": "oneshot:sentences+qboth"}
# an "auto" step compiles and loads a question-last reader (it adds the preview per question)
_SAME_READER = {"last": " or question_at='auto'"}


def _question_moved(saved: str | None, current: str | None) -> str | None:
    """Where ``saved`` showed the question ("first", "last" or "both"), when it differs from
    ``current`` only in where the question sits among the inputs; None when they differ
    otherwise (or not at all).

    Example:
        >>> _question_moved("question, context -> answer", "context, question -> answer")
        'first'
        >>> _question_moved("question_preview, context, question -> answer", "question, context -> answer")
        'both'
        >>> _question_moved("question, context -> answer", "question, context -> answer, reasoning") is None
        True
    """
    if not saved or not current or saved == current:
        return None
    (s_in, _, s_out), (c_in, _, c_out) = saved.partition(" -> "), current.partition(" -> ")
    s_fields, c_fields = s_in.split(", "), c_in.split(", ")
    where = question_at(s_fields)
    if s_out != c_out or where is None or question_at(c_fields) is None:
        return None
    if {f for f in s_fields if f != "question_preview"} != {f for f in c_fields if f != "question_preview"}:
        return None
    return where


def _warn_if_demos_shrink_the_evidence(program: Any, path: Path) -> None:
    """A budgeted program's answer prompt holds its demos too: say what they cost the evidence.

    The budget bounds the whole answer prompt, so a compiled reader with a 150-token demo gets
    150 tokens less evidence at the same ``--budget`` than the uncompiled one. That is the
    right accounting (the LM's window is what it is), but it silently changes what a
    comparison at one budget compares. Python shows a repeated warning once.
    """
    from ragnet.programs.packing import demo_tokens

    budget = getattr(program, "budget", None)
    predictor = getattr(getattr(program, "answer", None), "predict", None)
    if not budget or predictor is None:
        return
    tokens = sum(demo_tokens(predictor))
    if tokens <= 0:
        return
    n = len(predictor.demos)
    warnings.warn(f"{path}: the compiled answer step's {n} demo{'s' if n != 1 else ''} take{'' if n != 1 else 's'} {tokens} of the "
                  f"{budget}-token answer budget, so the evidence gets {tokens} tokens fewer than an uncompiled "
                  f"program's; a budget of {budget + tokens} gives it the same room", UserWarning, stacklevel=3)
