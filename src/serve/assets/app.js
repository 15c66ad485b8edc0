// The page of `firstfault serve`: every text from a log or the knowledge base goes into
// the page as text (textContent), never as markup; the report is the server's own HTML
// page in a frame that may run no script, as tall as the report (one scrollbar: the page's).
// A diagnosis puts /report/ID in the address bar (a reload or a shared tab shows it again
// while the server keeps it), and joins the list of the diagnoses made since the page
// opened (kept for the tab in sessionStorage).
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c.nodeType ? c : String(c));
  return e;
}

function size(n) {
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

// --- Tabs ---------------------------------------------------------------------------------

function show(tab) {
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.tab === tab);
  $("panel-diagnose").hidden = tab !== "diagnose";
  $("panel-kb").hidden = tab !== "kb";
  if (tab === "kb") $("query").focus();
}

// --- Diagnose -----------------------------------------------------------------------------

let chosen = [];  // File objects dropped or picked
let verifyText = "";

function setChosen(files) {
  chosen = Array.from(files);
  $("chosen").textContent = chosen.length
    ? chosen.map((f) => f.name + " (" + size(f.size) + ")").join(", ") + " — Diagnose reads these, not the box"
    : "";
}

function progress(pct, text) {
  $("progress-box").hidden = pct === null;
  if (pct === null) return;
  const bar = $("progress");
  if (pct < 0) bar.removeAttribute("value"); else bar.value = pct;
  $("progress-text").textContent = text;
}

function fail(message) {
  progress(null);
  const box = $("error");
  box.textContent = message;
  box.hidden = false;
}

// POSTs the body to /api/diagnose with upload progress (fetch cannot report it).
function send(body, query, total) {
  $("error").hidden = true;
  $("result").hidden = true;
  $("go").disabled = true;
  progress(0, "Uploading " + size(total));
  const xhr = new XMLHttpRequest();
  xhr.open("POST", "/api/diagnose?keep=1" + (query || "") + ($("redact").checked ? "&redact=1" : ""));
  xhr.upload.onprogress = (e) => {
    const n = e.lengthComputable ? e.total : total;
    if (e.loaded >= n) progress(-1, "Diagnosing…");
    else progress(Math.floor((100 * e.loaded) / n), "Uploading " + size(e.loaded) + " of " + size(n));
  };
  xhr.upload.onload = () => progress(-1, "Diagnosing…");
  xhr.onerror = () => { $("go").disabled = false; fail("The server could not be reached: is firstfault serve still running?"); };
  xhr.onload = () => {
    $("go").disabled = false;
    let data = null;
    try { data = JSON.parse(xhr.responseText); } catch (_) { /* shown below */ }
    if (xhr.status !== 200 && !(xhr.status === 422 && data && data.verdict)) {
      const msg = data && data.error ? data.error.message : xhr.statusText;
      return fail("Not diagnosed (HTTP " + xhr.status + "): " + msg);
    }
    progress(null);
    const id = xhr.getResponseHeader("X-Firstfault-Report");
    render(data, id);
    if (id) {
      history.pushState({ report: id }, "", "/report/" + id);
      remember(id, data);
    }
  };
  xhr.send(body);
}

function diagnose() {
  if (chosen.length) {
    const form = new FormData();
    let total = 0;
    for (const f of chosen) { form.append("file", f, f.name); total += f.size; }
    return send(form, "", total);
  }
  const text = $("paste").value;
  if (!text.trim()) return fail("Nothing to diagnose: paste a log in the box, drop files on it, or try a sample.");
  send(new Blob([text], { type: "text/plain" }), "&name=pasted.log", text.length);
}

function sourceName(d) {
  const sources = (d.inputs && d.inputs.sources) || [];
  if (!sources.length) return "the log";
  return sources[0].name + (sources.length > 1 ? " and " + (sources.length - 1) + " more" : "");
}

// The report frame as tall as the report inside it, kept so when its details open or close.
function fitFrame() {
  const frame = $("report");
  try {
    const doc = frame.contentDocument;
    if (doc && doc.documentElement) frame.style.height = Math.ceil(doc.documentElement.getBoundingClientRect().height) + 2 + "px";
  } catch (_) { /* not this origin's: keeps its last height */ }
}

function render(d, reportId) {
  const p = d.primary;
  verifyText = p && p.verify ? p.verify : "";
  $("error").hidden = true;
  $("report-of").textContent = "Report for " + sourceName(d) + ":";
  const link = $("entry-link");
  link.hidden = !p;
  if (p) {
    link.textContent = "Encyclopedia: " + p.title;
    link.href = "/#entry=" + encodeURIComponent(p.id);
    link.dataset.id = p.id;
  }
  $("copy-verify").hidden = !verifyText;
  for (const [id, kind] of [["dl-html", "html"], ["dl-md", "md"], ["dl-json", "json"]]) {
    const a = $(id);
    a.hidden = !reportId;
    if (reportId) a.href = "/report/" + reportId + "." + kind + "?download=1";
  }
  const frame = $("report");
  frame.hidden = !reportId;
  if (reportId) frame.src = "/report/" + reportId + ".html";
  $("result").hidden = false;
  $("result").scrollIntoView({ block: "start" });
}

