// kb-ai: small progressive enhancements. Every page works without this file except the
// streamed chat. Data from the server is put in the page as text, never as HTML, except
// answer HTML that the server rendered and sanitised.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
}

// The page's CSRF token: every request that changes something shows it, so the server
// knows the request came from its own pages (a page on another site cannot read it).
const CSRF = () => ($('meta[name="kb-ai-csrf"]') || {}).content || "";

function apiFetch(url, options = {}) {
  return fetch(url, { ...options, headers: { ...(options.headers || {}), "X-KB-AI-CSRF": CSRF() } });
}

async function jsonOrError(response) {
  let body = null;
  try { body = await response.json(); } catch (e) { /* not JSON */ }
  if (!response.ok) {
    throw new Error((body && body.error) || `HTTP ${response.status}`);
  }
  return body;
}

// Server-sent events over fetch (POST bodies cannot use EventSource).
async function* sseEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { type, data: JSON.parse(data.join("\n")) };
    }
  }
}

// -- Submit -------------------------------------------------------------------------------

function initSubmit() {
  const result = $("#submit-result");
  const show = (ok, text, rejected = [], count = 0) => {
    result.replaceChildren(el("p", { class: ok ? "ok" : "error", role: ok ? null : "alert", text }));
    const watch = count === 1 ? "Watch it on Status →" : "Watch them on Status →";
    if (ok) result.firstChild.append(" ", el("a", { href: "/status", text: watch }));
    if (rejected.length) {
      result.append(el("ul", { class: "error" }, ...rejected.map((r) => el("li", { text: r.error }))));
    }
  };
  const send = async (form, body, headers) => {
    const button = $("button[type=submit]", form);
    button.disabled = true;
    try {
      const r = await apiFetch("/api/submit", { method: "POST", body, headers });
      const data = await r.json().catch(() => ({ ok: false, error: `HTTP ${r.status}` }));
      if (!data.ok) { show(false, data.error, data.rejected || []); return; }
      const fresh = data.tasks.filter((t) => !t.duplicate).length;
      const dupes = data.tasks.length - fresh;
      show(true, `Queued ${fresh} document${fresh === 1 ? "" : "s"}` +
        (dupes ? `; ${dupes} already submitted` : "") + ".", data.rejected || [], data.tasks.length);
      form.reset();
      $("#chosen").replaceChildren();
    } catch (e) {
      show(false, e.message);
    } finally {
      button.disabled = false;
    }
  };
  $("#paste-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target;
    send(f, JSON.stringify({ title: f.title.value, content: f.content.value }),
      { "Content-Type": "application/json" });
  });
  const input = $("#files");
  const drop = $("#drop");
  const list = () => $("#chosen").replaceChildren(
    ...Array.from(input.files).map((f) => el("li", { text: `${f.name} (${Math.ceil(f.size / 1000)} kB)` })));
  input.addEventListener("change", list);
  drop.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); input.click(); }
  });
  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (ev) => { ev.preventDefault(); drop.classList.add("over"); });
  }
  for (const name of ["dragleave", "drop"]) {
    drop.addEventListener(name, () => drop.classList.remove("over"));
  }
  drop.addEventListener("drop", (ev) => {
    ev.preventDefault();
    const all = new DataTransfer();
    for (const f of input.files) all.items.add(f);
    for (const f of ev.dataTransfer.files) all.items.add(f);
    input.files = all.files;
    list();
  });
  $("#url-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    send(ev.target, JSON.stringify({ url: ev.target.url.value }), { "Content-Type": "application/json" });
  });
  $("#upload-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (!input.files.length) { show(false, "Choose or drop at least one file."); return; }
    const body = new FormData();
    for (const f of input.files) body.append("files", f, f.name);
    send(ev.target, body, {});
  });
}

// -- Status -------------------------------------------------------------------------------

