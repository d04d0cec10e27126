"""The page ``GET /`` serves: ask a question, read the answer and the passages it cites.

The HTML is fixed text: nothing a document, a question or an LM wrote is ever put into it by the
server. The Library section (``ragnet serve FOLDER``) shows the folder's files, the last update and what it changed, from ``GET /library``. ``/?q=QUESTION`` (and ``&strategy=SPEC``, ``&only=FILES``, comma-separated) asks on load: a link to an answer; the Files field asks some files alone (``/ask``'s ``only``). The script (``/static/app.js``) builds the answer with ``textContent`` and
``createElement`` only (no ``innerHTML``, ``insertAdjacentHTML``, ``document.write`` or
``eval``), so a passage holding ``<script>`` or ``<img onerror=...>`` shows as the text it is (a
citation's place is a link, its ``href`` set as a property and only to a ``/files/`` path the
server gave, :mod:`ragnet.serve.files`); the
page is sent with a Content-Security-Policy that allows only its own script and style files
(no inline script, no other origin), as a second wall. That is the guarantee ``report.html``
gives by rendering through autoescaped templates with no ``Markup``.

Example:
    >>> "innerHTML" in SCRIPT or "eval(" in SCRIPT
    False
    >>> "<script src=\\"/static/app.js\\"" in PAGE
    True
"""

from __future__ import annotations

import json

from ragnet.signatures.answer_confidence import LOW_CONFIDENCE, LOW_NOTE

__all__ = ["CSP", "PAGE", "SCRIPT", "STYLE"]

#: Only the page's own files; no inline script or style, no framing, no other origin.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ragnet</title>
<link rel="stylesheet" href="/static/style.css">
</head>
<body>
<main>
<h1>ragnet</h1>
<p class="sub" id="index-line">Question answering over your documents.</p>
<form id="ask">
<textarea id="question" rows="3" placeholder="Ask a question about the documents" required></textarea>
<div class="row">
<label>Strategy <select id="strategy"><option value="auto">auto</option></select></label>
<label>Files <input id="only" placeholder="all (or guide.pdf, gnu/*)" autocomplete="off"></label>
<label id="key-label" hidden>API key <input id="key" type="password" autocomplete="off"></label>
<button type="submit" id="go">Ask</button>
<span id="status" role="status"></span>
</div>
</form>
<section id="result" hidden>
<h2>Answer</h2>
<p id="answer"></p>
<h2>Sources</h2>
<ol id="sources"></ol>
<p class="usage" id="usage"></p>
</section>
<section id="library" hidden>
<h2>Library</h2>
<p class="usage" id="library-line"></p>
<ul id="library-changes"></ul>
<details><summary id="library-count">Files</summary><ul id="library-files"></ul></details>
</section>
</main>
<script src="/static/app.js" defer></script>
</body>
</html>
"""

STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f7f7f5; color: #1d1d1b; }
main { max-width: 52rem; margin: 2rem auto; padding: 0 1rem; }
h1 { margin: 0; } h2 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
.sub, .usage, .where { color: #5b5b57; font-size: .9rem; }
textarea { width: 100%; box-sizing: border-box; font: inherit; padding: .6rem; border: 1px solid #bbb; border-radius: 6px; }
.row { display: flex; gap: 1rem; align-items: center; margin-top: .5rem; flex-wrap: wrap; }
button { font: inherit; padding: .4rem 1.2rem; border-radius: 6px; border: 0; background: #28536b; color: #fff; cursor: pointer; }
button:disabled { background: #8aa; cursor: wait; }
#answer { font-size: 1.15rem; white-space: pre-wrap; background: #fff; padding: .8rem; border-radius: 6px; }
#sources li { background: #fff; margin: .5rem 0; padding: .6rem .8rem; border-radius: 6px; }
.where { display: block; }
blockquote { margin: .4rem 0 0; padding-left: .7rem; border-left: 3px solid #c8d6de; white-space: pre-wrap; }
.error { color: #a02020; }
#library ul { margin: .3rem 0; padding-left: 1.2rem; } #library summary { cursor: pointer; color: #5b5b57; }
"""

