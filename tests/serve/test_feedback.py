"""``POST /feedback`` (issue 75, item 4): a person's mark of an answer becomes a row of
``INDEX/feedback.jsonl`` that ``ragnet eval --docs`` reads and checks against the folder; a
follow-up's row stands alone; bad marks are refused naming the field; the file is behind the key,
bounded, written whole under the index folder's lock, and kept by index updates and rebuilds.
Real indexes of real files, real servers on 127.0.0.1; scripted LMs for control flow only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from ragnet.eval.run.doc_questions import check_places, load_doc_questions
from ragnet.serve import ServeOptions
from ragnet.serve.feedback_file import FEEDBACK_FILE, MAX_FEEDBACK_BYTES, FeedbackBusy, FeedbackFile, row_id
from tests.programs.scripted import ProgramLM
from tests.serve.conftest import PDF, StreamingLM

KEY = "feedback-test-key-0123"
HOSPITALS = "How much did hospitals receive?"


@pytest.fixture
def index(manuals, tmp_path) -> Path:
    """A copy of the manuals' index: marks are written into its folder."""
    target = tmp_path / "idx"
    shutil.copytree(manuals.index, target)
    return target


def options(index, docs, **kw) -> ServeOptions:
    return ServeOptions(index=index, reload_every=0, timeout=30, docs=(docs,), **kw)


def hospitals(prompt, n):
    return {"answer": "Hospitals received 30 million.", "evidence_ids": ["c1"]}


def place_of(cite: dict, quote: str | None = None) -> dict:
    """The place a page sends for a picked citation: its file, pages or section, and the line."""
    place = {"file": cite["file"], "quote": cite["sentences"][0] if quote is None else quote}
    for key, field in (("page", "page"), ("page_end", "page_end"), ("headings", "section")):
        if key in cite:
            place[field] = cite[key]
    return place


def rows(index: Path) -> list[dict]:
    return [json.loads(line) for line in (index / FEEDBACK_FILE).read_text().splitlines()]


def test_a_right_mark_is_a_row_that_eval_docs_loads_and_finds_in_the_folder(serve, manuals, index):
    with serve(options(index, manuals.docs), lm=ProgramLM(answer=hospitals).lm()) as (url, app):
        asked = httpx.post(f"{url}/ask", json={"question": HOSPITALS, "strategy": "basic"}, timeout=30).json()
        cite = asked["citations"][0]
        mark = {"question": HOSPITALS, "answer": asked["answer"], "marked": "right", "right_answer": "30 million",
                "place": place_of(cite), "strategy": asked["strategy"]}
        reply = httpx.post(f"{url}/feedback", json=mark, timeout=30)
        served = app.state.service.holder.current.index
    assert reply.status_code == 200, reply.text
    saved = reply.json()
    assert saved["file"] == FEEDBACK_FILE and saved["replaced"] is False and saved["rows"] == 1
    assert saved["warnings"] == [] and str(index) not in reply.text  # no absolute path in a reply
    [row] = rows(index)
    assert row == saved["row"] and row["id"] == saved["id"] == row_id(HOSPITALS)
    assert row["question"] == HOSPITALS and row["answers"] == ["30 million"] and "asked" not in row
    assert row["gold"] == [{"file": PDF, "page": 2, "quote": "Hospitals received 30 million.", "role": "answer"}]
    assert (row["marked"], row["given"], row["strategy"]) == ("right", asked["answer"], "basic")
    assert row["created"].endswith("Z") and row["source"] == "ragnet serve"
    # what ragnet eval --docs FOLDER --data INDEX/feedback.jsonl does before any LM call
    [q] = load_doc_questions(index / FEEDBACK_FILE)
    assert q.places[0].key() == f"{PDF}, p. 2" and q.answers == ["30 million"]
    assert check_places(served, [q], index / FEEDBACK_FILE) == []  # the place is there, and its line


