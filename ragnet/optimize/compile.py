"""Compile a program's prompts against a dev set with a DSPy optimizer, measured before and after.

:func:`compile` runs one optimizer on the training part of a dev set and scores the program
on the held-out validation part twice, uncompiled and compiled, in the same run (with
``dspy.Evaluate``). The optimizers never see the validation part: BootstrapFewShot bootstraps
from the training part, and the random search, MIPROv2 and GEPA split the training part again
for their own candidate selection (a candidate scored on the examples its demos came from would
be flattered by them).

Optimizers and efforts (``effort`` scales each one; :data:`SETTINGS` is the exact table):

* ``bootstrap``: ``light`` is ``dspy.BootstrapFewShot`` (demos that the program, or a teacher
  LM, got right, plus labelled examples); ``medium``/``heavy`` are
  ``dspy.BootstrapFewShotWithRandomSearch`` over 4 / 8 candidate demo sets plus the demo-free,
  labelled-only and unshuffled ones. With a demo cap every candidate is capped before the
  choice, so the search picks among the programs that can be saved.
* ``mipro``: ``dspy.MIPROv2(auto=effort)``: bootstrapped demo sets plus instructions proposed
  by the teacher (prompt) LM, searched with Optuna (``pip install 'ragnet[optimize]'``).
* ``gepa``: ``dspy.GEPA(auto=effort)``: instructions evolved by a reflection LM (the teacher,
  else the main LM) from textual feedback that :class:`ragnet.eval.metrics.program_metrics.Metric` gives.

:func:`expected_lm_calls` gives an upper estimate of the LM calls a run makes; :func:`compile`
prints it before starting.

Example:
    ``compile(BasicRAG(index), trainset, program_metric("f1"), optimizer="bootstrap")`` compiles a
    whole program (``tests/optimize/test_compile.py`` runs it with a scripted LM); what it will
    cost is known before it starts:

    >>> expected_lm_calls("bootstrap", "light", n_train=24, n_val=40).total
    104
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dspy

from ragnet.errors import InputError, require
from ragnet.eval.metrics.program_metrics import Metric
from ragnet.lm.usage import track_usage
from ragnet.optimize.demos import cap_demos, drop_call_data
from ragnet.optimize.split import train_val_split
from ragnet.programs.options import check_positive_int

__all__ = [
    "EFFORTS",
    "OPTIMIZERS",
    "SETTINGS",
    "CallEstimate",
    "CompileResult",
    "best_capped_candidate",
    "compile",
    "expected_lm_calls",
    "lm_calls_per_example",
    "split_examples",
]

OPTIMIZERS = ("bootstrap", "mipro", "gepa")
EFFORTS = ("light", "medium", "heavy")

# Demo counts are kept small: demos with retrieved paragraphs are long, and a small local
# model has an 8k context. `candidates` = 0 means plain BootstrapFewShot (no search).
SETTINGS: dict[str, dict[str, dict[str, int]]] = {
    "bootstrap": {
        "light": {"candidates": 0, "bootstrapped": 2, "labeled": 4},
        "medium": {"candidates": 4, "bootstrapped": 3, "labeled": 4},
        "heavy": {"candidates": 8, "bootstrapped": 4, "labeled": 8},
    },
    "mipro": {
        "light": {"bootstrapped": 2, "labeled": 2},
        "medium": {"bootstrapped": 3, "labeled": 3},
        "heavy": {"bootstrapped": 4, "labeled": 4},
    },
    "gepa": {"light": {}, "medium": {}, "heavy": {}},
}
_GEPA_MINIBATCH = 3  # dspy.GEPA's reflection_minibatch_size default


def _mipro_auto(effort: str) -> dict[str, int]:
    from dspy.teleprompt.mipro_optimizer_v2 import AUTO_RUN_SETTINGS  # optuna is imported lazily there

    return AUTO_RUN_SETTINGS[effort]


# ----------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class CallEstimate:
    """Upper estimate of a compile run's LM calls (retries of failed LM outputs not counted)."""

    evaluation: int
    compile: int
    proposer: int
    detail: str = ""

    @property
    def total(self) -> int:
        return self.evaluation + self.compile + self.proposer

    def __str__(self) -> str:
        parts = [f"before/after evaluation {self.evaluation:,}", f"compilation {self.compile:,}"]
        if self.proposer:
            parts.append(f"instruction proposals {self.proposer:,}")
        text = f"expected LM calls: up to {self.total:,} ({' + '.join(parts)})"
        return f"{text}; {self.detail}" if self.detail else text

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "evaluation": self.evaluation, "compile": self.compile,
                "proposer": self.proposer, "detail": self.detail}


