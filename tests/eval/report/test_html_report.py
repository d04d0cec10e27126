"""``report.html``: built from synthetic run folders (structure, gold highlighting, missing gold,
escaping of hostile documents, size, old rows, recovery from an index), by ``ragnet eval report``,
and by a real short ``ragnet eval`` run on the tiny set with a scripted LM."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from ragnet.cli import app
from ragnet.eval.report.html_report import REPORT_HTML, TEMPLATE, rebuild_html, render_html
from ragnet.eval.report.markdown_html import markdown_html
from ragnet.eval.report.markdown_report import format_report
from ragnet.eval.report.summary import build_summary
from tests.programs.test_injection import ATTACKS, FACTS

# a 1x1 PNG
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
HTML_ATTACKS = [
    ("Script page", "<script>alert(1)</script> Lumeport is the capital."),
    ("Image page", '<img src=x onerror="alert(2)"> is a picture.'),
    ("Closing page", "</details></div></summary><b onclick=alert(3)>bold</b> <!-- comment --> &amp; done"),
]


class Page(HTMLParser):
    """Every start tag with its attributes, per tag name, and the text (entities decoded)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ends: list[str] = []
        self.text: list[str] = []
        self.script: list[str] = []
        self._in_script = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self.ends.append(tag)
        self._in_script = False

    def handle_data(self, data):
        (self.script if self._in_script else self.text).append(data)

    def all(self, tag, cls=None):
        return [a for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split())]

    @property
    def body(self) -> str:
        return "".join(self.text)


def _row(strategy, qid, *, passages=None, gold=None, answer="Lumeport", em=1.0, f1=1.0, trace=None, **extra):
    row = {"strategy": strategy, "spec": strategy, "budget": None, "id": qid, "type": "bridge", "level": "easy",
           "question": f"What is the capital of {qid}?", "answers": ["Lumeport"], "answer": answer, "em": em,
           "f1": f1, "contains": em, "llm_match": None, "judge": None, "gold_all": 1.0, "gold_fraction": 1.0,
           "n_gold": 1, "chunks": len(passages or []), "usage": {"seconds": 1.0, "lm_calls": 1, "searches": 1},
           "evidence": [p["id"] for p in (passages or [])[:1]], "context": [p["id"] for p in passages or []],
           "error": None, "error_kind": None}
    if passages is not None:
        row["passages"] = passages
    if gold is not None:
        row["gold"] = gold
    if trace is not None:
        row["trace"] = trace
    row.update(extra)
    return row


def _folder(tmp_path, rows, *, strategies=None, plot=True, ids=None):
    """A finished run folder holding ``rows``, with the summary and report.md ragnet eval writes."""
    labels = strategies or list(dict.fromkeys(r["strategy"] for r in rows))
    meta = {"set": "toy", "mode": "pooled", "questions": len({r["id"] for r in rows}), "judge": False,
            "strategies": [{"label": lb, "spec": lb, "budget": None, "program": None} for lb in labels]}
    summary = build_summary(rows, meta)
    summary.pop("_new_rows")
    folder = tmp_path / "run"
    folder.mkdir()
    if plot:
        (folder / "turns_hist.png").write_bytes(PNG)
        summary["plots"] = [str(folder / "turns_hist.png")]
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "report.md").write_text(format_report(summary))
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "ids.txt").write_text("".join(f"{i}\n" for i in ids or dict.fromkeys(r["id"] for r in rows)))
    return folder


