"""``GET /files/<path as indexed>`` and the links citations give to it (issue 75, item 2): a real
index of a real PDF, HTML, Markdown and DOCX folder, real servers on 127.0.0.1, scripted LMs for
control flow only. Only indexed files are sent, by their indexed path, as indexed, behind the key
or a link's token; a hostile HTML manual is sent sandboxed; every citation links to its place."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import time
from urllib.parse import urlsplit

import httpx
import pytest

from ragnet.serve import ServeOptions
from tests.programs.scripted import ProgramLM
from tests.serve.conftest import HOSTILE_HTML, PDF, SECRET

KEY = "files-test-key-0123"
AUTH = {"Authorization": f"Bearer {KEY}"}


def options(manuals, docs=None, **kw) -> ServeOptions:
    return ServeOptions(index=manuals.index, reload_every=0, timeout=30,
                        docs=(manuals.docs if docs is None else docs,), **kw)


def hospitals(prompt, n):
    return {"answer": "30 million", "evidence_ids": ["c1"]}


def raw_get(url: str, path: str, headers: dict | None = None) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (httpx would normalise ``..`` away before sending)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def test_a_pdf_is_sent_as_a_pdf_at_its_indexed_path_and_ranges_work(serve, manuals):
    data = (manuals.docs / PDF).read_bytes()
    with serve(options(manuals), lm=ProgramLM().lm()) as (url, _):
        whole = httpx.get(f"{url}/files/guide/budget%20plan.pdf")
        part = httpx.get(f"{url}/files/guide/budget%20plan.pdf", headers={"Range": "bytes=0-7"})
        head = httpx.head(f"{url}/files/guide/budget%20plan.pdf")
        notes = httpx.get(f"{url}/files/notes.md")
        docx = httpx.get(f"{url}/files/handbook.docx")
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["content-type"] == "application/pdf" and whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["content-disposition"].startswith("inline")  # shown by the browser's viewer, not saved
    assert whole.headers["x-content-type-options"] == "nosniff"
    assert part.status_code == 206 and part.content == data[:8] == b"%PDF-1.3"
    assert part.headers["content-range"] == f"bytes 0-7/{len(data)}"
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) == len(data)
    assert notes.headers["content-type"] == "text/plain; charset=utf-8" and "The Seine" in notes.text
    assert docx.headers["content-type"] == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert docx.headers["content-disposition"].startswith("attachment") and docx.content[:2] == b"PK"


@pytest.mark.parametrize("path", [
    "/files/later.md",  # in the folder, written after indexing
    "/files/secret.md", "/files/nowhere.pdf", "/files/", "/files/guide",  # not indexed, a folder
    "/files/../secret.md", "/files/guide/../../secret.md", "/files/%2e%2e/secret.md", "/files/..%2fsecret.md",
    "/files/%2E%2E%2Fsecret.md", "/files/%252e%252e/secret.md",  # percent-encoded, twice
    "/files//etc/passwd", "/files/%2Fetc%2Fpasswd", "/files/C:%5Cwindows%5Cwin.ini", "/files/guide/./../notes.md",
])
def test_only_indexed_files_are_sent_and_no_path_leaves_the_folder(serve, manuals, path):
    with serve(options(manuals), lm=ProgramLM().lm()) as (url, _):
        status, body = raw_get(url, path)
    assert status == 404, body
    error = json.loads(body)["error"]
    assert error["code"] == "file_not_found" and SECRET.encode() not in body
    assert "root:" not in body.decode()


def test_a_symbolic_link_out_of_the_folder_is_not_followed(serve, manuals, tmp_path):
    docs = shutil.copytree(manuals.docs, tmp_path / "docs")
    outside = tmp_path / "outside.md"
    shutil.copy(docs / "notes.md", outside)  # the very bytes indexed: only the link's way out refuses it
    (docs / "notes.md").unlink()
    os.symlink(outside, docs / "notes.md")
    with serve(options(manuals, docs=docs), lm=ProgramLM().lm()) as (url, _):
        escaped = httpx.get(f"{url}/files/notes.md")
        os.symlink(docs / "handbook.docx", docs / "inside.docx")  # a link within the folder is fine, but unindexed
        inside = httpx.get(f"{url}/files/inside.docx")
    assert escaped.status_code == 404 and escaped.json()["error"]["code"] == "file_not_found"
    assert "leads out of the served folders" in escaped.json()["error"]["message"]
    assert "Seine" not in escaped.text and inside.status_code == 404


def test_a_file_changed_or_gone_since_indexing_is_410_naming_it(serve, manuals, tmp_path):
    docs = shutil.copytree(manuals.docs, tmp_path / "docs")
    with serve(options(manuals, docs=docs), lm=ProgramLM().lm()) as (url, _):
        assert httpx.get(f"{url}/files/notes.md").status_code == 200
        (docs / "notes.md").write_text("# Notes\n\nRewritten since.\n")
        changed = httpx.get(f"{url}/files/notes.md")
        (docs / "handbook.docx").unlink()
        gone = httpx.get(f"{url}/files/handbook.docx")
    assert changed.status_code == 410 and changed.json()["error"]["code"] == "file_changed"
    assert "'notes.md' changed since it was indexed" in changed.json()["error"]["message"]
    assert "Rewritten" not in changed.text
    assert gone.status_code == 410 and gone.json()["error"]["code"] == "file_gone"
    assert "'handbook.docx' is indexed but no longer" in gone.json()["error"]["message"]


def test_a_server_without_docs_sends_no_file_and_links_none(serve, manuals):
    plain = ServeOptions(index=manuals.index, reload_every=0, timeout=30)
    with serve(plain, lm=ProgramLM(answer=hospitals).lm()) as (url, _):
        refused = httpx.get(f"{url}/files/notes.md")
        asked = httpx.post(f"{url}/ask", json={"question": "How much did hospitals receive?", "strategy": "basic"},
                           timeout=30).json()
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "files_not_served"
    assert "--docs" in refused.json()["error"]["message"]
    assert asked["citations"] and all("url" not in c for c in asked["citations"])


def test_files_are_behind_the_key_and_a_link_token_opens_its_file_alone(serve, manuals):
    from ragnet.serve.links import LinkSigner

    question = {"question": "How much did hospitals receive?", "strategy": "basic"}
    with serve(options(manuals, api_key=KEY), lm=ProgramLM(answer=hospitals).lm()) as (url, _):
        bare = httpx.get(f"{url}/files/notes.md")
        keyed = httpx.get(f"{url}/files/notes.md", headers=AUTH)
        link = httpx.post(f"{url}/ask", json=question, headers=AUTH, timeout=30).json()["citations"][0]["url"]
        path, _, token = link.split("#")[0].partition("?t=")
        by_link = httpx.get(url + link)  # as a browser follows it: no Authorization header
        ranged = httpx.get(url + link, headers={"Range": "bytes=0-3"})
        elsewhere = httpx.get(f"{url}/files/notes.md?t={token}")
        not_ask = httpx.post(f"{url}/ask?t={token}", json=question)
        forged = httpx.get(f"{url}{path}?t={token.split('.')[0]}.{'A' * 43}")
        expired = httpx.get(f"{url}{path}", params={"t": LinkSigner(KEY).token(PDF, now=time.time() - 7200)})
        other_key = httpx.get(f"{url}{path}", params={"t": LinkSigner("another-key-0123").token(PDF)})
    assert bare.status_code == 401 and bare.json()["error"]["code"] == "invalid_api_key"
    assert keyed.status_code == 200
    assert path == "/files/guide/budget%20plan.pdf" and KEY not in link
    assert by_link.status_code == 200 and by_link.headers["content-type"] == "application/pdf"
    assert ranged.status_code == 206 and ranged.content == b"%PDF"
    assert elsewhere.status_code == 403 and elsewhere.json()["error"]["code"] == "invalid_file_link"
    assert not_ask.status_code == 401  # a token opens its file, not the API
    assert forged.status_code == 403 and other_key.status_code == 403
    assert expired.status_code == 401 and expired.json()["error"]["code"] == "file_link_expired"
    assert "ask again" in expired.json()["error"]["message"]


def test_a_hostile_html_manual_is_sent_sandboxed_never_as_a_page_of_the_server(serve, manuals):
    with serve(options(manuals), lm=ProgramLM().lm()) as (url, _):
        reply = httpx.get(f"{url}/files/pump.html")
    assert reply.status_code == 200 and reply.text == HOSTILE_HTML  # the manual as it is, its script inert
    assert reply.headers["content-type"] == "text/html"  # its own <meta charset> decides, as from disk
    policy = [d.strip() for d in reply.headers["content-security-policy"].split(";")]
    assert policy[0] == "sandbox"  # no allow-scripts, no allow-same-origin: no script, an opaque origin
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert not any("allow-" in d or "script-src" in d or "connect-src" in d for d in policy)
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["referrer-policy"] == "no-referrer"


def test_citations_link_to_their_page_or_sentence_in_ask_chat_and_search(serve, manuals):
    question = "How much did hospitals receive?"
    chat = {"model": "ragnet-basic", "messages": [{"role": "user", "content": question}]}
    with serve(options(manuals), lm=ProgramLM(answer=hospitals).lm()) as (url, _):
        asked = httpx.post(f"{url}/ask", json={"question": question, "strategy": "basic"}, timeout=30).json()
        completed = httpx.post(f"{url}/v1/chat/completions", json=chat, timeout=30).json()
        streamed = httpx.post(f"{url}/v1/chat/completions", json={**chat, "stream": True}, timeout=30)
        found = httpx.get(f"{url}/search", params={"q": "Seine river Paris", "k": 1}).json()
        opened = httpx.get(url + asked["citations"][0]["url"])
    link = "/files/guide/budget%20plan.pdf#page=2"  # "Hospitals received 30 million" starts on page 2
    cite = asked["citations"][0]
    assert (cite["file"], cite["page"], cite["url"]) == (PDF, 2, link)
    assert opened.status_code == 200 and opened.content == (manuals.docs / PDF).read_bytes()
    assert completed["citations"][0]["url"] == link
    assert completed["choices"][0]["message"]["content"].endswith(f"[1] {cite['source']} — {link}")
    events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")]
    assert events[-1]["citations"][0]["url"] == link
    assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events).endswith(f" — {link}")
    hit = found["hits"][0]
    assert hit["file"] == "notes.md" and hit["url"].startswith("/files/notes.md#:~:text=")


def test_a_text_citation_links_to_its_quoted_sentence(serve, manuals):
    seine = lambda prompt, n: {"answer": "the Seine", "evidence_ids": ["c1"]}  # noqa: E731
    with serve(options(manuals), lm=ProgramLM(answer=seine).lm()) as (url, _):
        asked = httpx.post(f"{url}/ask", json={"question": "Which river runs through Paris?", "strategy": "basic",
                                               "only": ["notes.md"]}, timeout=30).json()
    cite = asked["citations"][0]
    assert cite["sentences"][0].endswith("The Seine runs through Paris.")  # its headings come before it
    assert cite["url"] == "/files/notes.md#:~:text=The%20Seine%20runs%20through%20Paris."


def test_a_python_built_index_serves_the_files_its_chunks_name(serve, serve_index, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paris.md").write_text("Paris is the capital of France.")
    (docs / "lisbon.md").write_text("Not indexed.")
    with serve(ServeOptions(index=serve_index.path, reload_every=0, docs=docs), lm=ProgramLM().lm()) as (url, _):
        paris = httpx.get(f"{url}/files/paris.md")
        lisbon = httpx.get(f"{url}/files/lisbon.md")
        rome = httpx.get(f"{url}/files/rome.md")  # indexed, not in the folder
    assert paris.status_code == 200 and paris.text == "Paris is the capital of France."  # no hash recorded: as it is
    assert lisbon.status_code == 404 and rome.status_code == 410


def test_a_link_token_never_reaches_a_log_line(manuals, dspy_state, capfd):
    from ragnet.serve import create_app
    from tests.serve.conftest import running

    app = create_app(options(manuals, api_key=KEY), lm=ProgramLM(answer=hospitals).lm())
    with running(app, log_level="info") as url:  # uvicorn's own access lines, as `--log-level info` prints them
        link = httpx.post(f"{url}/ask", json={"question": "How much did hospitals receive?", "strategy": "basic"},
                          headers=AUTH, timeout=30).json()["citations"][0]["url"]
        assert httpx.get(url + link).status_code == 200
    token = link.split("?t=")[1].split("#")[0]
    logged = capfd.readouterr()
    assert "GET /files/guide/budget%20plan.pdf?t=*** HTTP/1.1" in logged.out + logged.err
    assert token not in logged.out + logged.err and KEY not in logged.out + logged.err


def test_docs_must_be_folders():
    from ragnet.errors import InputError

    with pytest.raises(InputError, match="argument 'docs': must be the folder the index was built from"):
        ServeOptions(index="idx", docs=("/no/such/folder",))
