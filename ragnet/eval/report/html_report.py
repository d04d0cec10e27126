"""``report.html``: one self-contained page a person can read to see why a strategy won or lost.

``ragnet eval`` writes it beside ``report.md`` whenever it writes that (a resumed run too), and
``ragnet eval report --out FOLDER`` rebuilds it from a finished run folder without running
anything (:func:`rebuild_html`). The page needs no server and no network: the CSS and a few
lines of script are inline (the template, ``html_report.j2``, is package data beside this
module) and the PNG plots are embedded as ``data:`` URIs.

It holds the summary (the text of ``report.md`` rendered as HTML, so the figures are the same)
and one row per question: a line with each strategy's score that expands, without script, to
show per strategy the answer and its scores, the gold answers, the passages the reader saw with
the gold supporting sentences highlighted, the gold sentences (or, where a set has only
document-level gold, the gold documents) that did not reach the reader, and the trace
(searches, kept and dropped chunks, step failures, the route taken, why the program stopped).
``#q-<id>`` in the address opens that question.

Everything a document, a question or an LM wrote is data: the page is rendered by jinja2 with
autoescaping on, so a document holding ``<script>`` shows as text. The one HTML the template
takes as it is, the summary, is markdown-it's rendering of ``report.md`` with raw HTML, links
and entities left as text (:mod:`ragnet.eval.report.markdown_html`).
Long fields are capped (passage texts, trace lists and strings) so a report of a few hundred
answers stays a file a browser opens at once.

Rows written before rows carried ``passages`` and ``gold`` still render: the gold labels are
read from the run's question file when it is still there (or ``data``), and the passages are
shown as unavailable, with the ids of the chunks the reader saw.

Example:
    >>> rows = [{"strategy": "basic", "id": "q1", "question": "Capital of France?", "answers": ["Paris"],
    ...          "answer": "Paris", "em": 1.0, "f1": 1.0, "context": ["Paris#0"],
    ...          "passages": [{"id": "Paris#0", "title": "Paris", "text": "Paris is the capital of France."}],
    ...          "gold": {"documents": ["Paris"], "sentences": [["Paris", 0, "Paris is the capital of France."]]}}]
    >>> summary = {"meta": {"set": "toy", "mode": "pooled", "questions": 1,
    ...            "strategies": [{"label": "basic"}]}, "strategies": {}}
    >>> page = render_html(summary, rows, report_md="# ragnet eval: toy")
    >>> page.count('<details class="q"'), "<mark>Paris is the capital of France.</mark>" in page
    (1, True)
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ragnet._text import normalize_text
from ragnet.errors import InputError, describe
from ragnet.eval.report.page_checks import check_page_target, check_summary
from ragnet.eval.run.results_file import read_finished_rows

__all__ = ["REPORT_HTML", "TEMPLATE", "rebuild_html", "render_html", "row_gold", "row_passages", "write_html"]

REPORT_HTML = "report.html"
#: Characters of one passage kept in a result row (and shown), and passages kept per row.
PASSAGE_CHARS = 4000
MAX_PASSAGES = 60
#: Trace caps: items of a list shown, characters of a string shown, events shown per answer.
TRACE_ITEMS = 12
TRACE_CHARS = 400
TRACE_EVENTS = 80
#: Characters of an answer, a question or an error message shown.
TEXT_CHARS = 2000

# Trace steps drawn apart: failures, route decisions, stops and dropped chunks are what a reader looks for.
_STEP_CLASS = {"lm_error": "fail", "stop": "stop", "route": "route", "filter": "filter", "delete": "filter",
               "noise": "filter", "search": "search", "hops": "search", "rewrite": "search"}
# Trace fields not shown: timings the cost table already covers.
_TRACE_SKIP = {"step", "t"}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cap(text: Any, limit: int = TEXT_CHARS) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit:,} more characters]"


def _doc_of(chunk_id: str) -> str:
    head, sep, tail = str(chunk_id).rpartition("#")
    return head if sep and tail.isdigit() else str(chunk_id)


# --------------------------------------------------------------------------- what a row keeps


def row_passages(passages: Iterable[dict[str, Any]] | None) -> list[dict[str, str]] | None:
    """The passages a reader saw, compact for a result row: ``id``, ``title`` and ``text`` (cut
    at :data:`PASSAGE_CHARS` characters, at most :data:`MAX_PASSAGES` passages); None for none given.

    Example:
        >>> row_passages([{"id": "a#0", "title": "A", "text": "x" * 5000, "score": 0.3}])[0]["text"][-26:]
        ' … [1,000 more characters]'
    """
    if passages is None:
        return None
    out = []
    for p in list(passages)[:MAX_PASSAGES]:
        p = p if isinstance(p, dict) else {}
        out.append({"id": str(p.get("id", "")), "title": str(p.get("title", "")),
                    "text": _cap(p.get("text", ""), PASSAGE_CHARS)})
    return out


def row_gold(record: Any) -> dict[str, Any] | None:
    """A question's gold labels for a result row: ``documents`` (its gold passage ids, else its
    gold titles) and ``sentences`` (``[title, index, text]`` of its gold supporting sentences);
    None for a question with neither.

    Example:
        >>> from ragnet.eval.run.datasets import QARecord
        >>> r = QARecord(id="q", question="?", answers=["a"], gold_titles=["T"], gold_sentences=[["T", 0]],
        ...              context=[{"title": "T", "sentences": ["One.", "Two."]}])
        >>> row_gold(r)
        {'documents': ['T'], 'sentences': [['T', 0, 'One.']]}
    """
    from ragnet.eval.metrics.gold_evidence import gold_sentences
    from ragnet.eval.run.records import get_field

    docs = [str(d) for d in (get_field(record, "gold_passage_ids", None) or get_field(record, "gold_titles", None)
                             or [])]
    try:
        sentences = [[t, i, _cap(text, PASSAGE_CHARS)] for t, i, text in gold_sentences(record)]
    except (AttributeError, TypeError):
        sentences = []
    if not docs and not sentences:
        return None
    return {"documents": list(dict.fromkeys(docs)), "sentences": sentences}


# --------------------------------------------------------------------------- per question


def _segments(text: str, patterns: Sequence[re.Pattern[str]]) -> tuple[list[dict[str, Any]], set[int]]:
    """``text`` cut into ``{text, gold}`` pieces where ``patterns`` match, and which patterns matched."""
    spans, found = [], set()
    for n, pattern in enumerate(patterns):
        for m in pattern.finditer(text):
            if m.end() > m.start():
                spans.append((m.start(), m.end()))
                found.add(n)
    spans.sort()
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    out, at = [], 0
    for a, b in merged:
        if a > at:
            out.append({"text": text[at:a], "gold": False})
        out.append({"text": text[a:b], "gold": True})
        at = b
    if at < len(text) or not out:
        out.append({"text": text[at:], "gold": False})
    return out, found


def _sentence_pattern(text: str) -> re.Pattern[str] | None:
    words = str(text).split()
    if not words:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)


def _score_cell(row: dict[str, Any] | None, judged: bool) -> dict[str, str]:
    """The coloured cell of one strategy in a question's summary line."""
    if row is None:
        return {"text": "–", "cls": "none", "title": "no row"}
    if row.get("error"):
        kind = "LM failure" if row.get("error_kind") == "lm" else "error"
        return {"text": "LM" if row.get("error_kind") == "lm" else "err", "cls": "err", "title": kind}
    f1 = row.get("f1")
    correct = row.get("llm_match") if judged and row.get("llm_match") is not None else row.get("em")
    text = "–" if f1 is None else f"{100 * float(f1):.0f}"
    if correct:
        cls = "good"
    elif f1:
        cls = "part"
    else:
        cls = "bad"
    title = f"EM {row.get('em')}, F1 {f1}" + (f", judge {row.get('llm_match')}" if judged else "")
    return {"text": text, "cls": cls, "title": title}