def test_a_right_mark_without_a_short_answer_keeps_the_answer_and_a_section_place(serve, manuals, index):
    seine = lambda prompt, n: {"answer": "the Seine", "evidence_ids": ["c1"]}  # noqa: E731
    with serve(options(index, manuals.docs), lm=ProgramLM(answer=seine).lm()) as (url, _):
        asked = httpx.post(f"{url}/ask", json={"question": "Which river runs through Paris?", "strategy": "basic",
                                               "only": ["notes.md"]}, timeout=30).json()
        cite = asked["citations"][0]
        mark = {"question": "Which river runs through Paris?", "answer": asked["answer"], "marked": "right",
                "place": place_of(cite, "The Seine runs through Paris.")}
        assert httpx.post(f"{url}/feedback", json=mark, timeout=30).status_code == 200
    [row] = rows(index)
    assert row["answers"] == ["the Seine"]
    assert row["gold"] == [{"file": "notes.md", "section": ["Notes", "Rivers"], "quote": "The Seine runs through Paris.",
                            "role": "answer"}]
    assert load_doc_questions(index / FEEDBACK_FILE)[0].places[0].section == ("Notes", "Rivers")


def test_a_follow_up_row_carries_the_standalone_question(serve, manuals, index):
    standalone = "How much money did hospitals receive?"
    engine = StreamingLM(condense=lambda p, n: {"standalone_question": standalone}, answer=hospitals)
    first = [{"role": "user", "content": "What did the agency spend on roads?"}]
    with serve(options(index, manuals.docs), lm=engine.lm()) as (url, _):
        one = httpx.post(f"{url}/v1/chat/completions", json={"model": "ragnet-basic", "messages": first},
                         timeout=30).json()
        follow = [*first, {"role": "assistant", "content": one["ragnet"]["answer"]},
                  {"role": "user", "content": "And hospitals?"}]
        two = httpx.post(f"{url}/v1/chat/completions", json={"model": "ragnet-basic", "messages": follow},
                         timeout=30).json()
        mark = {"question": "And hospitals?", "standalone_question": two["ragnet"]["standalone_question"],
                "answer": two["ragnet"]["answer"], "marked": "right", "right_answer": "30 million",
                "place": place_of(two["citations"][0], "Hospitals received 30 million.")}
        reply = httpx.post(f"{url}/feedback", json=mark, timeout=30)
    assert reply.status_code == 200, reply.text
    assert two["ragnet"]["answer"] == "Hospitals received 30 million."  # the answer alone, without Sources
    assert two["choices"][0]["message"]["content"].startswith(two["ragnet"]["answer"] + "\n\nSources:\n[1] ")
    [row] = rows(index)
    assert row["question"] == standalone and row["asked"] == "And hospitals?" and row["id"] == row_id(standalone)
    assert load_doc_questions(index / FEEDBACK_FILE)[0].question == standalone


def test_a_question_marked_again_replaces_its_row_and_a_wrong_mark_keeps_the_correction(serve, manuals, index):
    pdf = {"file": PDF, "page": 2, "quote": "Hospitals received 30 million."}
    with serve(options(index, manuals.docs), lm=ProgramLM().lm()) as (url, _):
        post = lambda mark: httpx.post(f"{url}/feedback", json=mark, timeout=30)  # noqa: E731
        right = post({"question": HOSPITALS, "answer": "30 million", "marked": "right", "place": pdf}).json()
        wrong = post({"question": "  how much did HOSPITALS receive? ", "answer": "12 million", "marked": "wrong",
                      "right_answer": "30 million", "place": pdf}).json()
        other = post({"question": "How many teachers were hired?", "answer": "200", "marked": "right",
                      "place": {"file": PDF, "page": 3, "quote": "Schools hired 200 teachers."}}).json()
    assert (right["replaced"], wrong["replaced"], other["replaced"]) == (False, True, False)
    assert (right["rows"], wrong["rows"], other["rows"]) == (1, 1, 2) and right["id"] == wrong["id"]
    first, second = rows(index)
    assert (first["marked"], first["answers"], first["given"]) == ("wrong", ["30 million"], "12 million")
    assert second["answers"] == ["200"]
    assert [q.id for q in load_doc_questions(index / FEEDBACK_FILE)] == [first["id"], second["id"]]  # no duplicate


def test_a_line_in_a_passage_that_spans_pages_gets_the_page_that_holds_it(serve, manuals, index):
    # the cited passage runs from page 2 to 3; the line picked is on page 3 (a passage of its own there)
    place = {"file": PDF, "page": 2, "page_end": 3, "quote": "Schools hired 200 teachers."}
    pasted = {"file": PDF, "page": 1, "quote": "The moon is made of cheese."}
    with serve(options(index, manuals.docs), lm=ProgramLM().lm()) as (url, app):
        post = lambda q, p: httpx.post(f"{url}/feedback", json={"question": q, "answer": "x", "marked": "wrong",  # noqa: E731
                                                               "right_answer": "200", "place": p}, timeout=30)
        spans = post("How many teachers were hired?", place)
        warned = post("What is the moon made of?", pasted)
        served = app.state.service.holder.current.index
    assert spans.json()["row"]["gold"][0]["page"] == 3
    assert warned.status_code == 200 and "not in the text indexed at guide/budget plan.pdf, p. 1" in warned.json()["warnings"][0]
    warnings = check_places(served, load_doc_questions(index / FEEDBACK_FILE), index / FEEDBACK_FILE)
    assert len(warnings) == 1 and "cheese" in warnings[0]  # eval --docs warns of the same line, and loads it


