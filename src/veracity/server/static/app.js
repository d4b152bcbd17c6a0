// veracity web UI: submits checks, follows their event streams, loads server-rendered
// fragments. No build step, no dependencies.
"use strict";

const TOKEN_KEY = "veracity-token";
const FINISHED = new Set(["done", "failed", "cancelled", "interrupted"]);
const $ = (sel) => document.querySelector(sel);

// ------------------------------------------------------------------ auth and requests

function askToken(message) {
  const dialog = $("#token-dialog");
  const error = $("#token-error");
  error.hidden = !message;
  error.textContent = message || "";
  return new Promise((resolve) => {
    $("#token-form").addEventListener("submit", () => {
      sessionStorage.setItem(TOKEN_KEY, $("#token-input").value.trim());
      resolve();
    }, { once: true });
    dialog.showModal();
    $("#token-input").focus();
  });
}

async function api(path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = new Headers(options.headers || {});
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.set("Authorization", `Bearer ${token}`);
    const resp = await fetch(path, { ...options, headers });
    if (resp.status !== 401 || attempt >= 3) return resp;
    await askToken(token ? "That token was not accepted." : "");
  }
}

async function problemText(resp) {
  try {
    const body = await resp.json();
    return body.detail || body.title || `HTTP ${resp.status}`;
  } catch (e) {
    return `HTTP ${resp.status}`;
  }
}

// ------------------------------------------------------------------ fragments and links

// Only http(s) addresses stay links: the rule `veracity.core.weblinks.web_link` applies to the
// pages rendered in Python, applied again here to every fragment this script inserts.
// Relative links (our own pages, anchors) resolve to this page's http(s) origin.
const LINK_PROTOCOLS = new Set(["http:", "https:"]);

function safeHref(href) {
  if (typeof href !== "string") return false;
  const text = href.trim();
  // white space, control characters and backslashes are read differently by browsers
  if (!text || /[\s\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\\]/.test(text)) {
    return false;
  }
  try {
    return LINK_PROTOCOLS.has(new URL(text, window.location.href).protocol);
  } catch (e) {
    return false;
  }
}

// Puts server-rendered HTML into `el` (replacing its content, or after it with
// `append`), turning every link that fails `safeHref` into its plain text.
function insertFragment(el, html, append = false) {
  const template = document.createElement("template");
  template.innerHTML = html;
  for (const a of template.content.querySelectorAll("a[href], area[href]")) {
    if (!safeHref(a.getAttribute("href"))) {
      const span = document.createElement("span");
      span.className = "unlinked";
      span.append(...a.childNodes);
      a.replaceWith(span);
    }
  }
  if (append) el.append(template.content);
  else el.replaceChildren(template.content);
}

function showError(el, text) {
  el.textContent = text;
  el.hidden = !text;
  if (text) el.focus?.();
}

// ------------------------------------------------------------------ the check form

async function initForm(form) {
  const offer = await api("/ui/offer"); // what the server offers: behind its token
  if (!offer.ok) return showError($("#form-error"), await problemText(offer));
  insertFragment($("#offer"), await offer.text());
  const method = $("#method");
  const labels = $("#labels");
  const kind = () => form.querySelector("input[name=kind]:checked").value;

  let chosen = false; // the user picked a method: keep it while it fits
  function fitMethods() {
    const k = kind();
    document.querySelectorAll(".kind-panel").forEach((p) => { p.hidden = p.dataset.kind !== k; });
    const takes = k === "document" ? "claim" : k; // a document's claims are checked one by one
    for (const opt of method.options) opt.disabled = !opt.dataset.kinds.split(" ").includes(takes);
    const fallback = [...method.options].find((o) => o.value === method.dataset.default && !o.disabled)
      || [...method.options].find((o) => !o.disabled);
    if ((!chosen || method.selectedOptions[0]?.disabled) && fallback) method.value = fallback.value;
    fitLabels();
  }
  function fitLabels() {
    const allowed = (method.selectedOptions[0]?.dataset.labels || "").split(" ");
    for (const opt of labels.options) opt.disabled = opt.value !== "" && !allowed.includes(opt.value);
    if (labels.selectedOptions[0]?.disabled) labels.value = "";
  }
  form.querySelectorAll("input[name=kind]").forEach((r) => r.addEventListener("change", fitMethods));
  method.addEventListener("change", () => { chosen = true; fitLabels(); });
  fitMethods();
  $("#submit").disabled = false;

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = $("#form-error");
    showError(error, "");
    let body;
    try {
      body = buildRequest(form, kind());
    } catch (e) {
      showError(error, e.message);
      return;
    }
    const button = $("#submit");
    button.disabled = true;
    try {
      const resp = await api("/v1/checks", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (resp.status === 202) {
        const job = await resp.json();
        window.location.assign(`/checks/${job.id}`);
        return;
      }
      showError(error, await problemText(resp));
    } catch (e) {
      showError(error, `Could not reach the server: ${e.message}`);
    } finally {
      button.disabled = false;
    }
  });
}

