"""``ragnet serve FOLDER``: a folder of documents indexed in the cache, watched (watchdog's events or
polling), synced in the background and swapped in between requests, its files and last update
shown behind the key; real indexes and a real server throughout, a scripted LM for the answers."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from ragnet.cli import app as cli
from ragnet.serve import ServeOptions
from ragnet.serve.folder import cache_index, served_paths
from ragnet.serve.library import Library
from ragnet.serve.watch import FolderWatch
from tests.programs.scripted import ProgramLM
from tests.serve.conftest import free_port

KEY = "folder-test-key-0123"
FILES = {
    "paris.md": "# Paris\n\nParis is the capital of France. The Seine river runs through Paris.\n",
    "rome.md": "# Rome\n\nRome is the capital of Italy. The Tiber river runs through Rome.\n",
    "guides/oslo.md": "# Oslo\n\nOslo is the capital of Norway. It lies at the head of the Oslofjord.\n",
}
BERGEN = "# Bergen\n\nBergen lies among the fjords of western Norway, between seven mountains.\n"


def write_folder(folder: Path) -> Path:
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The documents and their index, built once (the tests copy both: a served folder whose
    index is in the cache already, as on a second start)."""
    root = tmp_path_factory.mktemp("built")
    folder = write_folder(root / "docs")
    report = Library(folder.resolve(), root / "idx").open()
    assert report.full_build
    return folder, root / "idx"


@pytest.fixture
def docs(built, ragnet_home, tmp_path) -> Path:
    """A served folder whose index sits in the cache (``RAGNET_HOME`` is the test's own)."""
    folder = tmp_path / "docs"
    shutil.copytree(built[0], folder)
    cached = cache_index(folder)
    cached.parent.mkdir(parents=True)
    shutil.copytree(built[1], cached)
    return folder.resolve()


def folder_options(folder, **kw) -> ServeOptions:
    return ServeOptions(folder=folder, reload_every=0, **{"timeout": 30, "watch_every": 0.1, **kw})


def wait_for(check, seconds: float = 60.0, what: str = "the update"):
    deadline = time.time() + seconds
    while time.time() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} did not come within {seconds:g} s")


def generation(url) -> int:
    return httpx.get(f"{url}/health").json()["index"]["generation"]


def files_of(hits) -> set[str]:
    return {h.get("file") for h in hits}


def search(url, q, k=5, headers=None) -> dict:
    reply = httpx.get(f"{url}/search", params={"q": q, "k": k}, headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()


# -- the first start and the next -----------------------------------------------------------
def test_a_served_folder_is_indexed_in_the_cache_and_answered_from(serve, ragnet_home, tmp_path):
    folder = write_folder(tmp_path / "manuals")
    before = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))
    lm = ProgramLM(answer=lambda prompt, n: {"answer": "the Tiber", "evidence_ids": ["c1"]})
    with serve(folder_options(folder, watch="off"), lm=lm.lm()) as (url, app):
        index = app.state.holder.path
        assert index.parent == ragnet_home / "served" and index.name.startswith("manuals-")
        assert (index / "manifest.json").is_file()
        assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == before  # nothing written there
        reply = httpx.post(f"{url}/ask", json={"question": "Which river runs through Rome?", "strategy": "basic"},
                           timeout=30)
        assert reply.status_code == 200, reply.text
        assert reply.json()["answer"] == "the Tiber" and reply.json()["citations"][0]["file"] == "rome.md"
        link = reply.json()["citations"][0]["url"]  # a served folder's files are served: its citations open
        assert link.startswith("/files/rome.md#:~:text=")
        opened = httpx.get(f"{url}{link.split('#')[0]}")
        assert opened.status_code == 200 and "The Tiber river runs through Rome." in opened.text
        health = httpx.get(f"{url}/health").json()["library"]
        assert health["files"] == 3 and health["unreadable"] == 0 and health["watch"] == "off"
        assert health["updated_at"] and not health["failed"]
        status = httpx.get(f"{url}/library").json()
        assert status["folder"] == "manuals" and status["files"] == ["guides/oslo.md", "paris.md", "rome.md"]
        assert status["last_update"]["added"] == status["files"] and status["last_update"]["removed"] == []
    # the next start reads only what changed meanwhile
    (folder / "rome.md").write_text(FILES["rome.md"] + "\nRome has many fountains.\n", encoding="utf-8")
    report = Library(folder.resolve(), cache_index(folder)).open()
    assert (report.full_build, report.added, report.changed, report.unchanged) == (False, 0, 1, 2)
    assert report.load.files_read == 3 and len(report.load.documents) == 1  # one file read, two only hashed
    unchanged = Library(folder.resolve(), cache_index(folder)).open()
    assert unchanged.written is False and unchanged.chunks_embedded == 0