SCRIPT = r"""
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const text = (tag, value, cls) => {
    const el = document.createElement(tag);
    el.textContent = value == null ? "" : String(value);
    if (cls) el.className = cls;
    return el;
  };
  const headers = () => {
    const h = {"Content-Type": "application/json"};
    const key = $("key").value;
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  };
  fetch("/health").then((r) => r.json()).then((info) => {
    if (info.auth) $("key-label").hidden = false;
    if (info.index) $("index-line").textContent =
      info.index.chunks + " passages of " + info.index.documents + " documents, answered by strategy " + info.strategy;
    for (const name of info.strategies || []) {
      if (name === "auto") continue;
      const option = document.createElement("option");
      option.value = name; option.textContent = name;
      $("strategy").appendChild(option);
    }
  }).catch(() => {});
  // the served folder (ragnet serve FOLDER): its files, the last update and what it changed (GET /library)
  const when = (iso) => iso ? new Date(iso).toLocaleString() : "not yet";
  async function library() {
    let reply = null, lib = null;
    try {
      reply = await fetch("/library", {headers: headers()});
      if (reply.ok) lib = await reply.json();
    } catch (err) { return; }
    $("library").hidden = false;
    $("library-changes").replaceChildren();
    $("library-files").replaceChildren();
    if (!lib || !lib.folder) {
      $("library-line").textContent = reply.status === 401 ? "Give the API key to see the folder's files." : "";
      $("library").hidden = reply.status !== 401;
      return;
    }
    $("library-line").textContent = lib.folder + " · " + lib.files_total + " files · updated " + when(lib.updated_at) +
      (lib.syncing ? " · updating…" : "") + (lib.watch && lib.watch !== "off" ? " · watched (" + lib.watch + ")" : "");
    const changes = $("library-changes"), last = lib.last_update;
    for (const kind of ["added", "updated", "removed"]) {
      const names = last ? last[kind] : [];
      if (names.length) changes.appendChild(text("li", kind + " " + when(last.at) + ": " + names.join(", ")));
    }
    for (const bad of lib.unreadable || []) changes.appendChild(text("li", "left out: " + bad.file + " (" + bad.reason + ")", "error"));
    if (lib.error) changes.appendChild(text("li", "the last update failed: " + lib.error, "error"));
    const shown = lib.files.length < lib.files_total ? " (the first " + lib.files.length + ")" : "";
    $("library-count").textContent = lib.files_total + " files" + shown;
    $("library-files").replaceChildren(...lib.files.map((name) => text("li", name)));
  }
  fetch("/health").then((r) => r.json()).then((info) => {
    if (!info.library) return;  // an index served as it is: no folder to show
    library();
    setInterval(library, 5000);
    $("key").addEventListener("change", library);
  }).catch(() => {});
  $("ask").addEventListener("submit", (event) => { event.preventDefault(); ask(); });
  const given = new URLSearchParams(window.location.search);  // /?q=...&strategy=...&only=...: a link that asks
  if (given.get("q")) {
    $("question").value = given.get("q");
    if (given.get("only")) $("only").value = given.get("only");
    if (given.get("strategy")) {
      const option = document.createElement("option");
      option.value = given.get("strategy"); option.textContent = given.get("strategy");
      $("strategy").appendChild(option);
      $("strategy").value = given.get("strategy");
    }
    ask();
  }
  async function ask() {
    const question = $("question").value.trim();
    if (!question) return;
    $("go").disabled = true;
    $("status").className = "";
    $("status").textContent = "answering…";
    try {
      const request = {question: question, strategy: $("strategy").value};
      const only = $("only").value.split(",").map((p) => p.trim()).filter((p) => p);  // the files asked
      if (only.length) request.only = only;
      const reply = await fetch("/ask", {method: "POST", headers: headers(), body: JSON.stringify(request)});
      const body = await reply.json();
      if (!reply.ok) throw new Error((body.error && body.error.message) || ("HTTP " + reply.status));
      show(body);
      $("status").textContent = "";
    } catch (err) {
      $("status").className = "error";
      $("status").textContent = err.message;
    } finally {
      $("go").disabled = false;
    }
  }
  function show(body) {
    $("answer").textContent = body.answer;
    const list = $("sources");
    list.replaceChildren();
    for (const cite of body.citations || []) {
      const item = document.createElement("li");
      item.appendChild(text("strong", cite.title || cite.doc_id));
      const url = typeof cite.url === "string" && cite.url.startsWith("/files/") ? cite.url : null;
      const where = text(url ? "a" : "span", cite.source || cite.id, "where");
      if (url) {  // opens the file at the cited page or sentence; the link's own token, never the key
        where.href = url; where.target = "_blank"; where.rel = "noopener noreferrer";
      }
      item.appendChild(where);
      for (const sentence of cite.sentences || []) item.appendChild(text("blockquote", sentence));
      list.appendChild(item);
    }
    if (!list.children.length) list.appendChild(text("li", "The answer cites no passage."));
    const u = body.usage || {};
    const sure = body.confidence != null ? "confidence " + body.confidence.toFixed(2) + " · " : "";
    const low = body.confidence != null && body.confidence < LOW_CONFIDENCE ? LOW_NOTE + " · " : "";
    $("usage").textContent = sure + low + body.strategy + " · " + (u.lm_calls || 0) + " LM calls · " +
      (u.seconds != null ? u.seconds.toFixed(1) + " s" : "");
    $("result").hidden = false;
  }
})();
""".replace("LOW_CONFIDENCE", repr(LOW_CONFIDENCE)).replace("LOW_NOTE", json.dumps(LOW_NOTE))
