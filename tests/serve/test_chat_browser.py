"""The chat page in a real browser (headless Chromium over the DevTools protocol, when installed;
issue 75, item 4): a person types a question and sees the answer stream in, asks a follow-up (sent
with the conversation), opens a source at its place, marks answers and picks the line that states
them (rows of ``feedback.jsonl``), reloads and keeps the conversation, and starts a new one. Real
index, real server, real keyboard and mouse input; a scripted LM that streams, for control flow.

With ``RAGNET_SCREENSHOT_DIR`` set, the page's picture is written there too (``docs/serve-chat.png``
in the README comes from ``RAGNET_SCREENSHOT_DIR=docs``)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from ragnet.serve import ServeOptions
from tests.serve.chromium import Chromium, browser_path
from tests.serve.conftest import PDF, StreamingLM, running

HOSPITALS = "How much did hospitals receive?"
SCHOOLS = "How many teachers did the schools hire?"
KEY = "chat-page-key-0123"


def standalone(prompt, n):
    return {"standalone_question": SCHOOLS}


def answer(prompt, n):
    question = prompt.rsplit("[[ ## question ## ]]", 1)[1]
    if "teachers" in question:
        return {"answer": "The schools hired 200 teachers.", "evidence_ids": ["c1"]}
    if "river" in question:
        return {"answer": "The Seine runs through Paris.", "evidence_ids": ["c1"]}
    return {"answer": "Hospitals received 30 million.", "evidence_ids": ["c1"]}


@pytest.fixture
def chat_server(manuals, dspy_state, tmp_path):
    """``with chat_server(**options) as (url, index, engine):`` the page over a copy of the manuals' index."""
    import contextlib

    from ragnet.serve import create_app

    browser_path()  # skip before any work when there is no browser
    index = tmp_path / "idx"
    shutil.copytree(manuals.index, index)

    @contextlib.contextmanager
    def make(**kw):
        engine = StreamingLM(delay=0.05, condense=standalone, answer=answer)
        app = create_app(ServeOptions(index=index, reload_every=0, timeout=30, docs=(manuals.docs,), **kw),
                         lm=engine.lm())
        with running(app) as url:
            yield url, index, engine

    return make


WATCH = """(() => { window.__seen = [];
  new MutationObserver(() => { const a = document.querySelector(".answer.streaming");
                               if (a) window.__seen.push(a.textContent); })
    .observe(document.getElementById("turns"), {subtree: true, childList: true, characterData: true}); })()"""
DONE = "document.querySelectorAll('#turns .turn .usage').length"


def ask(tab: Chromium, question: str, turns: int) -> None:
    tab.type("#question", question)
    tab.press("Enter")
    tab.wait(f"{DONE} === {turns}")


def texts(tab: Chromium, selector: str) -> list[str]:
    return tab.js(f"[...document.querySelectorAll({json.dumps(selector)})].map((el) => el.textContent)")


def wait_for_tab(tab: Chromium, url: str | None = None) -> str:
    """The id of the tab the page opened (at ``url``, when given)."""
    deadline = time.time() + 30
    while True:
        found = [t for t, at in tab.opened().items() if url is None or at == url]
        if found:
            return found[0]
        assert time.time() < deadline, tab.opened()
        tab.js("0")  # the browser's events arrive with a reply


def feedback_rows(index: Path) -> list[dict]:
    return [json.loads(line) for line in (index / "feedback.jsonl").read_text().splitlines()]


