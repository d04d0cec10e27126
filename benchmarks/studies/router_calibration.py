"""Router calibration (issue 36): how RouterRAG's LM-free rule routes dev questions that need a second hop.

A question "needs a hop" when the context of `oneshot:sentences` at the budget (the router's first
search, the same context `ragnet eval hops` calls the first) lacks a gold document. For the first
N dev questions of each set, this prints the routing confusion (needs a hop vs routed hard) of
`RouteRule()` and of a grid of its settings, with no LM call; `RouteRule`'s defaults were chosen
from this table (2026-11-27, commit f13f199, first 100 dev questions of each set). Never run it on
the acceptance split.

    python -m benchmarks.studies.router_calibration -n 100 --data-dir /work/shared/data \\
        --data 2wikimultihopqa_hipporag_pooled hotpotqa_dev_distractor
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

from benchmarks.studies import parser

GRID = {"bridge_names": (0, 1, 2, 3), "unanchored": (False, True), "min_cosine": (None, 0.5, 0.55)}


def confusion(rows: Sequence[dict[str, Any]], key: str = "route") -> dict[str, int]:
    """Counts of (needs a hop, routed hard) over ``rows``.

    Example:
        >>> confusion([{"needs_hop": True, "route": "hard"}, {"needs_hop": False, "route": "hard"}])
        {'hop_hard': 1, 'hop_simple': 0, 'nohop_hard': 1, 'nohop_simple': 0}
    """
    out = {"hop_hard": 0, "hop_simple": 0, "nohop_hard": 0, "nohop_simple": 0}
    for r in rows:
        out[f"{'hop' if r['needs_hop'] else 'nohop'}_{r[key]}"] += 1
    return out


def describe(c: dict[str, int]) -> str:
    """One line: how many questions needing a hop went hard, how many of the rest stayed simple."""
    hop, nohop = c["hop_hard"] + c["hop_simple"], c["nohop_hard"] + c["nohop_simple"]
    total = hop + nohop
    return (f"needs a hop → hard {c['hop_hard']}/{hop} ({100 * c['hop_hard'] / max(hop, 1):.0f}%); "
            f"no hop → simple {c['nohop_simple']}/{nohop} ({100 * c['nohop_simple'] / max(nohop, 1):.0f}%); "
            f"hard share {100 * (c['hop_hard'] + c['nohop_hard']) / max(total, 1):.0f}%")


def main(argv: Sequence[str] | None = None) -> None:
    import dspy

    from ragnet.core.routing import RouteRule
    from ragnet.eval.metrics.gold_evidence import gold_chunks
    from ragnet.eval.run.datasets import load_questions, resolve_dataset
    from ragnet.eval.run.eval_indexes import load_pooled
    from ragnet.programs.router import RouterRAG

    p = parser(__doc__, "router_calibration")
    p.add_argument("-n", type=int, default=100, help="First N dev questions of each set.")
    p.add_argument("--data", nargs="+", default=["2wikimultihopqa_hipporag_pooled", "hotpotqa_dev_distractor"])
    p.add_argument("--data-dir", help="The benchmarks' folder (default: ragnet's data folder).")
    p.add_argument("--budget", type=int, default=1000, help="The first context's answer budget.")
    p.add_argument("--rows", help="Also write one JSON row per question (signals, label, default route) here.")
    args = p.parse_args(argv)
    sink = open(args.rows, "w", encoding="utf-8") if args.rows else None
    try:
        for name in args.data:
            index, _ = load_pooled(name, data_dir=args.data_dir, show_progress=False, log=lambda m: print(m, flush=True))
            records = load_questions(resolve_dataset(name, args.data_dir), split="dev", limit=args.n)
            router = RouterRAG(index, budget=args.budget)
            rows = []
            for q in records:
                with dspy.context(adapter=dspy.JSONAdapter()):  # the local reader's prompt, as `ragnet eval hops`
                    route, reason, signals, context = router.route(q.question)
                ids = {c.id for c in context}
                missing = [key for key, chunks in gold_chunks(q, index).items() if chunks and not chunks & ids]
                rows.append({"set": name, "id": q.id, "needs_hop": bool(missing), "route": route, "rule": reason,
                             "signals": signals, **({"type": q.type} if getattr(q, "type", None) else {})})
                if sink is not None:
                    sink.write(json.dumps({**rows[-1], "signals": signals.to_dict()}) + "\n")
            print(f"\n## {name}: first {len(rows)} dev questions, budget {args.budget}\n")
            print(f"RouteRule(): {describe(confusion(rows))}")
            print("By clause: " + ", ".join(f"{k} {v}" for k, v in sorted(_count(r["rule"] for r in rows).items())))
            for values in itertools.product(*GRID.values()):
                rule = RouteRule(**dict(zip(GRID, values)))
                decided = [{**r, "grid": rule(r["signals"])[0]} for r in rows]
                print(f"- {rule}: {describe(confusion(decided, 'grid'))}")
    finally:
        if sink is not None:
            sink.close()


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


if __name__ == "__main__":
    main()