GOOD = {"question": HOSPITALS, "answer": "30 million", "marked": "right"}


@pytest.mark.parametrize("change, status, param, words", [
    ({"marked": "maybe"}, 422, "marked", "right"),
    ({"marked": "wrong"}, 400, "right_answer", "needs the right answer"),
    ({"marked": "wrong", "right_answer": "   "}, 400, "right_answer", "needs the right answer"),
    ({"question": "  "}, 400, "question", "empty"),
    ({"question": None}, 422, "question", "string"),
    ({"answer": "x" * 20_000}, 422, "answer", "at most"),
    ({"right_answer": "x" * 3_000}, 422, "right_answer", "at most"),
    ({"place": {"file": "secret.md", "quote": "The vault code"}}, 400, "place", "no file secret.md was indexed"),
    ({"place": {"file": "budget plan.pdf", "page": 2}}, 400, "place", f"did you mean {PDF}?"),
    ({"place": {"file": PDF, "page": 9}}, 400, "place", "has pages 1 to 3"),
    ({"place": {"file": "notes.md", "section": ["Lakes"]}}, 400, "place", "no section Lakes"),
    ({"place": {"file": PDF, "page": 0}}, 422, "place.page", "greater than or equal to 1"),
    ({"place": {"file": PDF, "quote": "q" * 5_000}}, 422, "place.quote", "at most"),
    ({"place": {"file": PDF, "url": "/files/x"}}, 422, "place.url", "not permitted"),
    ({"place": {"file": ""}}, 422, "place.file", "at least 1"),
    ({"gold": []}, 422, "gold", "not permitted"),
])
def test_a_bad_mark_is_refused_naming_its_field_and_nothing_is_written(serve, manuals, index, change, status,
                                                                       param, words):
    with serve(options(index, manuals.docs), lm=ProgramLM().lm()) as (url, _):
        reply = httpx.post(f"{url}/feedback", json={**GOOD, **change}, timeout=30)
    error = reply.json()["error"]
    assert reply.status_code == status and error["param"] == param and words in error["message"], reply.text
    assert not (index / FEEDBACK_FILE).exists()