function taskRow(t) {
  const doc = el("td", {}, el("span", { class: "title", text: t.title || t.filename }));
  if (t.filename) doc.append(" ", el("span", { class: "muted", text: t.filename }));
  if (t.error) doc.append(el("p", { class: "error", text: t.error }));
  if (t.state === "done" && t.result) {
    for (const p of [...(t.result.created || []), ...(t.result.updated || [])]) {
      doc.append(el("a", { class: "made", href: "/" + p, text: p }), " ");
    }
    for (const note of t.result.identity || []) doc.append(el("p", { class: "muted identity", text: note }));
    if ((t.result.held || []).length) doc.append(heldNote(t.result.held));
    const left = t.result.failed || [];  // members of an archive that did not compile, and why
    if (left.length) {
      doc.append(el("p", { class: "error", text: `Not compiled: ${left.length} of its files` }),
        el("ul", { class: "error left-out" }, ...left.map((f) => el("li", { text: f.error }))));
    }
  }
  const state = el("td", {}, el("span", { class: `pill ${t.state}`, text: t.state }));
  if (t.stage && t.state === "running") state.append(" ", el("span", { class: "muted", text: t.stage }));
  const when = el("td", {}, el("time", { datetime: t.created_at, text: t.created_at.slice(0, 16).replace("T", " ") }));
  if (t.submitted_by) when.append(" ", el("span", { class: "by", text: `by ${t.submitted_by}` }));
  const actions = el("td", { class: "actions" });
  const action = (name, label, cls) => el("form", { method: "post", action: `/status/${t.id}/${name}` },
    el("input", { type: "hidden", name: "csrf", value: CSRF() }), el("button", { class: cls, text: label }));
  // the buttons only for those whose role may use them (the server checks again)
  const mayContribute = document.body.dataset.role !== "reader";
  if (mayContribute && t.state === "failed") actions.append(action("retry", "Retry"));
  if (mayContribute && t.state !== "running") actions.append(action("delete", "Delete", "quiet"));
  return el("tr", { "data-id": t.id, "data-state": t.state }, doc, state, when, actions);
}

// Articles a run did not write because their update meets a person's edit: they wait
// for a reviewer (the server's page says the same, web/templates/_held.html).
function heldNote(paths) {
  const note = el("p", { class: "held" }, "held for review: ");
  for (const p of paths) note.append(el("a", { href: "/" + p, text: p }), " ");
  note.append("(kb-ai's update meets a hand edit, which stays on main; ",
    el("a", { href: "/review", text: "Review" }), " shows both versions)");
  return note;
}

function runRow(r) {
  const state = el("td", {}, el("span", { class: `pill ${r.state}`, text: r.state }));
  if (r.stage) state.append(" ", el("span", { class: "muted stage", text: r.stage + (r.total ? ` ${r.done}/${r.total}` : "") }));
  const result = el("td", {});
  if (!["running", "died", "stopped"].includes(r.state)) result.append((r.removed ? `removed ${r.removed} source(s)` : `compiled ${r.compiled}`) + (r.failed ? `, failed ${r.failed}` : ""));
  if (r.error) result.append(el("p", { class: "error", text: r.error }));
  if (r.note) result.append(el("p", { class: "muted run-note", text: r.note }));
  for (const p of [...r.created, ...r.updated]) result.append(" ", el("a", { class: "made", href: "/" + p, text: p }));
  for (const p of r.deleted || []) result.append(" ", el("del", { class: "gone", title: "deleted: no source left", text: p }));
  if ((r.held || []).length) result.append(heldNote(r.held));
  if (r.commit) result.append(" ", el("code", { text: r.commit.slice(0, 8) }));
  const when = el("td", {}, el("time", { datetime: r.started_at, text: r.started_at.slice(0, 16).replace("T", " ") }));
  return el("tr", { "data-run": String(r.id), "data-state": r.state }, when, el("td", { text: r.started_by || "—" }), state, result);
}

