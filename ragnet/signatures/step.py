"""Run one LM step robustly: retry, salvage, validate, fall back, and record everything.

Small local models sometimes break DSPy's output format, time out, or return ids that do not
exist. ``run_step`` makes every such failure a recorded, bounded event instead of an exception
deep inside a program:

1. Call the predictor (``dspy.Predict`` / ``dspy.ChainOfThought`` / any callable returning a
   ``dspy.Prediction``). Note that DSPy's ``ChatAdapter`` already retries a parse failure once
   with ``JSONAdapter`` (a second LM call) before raising ``AdapterParseError``.
2. On ``AdapterParseError`` try a lenient parse of the raw response (``lenient_parse``): id lists
   written as ``c1, c3``, ``sufficient`` for ``Literal["Sufficient", ...]``, ``80%`` for a float.
   A salvaged answer counts as success and is recorded with ``action="repaired"``.
3. Any other exception (LM errors, timeouts from the engine, ...) fails the attempt; its type,
   root cause and message are recorded.
4. ``validate(pred) -> (pred, problems)`` may repair the output (e.g. drop unknown chunk ids);
   each problem is recorded with ``action="repaired"``. A validator raises ``StepOutputError``
   to reject the output outright (the attempt fails).
5. Failed attempts are retried up to ``retries`` times, except a timeout (the step falls back at
   once, so a step costs at most one ``--timeout``). Retries are sent with
   ``config={"rollout_id": attempt, "temperature": retry_temperature}`` so they bypass DSPy's
   cache and sample a different answer (a deterministic retry would repeat the failure).
   A server that rejects a request option the caller added to ``config`` (a 400 naming
   ``logprobs``, say) is different: the reply was not off-format, so the next attempt repeats the
   same greedy request without that option, does not use up a retry, and ``on_refused`` hears
   which options were dropped (the answer step stops asking that LM for them).
6. When every attempt failed, ``default`` is returned as a ``dspy.Prediction`` with
   ``fallback=True``.

Trace events (``ragnet.programs.trace.Trace``):
    ``lm_error``: failed_step, error ("Type: message"), error_type, cause, attempt,
        action ("retried" | "fallback" | "repaired" | "dropped <options>"), dropped (the options).
    ``lm_step``: name, outcome ("ok" | "retried" | "fallback"), attempts, repaired (bool), seconds.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet.programs.trace import Trace
    >>> trace = Trace()
    >>> with dspy.context(lm=DummyLM([{"answer": "Paris"}])):
    ...     pred = run_step(dspy.Predict("question -> answer"), step="answer", trace=trace,
    ...                     default={"answer": ""}, question="Capital of France?")
    >>> pred.answer, pred.fallback, trace.of("lm_step")[0]["outcome"]
    ('Paris', False, 'ok')
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import json
import math
import re
import time
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, Union, get_args, get_origin

import dspy
import pydantic
from dspy.adapters.chat_adapter import field_header_pattern
from dspy.adapters.utils import parse_value
from dspy.utils.exceptions import AdapterParseError

from ragnet.errors import InputError
from ragnet.signatures.formatting import split_id_text

__all__ = ["AdapterParseError", "Step", "StepOutputError", "active_trace", "lenient_parse", "recording", "run_step"]

Validator = Callable[[dspy.Prediction], "tuple[dspy.Prediction, list[str]]"]

_MAX_ERROR_CHARS = 400
_TRUE = {"true", "yes", "y", "1", "keep", "kept", "relevant", "match", "correct", "sufficient"}
_FALSE = {"false", "no", "n", "0", "drop", "dropped", "irrelevant", "mismatch", "incorrect", "none"}
_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")


class StepOutputError(ValueError):
    """Raised by a validator to reject an LM output; ``run_step`` then retries or falls back."""


def _error_text(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    if len(message) > _MAX_ERROR_CHARS:
        message = message[:_MAX_ERROR_CHARS] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
    return exc


def _accepts_config(predictor: Any) -> bool:
    return isinstance(predictor, (dspy.Predict, dspy.ChainOfThought))


def _signature_of(predictor: Any):
    for obj in (predictor, getattr(predictor, "predict", None)):
        sig = getattr(obj, "signature", None)
        if sig is not None and hasattr(sig, "output_fields"):
            return sig
    return None


def _copy_prediction(pred: Any) -> dspy.Prediction:
    """A fresh Prediction, so validators never edit the object DSPy keeps in its trace."""
    if isinstance(pred, dspy.Prediction):
        out = dspy.Prediction(**{k: copy.copy(v) for k, v in pred.items()})
        usage = pred.get_lm_usage()
        if usage is not None:
            out.set_lm_usage(usage)
        return out
    if isinstance(pred, Mapping):
        return dspy.Prediction(**pred)
    raise TypeError(f"predictor returned {type(pred).__name__}, expected a dspy.Prediction")


# ----------------------------------------------------------------------------- lenient parse


def _sections(completion: str) -> dict[str, str]:
    """Split a ChatAdapter-style response into ``{field: text}`` (first occurrence wins)."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in completion.splitlines():
        match = field_header_pattern.match(line.strip())
        if match:
            current = match.group(1)
            rest = line.strip()[match.end():].strip()
            if current in found:
                current = None  # ignore repeats
                continue
            found[current] = [rest] if rest else []
        elif current is not None:
            found[current].append(line)
    return {k: "\n".join(v).strip() for k, v in found.items()}


