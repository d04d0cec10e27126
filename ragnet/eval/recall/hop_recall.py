"""Hop recall: does an agent's follow-up search find the gold document the first search missed?

The one-shot already holds every gold document for most questions; what an agent must add is
the rest. This evaluation measures that second hop on its own, without an answer call, so it
is cheap enough to compare query policies and to compile the rewrite step against:

1. the first context is what ``OneShotRAG(budget, pack=Pack(sentences=True))`` would answer from (no LM);
2. questions whose first context holds every gold document need no hop and are not counted;
3. for the others, each policy issues up to ``searches`` follow-up searches (``k`` chunks each,
   excluding the first context), and the question counts as found when one of them retrieves a
   missing gold document.

Policies:

``bridge``
    the LM-free bridge search (:func:`ragnet.programs.bridge_search.bridge_search`): names the evidence
    gives and the question does not, each paired with the question. For every question (a hop
    needed or not) it also reports whether all gold documents are in the first context and in the
    context ``OneShotRAG(budget, pack=Pack(sentences=True), hops=Hops(searches, k))`` packs with those
    searches: whether the second hop survives the budget;
``rewrite``
    the rewrite step (RewriteQuery, ``n_queries`` per call, one call per question), shown the
    first context; its most probable new queries. Each call is classified: ``ok``, ``no new
    query`` (every query repeated or echoed the question), ``empty`` (no parseable query) or
    ``wrong form`` (usable queries, but not the number asked for);
``rewrite+bridge``
    the rewrite step's queries, then bridge searches to fill ``searches`` (what the agents do
    when the rewrite fails);
``next`` and ``next+bridge``
    the same with the one-query step (:class:`ragnet.signatures.next_query.NextQueryStep`:
    the name to look up next and one query), the form meant for small step LMs.

:func:`first_context` and :func:`hop_hit` are the two halves of the measurement; the rewrite
step's compilation (``ragnet optimize --step rewrite``) scores its queries with them.

Example:
    >>> import tempfile
    >>> from ragnet import Document, Index
    >>> from ragnet.eval.run.datasets import QARecord
    >>> docs = [Document(id="film", title="Kiss and Tell", text="Kiss and Tell is a film starring Shirley Temple."),
    ...         Document(id="st", title="Shirley Temple", text="Shirley Temple was an ambassador to Ghana."),
    ...         Document(id="x", title="Ghana", text="Ghana is a country in West Africa.")]
    >>> index = Index.build(docs, tempfile.mkdtemp() + "/i", show_progress=False)
    >>> q = QARecord(id="q1", question="Which film starred the actress?", answers=["x"],
    ...              gold_titles=["Kiss and Tell", "Shirley Temple"])
    >>> evaluator = HopEvaluator(index, [q], budget=435, searches=1, k=1, show_progress=False)
    >>> stats = evaluator()["policies"]["bridge"]    # the first context holds one document
    >>> stats["needs_hop"], stats["hop_recall"]
    (1, 1.0)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ragnet.errors import InputError
from ragnet.eval.metrics.gold_evidence import gold_chunks
from ragnet.eval.report.markdown_tables import markdown_table, percent
from ragnet.eval.run.evaluator import Evaluator

__all__ = ["POLICIES", "HopEvaluator", "first_context", "hop_hit", "missing_gold", "parse_policies", "rewrite_status"]

POLICIES = ("bridge", "rewrite", "rewrite+bridge", "next", "next+bridge")
LM_POLICIES = frozenset({"rewrite", "rewrite+bridge", "next", "next+bridge"})


def first_context(index: Any, question: str, budget: int, *, hops: int = 0, k: int = 5) -> list[Any]:
    """What ``OneShotRAG(budget, pack=Pack(sentences=True), hops=Hops(hops, k))`` would answer from (no LM call)."""
    import dspy

    from ragnet.programs.oneshot import OneShotRAG
    from ragnet.programs.options import Hops, Pack

    # The budget is measured as the local reader's JSON prompt, whatever LM writes queries.
    with dspy.context(adapter=dspy.JSONAdapter()):
        return OneShotRAG(index, budget, pack=Pack(sentences=True), hops=Hops(hops, k)).retrieve(question)


def missing_gold(gold: dict[str, set[str]], context: Sequence[Any]) -> dict[str, set[str]]:
    """The gold documents (``gold``: :func:`ragnet.eval.metrics.gold_evidence.gold_chunks` of a record) with no
    chunk in ``context``: ``{gold key: {chunk ids}}``."""
    in_context = {c.id for c in context}
    return {key: ids for key, ids in gold.items() if ids and not ids & in_context}


def hop_hit(index: Any, query: str | None, missing: dict[str, set[str]], exclude: Sequence[str], k: int = 5) -> bool:
    """Whether searching ``query`` (``k`` chunks, ``exclude`` left out) retrieves a missing gold document."""
    if not query or not missing:
        return False
    hits = {h.id for h in index.search(query, k=k, exclude=set(exclude))}
    return any(ids & hits for ids in missing.values())


def parse_policies(policies: str | Sequence[str]) -> list[str]:
    """Policy names from a comma list or a sequence, checked against :data:`POLICIES`.

    Example:
        >>> parse_policies("bridge, rewrite+bridge")
        ['bridge', 'rewrite+bridge']
    """
    names = [p.strip() for p in (policies.split(",") if isinstance(policies, str) else policies) if p.strip()]
    unknown = [p for p in names if p not in POLICIES]
    if unknown or not names:
        raise InputError(f"unknown policy {unknown[0] if unknown else '(none)'}; choose from {', '.join(POLICIES)}",
                         argument="policies")
    return list(dict.fromkeys(names))


def rewrite_status(pred: Any, errors: Sequence[dict[str, Any]]) -> str:
    """How one rewrite call went: ``ok``, ``no new query``, ``empty`` or ``wrong form`` (see the
    module docstring), from its prediction and the ``lm_error`` events it recorded.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> rewrite_status(NS(fallback=False), [{"error": "asked for 5 queries, got 2"}])
        'wrong form'
        >>> rewrite_status(NS(fallback=True), [{"error": "StepOutputError: no new query: every proposed query ..."}])
        'no new query'
    """
    messages = [str(e.get("error", "")) for e in errors]
    if getattr(pred, "fallback", False):
        return "no new query" if any("no new query" in m for m in messages) else "empty"
    return "wrong form" if any(m.startswith("asked for") for m in messages) else "ok"


class HopEvaluator(Evaluator):
    """Hop recall of follow-up search policies (``ragnet eval hops``; see the module docstring).

    Args:
        index: the ``ragnet.Index`` holding the questions' gold documents.
        questions: ``QARecord``\\ s with gold titles or passage ids.
        policies: names from :data:`POLICIES`; the ``rewrite`` ones call the configured LM.
        budget: the first context's answer-prompt budget (``OneShotRAG(budget, pack=Pack(sentences=True))``).
        searches: follow-up searches per question and policy.
        k: chunks per follow-up search.
        n_queries: queries the rewrite step is asked for.
        rewrite_step: the step the LM policies of its form call (e.g. a compiled program's
            ``program.rewrite``: a ``RewriteStep`` serves ``rewrite``, a ``NextQueryStep`` serves
            ``next``); None: a fresh, uncompiled step.
        program: where ``rewrite_step`` came from, recorded in the run's settings.
        command: the command line, for ``report.md``.
        show_progress: a progress bar over questions.
        log: receives one-line notices.
    """

    name = "hops"
    primary_metric = "hop_recall"
    row_key = ("policy", "id")

    def __init__(self, index: Any, questions: Sequence[Any], *, policies: Sequence[str] = ("bridge",),
                 budget: int = 1000, searches: int = 3, k: int = 5, n_queries: int = 5,
                 rewrite_step: Any = None, program: str | None = None,
                 command: str | None = None, show_progress: bool = True, log: Any = None) -> None:
        super().__init__(log=log)
        for name, value in (("budget", budget), ("searches", searches), ("k", k), ("n_queries", n_queries)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"must be an integer >= 1, got {value!r}", argument=name.replace("_", "-"))
        self.index, self.questions, self.policies = index, list(questions), parse_policies(policies)
        self.budget, self.searches, self.k, self.n_queries = budget, searches, k, n_queries
        self.command, self.show_progress = command, show_progress
        self.steps: dict[str, Any] = {}
        self.program = program
        if rewrite_step is not None:
            from ragnet.signatures import NextQueryStep

            self.steps["next" if isinstance(rewrite_step, NextQueryStep) else "rewrite"] = rewrite_step

    def needs_lm(self) -> bool:
        """Whether a policy calls the LM (the command configures one only then)."""
        return bool(LM_POLICIES & set(self.policies))

    def settings(self) -> dict[str, Any]:
        import dspy

        lm = dspy.settings.lm if self.needs_lm() else None
        return {"index": str(getattr(self.index, "path", "")), "budget": self.budget, "searches": self.searches,
                "k": self.k, "n_queries": self.n_queries, "lm": getattr(lm, "model", None), "program": self.program,
                "command": self.command}

    compare = ("index", "budget", "searches", "k", "n_queries", "lm", "program")

    # -- the evaluation ----------------------------------------------------------------------
    def evaluate(self, folder: Any) -> dict[str, Any]:
        from tqdm.auto import tqdm

        done = {(r["policy"], r["id"]): r for r in folder.rows()} if folder is not None else {}
        writer = folder.writer() if folder is not None else None
        rows: list[dict[str, Any]] = []
        try:
            for q in tqdm(self.questions, desc="Hops", unit="q", disable=not self.show_progress):
                first: list[Any] | None = None
                for policy in self.policies:
                    row = done.get((policy, str(q.id)))
                    if row is None:
                        first = self._context(q.question) if first is None else first
                        row = self._row(policy, q, first)
                        if writer is not None:
                            writer.write(row)
                    rows.append(row)
        finally:
            if writer is not None:
                writer.close()
        return self._summary(rows)

    def _context(self, question: str, hops: int = 0) -> list[Any]:
        return first_context(self.index, question, self.budget, hops=hops, k=self.k)

    def _row(self, policy: str, q: Any, first: list[Any]) -> dict[str, Any]:
        gold = gold_chunks(q, self.index)
        in_context = {c.id for c in first}
        missing = missing_gold(gold, first)
        row: dict[str, Any] = {"policy": policy, "id": str(q.id), "needs_hop": bool(missing),
                               "missing": sorted(missing)}
        if policy == "bridge":
            packed = {c.id for c in self._context(q.question, hops=self.searches)}
            row["all_gold"] = {"first": not missing, "packed": all(ids & packed for ids in gold.values() if ids)}
        if not missing:
            return row
        started = time.perf_counter()
        queries, sources = [], []
        if policy in LM_POLICIES:
            lm_queries, row["rewrite"] = self._rewrite(q.question, first, one=policy.startswith("next"))
            queries += lm_queries[: self.searches]
            sources += ["lm"] * len(queries)
        if policy.endswith("bridge"):
            from ragnet.programs.bridge_search import bridge_searches

            more = bridge_searches(self.index, q.question, first, [q.question, *queries], n=self.searches - len(queries))
            queries += more
            sources += ["bridge"] * len(more)
        found_by = None
        for i, query in enumerate(queries):
            if hop_hit(self.index, query, missing, in_context, k=self.k):
                found_by = i
                break
        row.update(queries=queries, sources=sources, found=found_by is not None, found_by=found_by,
                   seconds=round(time.perf_counter() - started, 3))
        return row

    def _rewrite(self, question: str, first: list[Any], *, one: bool = False) -> tuple[list[str], dict[str, Any]]:
        from ragnet.programs.trace import Trace
        from ragnet.signatures import NextQueryStep, RewriteStep, format_context, recording

        trace = Trace()
        step = self.steps.get("next" if one else "rewrite") or (NextQueryStep() if one else RewriteStep())
        with recording(trace):
            pred = step(question=question, context=format_context(first)[0], previous_queries=[question],
                        n=self.n_queries)
        errors = trace.errors()
        status = rewrite_status(pred, errors)
        return [sq.query for sq in pred.queries], {"status": status, "errors": [e["error"] for e in errors]}

    # -- the report ----------------------------------------------------------------------------
    def _summary(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(self.questions), "budget": self.budget, "searches": self.searches,
                               "k": self.k, "policies": {}}
        for policy in self.policies:
            mine = [r for r in rows if r["policy"] == policy]
            hop = [r for r in mine if r["needs_hop"]]
            stats: dict[str, Any] = {"questions": len(mine), "needs_hop": len(hop),
                                     "found": sum(bool(r.get("found")) for r in hop),
                                     "hop_recall": (sum(bool(r.get("found")) for r in hop) / len(hop)) if hop else None,
                                     "searches": (sum(len(r.get("queries", [])) for r in hop) / len(hop)) if hop else None}
            packs = [r["all_gold"] for r in mine if "all_gold" in r]
            if packs:
                stats["all_gold_first"] = sum(p["first"] for p in packs) / len(packs)
                stats["all_gold_packed"] = sum(p["packed"] for p in packs) / len(packs)
            calls = [r["rewrite"]["status"] for r in hop if "rewrite" in r]
            if calls:
                kinds = ("no new query", "empty", "wrong form")
                stats["rewrite_calls"] = len(calls)
                stats["rewrite_failures"] = {kind: calls.count(kind) for kind in kinds}
                stats["rewrite_failure_rate"] = sum(calls.count(kind) for kind in kinds) / len(calls)
            out["policies"][policy] = stats
        return out

    def format_report(self, summary: dict[str, Any]) -> str:
        command = f"Command: `{self.command}`\n\n" if self.command else ""
        head = ["policy", "needs a hop", "found", "hop recall", "searches", "rewrite calls", "rewrite failures"]
        body = []
        for policy, s in summary["policies"].items():
            failures = s.get("rewrite_failures")
            detail = ("–" if failures is None else f"{percent(s['rewrite_failure_rate'])} ("
                      + ", ".join(f"{k} {v}" for k, v in failures.items()) + ")")
            body.append([policy, f"{s['needs_hop']} of {s['questions']}", str(s["found"]), percent(s["hop_recall"]),
                         "–" if s["searches"] is None else f"{s['searches']:.1f}", str(s.get("rewrite_calls", "–")),
                         detail])
        report = (f"# Hop recall\n\n{command}First context: oneshot:sentences at {summary['budget']:,} tokens (no LM). "
                  f"Up to {summary['searches']} follow-up searches of {summary['k']} chunks per question that "
                  "lacks a gold document; found = one of them retrieves a missing one.\n\n"
                  + "\n".join(markdown_table(head, body)) + "\n")
        bridge = summary["policies"].get("bridge", {})
        if "all_gold_packed" in bridge:
            report += (f"\nAll gold documents in the context, over all {bridge['questions']} questions: "
                       f"{percent(bridge['all_gold_first'])}% in the first context, "
                       f"{percent(bridge['all_gold_packed'])}% in oneshot:sentences+hops (the bridge searches' hits "
                       "packed with the first candidates into the same budget).\n")
        return report

    def metrics(self, summary: dict[str, Any]) -> dict[str, float]:
        """``{"<policy>/hop_recall": ..., "<policy>/rewrite_failure_rate": ..., "bridge/all_gold_packed": ...}``."""
        out: dict[str, float] = {}
        for policy, s in summary["policies"].items():
            if s["hop_recall"] is not None:
                out[f"{policy}/hop_recall"] = s["hop_recall"]
            for key in ("rewrite_failure_rate", "all_gold_first", "all_gold_packed"):
                if key in s:
                    out[f"{policy}/{key}"] = s[key]
        return out