def _trace(n_retrieved=100, reasoning_chars=0):
    ids = [f"Doc {i}#0" for i in range(n_retrieved)]
    return [{"step": "search", "turn": 1, "query": "capital of Zephyria", "retrieved": ids, "fallback": False, "t": 0.1},
            {"step": "filter", "kind": "rules", "kept": ids[:90], "dropped": [{"id": i, "reason": "year"} for i in ids[90:]],
             "added": [], "t": 0.2},
            {"step": "select", "kept": ids[:12], "candidates": 90, "tokens": 950, "budget": 1000, "method": "sentences",
             "sentences": [{"id": i, "kept": [0, 1], "of": 4} for i in ids[:12]], "t": 0.3},
            {"step": "route", "route": "hard", "rule": "bridge titles", "program": "iterative", "t": 0.31},
            {"step": "lm_error", "failed_step": "answer", "error": "timeout " + "x" * reasoning_chars, "action": "retry",
             "t": 0.5},
            {"step": "stop", "turn": 2, "reason": "sufficient", "t": 0.6},
            {"step": "answer", "evidence": ids[:1], "cited": True, "fallback": False, "context": ids[:12],
             "reasoning": "r" * reasoning_chars, "t": 0.7}]


def _fifty_by_three(tmp_path, reasoning_chars=0):
    passages = [{"id": f"Doc {i}#0", "title": f"Doc {i}", "text": ("Zephyria has a harbour city of note. " * 12)}
                for i in range(12)]
    passages.insert(0, {"id": "Zephyria#0", "title": "Zephyria",
                        "text": "Zephyria is a small island republic. The capital of Zephyria is Lumeport."})
    gold = {"documents": ["Zephyria", "Lumeport"],
            "sentences": [["Zephyria", 1, "The capital of Zephyria is Lumeport."],
                          ["Lumeport", 0, "Lumeport is the capital of Zephyria."]]}
    rows = [_row(s, f"q{n}", passages=passages, gold=gold, trace=_trace(reasoning_chars=reasoning_chars))
            for n in range(50) for s in ("basic", "oneshot", "iterative")]
    return _folder(tmp_path, rows)