def _value(value: Any) -> str:
    """A trace field as one line of text: lists shortened to their first items, long strings cut."""
    if isinstance(value, list):
        if not value:
            return "none"
        items = [_value(v) if not isinstance(v, (str, int, float)) else _cap(v, 120) for v in value[:TRACE_ITEMS]]
        more = f" … (+{len(value) - TRACE_ITEMS} more)" if len(value) > TRACE_ITEMS else ""
        return f"{len(value)}: " + "; ".join(items) + more if len(value) > 3 else "; ".join(items) + more
    if isinstance(value, dict):
        return _cap(", ".join(f"{k}={_value(v)}" for k, v in value.items()), TRACE_CHARS)
    if isinstance(value, float):
        return f"{value:.4g}"
    return _cap(value, TRACE_CHARS)


def _trace_view(trace: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if trace is None:
        return None
    out = []
    for event in list(trace)[:TRACE_EVENTS]:
        if not isinstance(event, dict):
            continue
        step = str(event.get("step", "?"))
        fields = [{"key": str(k), "value": _value(v)} for k, v in event.items()
                  if k not in _TRACE_SKIP and v not in (None, [], {}, "")]
        cls = _STEP_CLASS.get(step, "")
        if step == "lm_step" and event.get("outcome") not in (None, "ok"):
            cls = "fail"
        if step == "answer" and event.get("fallback"):
            cls = "fail"
        out.append({"step": step, "cls": cls, "fields": fields})
    if len(trace) > TRACE_EVENTS:
        out.append({"step": "…", "cls": "", "fields": [{"key": "left out", "value": f"{len(trace) - TRACE_EVENTS} "
                                                                                  "more events"}]})
    return out


def _strategy_view(label: str, row: dict[str, Any] | None, gold: dict[str, Any] | None, judged: bool
                   ) -> dict[str, Any]:
    view: dict[str, Any] = {"label": label, "present": row is not None}
    if row is None:
        return view
    scores = [("EM", row.get("em")), ("F1", row.get("f1"))]
    if judged or row.get("llm_match") is not None:
        scores.append(("judge", row.get("llm_match")))
    scores += [("all gold docs", row.get("gold_all")), ("gold fraction", row.get("gold_fraction"))]
    view.update({
        "answer": _cap(row.get("answer")) if row.get("answer") not in (None, "") else None,
        "scores": [{"name": n, "value": "–" if v is None else f"{float(v):.2f}"} for n, v in scores],
        "error": _cap(row.get("error")) if row.get("error") else None,
        "error_kind": row.get("error_kind"),
        "judge": _cap((row.get("judge") or {}).get("rationale"), 600) if isinstance(row.get("judge"), dict) else None,
        "usage": ", ".join(f"{k} {_value(v)}" for k, v in (row.get("usage") or {}).items()
                           if k in ("searches", "turns", "lm_calls", "input_tokens", "context_tokens", "seconds")),
    })
    evidence = {str(e) for e in row.get("evidence") or ()}
    context = [str(c) for c in row.get("context") or ()]
    passages = row.get("passages")
    gold_docs = [str(d) for d in (gold or {}).get("documents") or ()]
    gold_keys = {normalize_text(d) for d in gold_docs}
    sentences = [s for s in (gold or {}).get("sentences") or () if isinstance(s, (list, tuple)) and len(s) == 3]
    patterns = [_sentence_pattern(s[2]) for s in sentences]
    found: set[int] = set()
    shown = []
    if passages is not None:
        for p in passages:
            pid, title = str(p.get("id", "")), str(p.get("title", ""))
            mine = [n for n, s in enumerate(sentences) if patterns[n] is not None
                    and normalize_text(s[0]) in (normalize_text(title), normalize_text(_doc_of(pid)))]
            segments, hit = _segments(_cap(p.get("text", ""), PASSAGE_CHARS), [patterns[n] for n in mine])
            found |= {mine[k] for k in hit}
            shown.append({"id": pid, "title": title, "segments": segments, "cited": pid in evidence,
                          "gold_doc": bool(gold_keys & {normalize_text(title), normalize_text(_doc_of(pid))})})
        view["passages"] = shown
    else:
        view["passages"] = None
        view["context_ids"] = [{"id": c, "cited": c in evidence, "gold_doc": normalize_text(_doc_of(c)) in gold_keys}
                               for c in context[:MAX_PASSAGES]]
    present_docs = ({normalize_text(_doc_of(c)) for c in context}
                    | {normalize_text(p.get("title", "")) for p in passages or ()})
    view["gold_known"] = gold is not None
    view["missing_docs"] = [d for d in gold_docs if normalize_text(d) not in present_docs]
    if sentences and passages is not None:
        view["missing_sentences"] = [{"title": s[0], "text": s[2]} for n, s in enumerate(sentences) if n not in found]
    else:
        view["missing_sentences"] = None
    view["n_gold_sentences"] = len(sentences)
    view["trace"] = _trace_view(row.get("trace"))
    return view


def _anchor(qid: str, taken: set[str]) -> str:
    base = "q-" + (re.sub(r"[^A-Za-z0-9_-]", "_", qid) or "_")
    anchor, n = base, 1
    while anchor in taken:
        n += 1
        anchor = f"{base}-{n}"
    taken.add(anchor)
    return anchor


def _question_views(rows: Sequence[dict[str, Any]], labels: Sequence[str], gold: dict[str, dict[str, Any]],
                    order: Sequence[str] | None, judged: bool) -> list[dict[str, Any]]:
    by_question: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_question.setdefault(str(r.get("id")), {})[str(r.get("strategy"))] = r
    ids = [i for i in dict.fromkeys(str(i) for i in order or ()) if i in by_question]
    ids += [i for i in by_question if i not in set(ids)]
    taken: set[str] = set()
    out = []
    for n, qid in enumerate(ids, 1):
        mine = by_question[qid]
        first = next(iter(mine.values()))
        g = next((r["gold"] for r in mine.values() if isinstance(r.get("gold"), dict)), None) or gold.get(qid)
        cells = [_score_cell(mine.get(lb), judged) for lb in labels]
        outcomes = {c["cls"] for c in cells if c["cls"] != "none"}
        out.append({
            "n": n, "id": qid, "anchor": _anchor(qid, taken),
            "question": _cap(first.get("question")), "type": first.get("type"), "level": first.get("level"),
            "answers": [_cap(a, 300) for a in first.get("answers") or ()],
            "gold_docs": list((g or {}).get("documents") or ()),
            "gold_sentences": [{"title": s[0], "text": s[2]} for s in (g or {}).get("sentences") or ()
                               if isinstance(s, (list, tuple)) and len(s) == 3],
            "cells": cells,
            "outcome": "error" if "err" in outcomes else ("split" if len(outcomes) > 1 else
                                                           ("right" if outcomes == {"good"} else "wrong")),
            "strategies": [_strategy_view(lb, mine.get(lb), g, judged) for lb in labels],
        })
    return out


# --------------------------------------------------------------------------- rendering

#: The page's template, package data beside this module.
TEMPLATE = "html_report.j2"


def _environment() -> Any:
    from ragnet.errors import require

    jinja2 = require("jinja2", purpose="ragnet eval's report.html")
    return jinja2.Environment(loader=jinja2.PackageLoader("ragnet.eval.report", ""), autoescape=True,
                              undefined=jinja2.StrictUndefined)


def render_html(summary: dict[str, Any], rows: Sequence[dict[str, Any]], *, report_md: str | None = None,
                folder: str | Path | None = None, gold: dict[str, dict[str, Any]] | None = None,
                order: Sequence[str] | None = None, open_ids: Iterable[str] = ()) -> str:
    """The page for ``summary`` and its result ``rows`` (see the module docstring).

    Args:
        summary: the run's summary (``summary.json``).
        rows: the latest row per (strategy, question).
        report_md: the text of ``report.md`` (default:
            :func:`ragnet.eval.report.markdown_report.format_report` of ``summary``).
        folder: where the plots named in the report are read from (None: plots shown as missing).
        gold: ``{question id: row_gold(...)}`` for rows that carry no ``gold`` field.
        order: question ids in report order (default: the rows' order).
        open_ids: question ids whose row is rendered expanded.
    """
    from markupsafe import Markup

    from ragnet.eval.report.markdown_html import markdown_html

    if report_md is None:
        from ragnet.eval.report.markdown_report import format_report

        report_md = format_report(summary)
    meta = summary.get("meta") or {}
    labels = [str(s["label"]) for s in meta.get("strategies") or ()]
    labels += [lb for lb in dict.fromkeys(str(r.get("strategy")) for r in rows) if lb not in labels]
    judged = bool(meta.get("judge"))
    # the one HTML the template does not escape: markdown-it's, which renders no raw HTML (markdown_html)
    summary_html = Markup(markdown_html(report_md, folder))
    questions = _question_views(rows, labels, gold or {}, order, judged)
    wanted = {str(i) for i in open_ids}
    opened = {q["anchor"] for q in questions if q["id"] in wanted}
    title = f"{meta.get('set', 'run')} ({meta.get('split') or 'all'} split, {meta.get('mode', '?')} corpus)"
    meta_line = f"{len(questions)} questions × {len(labels)} strategies" + (
        f" · {meta['created']}" if meta.get("created") else "")
    template = _environment().get_template(TEMPLATE)
    return template.render(title=title, meta_line=meta_line, summary=summary_html, labels=labels,
                           questions=questions, judged=judged, open_ids=opened)


def write_html(folder: str | Path, summary: dict[str, Any], rows: Sequence[dict[str, Any]], *,
               report_md: str | None = None, gold: dict[str, dict[str, Any]] | None = None,
               order: Sequence[str] | None = None, output: str | Path | None = None) -> Path:
    """Render the page for a run folder and write it atomically (default ``FOLDER/report.html``)."""
    from ragnet._atomic import write_text

    path = Path(output) if output is not None else Path(folder) / REPORT_HTML
    write_text(path, render_html(summary, rows, report_md=report_md, folder=folder, gold=gold, order=order))
    return path


# --------------------------------------------------------------------------- rebuilding from a folder


def _gold_from_data(path: str | Path | None, data_dir: str | Path | None, ids: set[str],
                    log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """``{id: row_gold(record)}`` read from a question file; none when it cannot be read."""
    if path is None:
        return {}
    from ragnet.eval.run.datasets import load_questions

    try:
        records = load_questions(path, ids=ids, data_dir=data_dir)
    except InputError as exc:
        log(f"warning: gold labels not read ({exc}); the report shows them as unavailable")
        return {}
    return {str(r.id): g for r in records if (g := row_gold(r)) is not None}


def rebuild_html(folder: str | Path, *, data: str | Path | None = None, data_dir: str | Path | None = None,
                 output: str | Path | None = None, log: Callable[[str], None] = _log) -> Path:
    """(Re)build ``report.html`` of a finished run folder from its files, running nothing.

    Reads ``summary.json``, ``report.md`` (else renders it from the summary), ``ids.txt`` and the
    results, plain or gzipped (:func:`ragnet.eval.run.results_file.read_finished_rows`). Rows without gold labels get them from ``data`` (default: the
    run's own question file, when it is still there).

    Args:
        folder: the run folder (``--out`` of the run).
        data, data_dir: the question file (or set name and data folder) holding the gold labels.
        output: where the page goes (default ``FOLDER/report.html``); only a new file, a run
            folder's own ``report.html`` or a page ragnet wrote is replaced
            (:func:`ragnet.eval.report.page_checks.check_page_target`).
        log: receives notices and warnings.

    Raises:
        InputError: the folder holds no readable ``summary.json`` or no results, a row or the
            summary is malformed (naming the file, line and field), or the page would replace a
            file ragnet did not write.
    """
    from ragnet.eval.run.run_folder import IDS, MARKER, REPORT, SUMMARY

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder", argument="out")
    target = check_page_target(output if output is not None else folder / REPORT_HTML, MARKER,
                               argument="html" if output is not None else "out")  # before anything is read
    try:
        summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
        if not isinstance(summary, dict) or not isinstance(summary.get("meta"), dict):
            raise ValueError("not a summary")
    except (OSError, ValueError, RecursionError):
        raise InputError(f"{folder} holds no readable {SUMMARY}: not a finished ragnet eval run; run the eval "
                         "(it writes report.html itself)", argument="out") from None
    check_summary(summary, folder / SUMMARY)
    meta = summary["meta"]
    labels = {str(s.get("label")) for s in meta.get("strategies") or () if isinstance(s, dict)}
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for row in read_finished_rows(folder, log=log):
        if not labels or str(row["strategy"]) in labels:
            latest[(str(row["strategy"]), str(row["id"]))] = row
    order = None
    try:
        order = [line.strip() for line in (folder / IDS).read_text(encoding="utf-8").splitlines() if line.strip()]
        latest = {k: v for k, v in latest.items() if k[1] in set(order)}
    except OSError:
        pass
    rows = list(latest.values())
    ids = {str(r["id"]) for r in rows if not isinstance(r.get("gold"), dict)}
    source = data if data is not None else meta.get("data")
    if data is None and source is not None and not Path(source).is_file():
        log(f"note: the run's question file {source} is not here; gold labels not stored in the rows are "
            "shown as unavailable (--data names another copy)")
        source = None
    gold = _gold_from_data(source, data_dir, ids, log) if ids else {}
    try:
        report_md = (folder / REPORT).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        report_md = None
    if report_md is None:  # rendered from the summary, which may lack what the report shows
        from ragnet.eval.report.markdown_report import format_report

        try:
            report_md = format_report(summary)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise InputError(f"{SUMMARY} lacks what the report shows ({describe(exc, 120)}) and there is no "
                             f"{REPORT} to show instead; run the eval again", path=folder / SUMMARY) from None
    return write_html(folder, summary, rows, report_md=report_md, gold=gold, order=order, output=target)