// A kept report by its id (the address /report/ID, a click in the list): its JSON, then
// the page as after the diagnosis; an id the server no longer keeps is said so.
async function openReport(id) {
  show("diagnose");
  $("result").hidden = true;
  progress(-1, "Loading the report…");
  let r;
  try {
    r = await fetch("/report/" + id + ".json");
  } catch (_) {
    return fail("The server could not be reached: is firstfault serve still running?");
  }
  if (r.status === 404) {
    return fail("The report " + id + " is no longer kept: the server keeps the newest 32 diagnoses, in memory, " +
      "until it stops. Diagnose the log again.");
  }
  if (!r.ok) return fail("The report could not be loaded (HTTP " + r.status + ").");
  progress(null);
  render(await r.json(), id);
}

// --- The diagnoses made since the page opened ----------------------------------------------

const HISTORY_KEY = "firstfault.diagnoses";

function diagnoses() {
  try { return JSON.parse(sessionStorage.getItem(HISTORY_KEY) || "[]"); } catch (_) { return []; }
}

function remember(id, d) {
  const list = diagnoses().filter((x) => x.id !== id);
  list.unshift({ id, name: sourceName(d), verdict: d.verdict || "unknown", title: d.primary ? d.primary.title : "no failure found",
    at: new Date().toLocaleTimeString() });
  try { sessionStorage.setItem(HISTORY_KEY, JSON.stringify(list.slice(0, 50))); } catch (_) { /* storage full or off */ }
  listDiagnoses();
}

function listDiagnoses() {
  const list = diagnoses();
  $("history-box").hidden = list.length === 0;
  $("history").replaceChildren(...list.map((x) => el("li", { "data-id": x.id },
    el("a", { href: "/report/" + x.id, onclick: (e) => { e.preventDefault(); history.pushState({ report: x.id }, "", "/report/" + x.id); openReport(x.id); } },
      x.name), " ",
    el("span", { class: "verdict " + x.verdict }, x.verdict.toUpperCase()), " ", x.title, " ",
    el("span", { class: "muted" }, x.at))));
}

function route() {
  const m = location.pathname.match(/^\/report\/([0-9a-f]{32})$/);
  if (m) return openReport(m[1]);
  $("result").hidden = true;
  progress(null);
  $("error").hidden = true;
}

async function loadSamples() {
  const r = await fetch("/api/samples");
  if (!r.ok) return;
  for (const s of await r.json()) {
    $("samples").append(el("button", {
      type: "button", title: s.title, class: "sample", "data-name": s.name,
      onclick: async () => {
        const t = await (await fetch(s.url)).text();
        $("paste").value = t;
        setChosen([]);
        send(new Blob([t], { type: "text/plain" }), "&name=" + encodeURIComponent(s.name), t.length);
      },
    }, s.name.replace(/\.log$/, "").replace(/_/g, " ")));
  }
}

// --- Encyclopedia -------------------------------------------------------------------------

let entries = [];

// A snippet with the matched words marked: text nodes and <mark>s, never HTML from the KB.
function marked(text, terms) {
  const want = new Set((terms || []).map((t) => t.toLowerCase()));
  const span = el("div", { class: "snip" });
  const re = /[A-Za-z0-9]+/g;
  let last = 0, m;
  while ((m = re.exec(text)) !== null) {
    const w = m[0].toLowerCase();
    if (!want.has(w) && !(w.length > 3 && w.endsWith("s") && want.has(w.slice(0, -1)))) continue;
    span.append(text.slice(last, m.index), el("mark", {}, m[0]));
    last = m.index + m[0].length;
  }
  span.append(text.slice(last));
  return span;
}

function hit(id, title, category, why, snippet, terms) {
  return el("li", { "data-id": id, onclick: () => openEntry(id) },
    el("div", {}, title), el("div", { class: "id" }, category + " · " + id),
    snippet ? marked(snippet, terms) : null, why ? el("div", { class: "why" }, why) : null);
}

function listAll() {
  $("kb-count").textContent = entries.length + " entries";
  $("hits").replaceChildren(...entries.map((e) => hit(e.id, e.title, e.category, "")));
}