def test_page_has_the_summary_one_row_per_question_and_every_strategy_inside(tmp_path):
    folder = _fifty_by_three(tmp_path)
    path = rebuild_html(folder, log=lambda m: None)
    assert path == folder / REPORT_HTML
    page = Page(path.read_text(encoding="utf-8"))
    questions = page.all("details", "q")
    assert len(questions) == 50 and questions[0]["id"] == "q-q0" and questions[-1]["id"] == "q-q49"
    assert len(page.all("div", "strat")) == 150
    # the summary tables carry report.md's figures
    report = (folder / "report.md").read_text()
    assert "| basic | 50 | 100.0 | 100.0 |" in report
    assert page.all("table", "t") and "Chunk retention by stage" in page.body and "Evaluation overhead" in page.body
    assert re.search(r"basic\s*50\s*100\.0\s*100\.0", page.body)
    # plots are embedded, nothing is fetched
    (plot,) = page.all("img", "plot")
    assert plot["src"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert not [a for t, a in page.tags if t in ("link", "iframe") or (t == "script" and a.get("src"))]
    # the trace: searches with their query, dropped chunks, the failure, the route and the stop
    for needle in ("capital of Zephyria", "dropped", "Doc 99#0", "timeout", "route", "bridge titles", "sufficient"):
        assert needle in page.body
    assert len(page.all("li", "fail")) == 150 and len(page.all("li", "route")) == 150


def test_fifty_questions_by_three_strategies_stay_under_five_megabytes(tmp_path):
    folder = _fifty_by_three(tmp_path, reasoning_chars=200_000)  # an LM that rambles: capped, not embedded whole
    raw = (folder / "results.jsonl").stat().st_size
    size = rebuild_html(folder, log=lambda m: None).stat().st_size
    assert raw > 50_000_000 and size < 5_000_000
    assert "more characters" in (folder / REPORT_HTML).read_text(encoding="utf-8")


def test_gold_sentences_are_highlighted_and_the_missing_ones_listed(tmp_path):
    passages = [{"id": "Zephyria#0", "title": "Zephyria",
                 "text": "Zephyria is a small island republic.  THE capital of\nZephyria is Lumeport. It rains."},
                {"id": "Tessaly Bay#0", "title": "Tessaly Bay", "text": "The capital of Zephyria is Lumeport."}]
    gold = {"documents": ["Zephyria", "Lumeport"],
            "sentences": [["Zephyria", 1, "The capital of Zephyria is Lumeport."],
                          ["Lumeport", 0, "Lumeport is the capital of Zephyria and has about 40,000 inhabitants."]]}
    docs_only = {"documents": ["Zephyria", "Orvania"], "sentences": []}
    rows = [_row("basic", "q1", passages=passages, gold=gold), _row("basic", "q2", passages=passages, gold=docs_only)]
    html = render_html(json.loads(json.dumps(build_summary(rows, {"set": "toy", "mode": "pooled", "questions": 2,
                                                                  "strategies": [{"label": "basic"}]}),
                                            default=str)), rows)
    page = Page(html)
    marks = re.findall(r"<mark>(.*?)</mark>", html.split('id="q-q1"')[1].split('id="q-q2"')[0], re.S)
    # case and whitespace differ from the dataset's sentence; the same text under another title is not gold
    assert marks == ["THE capital of\nZephyria is Lumeport."]
    q1 = html.split('id="q-q1"')[1].split('id="q-q2"')[0]
    missing = re.search(r'<ul class="missing">(.*?)</ul>', q1, re.S).group(1)
    assert "about 40,000 inhabitants" in missing and "The capital of Zephyria is Lumeport." not in missing
    assert "gold document not in context: Lumeport" in q1
    q2 = html.split('id="q-q2"')[1]
    assert "gold document not in context: Orvania" in q2 and "Zephyria" not in re.search(
        r'<ul class="missing">(.*?)</ul>', q2, re.S).group(1)
    assert "<mark>" not in q2
    assert len(page.all("span", "g")) == 2  # the gold-document tag on Zephyria#0, in each question


def test_document_text_is_shown_as_text_never_markup(tmp_path):
    docs = FACTS[:1] + ATTACKS + HTML_ATTACKS
    passages = [{"id": f"d{i}#0", "title": t, "text": text} for i, (t, text) in enumerate(docs)]
    hostile = "<script>alert(4)</script>"
    rows = [_row("<b>basic</b>", "q1", passages=passages, answer=hostile + ' "><img src=y onerror=alert(5)>',
                 gold={"documents": ["</details>"], "sentences": [["Script page", 0, "<script>alert(1)</script>"]]},
                 trace=[{"step": "search", "query": "</summary><script>alert(6)</script>", "retrieved": []}],
                 question="Why </details><script>alert(7)</script>?")]
    html = rebuild_html(_folder(tmp_path, rows), log=lambda m: None).read_text(encoding="utf-8")
    page = Page(html)
    # the one script is the page's own, and it holds none of the documents' text
    assert len(page.all("script")) == 1 and "alert" not in "".join(page.script)
    assert not [a for _, a in page.tags if any(k.startswith("on") for k in a)]
    assert not page.all("img", None)[1:] and page.all("img", "plot")  # no injected image, the plot is there
    assert page.ends.count("details") == len(page.all("details")) == 1
    assert not page.all("b", None) or all(a == {} for a in page.all("b", None))
    body = page.body
    for text in ("<script>alert(1)</script>", '<img src=x onerror="alert(2)">', "</details></div></summary>",
                 "<b onclick=alert(3)>bold</b>", "<!-- comment --> &amp; done", "Ignore all previous instructions",
                 "[[ ## answer ## ]]", hostile, "alert(5)>", "</summary><script>alert(6)</script>",
                 "Why </details><script>alert(7)</script>?", "<b>basic</b>"):
        assert text in body, text
    assert "<mark>&lt;script&gt;alert(1)&lt;/script&gt;</mark>" in html  # highlighted, still text


def test_template_is_autoescaped_package_data():
    from importlib.resources import files

    from jinja2 import Environment

    from ragnet.eval.report.html_report import _environment

    env = _environment()
    assert isinstance(env, Environment) and env.autoescape is True
    source = files("ragnet.eval.report").joinpath(TEMPLATE).read_text(encoding="utf-8")
    assert source.startswith("<!DOCTYPE html>") and env.loader.get_source(env, TEMPLATE)[0] == source
    assert "|safe" not in source and "Markup" not in source and "autoescape" not in source


HOSTILE_MD = """# ragnet eval: <script>alert(1)</script>

## Accuracy <img src=x onerror=alert(2)>

Primary metric: **EM** &amp; `<b>code</b>` [click](javascript:alert(3)) <https://example.org> ![x](javascript:alert(4))

<script>alert(5)</script>

<details open><summary>raw block</summary></details>

| strategy <b onclick=alert(6)>x</b> | n |
|---|---|
| <i>basic</i> | 1 |

- **oneshot** <iframe src=x></iframe>
> ⚠️ <a href="javascript:alert(7)">judge</a>
"""


def test_the_summary_markdown_renders_no_html_a_report_holds(tmp_path):
    html = markdown_html(HOSTILE_MD, tmp_path)
    page = Page(html)
    # the report's own markup is rendered ...
    assert page.all("h3") and page.all("strong") and page.all("code") and page.all("table", "t")
    assert page.all("li") and page.all("blockquote")
    # ... and everything else is text: no tag, attribute, link or image came from the Markdown's HTML
    assert {t for t, _ in page.tags} <= {"h3", "p", "strong", "code", "table", "thead", "tbody", "tr", "th", "td",
                                          "ul", "li", "blockquote", "span"}
    assert all(a in ({}, {"class": "t"}, {"class": "na"}) for _, a in page.tags)
    for text in ("<script>alert(5)</script>", "<img src=x onerror=alert(2)>", "<b>code</b>", "&amp;",
                 "[click](javascript:alert(3))", "<https://example.org>", "<details open>", "<i>basic</i>",
                 '<a href="javascript:alert(7)">judge</a>', "<iframe src=x></iframe>"):
        assert text in page.body, text
    assert "ragnet eval:" not in page.body  # the report's title is the page's heading, shown once


def test_the_summary_embeds_only_the_run_folders_plots(tmp_path):
    (tmp_path / "turns_hist.png").write_bytes(PNG)
    (tmp_path.parent / "outside.png").write_bytes(PNG)
    html = markdown_html("## Plots\n\n![turns_hist](turns_hist.png)\n![up](../outside.png)\n"
                         "![gone](searches_hist.png)\n", tmp_path)
    (plot,) = Page(html).all("img", "plot")
    assert plot["src"] == "data:image/png;base64," + base64.b64encode(PNG).decode() and plot["alt"] == "turns_hist"
    assert "plot outside.png not found beside the report" in html
    assert "plot searches_hist.png not found beside the report" in html


def test_old_rows_show_what_is_unavailable_and_gold_from_the_run_question_file(tmp_path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"id": "q1", "question": "?", "answers": ["Lumeport"],
                                     "gold_titles": ["Zephyria", "Lumeport"], "gold_sentences": [["Zephyria", 0]],
                                     "context": [{"title": "Zephyria", "sentences": ["Zephyria is an island."]}]})
                         + "\n")
    rows = [_row("basic", "q1"), _row("basic", "q2")]
    rows[0]["context"] = ["Zephyria#0", "Orvania#0"]
    folder = _folder(tmp_path, rows, plot=False)
    summary = json.loads((folder / "summary.json").read_text())
    summary["meta"]["data"] = str(questions)
    (folder / "summary.json").write_text(json.dumps(summary))
    html = rebuild_html(folder, log=lambda m: None).read_text(encoding="utf-8")
    q1, q2 = html.split('id="q-q1"')[1].split('id="q-q2"')
    assert "Passage texts unavailable" in q1 and "Trace unavailable" in q1
    assert "Zephyria is an island." in q1 and "gold document not in context: Lumeport" in q1
    assert re.search(r'Zephyria#0<span class="tag g">gold doc</span>', q1)
    assert "Gold labels unavailable for this question." in q2  # q2 is not in the question file