def _json_object(completion: str) -> dict[str, Any]:
    import json_repair

    text = completion.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fence:
        text = fence.group(1)
    try:
        value = json_repair.loads(text)
    except Exception:  # pragma: no cover - json_repair is forgiving
        return {}
    return value if isinstance(value, dict) else {}


def _coerce_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().strip(".!\"'`*[]()").casefold()
    word = word.split()[0] if word.split() else word
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _coerce_number(value: Any, kind: type) -> float | int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return kind(value)
    text = str(value)
    match = _NUMBER.search(text)
    if not match:
        raise ValueError(f"not a number: {value!r}")
    number = float(match.group(0))
    if kind is float and "%" in text[match.end(): match.end() + 2]:
        number /= 100.0
    if math.isnan(number):
        raise ValueError("NaN")
    return kind(number)


def _coerce_literal(value: Any, allowed: tuple[Any, ...]) -> Any:
    if value in allowed:
        return value
    text = str(value).strip().strip("\"'`*[]().!:").strip()
    for option in allowed:
        if str(option).casefold() == text.casefold():
            return option
    words = re.findall(r"[\w']+", text.casefold())
    negated = any(w in {"not", "no", "never"} or w.endswith("n't") for w in words)
    hits = [o for o in allowed if str(o).casefold() in words]
    if len(hits) == 1 and len(words) <= 4 and not negated:
        return hits[0]
    raise ValueError(f"{value!r} is not one of {allowed}")


def _as_list(value: Any, item_type: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):  # {"queries": [...]} or one bare object
        lists = [v for v in value.values() if isinstance(v, list)]
        return lists[0] if len(lists) == 1 and len(value) == 1 else [value]
    text = str(value).strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, (list, dict)):
        return _as_list(parsed, item_type)
    if item_type is str:
        return split_id_text(text)
    import json_repair

    repaired = json_repair.loads(text)
    if isinstance(repaired, (list, dict)):
        return _as_list(repaired, item_type)
    raise ValueError(f"not a list: {value!r}")


def _coerce(value: Any, annotation: Any) -> Any:
    """Lenient conversion of one field value; raises ValueError when hopeless."""
    if annotation is str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if annotation is bool:
        return _coerce_bool(value)
    if annotation in (int, float):
        return _coerce_number(value, annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return _coerce_literal(value, get_args(annotation))
    if origin is list:
        (item_type,) = get_args(annotation) or (Any,)
        items = _as_list(value, item_type)
        out = []
        for item in items:
            try:
                out.append(_coerce(item, item_type) if item_type is not Any else item)
            except (ValueError, pydantic.ValidationError):
                continue  # skip one bad item rather than lose the whole list
        if items and not out:
            raise ValueError(f"no valid item in {value!r}")
        return out
    if origin in (Union, types.UnionType):
        for option in get_args(annotation):
            if option is type(None):
                continue
            try:
                return _coerce(value, option)
            except (ValueError, pydantic.ValidationError):
                continue
        raise ValueError(f"cannot read {value!r} as {annotation}")
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel) and not isinstance(value, str):
        return annotation.model_validate(value)
    return parse_value(value, annotation)


