"""The page in a real browser (headless Chromium, when installed): a link's question is asked on
load, the answer and the cited passages are shown, a passage holding markup shows as text (no
element is made from it), each source links to its place in its file, and a hostile HTML manual
opened there runs no script. The chat itself: ``test_chat_browser.py``."""

from __future__ import annotations

import subprocess
from urllib.parse import quote

import pytest

from ragnet.serve import ServeOptions
from tests.programs.scripted import SureProgramLM
from tests.serve.chromium import Chromium, browser_path
from tests.serve.conftest import DOCS, running

def answered(url: str) -> str:
    """The page's DOM once the question its link asks is answered (or refused)."""
    with Chromium() as tab:
        tab.goto(url)
        tab.wait("document.querySelector('#turns .usage') || document.querySelector('#turns .error')")
        assert tab.errors() == []
        return tab.js("document.documentElement.outerHTML")


def rendered(url: str, *extra: str) -> str:
    run = subprocess.run([browser_path(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000",
                          *extra, url], capture_output=True, text=True, timeout=120)
    return run.stdout


@pytest.mark.parametrize("sure, shown", [(0.8, "confidence 0.80 · basic"),
                                         (0.3, "confidence 0.30 · low: check the cited lines · basic")])
def test_the_page_asks_and_shows_passages_as_text(serve_index, dspy_state, tmp_path, sure, shown):
    from ragnet.serve import create_app

    # an answer no passage states word for word: the reader's four cited chunks stay its citations
    answer = lambda p, n: {"answer": "yes", "evidence_ids": ["c1", "c2", "c3", "c4"]}  # noqa: E731
    app = create_app(ServeOptions(index=serve_index.path, reload_every=0), lm=SureProgramLM(sure, answer=answer).lm())
    with running(app) as url:
        page = f"{url}/?q={quote('script tag onerror alert')}&strategy=basic"
        dom = answered(page)
    assert '<div class="answer">yes</div>' in dom
    assert "&lt;script&gt;alert(\"pwned\")&lt;/script&gt;" in dom  # the passage, as text
    assert "&lt;b&gt;Markup&lt;/b&gt; &amp; co" in dom  # its title too
    assert dom.count("<script") == 1 and "<img" not in dom and "<b>" not in dom  # no element made from a document
    assert dom.count("<blockquote>") >= 4 and "hostile.md" in dom
    assert shown in dom  # the reader's confidence, where its LM reports logprobs; a low one is flagged


def test_a_link_with_files_asks_those_files_alone(serve_index, dspy_state):
    from ragnet.serve import create_app

    answer = lambda p, n: {"answer": "a river", "evidence_ids": ["c1"]}  # noqa: E731
    app = create_app(ServeOptions(index=serve_index.path, reload_every=0), lm=SureProgramLM(0.9, answer=answer).lm())
    with running(app) as url:
        dom = answered(f"{url}/?q={quote('Which river runs through Rome?')}&strategy=basic&only=oslo.md,%20paris.md")
        bad = answered(f"{url}/?q={quote('Which river?')}&strategy=basic&only=lisbon.md")
    assert '<div class="answer">a river</div>' in dom
    assert "rome.md" not in dom and ("oslo.md" in dom or "paris.md" in dom)
    assert "no indexed file matches 'lisbon.md'" in bad  # the server's refusal, shown as the status


def test_a_source_is_a_link_to_its_place_in_the_file(serve_index, dspy_state, tmp_path):
    from ragnet.serve import create_app

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, _, text in DOCS:
        (docs / f"{name}.md").write_text(text)
    answer = lambda p, n: {"answer": "the Tiber", "evidence_ids": ["c1"]}  # noqa: E731
    app = create_app(ServeOptions(index=serve_index.path, reload_every=0, docs=docs),
                     lm=SureProgramLM(0.9, answer=answer).lm())
    with running(app) as url:
        dom = answered(f"{url}/?q={quote('Which river runs through Rome?')}&strategy=basic")
    link = ('<a class="where" href="/files/rome.md#:~:text=The%20Tiber%20river%20runs%20through%20Rome." '
            'target="_blank" rel="noopener noreferrer">Rome — rome.md</a>')
    assert link in dom


def test_a_hostile_html_manual_runs_no_script_when_its_link_is_opened(manuals, dspy_state):
    from ragnet.serve import create_app

    app = create_app(ServeOptions(index=manuals.index, reload_every=0, docs=manuals.docs), lm=SureProgramLM(0.9).lm())
    with running(app) as url:
        served = rendered(f"{url}/files/pump.html", "--dump-dom")
    from_disk = rendered((manuals.docs / "pump.html").as_uri(), "--dump-dom")  # the same file, no server headers
    assert "<title>pwned</title>" in from_disk  # its scripts do run where nothing stops them
    assert "<title>Pump manual</title>" in served and "The pump runs at 50 rpm." in served
    assert "<title>pwned</title>" not in served  # neither its <script> nor its onerror ran