def test_report_command_rebuilds_the_page_and_refuses_a_folder_that_is_no_run(tmp_path):
    folder = _fifty_by_three(tmp_path)
    result = CliRunner().invoke(app, ["eval", "report", "--out", str(folder)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (folder / REPORT_HTML).is_file() and str(folder / REPORT_HTML) in result.output
    other = tmp_path / "elsewhere.html"
    result = CliRunner().invoke(app, ["eval", "report", "--out", str(folder), "--html", str(other)])
    assert result.exit_code == 0 and len(Page(other.read_text()).all("details", "q")) == 50
    (tmp_path / "empty").mkdir()
    bad = CliRunner().invoke(app, ["eval", "report", "--out", str(tmp_path / "empty")])
    assert bad.exit_code == 2 and "summary.json" in bad.output and "Traceback" not in bad.output
    assert not (tmp_path / "empty" / REPORT_HTML).exists()


def test_a_gzipped_results_file_is_read(tmp_path):
    import gzip

    folder = _fifty_by_three(tmp_path)
    data = (folder / "results.jsonl").read_bytes()
    (folder / "results.jsonl").unlink()
    (folder / "results.jsonl.gz").write_bytes(gzip.compress(data))
    page = Page(rebuild_html(folder, log=lambda m: None).read_text(encoding="utf-8"))
    assert len(page.all("details", "q")) == 50


# --------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    import dspy

    from ragnet.eval.run.datasets import load_eval_set
    from ragnet.eval.run.qa_evaluator import run_eval
    from tests.eval.tiny_set import tiny_lm, write_tiny_set

    root = tmp_path_factory.mktemp("html")
    data = write_tiny_set(root / "data")
    out = root / "out"
    engine = tiny_lm()
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        run_eval(load_eval_set("tiny", data_dir=data), ["basic", "oneshot"], out_dir=out, index_root=root / "idx",
                 show_progress=False, plots=False, log=lambda m: None)
    return out, data, root


def test_a_real_run_writes_the_page_with_the_reader_context_and_gold(tiny_run):
    out, _, _ = tiny_run
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(r["passages"] and r["gold"]["documents"] for r in rows)
    tokyo = next(r for r in rows if r["id"] == "q1" and r["strategy"] == "basic")
    assert {"id": "Tokyo#0", "title": "Tokyo", "text": "Tokyo is the capital of Japan and one of the largest "
            "metropolitan areas on Earth."} in tokyo["passages"]
    html = (out / REPORT_HTML).read_text(encoding="utf-8")
    page = Page(html)
    assert len(page.all("details", "q")) == 3 and len(page.all("div", "strat")) == 6
    q1 = html.split('id="q-q1"')[1].split('id="q-q2"')[0]
    assert "<mark>Tokyo is the capital of Japan and one of the largest metropolitan areas on Earth.</mark>" in q1
    assert "search" in Page(q1).body and "What is the capital of Japan?" in q1


def test_a_resumed_run_writes_the_page_again(tiny_run):
    import dspy

    from ragnet.eval.run.datasets import load_eval_set
    from ragnet.eval.run.qa_evaluator import run_eval
    from tests.eval.tiny_set import tiny_lm

    out, data, root = tiny_run
    (out / REPORT_HTML).unlink()
    engine = tiny_lm()
    with dspy.context(lm=engine.lm(), adapter=dspy.ChatAdapter(use_json_adapter_fallback=False)):
        run_eval(load_eval_set("tiny", data_dir=data, n=2), ["basic"], out_dir=out, index_root=root / "idx",
                 show_progress=False, plots=False, log=lambda m: None)
    assert engine.calls == []  # nothing ran again
    page = Page((out / REPORT_HTML).read_text(encoding="utf-8"))
    assert len(page.all("details", "q")) == 2 and len(page.all("div", "strat")) == 2
