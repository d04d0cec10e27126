"""The page ``GET /`` serves: a chat over the documents. Ask, read the answer as the reader writes
it, open the sources at their place, ask a follow-up, mark an answer right or wrong and pick the
line that states it (the script: :mod:`ragnet.serve.page_script`).

The HTML is fixed text: nothing a document, a question or an LM wrote is ever put into it by the
server. The Library section (``ragnet serve FOLDER``) shows the folder's files, the last update
and what it changed, from ``GET /library``. ``/?q=QUESTION`` (and ``&strategy=SPEC``,
``&only=FILES``, comma-separated) asks on load:
a link to an answer; the Files field asks some files alone (the chat request's ``ragnet.only``).
The script (``/static/app.js``) builds the conversation with ``textContent`` and
``createElement`` only (no ``innerHTML``, ``insertAdjacentHTML``, ``document.write`` or
``eval``), so a passage holding ``<script>`` or ``<img onerror=...>`` shows as the text it is (a
citation's place is a link, its ``href`` set as a property and only to a ``/files/`` path the
server gave, :mod:`ragnet.serve.files`); the page is sent with a Content-Security-Policy that
allows only its own script and style files (no inline script or style, no other origin), as a
second wall. That is the guarantee ``report.html`` gives by rendering through autoescaped
templates with no ``Markup``. The page is a ``<main>`` of ``<section>`` blocks (the conversation)
and the question form at its foot, so another block is one more section.

Example:
    >>> "innerHTML" in SCRIPT or "eval(" in SCRIPT
    False
    >>> "<script src=\\"/static/app.js\\"" in PAGE
    True
"""

from __future__ import annotations

from ragnet.serve.page_script import SCRIPT

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
<header>
<div><h1>ragnet</h1>
<p class="sub" id="index-line">Question answering over your documents.</p></div>
<button type="button" id="new" class="quiet" disabled>New conversation</button>
</header>
<section id="library" hidden>
<h2>Library</h2>
<p class="usage" id="library-line"></p>
<ul id="library-changes"></ul>
<details><summary id="library-count">Files</summary><ul id="library-files"></ul></details>
</section>
<section id="chat" aria-label="Conversation">
<p class="sub" id="empty">Ask a question about the documents; ask a follow-up and the conversation is kept.
Mark an answer right or wrong and pick the line that states it: marks go to feedback.jsonl in the index folder.</p>
<ol id="turns" aria-live="polite"></ol>
</section>
<form id="ask">
<textarea id="question" rows="2" placeholder="Ask a question (Enter sends, Shift+Enter is a new line)" required></textarea>
<div class="row">
<label>Strategy <select id="strategy"><option value="auto">auto</option></select></label>
<label>Files <input id="only" placeholder="all (or guide.pdf, gnu/*)" autocomplete="off"></label>
<label id="key-label" hidden>API key <input id="key" type="password" autocomplete="off"></label>
<button type="submit" id="go">Ask</button>
<button type="button" id="stop" class="quiet" hidden>Stop</button>
<span id="status" role="status"></span>
</div>
</form>
</main>
<script src="/static/app.js" defer></script>
</body>
</html>
"""

STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f7f7f5; color: #1d1d1b; }
main { max-width: 52rem; margin: 0 auto; padding: 1.5rem 1rem 0; min-height: 100vh; display: flex; flex-direction: column; }
header { display: flex; justify-content: space-between; align-items: flex-start; gap: 1rem; }
h1 { margin: 0; }
section { flex: 1; }
.sub, .usage, .where, .standalone, small { color: #5b5b57; font-size: .9rem; }
textarea, input, select { font: inherit; padding: .35rem .5rem; border: 1px solid #bbb; border-radius: 6px; background: #fff; }
textarea { width: 100%; box-sizing: border-box; padding: .6rem; resize: vertical; }
.row { display: flex; gap: 1rem; align-items: center; margin-top: .5rem; flex-wrap: wrap; }
button { font: inherit; padding: .4rem 1.2rem; border-radius: 6px; border: 0; background: #28536b; color: #fff; cursor: pointer; }
button:disabled { background: #8aa; cursor: default; }
button.quiet { background: #fff; color: #28536b; border: 1px solid #9bb4c2; padding: .25rem .9rem; }
button.quiet:disabled { color: #9aa; border-color: #ccd; }
#ask { position: sticky; bottom: 0; background: #f7f7f5; padding: .8rem 0 1rem; border-top: 1px solid #e2e2dc; }
#turns { list-style: none; padding: 0; margin: 1rem 0; }
.turn { margin: 0 0 1.6rem; }
.question { background: #28536b; color: #fff; padding: .5rem .8rem; border-radius: 10px 10px 2px 10px; margin: 0 0 .4rem auto; width: fit-content; max-width: 85%; white-space: pre-wrap; }
.standalone { text-align: right; margin: -.2rem 0 .4rem; font-style: italic; }
.answer { font-size: 1.1rem; white-space: pre-wrap; background: #fff; padding: .7rem .9rem; border-radius: 10px 10px 10px 2px; min-height: 1.5em; }
.answer.streaming::after { content: "▍"; color: #28536b; }
.usage { margin: .3rem 0; }
.sources { padding-left: 1.4rem; margin: .3rem 0; }
.sources li { background: #fff; margin: .4rem 0; padding: .4rem .7rem; border-radius: 6px; font-size: .95rem; }
.where { display: block; }
blockquote { margin: .3rem 0 0; padding-left: .7rem; border-left: 3px solid #c8d6de; white-space: pre-wrap; }
.mark { display: flex; gap: .6rem; align-items: center; flex-wrap: wrap; margin: .4rem 0; font-size: .95rem; }
.saved { color: #2d6a3e; } .warning { color: #8a5a00; }
.mark-form { background: #fff; border: 1px solid #d6dfe4; border-radius: 8px; padding: .6rem .8rem; margin: .4rem 0; }
.mark-form .kind { margin: 0 0 .4rem; font-weight: 600; }
.field { display: block; margin-bottom: .5rem; } .field input { width: 60%; }
.lines { border: 0; padding: 0; margin: 0 0 .6rem; }
.lines legend { font-weight: 600; padding: 0; margin-bottom: .2rem; }
.line { display: flex; gap: .5rem; align-items: baseline; margin: .2rem 0; cursor: pointer; }
.line small { margin-left: auto; white-space: nowrap; padding-left: .5rem; }
.paste { margin: 0 0 .3rem 1.6rem; display: flex; flex-direction: column; gap: .3rem; }
.elsewhere { display: flex; gap: .5rem; } .elsewhere input[name=page] { width: 6rem; }
.mark-form button { margin-right: .5rem; }
.error, .form-status.error { color: #a02020; }
[hidden] { display: none !important; }
#library { flex: 0; } #library ul { margin: .3rem 0; padding-left: 1.2rem; } #library summary { cursor: pointer; color: #5b5b57; }
"""