def lenient_parse(signature: Any, completion: str) -> dict[str, Any] | None:
    """Read a response DSPy's adapters rejected; None when some output field is missing or unreadable.

    Accepts ChatAdapter sections (``[[ ## field ## ]]``) or a JSON object, and coerces common
    small-model slips: ``c1, c3`` for ``list[str]``, ``sufficient`` for a ``Literal``, ``80%``
    or ``0.8 (high)`` for a float, ``yes``/``keep`` for a bool, one object for a list of objects.

    Example:
        >>> import dspy
        >>> sig = dspy.Signature("question -> ids: list[str], ok: bool")
        >>> lenient_parse(sig, "[[ ## ids ## ]]\\nc1, c3\\n[[ ## ok ## ]]\\nyes")
        {'ids': ['c1', 'c3'], 'ok': True}
    """
    if signature is None or not completion:
        return None
    raw: dict[str, Any] = _sections(completion)
    if not any(name in raw for name in signature.output_fields):
        raw = _json_object(completion)
    out: dict[str, Any] = {}
    for name, field in signature.output_fields.items():
        if name not in raw:
            if field.is_required():
                return None
            out[name] = field.get_default(call_default_factory=True)
            continue
        try:
            out[name] = _coerce(raw[name], field.annotation)
        except (ValueError, TypeError, pydantic.ValidationError):
            return None
    return out


# ----------------------------------------------------------------------------- run_step