# -- while it serves --------------------------------------------------------------------------
def test_a_file_added_is_found_after_the_watchers_sync_and_a_question_under_way_keeps_its_index(serve, docs):
    asked, release = threading.Event(), threading.Event()

    def answer(prompt, n):
        asked.set()
        release.wait(60)
        return {"answer": "Oslo", "evidence_ids": ["c1"]}

    with serve(folder_options(docs, watch="watchdog", watch_every=0.2), lm=ProgramLM(answer=answer).lm()) as (url, app):
        assert app.state.service.library.watching == "watchdog"
        assert "bergen.md" not in files_of(search(url, "fjords of Bergen")["hits"])
        replies = []
        question = threading.Thread(target=lambda: replies.append(httpx.post(
            f"{url}/ask", json={"question": "Capital of Norway?", "strategy": "basic"}, timeout=90)))
        question.start()
        try:
            assert asked.wait(30)
            (docs / "bergen.md").write_text(BERGEN, encoding="utf-8")
            wait_for(lambda: generation(url) == 2)
            found = search(url, "fjords of Bergen")
            assert found["index"] == 2 and found["hits"][0]["file"] == "bergen.md"
        finally:
            release.set()
            question.join(90)
        assert replies[0].status_code == 200 and replies[0].json()["index"] == 1  # its snapshot, to its end
        last = httpx.get(f"{url}/library").json()["last_update"]
        assert (last["added"], last["updated"], last["removed"]) == (["bergen.md"], [], [])