def test_a_person_asks_follows_up_opens_a_source_and_marks_the_answers(chat_server, manuals, tmp_path):
    with chat_server() as (url, index, engine), Chromium(900, 1000) as tab:
        tab.goto(url + "/")
        tab.wait("document.getElementById('index-line').textContent.includes('passages')")
        tab.js(WATCH)
        ask(tab, HOSPITALS, 1)
        seen = tab.js("window.__seen")
        assert texts(tab, "#turns .answer") == ["Hospitals received 30 million."]
        partial = [s for s in seen if s and s != "Hospitals received 30 million."]
        assert len(set(partial)) >= 3 and all("Hospitals received 30 million.".startswith(s) for s in partial)
        link = tab.js("document.querySelector('#turns .turn a.where').href")
        assert link == f"{url}/files/guide/budget%20plan.pdf#page=2"
        tab.click("#turns .turn a.where")  # a tab of its own, which a headless shell downloads the PDF in
        opened_by_page = wait_for_tab(tab)
        assert httpx.get(link).content == (manuals.docs / PDF).read_bytes()

        tab.type("#question", "And the schools?")
        tab.press("Enter")
        tab.wait("(document.querySelector('.answer.streaming') || {}).textContent")
        # turn one marked while turn two streams: its form stays as typed in when the answer ends
        tab.click("#turns .turn:nth-child(1) button.right")
        tab.type(".mark-form input[name=right_answer]", "30 million")
        during = tab.js("!!document.querySelector('.answer.streaming')")
        tab.wait(f"{DONE} === 2")
        assert during and tab.js("document.querySelector('.mark-form input[name=right_answer]').value") == "30 million"
        [condensed] = [prompt for step, prompt in engine.calls if step == "condense"]
        history = condensed.rsplit("## history ## ]]", 1)[-1]
        assert "User: How much did hospitals receive?" in history  # the first turn went with the follow-up
        assert "Assistant: Hospitals received 30 million." in history and "Sources:" not in history
        assert texts(tab, "#turns .standalone") == [f"asked as: {SCHOOLS}"]
        assert texts(tab, "#turns .answer")[1] == "The schools hired 200 teachers."

        # turn one: right, its first cited line as it is, the short answer typed above
        assert tab.js("document.querySelector('.mark-form input[type=radio]:checked').value") == "0:0"
        tab.click(".mark-form button", "Save mark")
        tab.wait("document.querySelector('#turns .turn:nth-child(1) .saved')")
        # turn two: right, a line picked among the cited ones
        tab.click("#turns .turn:nth-child(2) button.right")
        tab.click(".mark-form label.line", "Schools hired 200 teachers.")
        tab.type(".mark-form input[name=right_answer]", "200")
        shot = tab.screenshot(tmp_path / "serve-chat.png")
        tab.click(".mark-form button", "Save mark")
        tab.wait("document.querySelector('#turns .turn:nth-child(2) .saved')")
        saved = texts(tab, "#turns .saved")

        tab.reload()  # the conversation and its marks are kept by the tab
        tab.wait(f"{DONE} === 2")
        kept = texts(tab, "#turns .saved")
        tab.click("#new")
        tab.wait(f"{DONE} === 0")
        tab.reload()
        after_new = tab.js(f"{DONE} + ':' + document.getElementById('empty').hidden")
        errors = tab.errors()
    hospitals, schools = feedback_rows(index)
    assert (hospitals["question"], hospitals["answers"]) == (HOSPITALS, ["30 million"]) and "asked" not in hospitals
    assert hospitals["gold"] == [{"file": PDF, "page": 2, "quote": "Hospitals received 30 million.", "role": "answer"}]
    assert (schools["question"], schools["asked"], schools["answers"]) == (SCHOOLS, "And the schools?", ["200"])
    assert schools["gold"] == [{"file": PDF, "page": 3, "quote": "Schools hired 200 teachers.", "role": "answer"}]
    assert saved == kept and saved[1] == "Marked right · line: “Schools hired 200 teachers.” · saved to feedback.jsonl"
    assert after_new == "0:false" and errors == [] and opened_by_page
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) < 200_000
    if os.environ.get("RAGNET_SCREENSHOT_DIR"):
        (Path(os.environ["RAGNET_SCREENSHOT_DIR"]) / "serve-chat.png").write_bytes(shot)