def _check_choice(value: str, choices: Sequence[str], argument: str) -> str:
    if value not in choices:
        raise InputError(f"unknown {argument} {value!r}; choose from {', '.join(choices)}", argument=argument)
    return value


def _inner_sizes(n_train: int) -> tuple[int, int]:
    """(train, val) sizes of the split the random search, MIPROv2 and GEPA get from the training part."""
    n_val = n_train // 2
    return n_train - n_val, n_val


def expected_lm_calls(
    optimizer: str,
    effort: str = "light",
    *,
    n_train: int,
    n_val: int,
    calls_per_example: float = 1.0,
    n_predictors: int = 1,
    evaluate: bool = True,
    capped: bool = False,
) -> CallEstimate:
    """Upper estimate of the LM calls :func:`compile` makes with these settings.

    Args:
        optimizer, effort: as for :func:`compile`.
        n_train, n_val: sizes of the training and validation parts.
        calls_per_example: LM calls one program call makes (1 for a single step; see
            :func:`lm_calls_per_example` for whole programs).
        n_predictors: predictors the optimizer tunes (MIPROv2 and GEPA scale with it).
        evaluate: count the before/after evaluations on the validation part.
        capped: a demo cap is in force (the random search re-scores each candidate it shortens).

    Example:
        >>> str(expected_lm_calls("bootstrap", "medium", n_train=10, n_val=5))
        'expected LM calls: up to 70 (before/after evaluation 10 + compilation 60); 7 candidate demo sets scored on 5 of the 10 training examples, 5 of them bootstrapped from the other 5'
    """
    _check_choice(optimizer, OPTIMIZERS, "optimizer")
    _check_choice(effort, EFFORTS, "effort")
    cpe = max(float(calls_per_example), 0.0)
    evaluation = math.ceil(2 * n_val * cpe) if evaluate else 0
    settings = SETTINGS[optimizer][effort]
    if optimizer == "bootstrap":
        c = settings["candidates"]
        if c == 0:
            return CallEstimate(evaluation, math.ceil(n_train * cpe), 0,
                                f"bootstrapping stops after {settings['bootstrapped']} successful traces")
        inner_train, inner_val = _inner_sizes(n_train)
        # every candidate scored on the inner validation part, bootstrapped ones run on the inner
        # training part; with a cap, the c + 2 candidates that have demos may be scored again
        runs = (c + 3 + (c + 2 if capped else 0)) * inner_val + (c + 1) * inner_train
        return CallEstimate(evaluation, math.ceil(runs * cpe), 0,
                            f"{c + 3} candidate demo sets scored on {inner_val} of the {n_train} training examples, "
                            f"{c + 1} of them bootstrapped from the other {inner_train}"
                            + (", capped ones scored again" if capped else ""))
    inner_train, inner_val = _inner_sizes(n_train)
    auto = _mipro_auto(effort)
    n = auto["n"]
    trials = int(max(2 * (2 * n_predictors) * math.log2(n), 1.5 * n))
    if optimizer == "mipro":
        val = min(inner_val, auto["val_size"])
        if val > 50:  # MIPROv2 switches to minibatches of 35 above 50 validation examples
            evals = 35 * trials + val * (trials // 5 + 1) + val
        else:
            evals = val * (trials + 1)
        boots = max(n - 2, 0) * inner_train
        proposer = 10 + (n // 2) * n_predictors + n_predictors + 1
        return CallEstimate(evaluation, math.ceil((evals + boots) * cpe), proposer,
                            f"{n - 2} bootstrapped demo sets, {n // 2} instruction candidates per predictor, "
                            f"{trials} trials on {val} examples")
    # GEPA: dspy.GEPA.auto_budget's metric-call budget, each a program call.
    metric_calls = inner_val + n * 5 + trials * 35 + (((trials + 1) // 5 + 1) + (1 if trials < 5 else 0)) * inner_val
    # Each proposal costs at least two minibatch runs (before and after); GEPA may finish the
    # iteration it is in when the budget runs out, hence the +1.
    reflections = math.ceil(max(metric_calls - inner_val, 0) / (2 * _GEPA_MINIBATCH)) + 1
    return CallEstimate(evaluation, math.ceil(metric_calls * cpe), reflections,
                        f"GEPA budget of {metric_calls} program runs; at most {reflections} reflection calls")


def lm_calls_per_example(program: Any) -> float:
    """Upper bound of the LM calls one call of ``program`` makes (without retries).

    Example:
        >>> from ragnet.optimize.steps import SufficiencyStep
        >>> lm_calls_per_example(SufficiencyStep())
        1
    """
    from ragnet.programs.base import RAGProgram

    if isinstance(program, RAGProgram):
        return program.max_lm_calls()
    return max(1, len(program.predictors()))  # a step module: one call per predictor


# ----------------------------------------------------------------------------- splitting


def _group_id(example: Any, position: int) -> str:
    for key in ("qid", "id"):
        value = example.get(key) if hasattr(example, "get") else None
        if value is not None and str(value):
            return str(value)
    return f"#{position}"


def split_examples(examples: Sequence[Any], val_fraction: float = 0.3, seed: int = 0) -> tuple[list, list]:
    """Seeded split of examples into (train, val), grouped by ``qid`` (else ``id``).

    Cases built from the same question (``qid``) always land on the same side, so a question
    never appears in both parts. Order within each part follows the input order.

    Example:
        >>> import dspy
        >>> exs = [dspy.Example(id=f"q{i}", x=i) for i in range(10)]
        >>> train, val = split_examples(exs, 0.3, seed=0)
        >>> len(train), len(val), {e.id for e in train} & {e.id for e in val}
        (7, 3, set())
    """
    groups = [_group_id(ex, i) for i, ex in enumerate(examples)]
    _, val_ids = train_val_split(groups, val_fraction, seed)
    held = set(val_ids)
    train = [ex for ex, g in zip(examples, groups) if g not in held]
    val = [ex for ex, g in zip(examples, groups) if g in held]
    return train, val


# ----------------------------------------------------------------------------- result


@dataclass
class CompileResult:
    """A compiled program with its before/after scores on the validation part.

    ``before`` and ``after`` are mean metric values in [0, 1]; ``before_results`` and
    ``after_results`` hold ``(example, prediction, score)`` per validation example.
    """

    program: Any
    metric: str
    optimizer: str
    effort: str
    seed: int
    train_ids: list[str]
    val_ids: list[str]
    before: float
    after: float
    expected: CallEstimate
    usage: dict[str, Any]
    compile_usage: dict[str, Any]
    seconds: float
    step: str | None = None
    step_program: Any = None
    demo_cap: int | None = None  # the per-predictor demo token cap applied after compiling
    demos: dict[str, dict[str, int]] | None = None  # cap_demos's report: kept/dropped demos and tokens
    before_results: list = field(default_factory=list, repr=False)
    after_results: list = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no program, no per-example results)."""
        return {
            "optimizer": self.optimizer,
            "effort": self.effort,
            "metric": self.metric,
            "seed": self.seed,
            "step": self.step,
            "n_train": len(self.train_ids),
            "n_val": len(self.val_ids),
            "train_ids": list(self.train_ids),
            "val_ids": list(self.val_ids),
            "before": round(self.before, 4),
            "after": round(self.after, 4),
            "change": self.change(),
            "expected_lm_calls": self.expected.to_dict(),
            "lm_calls": self.usage.get("lm_calls", 0),
            "cached_calls": self.usage.get("cached_calls", 0),
            "compile_lm_calls": self.compile_usage.get("lm_calls", 0),
            "input_tokens": self.usage.get("input_tokens", 0),
            "output_tokens": self.usage.get("output_tokens", 0),
            "seconds": round(self.seconds, 1),
            "demo_tokens": self.demo_cap,
            "demos": self.demos,
        }

    def change(self) -> dict[str, Any]:
        """The after - before change on the validation part with its paired-bootstrap 95% interval.

        ``mean``, ``low``, ``high`` and ``p_value`` as ``ragnet.eval.metrics.stats.paired_bootstrap``
        gives them, plus ``n`` and ``resolvable_n``: about how many validation examples an
        interval would need to exclude zero for a change of this size and spread (None when
        the change is zero or the interval already excludes zero).

        Example:
            >>> r = CompileResult(program=None, metric="f1", optimizer="bootstrap", effort="light", seed=0,
            ...     train_ids=[], val_ids=["a", "b", "c", "d"], before=0.25, after=0.5,
            ...     expected=CallEstimate(0, 0, 0, ""), usage={}, compile_usage={}, seconds=0.0,
            ...     before_results=[(None, None, s) for s in (0, 1, 0, 0)],
            ...     after_results=[(None, None, s) for s in (1, 1, 0, 0)])
            >>> c = r.change(); c["mean"], c["n"], c["low"] <= 0 <= c["high"], c["resolvable_n"]
            (0.25, 4, True, 16)
        """
        from ragnet.eval.metrics.stats import paired_bootstrap

        diffs = [float(a[2]) - float(b[2]) for b, a in zip(self.before_results, self.after_results)]
        out = {**paired_bootstrap(diffs), "n": len(diffs), "resolvable_n": None}
        if diffs and out["mean"] and out["low"] is not None and out["low"] <= 0 <= out["high"]:
            # reached only with n >= 2: one difference gives an interval of one point, its mean
            sd = statistics.stdev(diffs)
            out["resolvable_n"] = max(len(diffs) + 1, math.ceil((1.96 * sd / abs(out["mean"])) ** 2))
        return out

    def breakdown(self, label: str) -> dict[str, dict[str, float]]:
        """Mean score before and after per value of the example field ``label`` (e.g. ``verdict``)."""
        out: dict[str, dict[str, float]] = {}
        for name, results in (("before", self.before_results), ("after", self.after_results)):
            groups: dict[str, list[float]] = {}
            for example, _, score in results:
                groups.setdefault(str(example.get(label)), []).append(float(score))
            for key, scores in groups.items():
                out.setdefault(key, {"n": len(scores)})[name] = sum(scores) / len(scores)
        return out

    def table(self, label: str | None = None) -> str:
        """A plain-text before/after table on the validation part."""
        rows = [("", "n", "before", "after", "change")]
        rows.append((self.metric, str(len(self.val_ids)), f"{self.before:.3f}", f"{self.after:.3f}",
                     f"{self.after - self.before:+.3f}"))
        if label:
            for key, row in sorted(self.breakdown(label).items()):
                b, a = row.get("before", 0.0), row.get("after", 0.0)
                rows.append((f"  {label}={key}", str(row["n"]), f"{b:.3f}", f"{a:.3f}", f"{a - b:+.3f}"))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        change = self.change()
        if change["n"]:
            lines.append(f"change {change['mean']:+.3f}, 95% interval {change['low']:+.3f} … {change['high']:+.3f} "
                         f"(paired bootstrap, p = {change['p_value']:.2f}, {change['n']} examples)")
            if change["resolvable_n"]:
                lines.append(f"note: {change['n']} validation examples cannot tell this change from noise; about "
                             f"{change['resolvable_n']} would (raise -n or --val-fraction before trusting it)")
        u = self.usage
        lines.append(f"validation part: {len(self.val_ids)} examples, never seen by the optimizer; "
                     f"training part: {len(self.train_ids)}")
        lines.append(f"{u.get('lm_calls', 0):,} LM calls ({u.get('cached_calls', 0):,} cached; "
                     f"{self.compile_usage.get('lm_calls', 0):,} while compiling; {self.expected.total:,} expected at "
                     f"most), {u.get('input_tokens', 0):,} tokens in, {u.get('output_tokens', 0):,} out, "
                     f"{self.seconds:.0f} s")
        for name, row in (self.demos or {}).items():
            lines.append(f"demos of {name}: {row['kept']} kept, {row['dropped']} dropped; {row['tokens']} prompt tokens "
                         f"(cap {self.demo_cap}, {row['tokens_before']} before the cap)")
        if self.after < self.before:
            advice = ("try a stronger --teacher-lm" if self.optimizer == "bootstrap" and self.effort != "light" else
                      "try --effort medium (its search includes the demo-free candidate) or a stronger --teacher-lm")
            lines.append(f"warning: the compiled program scores {self.before - self.after:.3f} below the uncompiled one "
                         f"on the validation part; keep the uncompiled program, or {advice}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- compile


def _evaluate(program: Any, devset: list, metric: Metric, *, threads: int, progress: bool) -> tuple[float, list]:
    evaluator = dspy.Evaluate(devset=devset, metric=metric, num_threads=threads, display_progress=progress,
                              max_errors=max(10, len(devset)), provide_traceback=False)
    result = evaluator(program)
    scores = [float(s) for _, _, s in result.results]
    return (sum(scores) / len(scores) if scores else 0.0), list(result.results)


def _ids(examples: Sequence[Any]) -> list[str]:
    return [str(ex.get("id")) if ex.get("id") is not None else f"#{i}" for i, ex in enumerate(examples)]


def _optimizer(optimizer: str, effort: str, metric: Metric, *, teacher_lm: Any, seed: int, threads: int):
    settings = SETTINGS[optimizer][effort]
    teacher_settings = {"lm": teacher_lm} if teacher_lm is not None else {}
    if optimizer == "bootstrap":
        common = dict(metric=metric, teacher_settings=teacher_settings,
                      max_bootstrapped_demos=settings["bootstrapped"], max_labeled_demos=settings["labeled"])
        if settings["candidates"] == 0:
            return dspy.BootstrapFewShot(max_rounds=1, **common)
        return dspy.BootstrapFewShotWithRandomSearch(num_candidate_programs=settings["candidates"],
                                                     num_threads=threads, **common)
    if optimizer == "mipro":
        require("optuna", extra="optimize", purpose="the mipro optimizer (MIPROv2)")
        return dspy.MIPROv2(metric=metric, prompt_model=teacher_lm or dspy.settings.lm, task_model=dspy.settings.lm,
                            teacher_settings=teacher_settings, auto=effort, seed=seed, num_threads=threads,
                            max_bootstrapped_demos=settings["bootstrapped"], max_labeled_demos=settings["labeled"],
                            verbose=False)
    return dspy.GEPA(metric=metric.for_gepa(), auto=effort, reflection_lm=teacher_lm or dspy.settings.lm,
                     seed=seed, num_threads=threads, track_stats=False)


def _run_optimizer(opt: Any, optimizer: str, student: Any, train: list, seed: int) -> tuple[Any, list, list]:
    """The compiled program, and the random search's scored candidates with the examples they were
    scored on (``[]`` and ``[]`` for the other optimizers)."""
    if isinstance(opt, dspy.BootstrapFewShot):
        return opt.compile(student, trainset=train), [], []
    inner_train, inner_val = split_examples(train, 0.5, seed) if len(train) >= 2 else (train, train)
    if optimizer == "mipro":
        return opt.compile(student, trainset=inner_train, valset=inner_val, seed=seed), [], []
    # (the random search scores on its trainset unless given a valset: its demos' own sources)
    compiled = opt.compile(student, trainset=inner_train, valset=inner_val)
    if not isinstance(opt, dspy.BootstrapFewShotWithRandomSearch):  # GEPA
        return compiled, [], []
    return compiled, list(getattr(compiled, "candidate_programs", None) or []), inner_val


def best_capped_candidate(candidates: Sequence[Any], max_tokens: int,
                          score: Callable[[Any], float]) -> tuple[Any, dict[str, dict[str, int]], float]:
    """The best of a search's candidate programs once each is capped to ``max_tokens`` of demos.

    A search scores its candidates with every demo they were given; a cap applied afterwards may
    cut the winner down to a program that was never scored, and worse than the demo-free one.
    Here each candidate is capped first: one the cap leaves whole keeps its search score, one it
    shortens is scored again with ``score``. Ties go to the earlier candidate.

    Args:
        candidates: ``{"score", "program"}`` dicts, as ``dspy.BootstrapFewShotWithRandomSearch``
            leaves in ``candidate_programs`` (any order; scores in percent or fractions, as long as
            ``score`` uses the same scale).
        max_tokens: the demo cap (see :func:`ragnet.optimize.demos.cap_demos`).
        score: scores a program on the search's validation examples.

    Returns:
        ``(program, cap report, score)``: a capped copy of the winner.

    Raises:
        InputError: no candidates.
    """
    if not candidates:
        raise InputError("the search left no candidate programs", argument="effort")
    best: tuple[Any, dict[str, dict[str, int]], float] | None = None
    for candidate in candidates:
        program = candidate["program"].deepcopy()
        vars(program).pop("candidate_programs", None)  # the search's list, hung on its winner
        report = cap_demos(program, max_tokens)
        shortened = any(row["dropped"] for row in report.values())
        value = float(score(program)) if shortened else float(candidate["score"])
        if best is None or value > best[2]:
            best = (program, report, value)
    assert best is not None
    return best


def compile(  # noqa: A001 - the name the optimizer API is known by
    program: Any,
    trainset: Sequence[Any],
    metric: Metric,
    optimizer: str = "bootstrap",
    valset: Sequence[Any] | None = None,
    effort: str = "light",
    teacher_lm: Any = None,
    seed: int = 0,
    *,
    val_fraction: float = 0.3,
    threads: int = 1,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    calls_per_example: float | None = None,
    demo_tokens: int | None = None,
) -> CompileResult:
    """Compile ``program`` on ``trainset``; score it before and after on the validation part.

    Args:
        program: a ``dspy.Module`` (a ragnet program, or a one-step module from
            :mod:`ragnet.optimize.steps`). It is not modified; the result holds a compiled copy.
        trainset: ``dspy.Example``s with inputs set. Without ``valset`` they are split into
            training and validation parts (:func:`split_examples`: seeded, grouped by question).
        metric: a :class:`ragnet.eval.metrics.program_metrics.Metric`.
        optimizer: ``"bootstrap"``, ``"mipro"`` or ``"gepa"``.
        valset: explicit validation examples (then ``trainset`` is used whole for training).
        effort: ``"light"``, ``"medium"`` or ``"heavy"`` (see :data:`SETTINGS`).
        teacher_lm: LM that bootstraps demos (bootstrap, mipro), proposes instructions (mipro)
            and reflects (gepa); the configured LM when None.
        seed: seeds the split and the optimizers.
        val_fraction: share held out for validation when ``valset`` is None.
        threads: parallel program calls (a local llama.cpp model serialises them anyway).
        progress: show progress bars.
        log: where stage messages go (default: standard error).
        calls_per_example: LM calls per program call, for the estimate
            (default :func:`lm_calls_per_example`).
        demo_tokens: cap on each predictor's demo tokens, applied before the "after" score
            (:func:`ragnet.optimize.demos.cap_demos`); None keeps every demo the optimizer chose.

    Returns:
        A :class:`CompileResult`.

    Raises:
        InputError: an unknown optimizer or effort, no LM configured, or too few examples.
    """
    _check_choice(optimizer, OPTIMIZERS, "optimizer")
    _check_choice(effort, EFFORTS, "effort")
    if demo_tokens is not None:
        check_positive_int(demo_tokens, "demo-tokens", minimum=0)
    if not isinstance(metric, Metric):
        raise InputError("expected a ragnet.optimize.Metric (e.g. program_metric('f1'))", argument="metric")
    if dspy.settings.lm is None:
        raise InputError("no LM configured; call ragnet.configure(...) first", argument="lm")
    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    examples = list(trainset)
    if valset is None:
        train, val = split_examples(examples, val_fraction, seed)
    else:
        train, val = examples, list(valset)
    if not train or not val:
        raise InputError(f"need training and validation examples, got {len(train)} and {len(val)}", argument="n")
    if optimizer != "bootstrap" and len(train) < 2:
        raise InputError(f"{optimizer} needs at least 2 training examples, got {len(train)}", argument="n")
    cpe = lm_calls_per_example(program) if calls_per_example is None else calls_per_example
    estimate = expected_lm_calls(optimizer, effort, n_train=len(train), n_val=len(val), calls_per_example=cpe,
                                 n_predictors=len(program.predictors()), capped=demo_tokens is not None)
    say(f"{optimizer} ({effort}) on {len(train)} training / {len(val)} validation examples, metric {metric.name}")
    say(str(estimate))

    started = time.perf_counter()
    with track_usage() as meter:
        say(f"[1/3] scoring the uncompiled program on the {len(val)} validation examples")
        before, before_results = _evaluate(program, val, metric, threads=threads, progress=progress)
        say(f"      {metric.name} before: {before:.3f}")
        say(f"[2/3] compiling with {optimizer} ({effort})")
        opt = _optimizer(optimizer, effort, metric, teacher_lm=teacher_lm, seed=seed, threads=threads)
        demos = None
        with track_usage() as compile_meter:
            compiled, candidates, search_val = _run_optimizer(opt, optimizer, program.deepcopy(), train, seed)
            if demo_tokens is not None and candidates:
                say(f"      capping the {len(candidates)} candidates to {demo_tokens} demo tokens; "
                    "those the cap shortens are scored again")
                compiled, demos, chosen = best_capped_candidate(
                    candidates, demo_tokens,
                    lambda p: round(100 * _evaluate(p, search_val, metric, threads=threads, progress=False)[0], 2))
                demo_free = [c["score"] for c in candidates if not any(p.demos for p in c["program"].predictors())]
                say(f"      chose the candidate scoring {chosen:.1f} on {len(search_val)} search examples once capped"
                    + (f" (demo-free: {demo_free[0]:.1f})" if demo_free else ""))
        drop_call_data(compiled)
        if demo_tokens is not None:  # before scoring, so "after" is the program that is saved
            if demos is None:
                demos = cap_demos(compiled, demo_tokens)
            for name, row in demos.items():
                say(f"      {name}: kept {row['kept']} of {row['kept'] + row['dropped']} demos, {row['tokens']} "
                    f"prompt tokens (cap {demo_tokens}; {row['tokens_before']} before)")
        say(f"[3/3] scoring the compiled program on the {len(val)} validation examples")
        after, after_results = _evaluate(compiled, val, metric, threads=threads, progress=progress)
        say(f"      {metric.name} after: {after:.3f}")
    return CompileResult(
        program=compiled, metric=metric.name, optimizer=optimizer, effort=effort, seed=seed,
        train_ids=_ids(train), val_ids=_ids(val), before=before, after=after, expected=estimate,
        usage=meter.to_dict(), compile_usage=compile_meter.to_dict(), seconds=time.perf_counter() - started,
        before_results=before_results, after_results=after_results, demo_cap=demo_tokens, demos=demos,
    )