def test_marks_need_the_key_and_the_servers_own_pages(serve, manuals, index):
    with serve(options(index, manuals.docs, api_key=KEY), lm=ProgramLM().lm()) as (url, _):
        bare = httpx.post(f"{url}/feedback", json=GOOD, timeout=30)
        wrong = httpx.post(f"{url}/feedback", json=GOOD, headers={"Authorization": "Bearer nope-nope-nope"})
        elsewhere = httpx.post(f"{url}/feedback", json=GOOD, headers={"Authorization": f"Bearer {KEY}",
                                                                      "Origin": "https://evil.example"})
        assert not (index / FEEDBACK_FILE).exists()
        keyed = httpx.post(f"{url}/feedback", json=GOOD, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert bare.status_code == wrong.status_code == 401 and elsewhere.status_code == 403
    assert keyed.status_code == 200 and len(rows(index)) == 1 and KEY not in keyed.text


def test_the_file_is_bounded_and_a_mark_past_it_changes_nothing(serve, manuals, index):
    line = json.dumps({"id": "x", "question": "Which?", "answers": ["a" * 200]}) + "\n"
    count = MAX_FEEDBACK_BYTES // len(line)
    text = "".join(line.replace('"x"', f'"old-{i}"') for i in range(count))
    (index / FEEDBACK_FILE).write_text(text)
    with serve(options(index, manuals.docs), lm=ProgramLM().lm()) as (url, _):
        reply = httpx.post(f"{url}/feedback", json=GOOD, timeout=60)
    assert reply.status_code == 507 and reply.json()["error"]["code"] == "feedback_full"
    assert "move it aside" in reply.json()["error"]["message"] and FEEDBACK_FILE in reply.json()["error"]["message"]
    assert (index / FEEDBACK_FILE).read_text() == text


def test_marks_sent_at_once_are_all_kept(serve, manuals, index):
    marks = [{"question": f"Question number {i} about hospitals?", "answer": "30 million", "marked": "right",
              "place": {"file": PDF, "page": 2, "quote": "Hospitals received 30 million."}} for i in range(8)]
    with serve(options(index, manuals.docs), lm=ProgramLM().lm()) as (url, _):
        with ThreadPoolExecutor(8) as pool:
            replies = list(pool.map(lambda m: httpx.post(f"{url}/feedback", json=m, timeout=60), marks))
    assert [r.status_code for r in replies] == [200] * 8
    assert sorted(q.question for q in load_doc_questions(index / FEEDBACK_FILE)) == sorted(m["question"] for m in marks)


HOLD = """
import sys, time
from ragnet._atomic import dir_lock
with dir_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold_the_index_lock(folder: Path, seconds: float) -> subprocess.Popen:
    """Another process writing the index folder (as ``ragnet index`` does), holding its lock."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(seconds)], stdout=subprocess.PIPE,
                            text=True, cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_mark_waits_for_an_update_of_the_folder_and_gives_up_after_a_while(serve, manuals, index):
    holder = hold_the_index_lock(index, 1.5)
    try:
        with pytest.raises(FeedbackBusy, match="stayed locked for 0.3s"):
            FeedbackFile(index, wait=0.3).add({"id": "a", "question": "Which?", "answers": ["a"]})
        with serve(options(index, manuals.docs), lm=ProgramLM().lm()) as (url, _):
            t0 = time.monotonic()
            reply = httpx.post(f"{url}/feedback", json=GOOD, timeout=30)
            waited = time.monotonic() - t0
    finally:
        holder.wait(30)
    assert reply.status_code == 200 and waited > 0.3 and len(rows(index)) == 1


def test_marks_survive_an_update_and_a_rebuild_of_the_index(serve, manuals, tmp_path):
    from ragnet.index import Index

    docs = tmp_path / "docs"
    shutil.copytree(manuals.docs, docs)
    (docs / "later.md").unlink()
    index = tmp_path / "idx"
    Index.sync([str(docs)], index, chunk_tokens=24, overlap=0, show_progress=False)
    with serve(options(index, docs), lm=ProgramLM().lm()) as (url, _):
        first = httpx.post(f"{url}/feedback", json={**GOOD, "place": {"file": PDF, "page": 2}}, timeout=30)
        assert first.status_code == 200
        (docs / "lakes.md").write_text("# Lakes\n\nLake Geneva lies between France and Switzerland.\n")
        updated, report = Index.sync([str(docs)], index, show_progress=False)  # what `ragnet index` runs again
        assert "+1 file" in report.line() and updated.kept_files == [FEEDBACK_FILE]
        assert rows(index) == [first.json()["row"]]
        assert httpx.post(f"{url}/reload", timeout=60).status_code == 200
        lake = {"question": "Where is Lake Geneva?", "answer": "between France and Switzerland", "marked": "right",
                "place": {"file": "lakes.md", "section": ["Lakes"], "quote": "Lake Geneva lies between France"}}
        second = httpx.post(f"{url}/feedback", json=lake, timeout=30)  # a file the update added
        assert second.status_code == 200 and second.json()["warnings"] == []
    rebuilt, _ = Index.sync([str(docs)], index, rebuild=True, show_progress=False)
    assert rebuilt.kept_files == [FEEDBACK_FILE] and [r["id"] for r in rows(index)] == [first.json()["id"],
                                                                                          second.json()["id"]]
    assert check_places(rebuilt, load_doc_questions(index / FEEDBACK_FILE), index / FEEDBACK_FILE) == []


def test_an_index_served_through_a_link_is_written_and_locked_where_the_link_points(index, tmp_path):
    served = tmp_path / "current"
    served.symlink_to(index)
    marks = FeedbackFile(served, wait=0.3)
    assert marks.add({"id": "a", "question": "Which?", "answers": ["a"]}) == (False, 1)
    assert served.is_symlink() and len(rows(index)) == 1  # the link stays a link, as `ragnet index` leaves it
    holder = hold_the_index_lock(index, 1.0)  # `ragnet index current` locks the folder the link points to
    try:
        with pytest.raises(FeedbackBusy):
            marks.add({"id": "b", "question": "Which?", "answers": ["b"]})
    finally:
        holder.wait(30)
    assert len(rows(index)) == 1