def test_a_wrong_mark_takes_the_right_answer_and_a_pasted_line_with_the_key(chat_server):
    pasted = "(() => { const s = document.querySelector('.mark-form select[name=from]');" \
             " s.value = 'other'; s.dispatchEvent(new Event('change')); })()"
    with chat_server(api_key=KEY) as (url, index, _), Chromium(900, 1000) as tab:
        tab.goto(url + "/")
        tab.wait("!document.getElementById('key-label').hidden")
        tab.type("#key", KEY)
        ask(tab, HOSPITALS, 1)
        tab.click("#turns .turn button.wrong")
        tab.click(".mark-form button", "Save mark")  # no right answer: the browser asks for one, nothing is sent
        unsent = texts(tab, ".mark-form .form-status") == [""] and not (index / "feedback.jsonl").exists()
        # a line pasted from the cited source (page 2) that is not there: saved, with the warning shown
        tab.type(".mark-form input[name=right_answer]", "12 million")
        tab.click(".mark-form label.line", "Another line")
        tab.type(".mark-form textarea[name=pasted]", "The agency spent 12 million on roads in 2019.")
        tab.click(".mark-form button", "Save mark")
        warning = tab.wait("document.querySelector('#turns .warning') && document.querySelector('#turns .warning')"
                           ".textContent")
        # marked again, the line from another file: one the index does not have is refused, then its real page
        tab.click("#turns .turn button.wrong")
        tab.type(".mark-form input[name=right_answer]", "12 million")
        tab.click(".mark-form label.line", "Another line")
        tab.type(".mark-form textarea[name=pasted]", "The agency spent 12 million on roads in 2019.")
        tab.js(pasted)
        tab.type(".mark-form input[name=file]", "nowhere.pdf")
        tab.click(".mark-form button", "Save mark")
        refused = tab.wait("document.querySelector('.mark-form .error') && "
                           "document.querySelector('.mark-form .error').textContent")
        tab.type(".mark-form input[name=file]", "guide/budget plan.pdf")
        tab.type(".mark-form input[name=page]", "1")
        tab.click(".mark-form button", "Save mark")
        tab.wait("document.querySelector('#turns .saved') && !document.querySelector('#turns .warning')")
        errors = tab.errors()
    [row] = feedback_rows(index)
    assert unsent and errors == []
    assert "not in the text indexed at guide/budget plan.pdf, p. 2" in warning
    assert "no file nowhere.pdf was indexed" in refused
    assert (row["marked"], row["answers"], row["given"]) == ("wrong", ["12 million"], "Hospitals received 30 million.")
    assert row["gold"] == [{"file": PDF, "page": 1, "quote": "The agency spent 12 million on roads in 2019.",
                            "role": "answer"}]


def test_a_source_opens_in_a_tab_of_its_own_at_its_sentence(chat_server):
    with chat_server() as (url, index, _), Chromium(900, 1000) as tab:
        tab.goto(url + "/")
        tab.type("#only", "notes.md")  # the Files field: the question asks that file alone
        ask(tab, "Which river runs through Paris?", 1)
        link = tab.js("document.querySelector('#turns .turn a.where').href")
        tab.click("#turns .turn a.where")
        opened = wait_for_tab(tab, link)
        shown = tab.text_of(opened)
        sources = texts(tab, "#turns .where")
        errors = tab.errors()
    assert link == f"{url}/files/notes.md#:~:text=The%20Seine%20runs%20through%20Paris."
    assert sources == ["notes.md › Notes › Rivers"] and "The Seine runs through Paris." in shown
    assert errors == []


def test_a_links_question_is_asked_once_in_a_conversation_of_its_own(chat_server):
    with chat_server() as (url, _, engine), Chromium(900, 1000) as tab:
        tab.goto(url + "/")
        ask(tab, "Which river runs through Paris?", 1)
        tab.goto(f"{url}/?q={quote(HOSPITALS)}&strategy=basic")
        tab.wait(f"{DONE} === 1 && document.querySelector('#turns .question').textContent === {json.dumps(HOSPITALS)}")
        address = tab.js("location.pathname + location.search")
        tab.reload()  # a reload keeps the conversation, and asks nothing again
        tab.wait(f"{DONE} === 1")
        turns = tab.js("document.querySelectorAll('#turns .turn').length")  # the script has run: a new ask shows
        asked = [step for step, _ in engine.calls].count("answer")
        usage = texts(tab, "#turns .usage")
        errors = tab.errors()
    assert address == "/" and turns == 1 and asked == 2 and usage[0].startswith("basic · ") and errors == []
