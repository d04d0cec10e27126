"""PNG plots of an evaluation summary (matplotlib, optional: ``pip install 'ragnet[eval]'``).

* ``accuracy_vs_budget.png`` and ``gold_recall_vs_budget.png``: one line per budgeted strategy
  run at several ``--budgets``; strategies without a budget are drawn as flat dashed lines.
* ``turns_hist.png`` and ``searches_hist.png``: how many turns / searches each strategy took
  per question.

Each file is written atomically. Without matplotlib, :func:`write_plots` raises
:class:`ragnet.errors.MissingDependencyError` with the install command.

Example:
    >>> import tempfile
    >>> from ragnet.eval.report.summary import build_summary
    >>> rows = [{"strategy": "basic", "id": "q1", "em": 1.0, "usage": {"turns": 1, "searches": 1}}]
    >>> meta = {"set": "toy", "mode": "pooled", "questions": 1,
    ...         "strategies": [{"label": "basic", "spec": "basic", "budget": None, "program": None}]}
    >>> [p.name for p in write_plots(build_summary(rows, meta), tempfile.mkdtemp())]
    ['turns_hist.png', 'searches_hist.png']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragnet._atomic import atomic_path
from ragnet.errors import require

__all__ = ["write_plots"]


def _pyplot():
    matplotlib = require("matplotlib", extra="eval", purpose="the plots of `ragnet eval`")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _budget_plot(plt: Any, summary: dict[str, Any], key: str, ylabel: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    curves = summary["budget_curves"]
    budgets = sorted({p["budget"] for pts in curves.values() for p in pts})
    for spec, points in curves.items():
        xs = [p["budget"] for p in points]
        ys = [100 * (p[key] or 0.0) for p in points]
        ax.plot(xs, ys, marker="o", label=spec)
    budgeted = {s["label"] for s in summary["meta"]["strategies"] if s.get("budget") is not None}
    for label, agg in summary["strategies"].items():
        if label in budgeted or agg.get(key) is None:
            continue
        ax.axhline(100 * agg[key], linestyle="--", linewidth=1, color="grey")
        ax.annotate(label, (budgets[0], 100 * agg[key]), textcoords="offset points", xytext=(2, 3), fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets)
    ax.set_xticklabels([f"{b:,}" for b in budgets])
    ax.set_xlabel("token budget")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{summary['meta']['set']}: {ylabel} vs budget (n={summary['meta']['questions']})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def _hist_plot(plt: Any, summary: dict[str, Any], key: str, xlabel: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    labels = list(summary["strategies"])
    values = sorted({int(v) for lb in labels for v in summary["strategies"][lb].get(key, {})})
    width = 0.8 / max(1, len(labels))
    for i, lb in enumerate(labels):
        hist = summary["strategies"][lb].get(key, {})
        ax.bar([v - 0.4 + width * (i + 0.5) for v in values], [hist.get(str(v), 0) for v in values],
               width=width, label=lb)
    ax.set_xticks(values)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("questions")
    ax.set_title(f"{summary['meta']['set']}: {xlabel} per question")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def write_plots(summary: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """Write the plots this summary supports into ``out_dir``; returns their paths."""
    plt = _pyplot()
    out_dir = Path(out_dir)
    metric = summary["primary_metric"]
    name = {"llm_match": "LLM match %", "em": "exact match %"}.get(metric, f"{metric} %")
    paths: list[Path] = []
    if summary.get("budget_curves"):
        paths.append(_budget_plot(plt, summary, metric, name, out_dir / "accuracy_vs_budget.png"))
        paths.append(_budget_plot(plt, summary, "gold_all", "all-gold recall %", out_dir / "gold_recall_vs_budget.png"))
    if any(a.get("turns_hist") for a in summary["strategies"].values()):
        paths.append(_hist_plot(plt, summary, "turns_hist", "turns", out_dir / "turns_hist.png"))
        paths.append(_hist_plot(plt, summary, "searches_hist", "searches", out_dir / "searches_hist.png"))
    return paths
