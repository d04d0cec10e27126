"""The per-run trace every program records on its Prediction.

A trace is an ordered list of events, each ``{"step": name, "turn": n, ...data}``, plus a
list of LM failures. It is JSON-serialisable (``to_list``) so ``ragnet ask --trace`` and
``ragnet eval`` can store it verbatim.

Conventional event keys (programs use these so eval can read any program's trace):
    search:   query, retrieved (ids), fallback (bool)
    filter:   kept, dropped [{id, reason}], added [{id, reason}]
    crop:     cropped [{id, tokens_before, tokens_after}]
    select:   kept (ids), tokens, budget
    delete:   deleted (ids)
    sufficiency: verdict ("Sufficient"|"Refine"), confidence, missing
    answer:   evidence (ids)
    lm_error: step, error, action ("retried"|"fallback"|"repaired"|"dropped <options>")
    probe:    (a key on any event) True on a router's first search and selection when it then ran
              the hard route: they decided the route, and the hard program's own events follow

Example:
    >>> t = Trace()
    >>> _ = t.add("search", turn=1, query="q", retrieved=["d#0"])
    >>> t.queries()
    ['q']
"""

from __future__ import annotations

import time
from typing import Any


class Trace:
    """Ordered record of what a program did during one call."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()

    def add(self, step: str, **data: Any) -> dict[str, Any]:
        """Append an event and return it (callers may enrich it later)."""
        event = {"step": step, **data, "t": round(time.perf_counter() - self._t0, 4)}
        self.events.append(event)
        return event

    def lm_error(self, step: str, error: str, action: str, **data: Any) -> None:
        """Record an LM failure (parse error, timeout, invalid output) and what was done about it."""
        self.add("lm_error", failed_step=step, error=error, action=action, **data)

    def of(self, step: str) -> list[dict[str, Any]]:
        """All events of one step, in order."""
        return [e for e in self.events if e["step"] == step]

    def queries(self) -> list[str]:
        """Every search query issued, in order."""
        return [e["query"] for e in self.of("search")]

    def errors(self) -> list[dict[str, Any]]:
        """LM failures recorded during the run."""
        return self.of("lm_error")

    def to_list(self) -> list[dict[str, Any]]:
        """JSON-serialisable copy of the events."""
        return [dict(e) for e in self.events]

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        steps = ", ".join(e["step"] for e in self.events)
        return f"Trace({steps})"