def run_step(
    predictor: Callable[..., Any],
    *,
    step: str,
    trace: Any,
    default: Mapping[str, Any],
    validate: Validator | None = None,
    retries: int = 1,
    retry_temperature: float | None = 0.7,
    on_refused: Callable[[list[str]], Any] | None = None,
    **inputs: Any,
) -> dspy.Prediction:
    """Call ``predictor(**inputs)`` with retries, salvage, validation and a recorded fallback.

    Args:
        predictor: ``dspy.Predict``/``dspy.ChainOfThought`` (or any callable returning a Prediction).
        step: step name used in trace events (``"filter"``, ``"crop"``, ...).
        trace: a ``ragnet.programs.trace.Trace`` (anything with ``add`` and ``lm_error``), or None.
        default: output fields returned (as a Prediction with ``fallback=True``) when every attempt fails.
        validate: ``validate(pred) -> (pred, problems)``; may repair ``pred`` (it receives a copy),
            each problem is recorded as ``lm_error(action="repaired")``; raise ``StepOutputError``
            to reject the output.
        retries: extra attempts after the first failed one (``0`` = a single attempt).
        retry_temperature: temperature for retries (sent with a fresh ``rollout_id`` so the cache
            is bypassed); None sends retries unchanged. Only applied to Predict/ChainOfThought.
        on_refused: called with the names of the ``config`` options a server rejected as an
            invalid request; the step is then asked again without them, once, greedily.
        **inputs: the signature's input fields.

    Returns:
        A ``dspy.Prediction`` with the output fields (as repaired by ``validate``) and
        ``fallback`` (bool). Never raises for LM failures.

    Raises:
        InputError: ``retries`` is negative.

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> with dspy.context(lm=DummyLM([{"wrong": "x"}] * 4)):
        ...     pred = run_step(dspy.Predict("q -> a"), step="demo", trace=None, default={"a": "?"}, q="hi")
        >>> pred.a, pred.fallback
        ('?', True)
    """
    if not isinstance(retries, int) or retries < 0:
        raise InputError(f"retries must be an integer >= 0, got {retries!r}", argument="retries")
    started = time.perf_counter()
    attempts = 1 + retries
    repaired = False
    used = 0
    options = dict(inputs.get("config") or {})
    dropped: list[str] = []
    dropped_at = 0
    attempt = 0
    while attempt < attempts:
        attempt += 1
        used = attempt
        call_inputs = dict(inputs)
        if dropped:  # the request less what the server refused; the attempt after the refusal repeats it
            call_inputs["config"] = {k: v for k, v in options.items() if k not in dropped}
        if attempt > 1 and attempt != dropped_at + 1 and retry_temperature is not None and _accepts_config(predictor):
            call_inputs["config"] = {"rollout_id": attempt - 1, "temperature": retry_temperature}
        last = attempt == attempts
        action = "fallback" if last else "retried"
        salvaged: list[str] = []
        try:
            try:
                raw = predictor(**call_inputs)
            except AdapterParseError as exc:
                fields = lenient_parse(exc.signature or _signature_of(predictor), exc.lm_response or "")
                if fields is None:
                    raise
                raw = dspy.Prediction(**fields)
                salvaged.append(f"lenient parse after {_error_text(exc)}")
            pred = _copy_prediction(raw)
            problems: list[str] = list(salvaged)
            if validate is not None:
                pred, found = validate(pred)
                problems.extend(found)
        except Exception as exc:  # LM errors, timeouts, parse errors, rejected outputs
            if _timed_out(exc):  # the deadline bounds the step, not each attempt: no retry
                _record_error(trace, step, exc, action="fallback", attempt=attempt)
                break
            refused = [] if dropped else _refused_options(exc, options)
            if refused:  # asked again without them; a refusal is not the LM's failure: no retry used
                dropped, dropped_at, attempts = refused, attempt, attempts + 1
                _record_error(trace, step, exc, action="dropped " + ", ".join(refused), attempt=attempt,
                              dropped=refused)
                if on_refused is not None:
                    on_refused(refused)
                continue
            _record_error(trace, step, exc, action=action, attempt=attempt)
            continue
        for problem in problems:
            if trace is not None:
                trace.lm_error(step, error=problem, action="repaired", attempt=attempt)
        repaired = bool(problems)
        pred.fallback = False
        _record_step(trace, step, "ok" if attempt == 1 else "retried", attempt, repaired, started)
        return pred

    pred = dspy.Prediction(**copy.deepcopy(dict(default)))
    pred.fallback = True
    _record_step(trace, step, "fallback", used, repaired, started)
    return pred