function value(name) {
  const el = document.getElementById(name);
  return el ? el.value.trim() : "";
}

function parseReplies(text) {
  if (!text) return [];
  if (text.startsWith("[")) {
    let list;
    try {
      list = JSON.parse(text);
    } catch (e) {
      throw new Error(`The replies are not a valid JSON list: ${e.message}`);
    }
    if (!Array.isArray(list)) throw new Error("The replies must be a JSON list.");
    return list;
  }
  return text.split("\n").map((t) => t.trim()).filter(Boolean)
    .map((t, i) => ({ id: `r${i + 1}`, text: t }));
}

function documentInput() {
  const text = document.getElementById("document-text").value;
  const url = value("document-url");
  if (text.trim() && url) throw new Error("Give the document's text or its address, not both.");
  if (!text.trim() && !url) throw new Error("Give the document's text or its address.");
  const input = { kind: "document" };
  if (url) input.url = url;
  else input.text = text; // as typed: the claims' spans are offsets into it
  if (value("document-title")) input.title = value("document-title");
  return input;
}

function buildRequest(form, kind) {
  let input;
  if (kind === "claim") {
    input = { kind, text: value("claim-text") };
  } else if (kind === "article") {
    input = { kind, title: value("article-title"), body: value("article-body") };
    if (value("article-url")) input.url = value("article-url");
    if (value("article-date")) input.published_at = `${value("article-date")}T00:00:00Z`;
  } else if (kind === "document") {
    input = documentInput();
  } else {
    input = { kind, text: value("post-text"), replies: parseReplies(value("post-replies")) };
  }
  const body = { input, method: value("method") };
  if (kind === "document" && $("#document-corrections").checked) body.corrections = true;
  if (value("labels")) body.labels = value("labels");
  if (value("model")) body.model = value("model");
  const boxes = form.querySelectorAll("input[name=sources]");
  if (boxes.length) body.sources = [...boxes].filter((b) => b.checked).map((b) => b.value);
  return body;
}

// ------------------------------------------------------------------ event stream

function parseBlock(block) {
  const ev = { event: "message", data: "", id: null };
  let seen = false;
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "event") ev.event = val;
    else if (field === "data") ev.data += (ev.data ? "\n" : "") + val;
    else if (field === "id") ev.id = val;
    seen = true;
  }
  return seen ? ev : null;
}

// Follows the job's events; after a dropped connection it resumes from the last id.
async function followEvents(jobId, onEvent) {
  let last = 0;
  for (let tries = 0; tries < 6; tries++) {
    const headers = last ? { "Last-Event-ID": String(last) } : {};
    const resp = await api(`/v1/checks/${jobId}/events`, { headers });
    if (!resp.ok) throw new Error(await problemText(resp));
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value: chunk, done } = await reader.read();
        if (done) break;
        buffer += chunk;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const ev = parseBlock(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
          if (!ev) continue;
          if (ev.event === "end") return;
          if (ev.id) last = Number(ev.id);
          onEvent(ev.event, JSON.parse(ev.data));
        }
      }
    } catch (e) {
      // the connection dropped: reconnect below
    }
    await new Promise((r) => setTimeout(r, 500 * (tries + 1)));
  }
  throw new Error("Lost the connection to the event stream.");
}