function initStatus() {
  const table = $("#tasks");
  const live = $("#live");
  table.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const form = ev.target;
    const [, , id, action] = new URL(form.action).pathname.split("/");
    const r = await apiFetch(action === "retry" ? `/api/tasks/${id}/retry` : `/api/tasks/${id}`,
      { method: action === "retry" ? "POST" : "DELETE" });
    try { await jsonOrError(r); } catch (e) { live.textContent = e.message; }
  });
  const source = new EventSource("/api/tasks/events");
  source.addEventListener("open", () => { live.textContent = "live"; });
  source.addEventListener("error", () => { live.textContent = "reconnecting…"; });
  source.addEventListener("tasks", (ev) => {
    const snap = JSON.parse(ev.data);
    for (const [state, n] of Object.entries(snap.counts)) {
      const b = $(`[data-count="${state}"]`);
      if (b) b.textContent = n;
    }
    table.hidden = snap.tasks.length === 0;
    $("#tasks-empty").hidden = snap.tasks.length !== 0;
    $("tbody", table).replaceChildren(...snap.tasks.map(taskRow));
    const runs = $("#runs");
    runs.hidden = snap.runs.length === 0;
    $("#runs-empty").hidden = snap.runs.length !== 0;
    $("tbody", runs).replaceChildren(...snap.runs.map(runRow));
  });
  window.addEventListener("pagehide", () => source.close());
}

// -- Chat ---------------------------------------------------------------------------------

// A chat saved by its first question joins the side list at once, as the current one.
function listSession(sid, title) {
  let list = $("#sessions");
  if (!list) {
    list = el("ul", { id: "sessions" });
    const none = $(".side .muted");
    if (none) none.replaceWith(list); else $(".side").append(list);
  }
  for (const a of list.querySelectorAll("a[aria-current]")) a.removeAttribute("aria-current");
  for (const a of list.querySelectorAll(`a[href="/chat/${sid}"]`)) a.closest("li").remove();
  list.prepend(el("li", {}, el("a", { href: `/chat/${sid}`, "aria-current": "page", text: title })));
}

const FAILED = "No answer:";  // before the error of an answer that failed (chat.html too)