def test_removed_and_unreadable_files_by_polling_and_the_server_keeps_answering(serve, docs):
    lm = ProgramLM(answer=lambda prompt, n: {"answer": "Paris", "evidence_ids": ["c1"]})
    with serve(folder_options(docs, watch="poll", api_key=KEY), lm=lm.lm()) as (url, app):
        auth = {"Authorization": f"Bearer {KEY}"}
        assert app.state.service.library.watching == "poll"
        assert "guides/oslo.md" in files_of(search(url, "Oslofjord", headers=auth)["hits"])
        (docs / "guides" / "oslo.md").unlink()
        (docs / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is no PDF at all\n")
        (docs / "empty.md").write_text("", encoding="utf-8")
        wait_for(lambda: generation(url) == 2 and httpx.get(f"{url}/health").json()["library"]["unreadable"] == 2)
        assert "guides/oslo.md" not in files_of(search(url, "Oslofjord", headers=auth)["hits"])
        assert httpx.get(f"{url}/library").status_code == 401  # file names are behind the key
        health = httpx.get(f"{url}/health")
        assert health.json()["library"]["files"] == 2 and health.json()["library"]["unreadable"] == 2
        assert "paris.md" not in health.text and "broken.pdf" not in health.text
        reply = httpx.get(f"{url}/library", headers=auth)
        status = reply.json()
        assert status["files"] == ["paris.md", "rome.md"] and status["last_update"]["removed"] == ["guides/oslo.md"]
        assert {bad["file"] for bad in status["unreadable"]} == {"broken.pdf", "empty.md"}
        assert all(bad["reason"] for bad in status["unreadable"]) and status["error"] is None
        assert str(docs.parent) not in reply.text  # no absolute path reaches a client
        asked = httpx.post(f"{url}/ask", json={"question": "Capital of France?", "strategy": "basic"}, headers=auth,
                           timeout=30)
        assert asked.status_code == 200 and asked.json()["index"] == 2


def test_a_failed_sync_keeps_the_index_serving_and_says_why_until_one_succeeds(serve, docs, tmp_path):
    with serve(folder_options(docs, watch="poll"), lm=ProgramLM().lm()) as (url, app):
        docs.rename(tmp_path / "aside")
        docs.mkdir()  # no document left (gone a moment before): every sync of it fails
        status = wait_for(lambda: "the folder is empty" in ((s := httpx.get(f"{url}/library").json())["error"] or "") and s,
                          what="the failure")
        assert str(tmp_path) not in status["error"] and status["files_total"] == 3  # as the index still holds them
        assert httpx.get(f"{url}/health").json()["library"]["failed"] is True
        assert generation(url) == 1 and search(url, "river through Paris")["hits"][0]["file"] == "paris.md"
        docs.rmdir()
        (tmp_path / "aside").rename(docs)
        (docs / "bergen.md").write_text(BERGEN, encoding="utf-8")
        wait_for(lambda: generation(url) == 2)
        status = wait_for(lambda: (s := httpx.get(f"{url}/library").json())["error"] is None and s)
        assert status["files"] == ["bergen.md", "guides/oslo.md", "paris.md", "rome.md"]
        assert search(url, "fjords of Bergen")["hits"][0]["file"] == "bergen.md"


def test_post_reload_syncs_a_folder_the_server_does_not_watch(serve, docs):
    with serve(folder_options(docs, watch="off"), lm=ProgramLM().lm()) as (url, app):
        (docs / "bergen.md").write_text(BERGEN, encoding="utf-8")
        time.sleep(0.5)
        assert generation(url) == 1  # not watched
        reloaded = httpx.post(f"{url}/reload", timeout=60).json()
        assert reloaded["index"]["generation"] == 2
        assert search(url, "fjords of Bergen")["hits"][0]["file"] == "bergen.md"


def test_the_page_shows_the_library_and_file_names_as_text(serve, docs):
    from tests.serve.test_page_browser import rendered

    hostile = '<img src=x onerror="alert(1)">.md'
    (docs / hostile).write_text("# Odd\n\nA file with an odd name.\n", encoding="utf-8")
    (docs / "empty.md").write_text("", encoding="utf-8")
    with serve(folder_options(docs, watch="off"), lm=ProgramLM().lm()) as (url, _):
        dom = rendered(f"{url}/", "--dump-dom")
    assert '<section id="library">' in dom and "docs · 4 files · updated " in dom
    assert "&lt;img src=x onerror=\"alert(1)\"&gt;.md" in dom and "<img" not in dom  # a name is text
    assert "added " in dom and "left out: empty.md (file is empty)" in dom
    assert "<li>guides/oslo.md</li>" in dom and "4 files</summary>" in dom


# -- the watch ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["watchdog", "poll"])
def test_a_burst_of_writes_is_one_sync_and_what_is_no_document_wakes_nothing(tmp_path, mode):
    folder = write_folder(tmp_path / "docs").resolve()
    index = folder / "idx"
    index.mkdir()
    calls = []
    watch = FolderWatch(folder, lambda: calls.append(time.monotonic()), mode=mode, every=0.3, ignore=[index])
    assert watch.start() == mode
    try:
        for i in range(20):  # a copy of twenty files, a little apart: one sync once it is over
            (folder / f"copy-{i}.md").write_text(f"# Copy {i}\n\nText {i}.\n", encoding="utf-8")
            time.sleep(0.02)
        wait_for(lambda: calls, 10, "the sync")
        time.sleep(1.0)
        assert len(calls) == 1
        (folder / ".paris.md.swp").write_text("swap", encoding="utf-8")  # an editor's, a log, the index's own
        (folder / "notes.bin").write_bytes(b"\0\1")
        (index / "manifest.json").write_text("{}", encoding="utf-8")
        (folder / "paris.md").read_text(encoding="utf-8")  # reading is no change
        time.sleep(1.5)
        assert len(calls) == 1
        (folder / "paris.md").write_text(FILES["paris.md"] + "\nMore.\n", encoding="utf-8")
        wait_for(lambda: len(calls) == 2, 10, "the second sync")
    finally:
        watch.stop()


def test_without_watchdog_auto_polls_and_watchdog_asked_for_is_refused(tmp_path, monkeypatch):
    for name in ("watchdog", "watchdog.events", "watchdog.observers"):
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    folder = write_folder(tmp_path / "docs").resolve()
    calls = []
    watch = FolderWatch(folder, lambda: calls.append(1), every=0.1)
    assert watch.start() == "poll"
    try:
        (folder / "rome.md").unlink()
        wait_for(lambda: calls, 10, "the sync")
    finally:
        watch.stop()
    from ragnet.errors import InputError

    with pytest.raises(InputError, match="watchdog package") as caught:
        FolderWatch(folder, lambda: None, mode="watchdog").start()
    assert caught.value.argument == "watch"


def test_a_change_made_while_the_server_started_is_synced(tmp_path):
    folder = write_folder(tmp_path / "docs").resolve()
    library = Library(folder, tmp_path / "idx")
    library.open()
    (folder / "bergen.md").write_text(BERGEN, encoding="utf-8")  # after the first sync, before the watch
    synced = []
    watch = FolderWatch(folder, lambda: synced.append(library.sync()), mode="poll", every=0.1)
    watch.start(library.seen)
    try:
        wait_for(lambda: synced, 60, "the sync")
    finally:
        watch.stop()
    assert synced[0].added == 1 and library.status()["last_update"]["added"] == ["bergen.md"]


# -- the command ---------------------------------------------------------------------------------
def test_which_folder_and_index_serve_means(tmp_path, built):
    folder, index = built
    chosen = served_paths(folder, None)
    assert chosen.folder == folder.resolve() and chosen.index == cache_index(folder) and chosen.note == ""
    assert served_paths(folder, tmp_path / "mine").index == tmp_path / "mine"  # --index: the index is kept there
    as_index = served_paths(index, None)  # an index given as FOLDER is served as --index
    assert as_index.folder is None and as_index.index == index and "serving it as --index" in as_index.note
    assert served_paths(None, index) == served_paths(None, index) and served_paths(None, index).folder is None
    assert cache_index(folder) != cache_index(tmp_path / "docs")  # same name, another folder: another index


@pytest.mark.parametrize("args, message", [
    ([], "error: argument 'folder': give a folder of documents to serve"),
    (["{tmp}/nothing-here"], "nothing-here: no such folder"),
    (["{index}", "--index", "{tmp}/other"], "is a ragnet index, not documents; serve it with --index alone"),
    (["{folder}", "--watch", "sometimes"], "error: argument 'watch': choose one of auto, watchdog, poll, off"),
    (["{folder}", "--watch-every", "0"], "error: argument 'watch-every': must be a number of at least 0.01"),
])
def test_serve_refuses_bad_folders_and_watch_options_in_one_line(built, ragnet_home, tmp_path, args, message):
    folder, index = built
    given = [a.format(tmp=tmp_path, index=index, folder=folder) for a in args]
    result = CliRunner().invoke(cli, ["serve", *given, "--port", str(free_port())])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and message in result.output


def test_ragnet_serve_folder_as_a_process(tmp_path):
    folder = write_folder(tmp_path / "manuals")
    home, port = tmp_path / "home", free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ragnet", "serve", str(folder), "--port", str(port), "--watch",
                             "poll", "--watch-every", "0.2", "--lm", "openai/unused", "--api-base",
                             "http://127.0.0.1:9/v1", "--answer-lm", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "RAGNET_HOME": str(home)})
    url = f"http://127.0.0.1:{port}"
    try:
        def up():
            if proc.poll() is not None:
                raise AssertionError(f"ragnet serve exited {proc.returncode}: {proc.stdout.read()}")
            try:
                return httpx.get(f"{url}/health", timeout=2).json()
            except httpx.HTTPError:
                return None

        health = wait_for(up, 240, "the server")
        assert health["library"]["files"] == 3 and health["library"]["watch"] == "poll"
        assert [p.name.startswith("manuals-") for p in (home / "served").iterdir()] == [True]
        (folder / "bergen.md").write_text(BERGEN, encoding="utf-8")
        wait_for(lambda: generation(url) == 2, 120)
        assert search(url, "fjords of Bergen")["hits"][0]["file"] == "bergen.md"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert "ragnet serve: indexing " in out and f"folder {folder.resolve()}" in out
    assert "+1 file, ~0 changed, -0 removed (3 unchanged)" in out and "Traceback" not in out