let searchSeq = 0;
async function search() {
  const q = $("query").value;
  if (!q.trim()) return listAll();
  const seq = ++searchSeq;
  const r = await fetch("/api/search?limit=20", { method: "POST", body: q, headers: { "Content-Type": "text/plain" } });
  if (seq !== searchSeq) return;  // a newer query is on its way
  if (!r.ok) return;
  const j = await r.json();
  // The good matches only (firstfault search's "relevant": every pattern match and the
  // keyword hits near the best one); the weaker ones are counted.
  const good = j.relevant === undefined ? j.results.length : Math.min(j.relevant, j.results.length);
  const weaker = j.total - (j.relevant === undefined ? j.results.length : j.relevant);
  $("kb-count").textContent = (j.relevant === undefined ? j.total : j.relevant) + " good match" +
    ((j.relevant === undefined ? j.total : j.relevant) === 1 ? "" : "es") + (weaker > 0 ? "; " + weaker + " weaker not shown" : "");
  $("hits").replaceChildren(...j.results.slice(0, good).map((h) => hit(h.id, h.title, h.category, h.why, h.snippet, h.terms)));
}

// An element holding HTML the server rendered from a KB text field (escaped first, then
// its inline Markdown: entry_json's "html").
function rich(tag, html) {
  const e = el(tag);
  e.innerHTML = html;
  return e;
}

function section(title, body) {
  if (!body || (Array.isArray(body) && !body.length)) return [];
  if (Array.isArray(body)) {
    const ol = el("ol");
    for (const s of body) ol.append(rich("li", s));
    return [el("h3", {}, title), ol];
  }
  return [el("h3", {}, title), rich("p", body)];
}

async function openEntry(id) {
  for (const li of $("hits").children) li.classList.toggle("sel", li.dataset.id === id);
  const r = await fetch("/api/entries/" + encodeURIComponent(id));
  if (!r.ok) return;
  const e = await r.json();
  const art = $("entry");
  art.replaceChildren(
    el("h2", {}, e.title),
    el("div", { class: "muted" }, e.category + " · " + e.phase + " · " + e.id + (e.frameworks.length ? " · " + e.frameworks.join(", ") : "")),
    ...section("Quick answer", e.html.summary),
    ...section("What happens", e.html.mechanism),
    ...section("Root cause", e.html.root_cause),
    ...section("Fix", e.html.fix),
    ...(e.verify ? [el("h3", {}, "Verify"), el("pre", {}, e.verify)] : []),
    ...section("Confirm", e.html.confirm),
    ...section("Prevention", e.html.prevention),
    ...(e.examples.length ? [el("h3", {}, "What it looks like"), el("pre", {}, e.examples.slice(0, 3).join("\n"))] : []),
  );
  if (e.references.length) {
    const ul = el("ul");
    for (const ref of e.references) ul.append(el("li", {}, ref.url + (ref.note ? " — " + ref.note : "")));
    art.append(el("h3", {}, "References"), ul);
  }
  art.hidden = false;
  // On a narrow screen the entry sits below the list of hits: bring it into view, or a tap
  // on a hit seems to do nothing (issue 33). Side by side, it is already in view.
  const top = art.getBoundingClientRect().top;
  if (top < 0 || top > window.innerHeight / 2) art.scrollIntoView({ block: "start" });
  history.replaceState(null, "", "#entry=" + encodeURIComponent(id));
}

async function loadEntries() {
  const r = await fetch("/api/entries");
  if (!r.ok) return;
  entries = (await r.json()).entries;
  entries.sort((a, b) => a.category.localeCompare(b.category) || a.title.localeCompare(b.title));
  // A query typed before the list arrived keeps its results.
  if (!$("query").value.trim()) listAll();
  const m = location.hash.match(/^#entry=(.+)$/);
  if (m) { show("kb"); openEntry(decodeURIComponent(m[1])); }
}

// --- Wiring -------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => show(b.dataset.tab));
  $("go").addEventListener("click", diagnose);
  $("files").addEventListener("change", (e) => setChosen(e.target.files));
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    // A drop is the choice: diagnosed at once.
    if (e.dataTransfer.files.length) {
      setChosen(e.dataTransfer.files);
      diagnose();
    }
  });
  $("paste").addEventListener("input", () => { if (chosen.length) setChosen([]); });
  $("paste").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      diagnose();
    }
  });
  $("entry-link").addEventListener("click", (e) => {
    e.preventDefault();
    show("kb");
    openEntry(e.currentTarget.dataset.id);
  });
  const frame = $("report");
  frame.addEventListener("load", () => {
    fitFrame();
    const doc = frame.contentDocument;
    if (doc && doc.documentElement && window.ResizeObserver) new ResizeObserver(fitFrame).observe(doc.documentElement);
  });
  window.addEventListener("resize", fitFrame);
  window.addEventListener("popstate", route);
  listDiagnoses();
  route();
  $("copy-verify").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(verifyText);
    } catch (_) {
      // No clipboard permission (an http page): select the text so Ctrl-C copies it.
      const range = document.createRange();
      range.selectNodeContents($("verify"));
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
    $("copied").hidden = false;
    setTimeout(() => { $("copied").hidden = true; }, 1500);
  });
  let timer = 0;
  $("query").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(search, 150); });
  fetch("/healthz").then((r) => r.json()).then((h) => { $("version").textContent = h.version; }).catch(() => {});
  loadSamples();
  loadEntries();
});