const short = (text, n = 160) => {
  const s = String(text ?? "").replace(/\s+/g, " ").trim();
  return s.length > n ? `${s.slice(0, n)}…` : s;
};
// "1 search", "2 searches", "0 model calls": words ending in s, x, z, ch or sh take "es"
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : /(s|x|z|ch|sh)$/.test(word) ? "es" : "s"}`;

// One line of the live progress list for a trace event (null: counted, not listed). The
// server sends each event in words (`text`); the line is set as text, never as markup.
function describe(e) {
  if (e.kind === "llm_call") return null;
  if (e.text) return e.text;
  const shown = (v) => Array.isArray(v) ? plural(v.length, "item")
    : v && typeof v === "object" ? plural(Object.keys(v).length, "field") : short(v, 80);
  const pairs = Object.entries(e.data || {}).filter(([, v]) => v != null)
    .map(([k, v]) => `${k.replace(/_/g, " ")}: ${shown(v)}`);
  return `${e.kind} from ${e.name}${pairs.length ? `: ${pairs.join("; ")}` : ""}`;
}

// ------------------------------------------------------------------ the check page

function initCheck(root) {
  const jobId = root.dataset.job;
  const status = $("#status");
  const list = $("#progress");
  const pageError = $("#page-error");
  const counters = { calls: 0, tokens: 0, reused: 0, searches: 0 };

  function setStatus(s, extra) {
    status.textContent = s + (extra ? ` — ${extra}` : "");
    $("#cancel").hidden = FINISHED.has(s);
    $("#rerun").hidden = !FINISHED.has(s);
  }
  function count(e) {
    if (e.kind === "llm_call") {
      counters.calls += 1;
      counters.tokens += (e.data.prompt_tokens || 0) + (e.data.completion_tokens || 0);
      counters.reused += e.data.cached_prompt_tokens || 0;
    }
    if (e.kind === "search") counters.searches += 1;
    const reused = counters.reused ? ` (${counters.reused.toLocaleString()} reused)` : "";
    $("#counters").textContent = `${plural(counters.calls, "model call")} · ${counters.tokens.toLocaleString()} tokens${reused} · ${plural(counters.searches, "search")}`;
  }
  function addLine(text, kind) {
    const li = document.createElement("li");
    li.className = `ev-${kind}`;
    li.textContent = text;
    list.appendChild(li);
    list.scrollTop = list.scrollHeight;
  }
  async function loadInput() {
    const resp = await api(`/ui/checks/${jobId}/input`);
    if (!resp.ok) return showError(pageError, await problemText(resp));
    insertFragment($("#checked"), await resp.text()); // server-rendered, escaped
  }
  async function loadReport() {
    final = true;
    loadInput().catch(() => {}); // its heading says the check is over now
    const resp = await api(`/ui/checks/${jobId}/report`);
    if (!resp.ok) return showError(pageError, await problemText(resp));
    insertFragment($("#report"), await resp.text()); // server-rendered, escaped
    if (selected) selectClaim(selected, false);
  }
  const doc = documentView(jobId, pageError);
  let final = false;
  let selected = null;
  const selectClaim = (id, focus) => { selected = id; doc.select(id, focus); };
  doc.onRefresh = () => { if (selected) selectClaim(selected, false); };
  doc.isFinal = () => final;
  doc.bind($("#report"), (id) => selectClaim(id, true));

  async function start() {
    await loadInput();
    const resp = await api(`/v1/checks/${jobId}?trace=false`);
    if (!resp.ok) return showError(pageError, await problemText(resp));
    const job = await resp.json();
    setStatus(job.status, job.queue_position ? `number ${job.queue_position} in the queue` : "");
    const isDocument = job.input_kind === "document";
    if (isDocument && !FINISHED.has(job.status)) doc.refresh();
    let finished = false;
    await followEvents(jobId, (type, ev) => {
      if (type === "status") {
        const d = ev.data;
        setStatus(d.status, d.position ? `number ${d.position} in the queue` : d.error || "");
        if (FINISHED.has(d.status)) finished = true;
        return;
      }
      count(ev);
      if (isDocument && (ev.kind === "claims_found" || ev.kind === "claim_checked")) doc.refresh();
      const line = describe(ev);
      if (line) addLine(line, ev.kind);
    });
    if (finished || FINISHED.has(job.status)) await loadReport();
  }

  $("#cancel").addEventListener("click", async () => {
    const resp = await api(`/v1/checks/${jobId}`, { method: "DELETE" });
    if (!resp.ok) showError(pageError, await problemText(resp));
  });
  $("#rerun").addEventListener("click", async () => {
    const resp = await api(`/v1/checks/${jobId}/rerun`, { method: "POST" });
    if (resp.status !== 202) return showError(pageError, await problemText(resp));
    window.location.assign(`/checks/${(await resp.json()).id}`);
  });
  $("#download").addEventListener("click", async () => {
    const resp = await api(`/v1/checks/${jobId}`);
    if (!resp.ok) return showError(pageError, await problemText(resp));
    const url = URL.createObjectURL(await resp.blob());
    const a = document.createElement("a");
    a.href = url;
    a.download = `veracity-${jobId}.json`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  });
  start().catch((e) => showError(pageError, e.message));
}

// ------------------------------------------------------------------ a document's claims

// The annotated document of a document check: refreshed from the server (escaped
// fragments) as its claims are found and checked; a highlight or a table row selects a
// claim, opening its details and loading its method's own view.
function documentView(jobId, pageError) {
  const view = { onRefresh: () => {}, isFinal: () => false };
  let timer = null;
  let loading = false;
  let again = false;

  async function load() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      const resp = await api(`/ui/checks/${jobId}/document`);
      if (!resp.ok) return showError(pageError, await problemText(resp));
      const html = await resp.text();
      if (view.isFinal()) return; // the finished report has replaced the live view
      insertFragment($("#report"), html);
      view.onRefresh();
    } finally {
      loading = false;
      if (again) { again = false; view.refresh(); }
    }
  }
  view.refresh = () => {
    if (!timer) timer = setTimeout(() => { timer = null; load().catch(() => {}); }, 120);
  };

  view.select = (id, focus) => {
    const root = $("#report");
    for (const m of root.querySelectorAll("mark.claim-mark")) {
      m.classList.toggle("selected", m.dataset.claims.split(" ").includes(id));
    }
    const details = document.getElementById(`claim-${id}`);
    if (!details) return;
    details.open = true;
    if (focus) {
      details.scrollIntoView({ block: "nearest" });
      details.querySelector("summary")?.focus();
    }
    if ($("#document")?.dataset.done === "yes") loadMethod(id).catch(() => {});
  };

  async function loadMethod(id) {
    const box = [...document.querySelectorAll(".claim-method")].find((b) => b.dataset.claim === id);
    if (!box || box.dataset.loaded) return;
    for (const other of document.querySelectorAll(".claim-method[data-loaded]")) {
      other.replaceChildren(); // one method view at a time: its ids stay unique
      delete other.dataset.loaded;
    }
    box.dataset.loaded = "yes";
    const resp = await api(`/ui/checks/${jobId}/claims/${encodeURIComponent(id)}`);
    if (resp.ok) insertFragment(box, await resp.text());
  }

  view.bind = (root, choose) => {
    const next = (mark) => { // a span of several claims: each click picks the next one
      const ids = mark.dataset.claims.split(" ");
      const at = ids.indexOf(mark.dataset.last || "");
      mark.dataset.last = ids[(at + 1) % ids.length];
      return mark.dataset.last;
    };
    root.addEventListener("click", (e) => {
      const mark = e.target.closest("mark.claim-mark");
      const link = e.target.closest("a.claim-link");
      if (mark) choose(next(mark));
      else if (link) { e.preventDefault(); choose(link.dataset.claim); }
    });
    root.addEventListener("keydown", (e) => {
      const mark = e.target.closest?.("mark.claim-mark");
      if (mark && (e.key === "Enter" || e.key === " ")) { e.preventDefault(); choose(next(mark)); }
    });
  };
  return view;
}

// ------------------------------------------------------------------ history

function initHistory(root) {
  async function load(before) {
    const resp = await api(`/ui/history${before ? `?before=${encodeURIComponent(before)}` : ""}`);
    if (!resp.ok) return showError($("#page-error"), await problemText(resp));
    const html = await resp.text();
    if (before) {
      $("#more")?.parentElement.remove();
      insertFragment(root, html, true);
    } else {
      insertFragment(root, html);
    }
  }
  root.addEventListener("click", (e) => {
    if (e.target.id === "more") load(e.target.dataset.before);
  });
  load().catch((e) => showError($("#page-error"), e.message));
}

document.addEventListener("DOMContentLoaded", async () => {
  if (document.body.dataset.auth === "required" && !sessionStorage.getItem(TOKEN_KEY)) {
    await askToken("");
  }
  const form = $("#check-form");
  if (form) initForm(form).catch((e) => showError($("#form-error"), e.message));
  const check = $("#check");
  if (check) initCheck(check);
  const history = $("#history");
  if (history) initHistory(history);
});
