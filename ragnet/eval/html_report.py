"""``report.html``: one self-contained page a person can read to see why a strategy won or lost.

``ragnet eval`` writes it beside ``report.md`` whenever it writes that (a resumed run too), and
``ragnet eval report --out FOLDER`` rebuilds it from a finished run folder without running
anything (:func:`rebuild_html`). The page needs no server and no network: the CSS and a few
lines of script are inline and the PNG plots are embedded as ``data:`` URIs.

It holds the summary (the text of ``report.md`` rendered as HTML, so the figures are the same)
and one row per question: a line with each strategy's score that expands, without script, to
show per strategy the answer and its scores, the gold answers, the passages the reader saw with
the gold supporting sentences highlighted, the gold sentences (or, where a set has only
document-level gold, the gold documents) that did not reach the reader, and the trace
(searches, kept and dropped chunks, step failures, the route taken, why the program stopped).
``#q-<id>`` in the address opens that question.

Everything a document, a question or an LM wrote is data: the page is rendered by jinja2 with
autoescaping on and no ``Markup`` anywhere, so a document holding ``<script>`` shows as text.
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

import base64
import gzip
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ragnet._printable import printable_name
from ragnet._text import normalize_text
from ragnet.errors import InputError, describe
from ragnet.eval.report_input import check_page_target, check_row, check_summary

__all__ = ["REPORT_HTML", "TEMPLATE", "read_run_rows", "rebuild_html", "render_html", "row_gold", "row_passages",
           "write_html"]

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
        >>> from ragnet.eval.datasets import QARecord
        >>> r = QARecord(id="q", question="?", answers=["a"], gold_titles=["T"], gold_sentences=[["T", 0]],
        ...              context=[{"title": "T", "sentences": ["One.", "Two."]}])
        >>> row_gold(r)
        {'documents': ['T'], 'sentences': [['T', 0, 'One.']]}
    """
    from ragnet.eval.records import get_field
    from ragnet.eval.sentence_evidence import gold_sentences

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


# --------------------------------------------------------------------------- the summary


_INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`")
_IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")


def _inline(text: str) -> list[dict[str, str]]:
    """Markdown's **bold** and `code` as ``{kind, text}`` pieces (the template escapes each)."""
    out, at = [], 0
    for m in _INLINE.finditer(text):
        if m.start() > at:
            out.append({"kind": "text", "text": text[at:m.start()]})
        out.append({"kind": "b", "text": m.group(1)} if m.group(1) is not None else {"kind": "code", "text": m.group(2)})
        at = m.end()
    if at < len(text):
        out.append({"kind": "text", "text": text[at:]})
    return out


def _data_uri(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _markdown_blocks(md: str, folder: Path | None) -> list[dict[str, Any]]:
    """The blocks of ``report.md`` (headings, paragraphs, tables, lists, quotes, images)."""
    blocks: list[dict[str, Any]] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append({"kind": "p", "parts": _inline(" ".join(para))})
            para.clear()

    for line in md.splitlines():
        s = line.strip()
        if not s:
            flush()
            continue
        heading = re.match(r"^(#{1,4}) (.*)$", s)
        image = _IMAGE.match(s)
        if heading:
            flush()
            blocks.append({"kind": f"h{min(len(heading.group(1)) + 1, 5)}", "parts": _inline(heading.group(2))})
        elif image:
            flush()
            name = Path(image.group(2)).name
            uri = _data_uri(folder / name) if folder is not None and name.endswith(".png") else None
            blocks.append({"kind": "img", "alt": image.group(1), "src": uri, "name": name})
        elif s.startswith("|"):
            flush()
            if re.fullmatch(r"\|(?:\s*:?-+:?\s*\|)+", s):  # the header's separator line
                continue
            cells = [c.strip() for c in s[1:-1 if s.endswith("|") else None].split(" | ")]
            if blocks and blocks[-1]["kind"] == "table":
                blocks[-1]["rows"].append([_inline(c) for c in cells])
            else:
                blocks.append({"kind": "table", "head": [_inline(c) for c in cells], "rows": []})
        elif s.startswith("- "):
            flush()
            if blocks and blocks[-1]["kind"] == "ul":
                blocks[-1]["entries"].append(_inline(s[2:]))
            else:
                blocks.append({"kind": "ul", "entries": [_inline(s[2:])]})
        elif s.startswith(">"):
            flush()
            blocks.append({"kind": "quote", "parts": _inline(s.lstrip("> "))})
        else:
            para.append(s)
    flush()
    return blocks


# --------------------------------------------------------------------------- rendering

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ragnet eval report">
<title>ragnet eval: {{ title }}</title>
<style>
:root { --fg:#1d2330; --mute:#5d6677; --line:#d9dde5; --bg:#f6f7f9; --good:#1f8a4c; --part:#c98a0b; --bad:#c0392b;
        --err:#6c3483; --mark:#fff0a6; --gold:#e9f6ee; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0;
       background: #fff; }
header, main { max-width: 1400px; margin: 0 auto; padding: 0 20px; }
header { padding-top: 14px; }
h1 { font-size: 21px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 22px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 16px 0 6px; } h4, h5 { font-size: 14px; margin: 12px 0 4px; }
nav { font-size: 13px; color: var(--mute); margin: 4px 0 10px; } nav a { margin-right: 14px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--bg); padding: 1px 3px;
       border-radius: 3px; word-break: break-all; }
table.t { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
table.t th, table.t td { border: 1px solid var(--line); padding: 3px 7px; text-align: right; white-space: nowrap; }
table.t th { background: var(--bg); } table.t td:first-child, table.t th:first-child { text-align: left; }
blockquote { margin: 8px 0; padding: 4px 10px; border-left: 3px solid var(--part); background: #fffaf0; }
img.plot { max-width: 48%; min-width: 320px; border: 1px solid var(--line); margin: 4px 8px 4px 0; }
#summary details > summary { cursor: pointer; color: var(--mute); }
.qhead, details.q > summary { display: grid; grid-template-columns: 3.2em minmax(0, 1fr) repeat({{ labels|length }}, minmax(5em, 9em));
  gap: 6px; align-items: center; padding: 5px 8px; }
.qhead { position: sticky; top: 0; background: #fff; border-bottom: 2px solid var(--line); font-weight: 600;
         font-size: 12px; z-index: 2; }
.qhead span.lab { text-align: center; overflow-wrap: anywhere; font-size: 11px; line-height: 1.2; }
details.q { border-bottom: 1px solid var(--line); }
details.q > summary { cursor: pointer; list-style: none; }
details.q > summary::-webkit-details-marker { display: none; }
details.q > summary:hover { background: var(--bg); }
details.q[open] > summary { background: #eef2f8; position: sticky; top: 30px; z-index: 1; }
.num { color: var(--mute); font-variant-numeric: tabular-nums; }
.num::before { content: "▸ "; } details.q[open] .num::before { content: "▾ "; }
.qtext { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
details.q[open] .qtext { white-space: normal; font-weight: 600; }
.cell { text-align: center; border-radius: 3px; padding: 1px 0; font-weight: 600; color: #fff;
        font-variant-numeric: tabular-nums; }
.cell.good { background: var(--good); } .cell.part { background: var(--part); } .cell.bad { background: var(--bad); }
.cell.err { background: var(--err); } .cell.none { background: var(--line); color: var(--mute); }
.qbody { padding: 6px 10px 14px 3.8em; }
.gold { background: var(--gold); border: 1px solid #bfe3cc; border-radius: 4px; padding: 6px 9px; margin-bottom: 8px; }
.gold ul { margin: 2px 0 0; padding-left: 18px; }
.strats { display: grid; grid-template-columns: repeat(auto-fit, minmax(340px, 1fr)); gap: 10px; }
.strat { border: 1px solid var(--line); border-radius: 5px; padding: 6px 9px; min-width: 0; }
.strat h4 { margin: 0 0 4px; display: flex; justify-content: space-between; gap: 8px; }
.answer { font-size: 15px; margin: 2px 0 4px; } .answer b { font-weight: 600; }
.scores span { display: inline-block; margin-right: 8px; font-size: 12px; color: var(--mute); }
.scores b { color: var(--fg); }
.error { color: var(--bad); font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.label { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--mute); margin: 8px 0 3px; }
.label .na { text-transform: none; letter-spacing: 0; }
.psg { border-left: 3px solid var(--line); padding: 2px 0 2px 7px; margin: 0 0 5px; font-size: 13px;
       overflow-wrap: anywhere; white-space: pre-wrap; }
.psg.golddoc { border-left-color: var(--good); }
.pid { font: 11px ui-monospace, Menlo, monospace; color: var(--mute); white-space: normal; }
.tag { font-size: 10px; border-radius: 3px; padding: 0 4px; margin-left: 4px; background: var(--bg); color: var(--mute);
       white-space: nowrap; font-family: system-ui, sans-serif; }
.tag.g { background: var(--gold); color: var(--good); } .tag.c { background: #e8eefb; color: #2b4f9e; }
mark { background: var(--mark); padding: 0 1px; border-radius: 2px; }
.missing { color: var(--bad); font-size: 13px; margin: 2px 0; padding-left: 18px; }
.ok { color: var(--good); font-size: 13px; margin: 2px 0; }
.na { color: var(--mute); font-style: italic; font-size: 12px; }
ol.trace { margin: 0; padding-left: 22px; font-size: 12px; }
ol.trace li { margin: 1px 0; overflow-wrap: anywhere; }
ol.trace .step { font-weight: 600; } ol.trace .k { color: var(--mute); }
ol.trace li.fail .step { color: var(--bad); } ol.trace li.stop .step { color: var(--err); }
ol.trace li.route .step { color: #2b4f9e; } ol.trace li.filter .step { color: var(--part); }
.tools { font-size: 12px; margin: 4px 0 6px; color: var(--mute); }
.tools button { font-size: 12px; margin-right: 4px; }
.legend span.cell { display: inline-block; width: 3em; margin: 0 3px 0 10px; }
</style>
</head>
<body>
{%- macro inline(parts) %}{% for p in parts %}{% if p.kind == "b" %}<b>{{ p.text }}</b>{% elif p.kind == "code" %}<code>{{ p.text }}</code>{% else %}{{ p.text }}{% endif %}{% endfor %}{% endmacro %}
<header>
<h1>ragnet eval: {{ title }}</h1>
<nav><a href="#summary">Summary</a><a href="#questions">Questions ({{ questions|length }})</a>{% if meta_line %}<span>{{ meta_line }}</span>{% endif %}</nav>
</header>
<main>
<section id="summary">
{%- for b in blocks %}
{%- if b.kind == "table" %}
<table class="t"><thead><tr>{% for c in b.head %}<th>{{ inline(c) }}</th>{% endfor %}</tr></thead><tbody>
{%- for r in b.rows %}<tr>{% for c in r %}<td>{{ inline(c) }}</td>{% endfor %}</tr>{% endfor %}</tbody></table>
{%- elif b.kind == "ul" %}
<ul>{% for item in b.entries %}<li>{{ inline(item) }}</li>{% endfor %}</ul>
{%- elif b.kind == "img" %}
{%- if b.src %}<img class="plot" alt="{{ b.alt }}" title="{{ b.name }}" src="{{ b.src }}">{% else %}<p class="na">plot {{ b.name }} not found beside the report</p>{% endif %}
{%- elif b.kind == "quote" %}
<blockquote>{{ inline(b.parts) }}</blockquote>
{%- elif b.kind == "p" %}
<p>{{ inline(b.parts) }}</p>
{%- else %}
<{{ b.kind }}>{{ inline(b.parts) }}</{{ b.kind }}>
{%- endif %}
{%- endfor %}
</section>
<section id="questions">
<h2>Questions</h2>
<p>One row per question; click a row to see, per strategy, the answer, the passages the reader saw (<mark>gold supporting sentences highlighted</mark>), the gold evidence that did not reach it, and the trace. Cells: F1 %, coloured by {{ "the judge" if judged else "exact match" }}.
<span class="legend"><span class="cell good">100</span>right<span class="cell part">40</span>partly<span class="cell bad">0</span>wrong<span class="cell err">err</span>failed</span></p>
<div class="tools">Show: <button type="button" data-show="all">all</button><button type="button" data-show="split">strategies disagree</button><button type="button" data-show="wrong">all wrong</button><button type="button" data-show="error">with a failure</button> · <button type="button" data-open="1">expand all</button><button type="button" data-open="0">collapse all</button></div>
<div class="qhead"><span>#</span><span>question</span>{% for lb in labels %}<span class="lab">{% for part in lb.split("@") %}{% if not loop.first %}<wbr>@{% endif %}{% for piece in part.split(":") %}{% if not loop.first %}:<wbr>{% endif %}{{ piece }}{% endfor %}{% endfor %}</span>{% endfor %}</div>
{%- for q in questions %}
<details class="q" id="{{ q.anchor }}" data-outcome="{{ q.outcome }}"{% if q.anchor in open_ids %} open{% endif %}>
<summary><span class="num">{{ q.n }}</span><span class="qtext">{{ q.question }}</span>{% for c in q.cells %}<span class="cell {{ c.cls }}" title="{{ c.title }}">{{ c.text }}</span>{% endfor %}</summary>
<div class="qbody">
<div class="gold"><b>Gold answer{{ "s" if q.answers|length > 1 }}:</b> {{ q.answers|join(" | ") }}
<span class="na">· id {{ q.id }}{% if q.type %} · {{ q.type }}{% endif %}{% if q.level %} · {{ q.level }}{% endif %}</span>
{%- if q.gold_sentences %}<div><b>Gold supporting sentences:</b><ul>{% for s in q.gold_sentences %}<li><span class="pid">{{ s.title }}</span> {{ s.text }}</li>{% endfor %}</ul></div>
{%- elif q.gold_docs %}<div><b>Gold documents:</b> {{ q.gold_docs|join(", ") }}</div>
{%- else %}<div class="na">No gold evidence labels for this question.</div>{% endif %}
</div>
<div class="strats">
{%- for s in q.strategies %}
<div class="strat">
<h4><span>{{ s.label }}</span>{% if s.present %}<span class="cell {{ q.cells[loop.index0].cls }}" style="min-width:3.5em">{{ q.cells[loop.index0].text }}</span>{% endif %}</h4>
{%- if not s.present %}<p class="na">No row for this strategy.</p>{% else %}
<div class="answer"><b>Answer:</b> {% if s.answer is not none %}{{ s.answer }}{% else %}<span class="na">none</span>{% endif %}</div>
<div class="scores">{% for sc in s.scores %}<span>{{ sc.name }} <b>{{ sc.value }}</b></span>{% endfor %}</div>
{%- if s.error %}<div class="error">{{ "LM failure" if s.error_kind == "lm" else "Error" }}: {{ s.error }}</div>{% endif %}
{%- if s.judge %}<div class="na">judge: {{ s.judge }}</div>{% endif %}
<div class="label">Context the reader saw</div>
{%- if s.passages is not none %}
{%- for p in s.passages %}
<div class="psg{% if p.gold_doc %} golddoc{% endif %}"><span class="pid">{{ p.id }}{% if p.gold_doc %}<span class="tag g">gold doc</span>{% endif %}{% if p.cited %}<span class="tag c">cited</span>{% endif %}</span>
{% for seg in p.segments %}{% if seg.gold %}<mark>{{ seg.text }}</mark>{% else %}{{ seg.text }}{% endif %}{% endfor %}</div>
{%- else %}<p class="na">The reader saw no passages.</p>
{%- endfor %}
{%- else %}
<p class="na">Passage texts unavailable (this row was written before rows kept them); chunk ids:</p>
{%- for c in s.context_ids %}<div class="psg{% if c.gold_doc %} golddoc{% endif %}"><span class="pid">{{ c.id }}{% if c.gold_doc %}<span class="tag g">gold doc</span>{% endif %}{% if c.cited %}<span class="tag c">cited</span>{% endif %}</span></div>{% endfor %}
{%- endif %}
<div class="label">Missing gold evidence</div>
{%- if not s.gold_known %}<p class="na">Gold labels unavailable for this question.</p>
{%- else %}
{%- if s.missing_sentences is not none %}
{%- if s.missing_sentences %}<ul class="missing">{% for m in s.missing_sentences %}<li><span class="pid">{{ m.title }}</span> {{ m.text }}</li>{% endfor %}</ul>
{%- else %}<p class="ok">All {{ s.n_gold_sentences }} gold sentences reached the reader.</p>{% endif %}
{%- elif s.n_gold_sentences %}<p class="na">Which gold sentences reached the reader is unknown without the passage texts.</p>{% endif %}
{%- if s.missing_docs %}<ul class="missing">{% for d in s.missing_docs %}<li>gold document not in context: {{ d }}</li>{% endfor %}</ul>
{%- elif s.missing_sentences is none %}<p class="ok">Every gold document has a chunk in the context.</p>{% endif %}
{%- endif %}
<div class="label">Trace{% if s.usage %} <span class="na">({{ s.usage }})</span>{% endif %}</div>
{%- if s.trace is none %}<p class="na">Trace unavailable (not stored in this row).</p>
{%- else %}<ol class="trace">{% for e in s.trace %}<li class="{{ e.cls }}"><span class="step">{{ e.step }}</span>{% for f in e.fields %} <span class="k">{{ f.key }}</span> {{ f.value }}{% if not loop.last %};{% endif %}{% endfor %}</li>{% endfor %}</ol>
{%- endif %}
{%- endif %}
</div>
{%- endfor %}
</div>
</div>
</details>
{%- endfor %}
</section>
</main>
<script>
(function () {
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === "DETAILS") { el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openHash);
  openHash();
  document.querySelectorAll("button[data-show]").forEach(function (b) {
    b.addEventListener("click", function () {
      var want = b.getAttribute("data-show");
      document.querySelectorAll("details.q").forEach(function (d) {
        d.style.display = want === "all" || d.getAttribute("data-outcome") === want ? "" : "none";
      });
    });
  });
  document.querySelectorAll("button[data-open]").forEach(function (b) {
    b.addEventListener("click", function () {
      var open = b.getAttribute("data-open") === "1";
      document.querySelectorAll("details.q").forEach(function (d) { if (d.style.display !== "none") d.open = open; });
    });
  });
})();
</script>
</body>
</html>
"""


def _environment() -> Any:
    from ragnet.errors import require

    jinja2 = require("jinja2", purpose="ragnet eval's report.html")
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


def render_html(summary: dict[str, Any], rows: Sequence[dict[str, Any]], *, report_md: str | None = None,
                folder: str | Path | None = None, gold: dict[str, dict[str, Any]] | None = None,
                order: Sequence[str] | None = None, open_ids: Iterable[str] = ()) -> str:
    """The page for ``summary`` and its result ``rows`` (see the module docstring).

    Args:
        summary: the run's summary (``summary.json``).
        rows: the latest row per (strategy, question).
        report_md: the text of ``report.md`` (default: :func:`ragnet.eval.report.format_report` of ``summary``).
        folder: where the plots named in the report are read from (None: plots shown as missing).
        gold: ``{question id: row_gold(...)}`` for rows that carry no ``gold`` field.
        order: question ids in report order (default: the rows' order).
        open_ids: question ids whose row is rendered expanded.
    """
    if report_md is None:
        from ragnet.eval.report import format_report

        report_md = format_report(summary)
    meta = summary.get("meta") or {}
    labels = [str(s["label"]) for s in meta.get("strategies") or ()]
    labels += [lb for lb in dict.fromkeys(str(r.get("strategy")) for r in rows) if lb not in labels]
    judged = bool(meta.get("judge"))
    blocks = _markdown_blocks(report_md, Path(folder) if folder is not None else None)
    if blocks and blocks[0]["kind"] == "h2":  # the report's title is the page's heading
        blocks = blocks[1:]
    questions = _question_views(rows, labels, gold or {}, order, judged)
    wanted = {str(i) for i in open_ids}
    opened = {q["anchor"] for q in questions if q["id"] in wanted}
    title = f"{meta.get('set', 'run')} ({meta.get('split') or 'all'} split, {meta.get('mode', '?')} corpus)"
    meta_line = f"{len(questions)} questions × {len(labels)} strategies" + (
        f" · {meta['created']}" if meta.get("created") else "")
    template = _environment().from_string(TEMPLATE)
    return template.render(title=title, meta_line=meta_line, blocks=blocks, labels=labels, questions=questions,
                           judged=judged, open_ids=opened)


def write_html(folder: str | Path, summary: dict[str, Any], rows: Sequence[dict[str, Any]], *,
               report_md: str | None = None, gold: dict[str, dict[str, Any]] | None = None,
               order: Sequence[str] | None = None, output: str | Path | None = None) -> Path:
    """Render the page for a run folder and write it atomically (default ``FOLDER/report.html``)."""
    from ragnet._atomic import write_text

    path = Path(output) if output is not None else Path(folder) / REPORT_HTML
    write_text(path, render_html(summary, rows, report_md=report_md, folder=folder, gold=gold, order=order))
    return path


# --------------------------------------------------------------------------- rebuilding from a folder


def read_run_rows(folder: str | Path, log: Callable[[str], None] = _log) -> list[dict[str, Any]]:
    """Every row of a run folder's ``results.jsonl`` (or ``results.jsonl.gz``), read without
    changing the file: a line that is not a JSON object is skipped with a warning.

    Raises:
        InputError: the folder holds neither file, or a row has a field of the wrong type
            (:func:`ragnet.eval.report_input.check_row`).
    """
    folder = Path(folder)
    plain, packed = folder / "results.jsonl", folder / "results.jsonl.gz"
    if plain.is_file():
        data = plain.read_bytes()
    elif packed.is_file():
        try:
            data = gzip.decompress(packed.read_bytes())
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot read: {exc}", path=packed) from None
    else:
        raise InputError(f"{folder} holds no results.jsonl (or results.jsonl.gz): not a ragnet eval run folder",
                         argument="out")
    rows = []
    source = plain if plain.is_file() else packed
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
            if not isinstance(row, dict) or "strategy" not in row or "id" not in row:
                raise ValueError("not a result row")
        except (ValueError, UnicodeDecodeError, RecursionError):
            log(f"warning: {printable_name(folder)}: skipping line {number} of the results (not a result row)")
            continue
        check_row(row, source, number)  # a field of the wrong type: a named error, not a traceback later
        rows.append(row)
    return rows


def _gold_from_data(path: str | Path | None, data_dir: str | Path | None, ids: set[str],
                    log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """``{id: row_gold(record)}`` read from a question file; none when it cannot be read."""
    if path is None:
        return {}
    from ragnet.eval.datasets import load_questions

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
    results (plain or gzipped). Rows without gold labels get them from ``data`` (default: the
    run's own question file, when it is still there).

    Args:
        folder: the run folder (``--out`` of the run).
        data, data_dir: the question file (or set name and data folder) holding the gold labels.
        output: where the page goes (default ``FOLDER/report.html``); only a new file, a run
            folder's own ``report.html`` or a page ragnet wrote is replaced
            (:func:`ragnet.eval.report_input.check_page_target`).
        log: receives notices and warnings.

    Raises:
        InputError: the folder holds no readable ``summary.json`` or no results, a row or the
            summary is malformed (naming the file, line and field), or the page would replace a
            file ragnet did not write.
    """
    from ragnet.eval.run_folder import IDS, MARKER, REPORT, SUMMARY

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
    for row in read_run_rows(folder, log=log):
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
        from ragnet.eval.report import format_report

        try:
            report_md = format_report(summary)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise InputError(f"{SUMMARY} lacks what the report shows ({describe(exc, 120)}) and there is no "
                             f"{REPORT} to show instead; run the eval again", path=folder / SUMMARY) from None
    return write_html(folder, summary, rows, report_md=report_md, gold=gold, order=order, output=target)