function initChat() {
  const chat = $("#chat");
  const form = $("#ask-form");
  const box = $("#question");
  const messages = $("#messages");
  const STAGES = { rewriting: "Reading the conversation…", selecting: "Choosing pages…",
    reading: "Reading…", answering: "Writing the answer…",
    choosing: "Choosing the sentences that answer…",
    judging: "Checking that the pages read answer the question…" };
  // What the answer is doing now, in words: the pages being read by name, how many
  // sentences a small model chooses among.
  const stageText = (d) => {
    if (d.stage === "reading" && d.paths && d.paths.length) {
      return `Reading ${d.paths.map((p) => p.split("/").pop().replace(/\.md$/, "")).join(", ")}…`;
    }
    if (d.stage === "choosing" && d.sentences) {
      return `Choosing among ${d.sentences} sentences of the pages read…`;
    }
    return STAGES[d.stage] || d.stage;
  };
  // The end of an answer being written stays in sight, above the input box, unless the
  // reader has scrolled up to read something else.
  const atEnd = () => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
  let following = true;
  let busy = false;  // one question at a time: a second Enter must not start a second chat
  window.addEventListener("scroll", () => { following = atEnd(); }, { passive: true });
  const follow = () => { if (following) window.scrollTo(0, document.documentElement.scrollHeight); };
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const question = box.value.trim();
    if (!question || busy) return;
    busy = true;
    following = true;
    const button = $("button", form);
    button.disabled = true;
    box.value = "";
    messages.append(el("li", { class: "msg user" }, el("p", { text: question })));
    const stage = el("p", { class: "stage", text: "Starting…" });
    const answer = el("div", { class: "md answer streaming" });
    const item = el("li", { class: "msg assistant", "aria-busy": "true" }, stage, answer);
    messages.append(item);
    follow();
    try {
      const r = await apiFetch("/api/ask", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ question, session: chat.dataset.session || null,
          corpus: ($("#corpus") || {}).value || null }),
      });
      if (!r.ok) throw new Error((await jsonOrError(r)).error);
      const sid = r.headers.get("X-Session-Id");
      if (sid && !chat.dataset.session) {
        chat.dataset.session = sid;
        history.replaceState(null, "", `/chat/${sid}`);
        listSession(sid, decodeURIComponent(r.headers.get("X-Session-Title") || "") || question);
      }
      for await (const event of sseEvents(r)) {
        if (event.type === "status") stage.textContent = stageText(event.data);
        else if (event.type === "note") {  // above the answer, in the order said (as on reload)
          const after = [...item.children].find((c) => !c.classList.contains("note")) || null;
          item.insertBefore(el("p", { class: "note", role: "note", text: event.data.text }), after);
        }
        else if (event.type === "delta") { stage.remove(); answer.append(event.data.text); follow(); }
        else if (event.type === "done") {
          stage.remove();
          answer.classList.remove("streaming");
          answer.innerHTML = event.data.html;  // rendered and sanitised by the server
          if (event.data.citations.length) {
            const cites = el("p", { class: "cites", text: "Sources: " });
            event.data.citations.forEach((c, i) => {
              if (i) cites.append(", ");
              cites.append(el("a", { href: (c.path.startsWith("raw/") ? "/sources/" : "/") + c.path, text: c.title }));
              // a page of another knowledge base (also): named with it
              if (c.kb) cites.append(el("span", { class: "other-kb", text: ` (${c.kb})` }));
            });
            item.append(cites);
          }
          // the citation-faithfulness check: how many cited claims their lines support
          if (event.data.checked) item.append(el("p", { class: "checked", text: event.data.checked }));
          follow();
        } else if (event.type === "error") {  // marked as failed, as a reload shows it
          stage.remove();
          item.classList.add("failed");
          if (!answer.textContent) answer.remove();
          item.append(el("p", { class: "error", role: "alert", text: `${FAILED} ${event.data.error}` }));  // (its hint in it)
        }
      }
    } catch (e) {
      stage.remove();
      item.append(el("p", { class: "error", role: "alert", text: e.message }));
    } finally {
      item.removeAttribute("aria-busy");
      button.disabled = false;
      busy = false;
      box.focus({ preventScroll: true });
      follow();
    }
  });
}

document.addEventListener("submit", (ev) => {
  // the button pressed may ask on its own (a form's Reject beside its Approve)
  const asker = ev.submitter && ev.submitter.dataset.confirm ? ev.submitter : ev.target;
  const msg = asker.dataset && asker.dataset.confirm;
  if (msg && !window.confirm(msg)) ev.preventDefault();
}, true);

// An answer cites the lines of a page (#L12 or #L12-L18): mark the innermost blocks of the
// article that hold those lines (each says its lines in data-lines) and bring them into view.
function showCitedLines() {
  const m = /^#L(\d+)(?:-L(\d+))?$/.exec(location.hash);
  for (const old of document.querySelectorAll(".md .cited")) old.classList.remove("cited");
  if (!m) return;
  const from = Number(m[1]), to = Number(m[2] || m[1]);
  const overlaps = (node) => {
    const [a, b] = node.dataset.lines.split("-").map(Number);
    return a <= to && b >= from;
  };
  const hits = [...document.querySelectorAll(".md [data-lines]")].filter(overlaps)
    .filter((node) => ![...node.querySelectorAll("[data-lines]")].some(overlaps));
  for (const node of hits) node.classList.add("cited");
  if (hits.length) {
    hits[0].setAttribute("tabindex", "-1");
    hits[0].scrollIntoView({ block: "center" });
    hits[0].focus({ preventScroll: true });
  }
}

window.addEventListener("hashchange", showCitedLines);

document.addEventListener("DOMContentLoaded", () => {
  showCitedLines();
  const page = document.body.dataset.page;
  if (page === "submit") initSubmit();
  else if (page === "status") initStatus();
  else if (page === "chat") initChat();
});
