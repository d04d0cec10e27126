"""The script of the page at ``/`` (``/static/app.js``): a chat over the documents.

It keeps the conversation (in the tab's ``sessionStorage``, so a reload keeps it; the API key is
never stored), asks ``POST /v1/chat/completions`` with ``stream: true`` and the whole conversation
as ``messages`` (a follow-up is made standalone by the server, which says so in the last chunk's
``ragnet.standalone_question``), reads the server-sent events off ``fetch``'s stream and shows the
reader's tokens as they come, then the sources as links to their place in their files. Under each
answer a person marks it right or wrong, picks the line that states the right answer among the
cited sentences (or pastes one, from a cited file or another), and the mark goes to
``POST /feedback`` (:mod:`ragnet.serve.feedback`).

Everything a document, a question or an LM wrote is set with ``textContent`` on elements made with
``createElement``; the one link target set is a citation's ``url``, as a property and only when it
is a ``/files/`` path (:mod:`ragnet.serve.page` says why).

Example:
    >>> "innerHTML" in SCRIPT or "eval(" in SCRIPT, SCRIPT.count("href")
    (False, 1)
"""

from __future__ import annotations

import json

from ragnet.signatures.answer_confidence import LOW_CONFIDENCE, LOW_NOTE

__all__ = ["SCRIPT"]

