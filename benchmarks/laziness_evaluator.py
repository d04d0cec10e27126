"""The retrieval-laziness experiment as one call (``python -m benchmarks.laziness``).

:class:`LazinessEvaluator` takes benchmark questions, builds their padded contexts
(:func:`benchmarks.laziness.build_cases`), takes the agent's decision step from a program
(:mod:`benchmarks.sufficiency_step`; IterativeRAG's, or a compiled program's), configures the
LM (a local model's window is sized to the largest prompt, :func:`configure_lm`), asks the step
about every context and reports the follow-up search rate per context size next to the
study's. In an output folder it resumes from ``results.jsonl`` (rows keyed by case) when
``run.json`` holds the same settings.

Example:
    >>> import dspy
    >>> from dspy.utils import DummyLM
    >>> from ragnet.eval.run.datasets import QARecord
    >>> q = QARecord(id="q1", question="Where was the director of Jaws born?", answers=["Cincinnati"],
    ...              gold_titles=["Jaws (film)", "Steven Spielberg"],
    ...              context=[{"title": "Jaws (film)", "text": "Jaws is a 1975 film directed by Steven Spielberg."},
    ...                       {"title": "Steven Spielberg", "text": "Steven Spielberg was born in Cincinnati."}])
    >>> filler = QARecord(id="q2", question="?", answers=["x"], gold_titles=[],
    ...                   context=[{"title": f"Filler {i}", "text": "Nothing to see here. " * 20} for i in range(40)])
    >>> lm = DummyLM([{"verdict": "Refine", "confidence": "0.8", "missing": "the birthplace"}] * 3)
    >>> evaluator = LazinessEvaluator([q, filler], pads=[300], lm=lm, show_progress=False)
    >>> with dspy.context(adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
    ...     summary = evaluator()
    >>> [(r["evidence"], r["pad"], r["rate"]) for r in summary["conditions"]]
    [('partial', 0, 1.0), ('partial', 300, 1.0), ('full', 0, 1.0)]
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.run.evaluator import Evaluator
from ragnet.eval.run.run_folder import RunFolder

__all__ = ["LazinessEvaluator", "configure_lm", "needed_n_ctx", "parse_pads"]

# Headroom when sizing the local model's window: Qwen's tokenizer counts up to ~10% more than
# cl100k on English prose, and the answer needs room too.
_TOKENIZER_SLACK = 1.15
_ANSWER_ROOM = 256


def parse_pads(text: str, argument: str = "pads") -> list[int]:
    """``"3000,6000"`` -> ``[3000, 6000]``, with a clear error naming the argument.

    ``"none"`` or nothing is no sizes for ``full-gold-pads``; ``pads`` needs at least one.

    Example:
        >>> parse_pads("3000, 6_000"), parse_pads("none", "full-gold-pads")
        ([3000, 6000], [])
    """
    items = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if argument == "full-gold-pads" and [p.casefold() for p in items] in (["none"], []):
        return []
    out = []
    for item in items:
        try:
            value = int(item.replace("_", ""))
        except ValueError:
            raise InputError(f"expected comma-separated token counts (integers), got {text!r}",
                             argument=argument) from None
        if value < 0:
            raise InputError(f"token counts cannot be negative, got {value}", argument=argument)
        out.append(value)
    if not out and argument == "pads":
        raise InputError("give at least one pad size, e.g. 3000,6000,9000,12000", argument=argument)
    return out


def needed_n_ctx(largest_prompt: int) -> int:
    """Local context window for a prompt of ``largest_prompt`` cl100k tokens, rounded up to 512.

    Example:
        >>> needed_n_ctx(1000), needed_n_ctx(12600)
        (8192, 14848)
    """
    need = math.ceil(largest_prompt * _TOKENIZER_SLACK) + _ANSWER_ROOM
    return max(8192, -(-need // 512) * 512)


def configure_lm(lm: str | None, *, n_ctx: int | None, timeout: float, largest_prompt: int):
    """Configure the LM; for the local model, size ``n_ctx`` to the largest prompt (or check the
    given one). Returns ``(lm, description)``.

    Raises:
        InputError: ``n_ctx`` too small for the largest prompt, or given for a hosted model.
    """
    import ragnet
    from ragnet.lm.config import parse_lm_spec

    kind, _ = parse_lm_spec(lm)
    options: dict[str, Any] = {}
    if kind == "local":
        need = needed_n_ctx(largest_prompt)
        if n_ctx is None:
            n_ctx = need
        elif n_ctx < need:
            raise InputError(
                f"{n_ctx} tokens cannot hold the largest prompt (~{largest_prompt:,} cl100k tokens, about "
                f"{need:,} with tokenizer slack and the answer); raise --n-ctx to {need} or lower --pads "
                "(Qwen2.5 models read up to 32,768 tokens)", argument="n-ctx")
        options["n_ctx"] = n_ctx
    elif n_ctx is not None:
        raise InputError("applies to the local model only", argument="n-ctx")
    built = ragnet.configure(lm=lm, timeout=timeout, **options)
    return built, {"lm": str(getattr(built, "model", lm)), "n_ctx": n_ctx, "timeout": timeout}


def _check_options(*, n: int | None = None, position: str = "early", timeout: float = 300.0,
                   retries: int | None = None) -> None:
    from benchmarks.laziness import POSITIONS

    if n is not None and n < 1:
        raise InputError(f"must be at least 1, got {n}", argument="n")
    if position not in POSITIONS:
        raise InputError(f"must be one of {', '.join(POSITIONS)}, got {position!r}", argument="position")
    if timeout <= 0:
        raise InputError(f"must be positive seconds, got {timeout}", argument="timeout")
    if retries is not None and retries < 0:
        raise InputError(f"must be 0 or more, got {retries}", argument="retries")


class LazinessEvaluator(Evaluator):
    """Follow-up search rate of the agent as padding grows (see the module docstring).

    Args:
        questions: ``QARecord``\\ s with ``context`` paragraphs; the first ``n`` with at least two
            gold paragraphs are measured.
        pool_records: where padding comes from (default: ``questions``; pass the whole split).
        n: at most this many questions (None: all eligible ones).
        data, split: names of the set and split, for ``run.json`` and the report.
        pads: target context sizes (tokens) of the partial-evidence contexts; 0 = gold only.
        full_gold_pads: extra sizes at which the full gold evidence is shown too.
        controls: add the pad-0 controls (partial gold only; full gold only).
        position: ``"early"`` or ``"random"`` (see ``benchmarks.laziness.build_cases``).
        seed: seeds the kept gold paragraph, the padding and the gold position.
        program: a compiled program file whose sufficiency step to use (None: IterativeRAG's).
        lm: a ``dspy`` LM object used as is, or an LM spec (``"local"``, a litellm id, None for
            ``RAGNET_LM``) configured by :func:`configure_lm`.
        n_ctx: the local model's window (default: sized to the largest prompt).
        timeout: seconds per LM call.
        retries: LM retries before the step falls back (default: the program's).
        command: the command line, for the report.
        show_progress: a progress bar over the decisions.
        log: receives one-line notices (default: stderr).

    Raises:
        InputError: bad arguments, or no question with two gold paragraphs.
    """

    name = "laziness"
    primary_metric = "rate"
    row_key = ("key",)

    def __init__(
        self,
        questions: Sequence[Any],
        *,
        pool_records: Sequence[Any] | None = None,
        n: int | None = None,
        data: str | None = None,
        split: str | None = None,
        pads: Iterable[int] = (3000, 6000, 9000, 12000),
        full_gold_pads: Iterable[int] = (),
        controls: bool = True,
        position: str = "early",
        seed: int = 0,
        program: str | Path | None = None,
        lm: Any = None,
        n_ctx: int | None = None,
        timeout: float = 300.0,
        retries: int | None = None,
        command: str | None = None,
        show_progress: bool = True,
        log: Callable[[str], None] | None = None,
    ) -> None:
        from benchmarks.laziness import gold_paragraphs

        super().__init__(log=log)
        self._started = time.perf_counter()
        _check_options(n=n, position=position, timeout=timeout, retries=retries)
        questions = list(questions)
        eligible = [q for q in questions if len(gold_paragraphs(q)) >= 2]
        if not eligible:
            where = f" of {data} ({split})" if data else ""
            raise InputError(f"no question{where} has two gold paragraphs in its context; the experiment needs "
                             "multi-hop questions with distractor-style contexts", argument="data")
        self.questions = eligible[:n] if n is not None else eligible
        self.pool_records = list(pool_records) if pool_records is not None else questions
        self.skipped_in_split = len(questions) - len(eligible)
        self.data, self.split = data, split
        self.pads, self.full_gold_pads = list(pads), list(full_gold_pads)
        self.controls, self.position, self.seed = controls, position, seed
        self.program, self.lm, self.n_ctx, self.timeout, self.retries = program, lm, n_ctx, timeout, retries
        self.command, self.show_progress = command, show_progress

    @classmethod
    def from_data(cls, data: str | Path, *, split: str = "dev", data_dir: str | Path | None = None,
                  **options: Any) -> "LazinessEvaluator":
        """The experiment on a benchmark's split (padding from the same split); ``options`` as
        for the class (``n``, ``pads``, ``lm``, ...)."""
        from ragnet.eval.run.datasets import load_questions, resolve_dataset

        started = time.perf_counter()
        _check_options(**{k: options[k] for k in ("n", "position", "timeout", "retries") if k in options})
        qpath = resolve_dataset(data, data_dir)
        records = load_questions(qpath, split=split)
        evaluator = cls(records, pool_records=records, data=qpath.parent.name, split=split, **options)
        evaluator._started = started
        return evaluator

    # -- set-up: contexts, the decision step, the LM (its name goes into run.json)

    def prepare(self) -> None:
        """Build the contexts, take the decision step and configure the LM."""
        from benchmarks.laziness import build_cases
        from benchmarks.sufficiency_step import decision_step
        from ragnet.programs.packing import prompt_tokens

        self.cases, self.skipped = build_cases(
            self.questions, pads=self.pads, full_gold_pads=self.full_gold_pads, controls=self.controls,
            pool_records=self.pool_records, seed=self.seed, position=self.position)
        self.step = decision_step(self.program)
        self.step_retries = self.step.retries if self.retries is None else self.retries
        biggest = max(self.cases, key=lambda c: c.context_tokens)
        self.largest_prompt = prompt_tokens(self.step.predictor, question=biggest.question,
                                            context=biggest.context_text())
        if self.lm is None or isinstance(self.lm, str):
            self.lm_obj, self.lm_info = configure_lm(self.lm, n_ctx=self.n_ctx, timeout=self.timeout,
                                                     largest_prompt=self.largest_prompt)
        else:
            self.lm_obj = self.lm
            self.lm_info = {"lm": str(getattr(self.lm, "model", None) or type(self.lm).__name__), "n_ctx": None,
                            "timeout": None}

    def settings(self) -> dict[str, Any]:
        """``run.json``: everything that changes the contexts or the decisions (all must match)."""
        return {
            "data": self.data, "split": self.split, "pads": sorted(set(self.pads)),
            "full_gold_pads": sorted(set(self.full_gold_pads)), "controls": self.controls,
            "position": self.position, "seed": self.seed, "lm": self.lm_info["lm"],
            "program": self.step.info["program"], "program_sha256": self.step.info["sha256"],
            "retries": self.step_retries,
        }

    # -- the run

    def evaluate(self, folder: RunFolder | None) -> dict[str, Any]:
        """Ask the step about every context not yet in ``folder``; return the summary."""
        import dspy

        from benchmarks.laziness import evidence_dependence, padding_trend, run_laziness, summarize_laziness

        cases, questions = self.cases, self.questions
        done: dict[str, dict[str, Any]] = {}
        if folder is not None:
            done = {row["key"]: row for row in folder.rows()}
            reused = sum(1 for c in cases if c.key in done)
            if reused:
                self.log(f"resuming: {reused} of {len(cases)} decisions already in {folder.results_path}")
        self.log(f"{len(questions)} questions x {len(cases) // max(len(questions), 1)} contexts "
                 f"(largest prompt ~{self.largest_prompt:,} tokens) on {self.lm_info['lm']}")
        writer = folder.writer() if folder is not None else None
        try:
            with dspy.context(lm=self.lm_obj):
                results = run_laziness(self.step.predictor, cases, retries=self.step_retries, done=done,
                                       on_result=writer, show_progress=self.show_progress)
        finally:
            if writer is not None:
                writer.close()
        rows = summarize_laziness(results)
        keep = "1 of 2" if all(len(c.kept_titles) == 1 for c in cases) else "half (rounded down)"
        return {
            "command": self.command,
            "config": {**self.settings(), "keep": keep, "n": len(questions)},
            "lm": self.lm_info,
            "program": self.step.info,
            "questions": len(questions),
            "skipped_in_split": self.skipped_in_split,
            "skipped": self.skipped,
            "conditions": rows,
            "evidence_dependence": evidence_dependence(rows),
            "padding_trend": padding_trend(rows),
            "lm_calls": sum(r.get("lm_calls", 0) for r in results),
            "prompt_tokens": sum(r.get("prompt_tokens", 0) for r in results),
            "wall_seconds": round(time.perf_counter() - self._started, 1),
            "decision_seconds": round(sum(r.get("seconds", 0.0) for r in results), 1),
            "resumed": sum(1 for c in cases if c.key in done),
        }

    def format_report(self, summary: dict[str, Any]) -> str:
        """``report.md``: a header (command, LM, step, questions, time), then the table and readings."""
        from benchmarks.laziness import format_laziness_report

        program = summary["program"]
        config = summary["config"]
        header = ("# Retrieval laziness: follow-up search rate vs context size\n\n"
                  + (f"Command: `{summary['command']}`\n\n" if summary.get("command") else "")
                  + f"LM: `{summary['lm']['lm']}`; decision step: {program['program']}'s sufficiency step"
                  + (f" from `{program['file']}`" if program["file"] else " (uncompiled)")
                  + f"; {summary['questions']} questions of {config['data']} ({config['split']}); wall time "
                  f"{summary['wall_seconds']:.0f} s; decisions took {summary['decision_seconds']:.0f} s in all"
                  + (f" ({summary['resumed']} resumed from results.jsonl)" if summary["resumed"] else "")
                  + ".\n\n")
        return header + format_laziness_report(summary) + "\n"

    def metrics(self, summary: dict[str, Any]) -> dict[str, float]:
        """``{"<evidence>@<pad>/rate": follow-up rate}`` for every condition with a rate, plus
        ``padding_change`` (largest minus smallest padded level) and ``evidence_gap`` when defined."""
        out = {f"{r['evidence']}@{r['pad']}/rate": r["rate"] for r in summary["conditions"] if r["rate"] is not None}
        if summary.get("padding_trend"):
            out["padding_change"] = summary["padding_trend"]["change"]
        if summary.get("evidence_dependence"):
            out["evidence_gap"] = summary["evidence_dependence"]["gap"]
        return out