def _timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` (or its root cause) is an LM call that ran out of time: retrying it would
    spend a second ``--timeout`` on a server that has just shown it cannot answer in one."""
    return any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in (exc, _root_cause(exc)))


def _refused_options(exc: BaseException, options: Mapping[str, Any]) -> list[str]:
    """The request options in ``options`` that ``exc``, an invalid-request error, names (with the
    options that extend a named one: a refused ``logprobs`` takes ``top_logprobs`` with it)."""
    if not any(("InvalidRequest" in type(e).__name__ or "BadRequest" in type(e).__name__)
               for e in (exc, _root_cause(exc))):
        return []
    text = f"{exc} {_root_cause(exc)}".casefold()
    asked = [k for k in options if k not in ("rollout_id", "temperature")]
    named = [k for k in asked if k.casefold() in text]
    return [k for k in asked if any(n in k for n in named)]


def _record_error(trace: Any, step: str, exc: BaseException, *, action: str, attempt: int, **data: Any) -> None:
    if trace is None:
        return
    cause = _root_cause(exc)
    trace.lm_error(
        step,
        error=_error_text(exc),
        action=action,
        attempt=attempt,
        error_type=type(exc).__name__,
        cause=type(cause).__name__,
        **data,
    )


def _record_step(trace: Any, step: str, outcome: str, attempts: int, repaired: bool, started: float) -> None:
    if trace is None:
        return
    trace.add(
        "lm_step",
        name=step,
        outcome=outcome,
        attempts=attempts,
        repaired=repaired,
        seconds=round(time.perf_counter() - started, 4),
    )


# ----------------------------------------------------------------------------- step modules

# The trace of the program call that is running. ``RAGProgram.forward`` sets it, so a step
# records its events without the trace being passed by hand; a context variable, because
# ``dspy.Evaluate`` runs one program from several threads and each call has its own trace.
_ACTIVE_TRACE: contextvars.ContextVar[Any] = contextvars.ContextVar("ragnet_active_trace", default=None)


def active_trace() -> Any:
    """The trace steps record into now (None outside a program call or :func:`recording`)."""
    return _ACTIVE_TRACE.get()


@contextlib.contextmanager
def recording(trace: Any) -> Iterator[Any]:
    """Make ``trace`` the one every step run inside the ``with`` block records into.

    Example:
        >>> from ragnet.programs.trace import Trace
        >>> with recording(Trace()) as t:
        ...     active_trace() is t
        True
        >>> active_trace() is None
        True
    """
    token = _ACTIVE_TRACE.set(trace)
    try:
        yield trace
    finally:
        _ACTIVE_TRACE.reset(token)


class Step(dspy.Module):
    """One LM step as a ``dspy.Module``: a predictor, its validator, a safe default and retries.

    Subclasses (``AnswerStep``, ``SufficiencyStep``, ...) set ``name``, ``signature`` and
    ``max_tokens`` and implement ``forward`` with the step's inputs; ``forward`` formats them,
    then calls :meth:`run`, which goes through :func:`run_step` and records into the running
    program's trace (:func:`active_trace`). Optimizers see the one predictor, ``predict``, so a
    step compiles alone or inside a program.

    Args:
        signature: the signature of an ad hoc step (subclasses fix their own).
        name: the step's name in traces and in ``program.steps()`` (subclasses fix their own).
        retries: extra LM attempts after a failed one before the step falls back.
        enabled: whether the program runs this step (a program's on/off switch for it; the
            predictor exists either way, so compiled state loads into any configuration).
        max_tokens: output-token cap (subclasses fix their own).

    Example:
        >>> import dspy
        >>> from dspy.utils import DummyLM
        >>> judge = Step("question, prediction -> match: bool", name="judge")
        >>> with dspy.context(lm=DummyLM([{"match": True}])):
        ...     judge.run(default={"match": False}, question="q", prediction="p").match
        True
    """

    name: str = ""
    signature: Any = None
    max_tokens: int | None = None

    def __init__(
        self,
        signature: Any = None,
        *,
        name: str | None = None,
        retries: int = 1,
        enabled: bool = True,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__()
        signature = signature if signature is not None else type(self).signature
        if signature is None:
            raise InputError("a Step needs a signature", argument="signature")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise InputError(f"retries must be an integer >= 0, got {retries!r}", argument="retries")
        self.name = name or type(self).name or "step"
        self.retries = retries
        self.enabled = bool(enabled)
        cap = max_tokens if max_tokens is not None else type(self).max_tokens
        self.predict = dspy.Predict(signature, max_tokens=cap) if cap else dspy.Predict(signature)

    def install(self, compiled: "Step | dspy.Predict") -> None:
        """Take a copy of ``compiled``'s predictor (a compiled step, or its ``dspy.Predict``):
        demos, instructions and settings; this step keeps its switch and retries."""
        self.predict = copy.deepcopy(compiled.predict if isinstance(compiled, Step) else compiled)

    def run(self, *, default: Mapping[str, Any], validate: Validator | None = None,
            on_refused: Callable[[list[str]], Any] | None = None, **inputs: Any) -> dspy.Prediction:
        """Call the predictor through :func:`run_step` (retries, salvage, validation, fallback)."""
        return run_step(self.predict, step=self.name, trace=active_trace(), default=default, validate=validate,
                        retries=self.retries, on_refused=on_refused, **inputs)

    def forward(self, **inputs: Any) -> dspy.Prediction:  # an ad hoc step: no validator, empty default
        return self.run(default={name: "" for name in self.predict.signature.output_fields}, **inputs)