SCRIPT = r"""
"use strict";
(function () {
  const STORE = "ragnet.chat";   // the conversation, in this tab's sessionStorage
  const SENT_TURNS = 20;         // the earlier turns a follow-up is sent with
  const SOURCES = "\n\nSources:\n";
  const $ = (id) => document.getElementById(id);
  const text = (tag, value, cls) => {
    const el = document.createElement(tag);
    el.textContent = value == null ? "" : String(value);
    if (cls) el.className = cls;
    return el;
  };
  const button = (label, cls, onclick) => {
    const el = text("button", label, cls);
    el.type = "button";
    el.addEventListener("click", onclick);
    return el;
  };
  const same = (a, b) => String(a || "").trim().toLowerCase() === String(b || "").trim().toLowerCase();
  let turns = [];
  let running = null;  // the AbortController of the answer under way

  function headers() {
    const h = {"Content-Type": "application/json"};
    const key = $("key").value;
    if (key) h["Authorization"] = "Bearer " + key;
    return h;
  }
  function save() {
    try { sessionStorage.setItem(STORE, JSON.stringify(turns)); } catch (err) { /* full or off: kept in memory */ }
  }
  function restore() {
    try {
      const kept = JSON.parse(sessionStorage.getItem(STORE) || "[]");
      turns = Array.isArray(kept) ? kept.filter((t) => t && typeof t.question === "string") : [];
    } catch (err) { turns = []; }
    for (const turn of turns) {
      if (!turn.done && !turn.error) turn.error = "interrupted: the page was left before the answer ended";
      turn.marking = null;
      delete turn.streaming;
    }
  }

  // -- asking ---------------------------------------------------------------------------------
  function model() {
    const spec = $("strategy").value;
    return spec === "auto" ? "ragnet-auto" : "ragnet-" + spec;
  }
  function messages(question) {
    const out = [];
    for (const turn of turns.filter((t) => t.done).slice(-SENT_TURNS)) {
      out.push({role: "user", content: turn.question}, {role: "assistant", content: turn.answer});
    }
    out.push({role: "user", content: question});
    return out;
  }
  function failure(body, status) {
    return (body && body.error && body.error.message) || ("HTTP " + status);
  }
  async function ask(question) {
    question = question.trim();
    if (!question || running) return;
    const request = {model: model(), stream: true, messages: messages(question)};
    const only = $("only").value.split(",").map((p) => p.trim()).filter((p) => p);  // the files asked
    if (only.length) request.ragnet = {only: only};
    const turn = {question: question, answer: "", citations: [], strategy: $("strategy").value, streaming: true};
    turns.push(turn);
    $("question").value = "";
    $("turns").appendChild(turnView(turn, turns.length - 1));  // the other turns as they are (a mark form open)
    drawn();
    const paint = () => {  // the turn's element now: marking another turn meanwhile draws the list anew
      const item = $("turns").children[turns.indexOf(turn)];
      if (!item) return;  // a new conversation was started
      const following = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
      item.querySelector(".answer").textContent = turn.answer;
      if (following) item.scrollIntoView({block: "end"});
    };
    running = new AbortController();
    busy(true);
    const started = performance.now();
    let raw = "";
    try {
      const reply = await fetch("/v1/chat/completions", {method: "POST", headers: headers(),
                                                         body: JSON.stringify(request), signal: running.signal});
      if (!reply.ok) throw new Error(failure(await reply.json().catch(() => null), reply.status));
      await events(reply, (data) => {
        if (data.error) throw new Error(data.error.message || "the answer failed");
        const choice = (data.choices || [])[0] || {};
        if (choice.delta && choice.delta.content) {
          raw += choice.delta.content;
          const cut = raw.indexOf(SOURCES);  // the Sources list the message ends with: shown as links below
          turn.answer = cut >= 0 ? raw.slice(0, cut) : raw;
          paint();
        }
        if (choice.finish_reason) finish(turn, data, raw);
      });
      if (!turn.done) throw new Error("the answer stopped before its end");
      turn.seconds = (performance.now() - started) / 1000;
    } catch (err) {
      turn.error = err.name === "AbortError" ? "stopped" : err.message;
    } finally {
      delete turn.streaming;
      running = null;
      busy(false);
      save();
      redraw(turn);
      $("question").focus();
    }
  }
  function finish(turn, data, raw) {
    const about = data.ragnet || {};
    const cut = raw.indexOf(SOURCES);
    turn.answer = typeof about.answer === "string" ? about.answer : (cut >= 0 ? raw.slice(0, cut) : raw);
    turn.citations = Array.isArray(data.citations) ? data.citations : [];
    turn.standalone = about.standalone_question || null;
    turn.strategy = about.strategy || turn.strategy;
    turn.confidence = typeof about.confidence === "number" ? about.confidence : null;
    turn.done = true;
  }
  async function events(reply, each) {  // the server-sent events of a fetch, as they arrive
    const reader = reply.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const {value, done} = await reader.read();
        buffer = (buffer + decoder.decode(value || new Uint8Array(), {stream: !done})).replace(/\r\n/g, "\n");
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
          if (!data) continue;  // a comment: still answering
          if (data === "[DONE]") return;
          each(JSON.parse(data));
        }
        if (done) return;
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
  function busy(on) {
    $("go").disabled = on;
    $("stop").hidden = !on;
    $("status").className = "";
    $("status").textContent = on ? "answering…" : "";
  }

  // -- the conversation -----------------------------------------------------------------------
  function draw() {
    $("turns").replaceChildren(...turns.map(turnView));
    drawn();
  }
  function drawn() {
    $("empty").hidden = turns.length > 0;
    $("new").disabled = turns.length === 0;
  }
  function redraw(turn) {  // one turn anew, the others as they are
    const i = turns.indexOf(turn);
    const item = $("turns").children[i];
    if (i >= 0 && item) item.replaceWith(turnView(turn, i));
  }
  function turnView(turn, i) {
    const item = document.createElement("li");
    item.className = "turn";
    item.appendChild(text("p", turn.question, "question"));
    if (turn.standalone && !same(turn.standalone, turn.question)) {
      item.appendChild(text("p", "asked as: " + turn.standalone, "standalone"));
    }
    item.appendChild(text("div", turn.answer, turn.streaming ? "answer streaming" : "answer"));
    if (turn.error) item.appendChild(text("p", turn.error, "error"));
    if (!turn.done) return item;
    item.appendChild(usage(turn));
    item.appendChild(sources(turn.citations));
    item.appendChild(turn.marking ? markForm(turn, i) : markLine(turn));
    return item;
  }
  function usage(turn) {
    const sure = turn.confidence != null ? "confidence " + turn.confidence.toFixed(2) + " · " : "";
    const low = turn.confidence != null && turn.confidence < LOW_CONFIDENCE ? LOW_NOTE + " · " : "";
    const took = turn.seconds != null ? " · " + turn.seconds.toFixed(1) + " s" : "";
    return text("p", sure + low + turn.strategy + took, "usage");
  }
  function sources(citations) {
    const list = document.createElement("ol");
    list.className = "sources";
    for (const cite of citations) {
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
    return list;
  }

  // -- marks ----------------------------------------------------------------------------------
  function markLine(turn) {
    const line = document.createElement("div");
    line.className = "mark";
    const open = (kind) => () => { turn.marking = kind; redraw(turn); };
    if (turn.mark) {
      const where = turn.mark.quote ? " · line: “" + turn.mark.quote + "”" : " · no line";
      line.appendChild(text("span", "Marked " + turn.mark.marked + where + " · saved to feedback.jsonl", "saved"));
      for (const warning of turn.mark.warnings || []) line.appendChild(text("span", warning, "warning"));
    } else {
      line.appendChild(text("span", "Is the answer right?"));
    }
    line.appendChild(button("Right", "quiet right", open("right")));
    line.appendChild(button("Wrong", "quiet wrong", open("wrong")));
    return line;
  }
  function lineOf(sentence, cite) {  // the sentence's own line: the section headings above it left out
    const heads = new Set((cite.headings || []).map((h) => String(h).trim()));
    const lines = String(sentence).split("\n").map((l) => l.trim()).filter((l) => l);
    while (lines.length > 1 && heads.has(lines[0].replace(/^#+\s*/, ""))) lines.shift();
    return lines.join(" ");
  }
  function placeOf(cite, quote) {
    const place = {file: cite.file, quote: quote};
    if (cite.page) place.page = cite.page;
    if (cite.page_end) place.page_end = cite.page_end;
    if (!cite.page && cite.headings) place.section = cite.headings;
    return place;
  }
  function choice(name, value, checked, label, note) {
    const row = text("label", null, "line");
    const input = document.createElement("input");
    input.type = "radio"; input.name = name; input.value = value; input.checked = checked;
    row.appendChild(input);
    row.appendChild(text("span", label));
    if (note) row.appendChild(text("small", note));
    return row;
  }
  function markForm(turn, i) {
    const right = turn.marking === "right";
    const form = document.createElement("form");
    form.className = "mark-form";
    form.appendChild(text("p", right ? "Marked right." : "Marked wrong.", "kind"));
    const answer = document.createElement("input");
    answer.name = "right_answer"; answer.autocomplete = "off"; answer.required = !right;
    answer.value = right ? (turn.mark && turn.mark.right_answer) || turn.answer : "";
    answer.placeholder = right ? "the words a right answer must hold" : "the right answer";
    const said = text("label", right ? "Short answer " : "The right answer ", "field");
    said.appendChild(answer);
    form.appendChild(said);
    const lines = text("fieldset", null, "lines");
    lines.appendChild(text("legend", "The line that states it"));
    const cited = turn.citations.filter((c) => typeof c.file === "string" && c.file);
    const name = "line-" + i;
    cited.forEach((cite, c) => (cite.sentences || []).forEach((sentence, s) => {
      const first = right && c === 0 && s === 0;
      lines.appendChild(choice(name, c + ":" + s, first, lineOf(sentence, cite), cite.source || cite.file));
    }));
    lines.appendChild(choice(name, "paste", !right || !cited.length, "Another line:"));
    lines.appendChild(pasteFields(cited));
    lines.appendChild(choice(name, "none", false, "No line (the mark names no place)"));
    form.appendChild(lines);
    form.appendChild(button("Cancel", "quiet", () => { turn.marking = null; redraw(turn); }));
    const send = text("button", "Save mark");
    send.type = "submit";
    form.appendChild(send);
    form.appendChild(text("span", "", "form-status"));
    form.addEventListener("submit", (event) => { event.preventDefault(); sendMark(turn, form, cited, name); });
    return form;
  }
  function pasteFields(cited) {
    const box = document.createElement("div");
    box.className = "paste";
    const line = document.createElement("textarea");
    line.name = "pasted"; line.rows = 2; line.placeholder = "paste the line that states the answer";
    box.appendChild(line);
    const from = document.createElement("select");
    from.name = "from";
    cited.forEach((cite, c) => {
      const option = text("option", "from " + (cite.source || cite.file));
      option.value = String(c);
      from.appendChild(option);
    });
    const other = text("option", "from another file…");
    other.value = "other";
    from.appendChild(other);
    box.appendChild(from);
    const file = document.createElement("input");
    file.name = "file"; file.placeholder = "file, as indexed (guide.pdf)"; file.autocomplete = "off";
    const page = document.createElement("input");
    page.name = "page"; page.type = "number"; page.min = "1"; page.placeholder = "page";
    const elsewhere = text("span", null, "elsewhere");
    elsewhere.append(file, page);
    elsewhere.hidden = cited.length > 0;
    from.addEventListener("change", () => { elsewhere.hidden = from.value !== "other"; });
    box.appendChild(elsewhere);
    return box;
  }
  function markPlace(form, cited, name) {
    const picked = (form.querySelector("input[name='" + name + "']:checked") || {}).value || "none";
    if (picked === "none") return null;
    if (picked !== "paste") {
      const [c, s] = picked.split(":").map(Number);
      return placeOf(cited[c], lineOf(cited[c].sentences[s], cited[c]));
    }
    const quote = form.elements.pasted.value.trim();
    if (!quote) throw new Error("paste the line, or pick one");
    if (form.elements.from.value !== "other") return placeOf(cited[Number(form.elements.from.value)], quote);
    const file = form.elements.file.value.trim();
    if (!file) throw new Error("name the file the line is in");
    const place = {file: file, quote: quote};
    if (form.elements.page.value) place.page = Number(form.elements.page.value);
    return place;
  }
  async function sendMark(turn, form, cited, name) {
    const status = form.querySelector(".form-status");
    status.className = "form-status";
    try {
      const place = markPlace(form, cited, name);
      const mark = {question: turn.question, standalone_question: turn.standalone || null, answer: turn.answer,
                    marked: turn.marking, right_answer: form.elements.right_answer.value.trim(), place: place,
                    strategy: turn.strategy};
      status.textContent = "saving…";
      const reply = await fetch("/feedback", {method: "POST", headers: headers(), body: JSON.stringify(mark)});
      const body = await reply.json().catch(() => null);
      if (!reply.ok) throw new Error(failure(body, reply.status));
      turn.mark = {marked: mark.marked, right_answer: mark.right_answer, quote: place ? place.quote : "",
                   id: body.id, warnings: body.warnings || []};
      turn.marking = null;
      save();
      redraw(turn);
    } catch (err) {
      status.className = "form-status error";
      status.textContent = err.message;
    }
  }

  // -- the page -------------------------------------------------------------------------------
  fetch("/health").then((r) => r.json()).then((info) => {
    if (info.auth) $("key-label").hidden = false;
    if (info.index) $("index-line").textContent =
      info.index.chunks + " passages of " + info.index.documents + " documents, answered by strategy " + info.strategy;
    for (const name of info.strategies || []) {
      if (name === "auto" || [...$("strategy").options].some((o) => o.value === name)) continue;
      const option = text("option", name);
      option.value = name;
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
  $("ask").addEventListener("submit", (event) => { event.preventDefault(); ask($("question").value); });
  $("question").addEventListener("keydown", (event) => {  // Enter sends, Shift+Enter starts a new line
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); ask($("question").value); }
  });
  $("stop").addEventListener("click", () => { if (running) running.abort(); });
  $("new").addEventListener("click", () => {
    if (running) running.abort();
    turns = [];
    save();
    draw();
    $("question").focus();
  });
  restore();
  draw();
  const given = new URLSearchParams(window.location.search);  // /?q=...&strategy=...&only=...: a link that asks
  if (given.get("q")) {
    if (given.get("only")) $("only").value = given.get("only");
    if (given.get("strategy")) {
      const option = text("option", given.get("strategy"));
      option.value = given.get("strategy");
      $("strategy").appendChild(option);
      $("strategy").value = given.get("strategy");
    }
    window.history.replaceState(null, "", window.location.pathname);  // a reload continues, never asks again
    turns = [];  // a link's question starts a conversation of its own
    ask(given.get("q"));
  }
})();
""".replace("LOW_CONFIDENCE", repr(LOW_CONFIDENCE)).replace("LOW_NOTE", json.dumps(LOW_NOTE))
