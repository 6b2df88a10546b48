// The dashboard's page. Every read and edit is one of the daemon's commands (POST
// /api/command, the CLI's own requests); live changes arrive on /api/events. Text from the
// memory is only ever set as text, never parsed as HTML.
"use strict";

const CSRF = document.querySelector('meta[name="csrf"]').content;
const main = document.getElementById("main");

// ---------- small helpers ----------

/** Builds an element: h("a", {href: "#"}, "text", child). */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    // Through the CSS object model: the page's policy refuses style attributes in markup.
    else if (k === "style") el.style.cssText = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function svg(tag, attrs) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  return el;
}

/** One daemon command; resolves to its result, throws its error message. */
async function call(command) {
  const r = await fetch("/api/command", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(command),
    credentials: "same-origin",
  });
  if (r.status === 401) throw new Error("not signed in: open the address `ai ui` printed");
  let reply;
  try { reply = await r.json(); } catch { throw new Error(`HTTP ${r.status}`); }
  if (!reply.ok) throw new Error(reply.error ? reply.error.message : "request failed");
  return reply.result;
}

function toast(text, info) {
  const box = document.getElementById("toast");
  const el = h("div", { class: info ? "info" : "" }, text);
  box.append(el);
  setTimeout(() => el.remove(), info ? 2500 : 6000);
}

/** Runs an edit and reports its failure; returns whether it worked. */
async function act(command, done) {
  try {
    await call(command);
    if (done) toast(done, true);
    return true;
  } catch (e) {
    toast(e.message);
    return false;
  }
}

function confirmThen(text, action) {
  const d = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  d.returnValue = "";
  d.onclose = () => { if (d.returnValue === "ok") action(); };
  d.showModal();
  document.getElementById("confirm-ok").focus();
}

function ago(iso) {
  if (!iso) return "";
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

function weightBar(w) {
  const pct = Math.max(0, Math.min(1, w)) * 100;
  return h("span", { class: "weight", title: `weight ${w}`, role: "img", "aria-label": `weight ${w}` },
    h("span", { style: `width:${pct.toFixed(0)}%` }));
}

function statusText(s) {
  return h("span", { class: `status-${s}` }, s);
}

function badges(t) {
  return [t.pinned && h("span", { class: "badge" }, "pinned"),
    t.never_recall && h("span", { class: "badge" }, "never recall")];
}

function debounce(fn, ms) {
  let timer;
  return (...a) => { clearTimeout(timer); timer = setTimeout(() => fn(...a), ms); };
}

// ---------- theme ----------

function applyTheme(t) {
  if (t) document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
}
applyTheme(localStorage.getItem("theme"));
document.getElementById("theme").addEventListener("click", () => {
  const dark = getComputedStyle(document.documentElement).colorScheme.includes("dark");
  const next = dark ? "light" : "dark";
  localStorage.setItem("theme", next);
  applyTheme(next);
});

// ---------- routing ----------

const views = {};
let current = { name: "", args: [], refresh: null, onEvent: null, cleanup: null };

function route() {
  const parts = (location.hash.replace(/^#\/?/, "") || "threads").split("/").map(decodeURIComponent);
  const [name, ...args] = parts;
  const view = views[name] ? name : "threads";
  clearTimeout(refreshTimer);
  if (current.cleanup) current.cleanup();
  current = { name: view, args, refresh: null, onEvent: null, cleanup: null };
  for (const a of document.querySelectorAll("nav a")) {
    const on = a.dataset.view === view || (view === "thread" && a.dataset.view === "threads")
      || (view === "run" && a.dataset.view === "runs");
    if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  render();
}

async function render() {
  const mine = current;
  try {
    const node = await views[mine.name](...mine.args);
    if (mine !== current) return;
    main.replaceChildren(node);
    // When the list is on screen, for the benchmark and the browser's own performance panel.
    if (mine.name === "threads") performance.mark("threads-listed");
  } catch (e) {
    if (mine !== current) return;
    main.replaceChildren(h("div", { class: "panel" }, h("h1", {}, "Could not load this view"),
      h("p", {}, e.message)));
  }
}

/** Re-renders the view in place, keeping focus and scroll where they were. */
async function rerender() {
  const focusId = document.activeElement && document.activeElement.id;
  const y = window.scrollY;
  await render();
  if (focusId) { const el = document.getElementById(focusId); if (el) el.focus(); }
  window.scrollTo(0, y);
}

window.addEventListener("hashchange", route);

// ---------- live events ----------

const live = document.getElementById("live");
let source;
function connect() {
  source = new EventSource("/api/events");
  source.onopen = () => { live.textContent = "live"; live.className = "live on"; };
  source.onerror = () => { live.textContent = "reconnecting"; live.className = "live off"; };
  const dispatch = (kind) => (e) => {
    let data = {};
    try { data = JSON.parse(e.data); } catch { /* keep-alive or empty */ }
    if (current.onEvent) current.onEvent(kind, data);
  };
  for (const kind of ["memory", "session", "run", "lagged"]) source.addEventListener(kind, dispatch(kind));
}

// ---------- threads ----------

const threadsState = { status: "active", sort: "weight", query: "" };

views.threads = async () => {
  const s = threadsState;
  let rows, total;
  if (s.query.trim()) {
    const r = await call({ search: { query: s.query, limit: 50 } });
    rows = r.results.filter((t) => s.status === "all" || t.status === s.status);
    total = rows.length;
  } else {
    const r = await call({ threads: { status: s.status, limit: 500 } });
    rows = r.threads;
    total = r.total;
    if (s.sort === "recency") rows.sort((a, b) => b.last_active.localeCompare(a.last_active));
  }
  const search = h("input", {
    type: "search", id: "thread-search", placeholder: "Search the memory (hybrid retrieval)",
    "aria-label": "Search threads", value: s.query,
  });
  search.addEventListener("input", debounce(() => { s.query = search.value; rerender(); }, 300));
  const status = h("select", { id: "thread-status", "aria-label": "Status" },
    ["active", "suspended", "archived", "all"].map((v) => h("option", { value: v, selected: v === s.status }, v)));
  status.addEventListener("change", () => { s.status = status.value; rerender(); });
  const sort = h("select", { id: "thread-sort", "aria-label": "Sort by", disabled: !!s.query.trim() },
    [["weight", "by weight"], ["recency", "by last activity"]].map(([v, l]) => h("option", { value: v, selected: v === s.sort }, l)));
  sort.addEventListener("change", () => { s.sort = sort.value; rerender(); });
  const table = h("table", { id: "threads-table" },
    h("thead", {}, h("tr", {},
      h("th", {}, "Title"), h("th", {}, "Weight"), h("th", {}, "Status"),
      h("th", { class: "hide-narrow" }, "Messages"), h("th", { class: "hide-narrow" }, "Last activity"),
      s.query.trim() ? h("th", {}, "Score") : null)),
    h("tbody", {}, rows.map((t) => h("tr", { "data-thread": t.id },
      h("td", { class: "title" }, h("a", { href: `#/thread/${encodeURIComponent(t.id)}` }, t.title || "(untitled)"), badges(t),
        t.topics && t.topics.length ? h("div", {}, t.topics.slice(0, 4).map((x) => h("span", { class: "chip" }, x))) : null),
      h("td", {}, weightBar(t.weight)),
      h("td", {}, statusText(t.status)),
      h("td", { class: "hide-narrow" }, t.messages),
      h("td", { class: "hide-narrow", title: when(t.last_active) }, ago(t.last_active)),
      s.query.trim() ? h("td", {}, t.score) : null))));
  current.onEvent = (kind) => { if (kind === "memory" || kind === "lagged") liveRefresh(); };
  return h("section", {},
    h("h1", {}, "Threads"),
    h("div", { class: "toolbar" }, search, status, sort,
      h("span", { class: "muted", id: "threads-count" }, `${rows.length} shown of ${total}`)),
    rows.length ? table : h("p", { class: "muted" }, s.query ? "Nothing matches." : "No thread here yet."));
};

// One pending refresh at a time, dropped when the view changes (it would redraw the new view
// under the person's hands).
let refreshTimer;
function liveRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(rerender, 400);
}

// ---------- one thread ----------

views.thread = async (id) => {
  const t = await call({ thread: { id, limit: 50, offset: 0 } });
  if (t.resolved_from) { location.replace(`#/thread/${encodeURIComponent(t.id)}`); }
  const edit = (action, extra, done) => act({ thread_edit: { id: t.id, action, ...extra } }, done).then((ok) => ok && rerender());
  const titleInput = h("input", { id: "rename-input", class: "wide", value: t.title, "aria-label": "New title" });
  const rename = h("form", { class: "toolbar", id: "rename-form", onsubmit: (e) => {
    e.preventDefault();
    edit("rename", { title: titleInput.value }, "Renamed");
  } }, titleInput, h("button", { type: "submit", id: "rename-save" }, "Rename"));
  const actions = h("div", { class: "toolbar" },
    t.status === "active"
      ? h("button", { type: "button", onclick: () => edit("suspend", {}, "Suspended") }, "Suspend")
      : h("button", { type: "button", onclick: () => edit("reactivate", {}, "Reactivated") }, "Reactivate"),
    t.status !== "archived" && h("button", { type: "button", onclick: () => edit("archive", {}, "Archived") }, "Archive"),
    h("button", { type: "button", id: "pin", onclick: () => edit(t.pinned ? "unpin" : "pin", {}, t.pinned ? "Unpinned" : "Pinned") }, t.pinned ? "Unpin" : "Pin"),
    h("button", { type: "button", onclick: () => edit(t.never_recall ? "allow_recall" : "never_recall", {}, "Saved") },
      t.never_recall ? "Allow recall" : "Never recall"),
    h("button", { type: "button", class: "danger", onclick: () => confirmThen(
      `Delete “${t.title}” and its ${t.page ? t.page.total : t.messages.length} messages? This cannot be undone.`,
      async () => { if (await act({ thread_edit: { id: t.id, action: "delete" } }, "Deleted")) location.hash = "#/threads"; }) }, "Delete"));
  const page = t.page || { offset: 0, total: t.messages.length };
  const msgs = h("div", { id: "messages" }, t.messages.map(message));
  let loaded = t.messages.length;
  const more = loaded < page.total ? h("button", { type: "button", onclick: async (e) => {
    const next = await call({ thread: { id: t.id, offset: loaded, limit: 50 } });
    next.messages.forEach((m) => msgs.append(message(m)));
    loaded += next.messages.length;
    if (loaded >= page.total) e.target.remove();
  } }, `Show more (${page.total - loaded} left)`) : null;
  current.onEvent = (kind) => { if (kind === "memory") liveRefresh(); };
  return h("section", {},
    h("p", {}, h("a", { href: "#/threads" }, "← Threads")),
    h("h1", { id: "thread-title" }, t.title, badges(t)),
    h("div", { class: "panel" },
      h("p", {}, statusText(t.status), " · weight ", weightBar(t.weight), ` ${t.weight} · `,
        `${page.total} messages · last activity ${ago(t.last_active)} · created ${when(t.created_at)} · title by ${t.title_by}`),
      t.summary && h("p", {}, t.summary),
      t.topics.length ? h("p", {}, "Topics: ", t.topics.map((x) => h("span", { class: "chip" }, x))) : null,
      t.drift_history.length ? h("p", { class: "muted" }, "Drift: ", t.drift_history.join(" → ")) : null,
      t.decisions.length ? h("p", {}, "Decisions: ", t.decisions.join("; ")) : null,
      rename, actions),
    h("h2", {}, `Bridges (${t.bridges.length})`),
    t.bridges.length ? bridgesTable(t.id, t.bridges) : h("p", { class: "muted" }, "No bridge."),
    h("h2", {}, "Messages"), msgs, more);
};

function message(m) {
  const meta = m.metadata || {};
  const source = [meta.tool, meta.file_path].filter(Boolean).join(" ");
  const text = m.content.length > 2000 ? m.content.slice(0, 2000) + "…" : m.content;
  return h("div", { class: "msg" },
    h("div", { class: "meta" }, when(m.timestamp), " · ", m.source || "", source ? ` · ${source}` : "",
      meta.repeats > 1 ? ` · seen ${meta.repeats}× (last ${when(meta.last_seen)})` : ""),
    h("pre", {}, text));
}

function bridgesTable(threadId, bridges) {
  return h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "Other thread"), h("th", {}, "Relation"), h("th", {}, "Status"),
      h("th", {}, "Weight"), h("th", { class: "hide-narrow" }, "Shared"), h("th", {}, ""))),
    h("tbody", {}, bridges.map((b) => {
      const other = b.source_id === threadId ? [b.target_id, b.target_title] : [b.source_id, b.source_title];
      const edit = (action, done) => act({ bridge_edit: { id: b.id, action } }, done).then((ok) => ok && rerender());
      return h("tr", {},
        h("td", {}, h("a", { href: `#/thread/${encodeURIComponent(other[0])}` }, other[1])),
        h("td", {}, b.relation_type), h("td", {}, b.status),
        h("td", {}, weightBar(b.weight), ` ${b.weight}`),
        h("td", { class: "hide-narrow" }, b.shared_concepts.join(", ")),
        h("td", {},
          b.status === "invalid"
            ? h("button", { type: "button", onclick: () => edit("validate", "Bridge restored") }, "Restore")
            : h("button", { type: "button", onclick: () => edit("invalidate", "Bridge invalidated") }, "Invalidate"),
          " ",
          h("button", { type: "button", class: "danger", onclick: () => confirmThen("Delete this bridge?", () => edit("delete", "Bridge deleted")) }, "Delete")));
    })));
}

// ---------- graph ----------

const RELATION_COLORS = { extends: "#4f8cc9", depends: "#d9a441", contradicts: "#d0574f", replaces: "#9b6bd0", child_of: "#6bbf8a", sibling: "#8a9099" };

views.graph = async () => {
  const [list, bridges] = await Promise.all([
    call({ threads: { status: "all", limit: 150 } }),
    call({ bridges: {} }),
  ]);
  const nodes = list.threads.map((t, i) => ({ t, i, x: 0, y: 0, vx: 0, vy: 0 }));
  const byId = new Map(nodes.map((n) => [n.t.id, n]));
  const edges = bridges.bridges.filter((b) => byId.has(b.source_id) && byId.has(b.target_id));
  layout(nodes, edges, byId);
  const W = 1000, H = 700;
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Graph of ${nodes.length} threads and ${edges.length} bridges` });
  for (const b of edges) {
    const a = byId.get(b.source_id), c = byId.get(b.target_id);
    const line = svg("line", { x1: a.x, y1: a.y, x2: c.x, y2: c.y,
      stroke: RELATION_COLORS[String(b.relation_type).toLowerCase()] || "#888",
      "stroke-width": (0.5 + 3 * b.weight).toFixed(2), "stroke-opacity": b.status === "invalid" ? 0.2 : 0.7,
      "stroke-dasharray": b.status === "weak" ? "4 3" : "" });
    const tip = svg("title", {}); tip.textContent = `${b.relation_type} (${b.status}, weight ${b.weight})`;
    line.append(tip);
    root.append(line);
  }
  for (const n of nodes) {
    const t = n.t;
    const r = 4 + 10 * Math.sqrt(Math.max(0.02, t.weight));
    const color = t.status === "active" ? "#4f8cc9" : t.status === "suspended" ? "#d9a441" : "#8a9099";
    const c = svg("circle", { cx: n.x, cy: n.y, r: r.toFixed(1), fill: color,
      "fill-opacity": (0.25 + 0.75 * Math.min(1, t.weight)).toFixed(2), tabindex: "0", role: "link",
      "aria-label": `${t.title}, ${t.status}, weight ${t.weight}` });
    const open = () => { location.hash = `#/thread/${encodeURIComponent(t.id)}`; };
    c.addEventListener("click", open);
    c.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
    const tip = svg("title", {}); tip.textContent = `${t.title} — ${t.status}, weight ${t.weight} (fades as it decays)`;
    c.append(tip);
    root.append(c);
    if (t.weight > 0.3 || nodes.length < 40) {
      const label = svg("text", { x: (n.x + r + 2).toFixed(1), y: (n.y + 3).toFixed(1) });
      label.textContent = t.title.length > 28 ? t.title.slice(0, 27) + "…" : t.title;
      root.append(label);
    }
  }
  current.onEvent = (kind) => { if (kind === "memory") liveRefresh(); };
  return h("section", { class: "graph" },
    h("h1", {}, "Graph"),
    h("p", { class: "muted" }, `${nodes.length} heaviest threads of ${list.total}, ${edges.length} bridges. `,
      "Size and opacity follow the weight (decay fades a thread); line width follows the bridge's weight, dashes mark weak bridges. Click a thread to open it."),
    h("div", { class: "legend" }, Object.entries(RELATION_COLORS).map(([k, c]) =>
      h("span", {}, h("span", { class: "swatch", style: `background:${c}` }), k))),
    root);
};

/** A small force layout: repulsion between threads, springs along bridges, a pull to the middle. */
function layout(nodes, edges, byId) {
  const W = 1000, H = 700, n = nodes.length;
  nodes.forEach((node, i) => {
    const a = (i / Math.max(1, n)) * Math.PI * 2 * 7.3;
    const r = 40 + 300 * Math.sqrt(i / Math.max(1, n));
    node.x = W / 2 + r * Math.cos(a); node.y = H / 2 + r * Math.sin(a);
  });
  const k = Math.sqrt((W * H) / Math.max(1, n)) * 0.6;
  for (let step = 0; step < 220; step++) {
    const cool = 1 - step / 220;
    for (const a of nodes) { a.vx = 0; a.vy = 0; }
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) {
      const a = nodes[i], b = nodes[j];
      let dx = a.x - b.x, dy = a.y - b.y; const d2 = Math.max(1, dx * dx + dy * dy);
      const f = (k * k) / d2; a.vx += dx * f; a.vy += dy * f; b.vx -= dx * f; b.vy -= dy * f;
    }
    for (const e of edges) {
      const a = byId.get(e.source_id), b = byId.get(e.target_id);
      const dx = a.x - b.x, dy = a.y - b.y; const d = Math.max(1, Math.hypot(dx, dy));
      const f = (d / k) * (0.5 + e.weight);
      a.vx -= (dx / d) * f * 10; a.vy -= (dy / d) * f * 10; b.vx += (dx / d) * f * 10; b.vy += (dy / d) * f * 10;
    }
    for (const a of nodes) {
      a.vx += (W / 2 - a.x) * 0.02; a.vy += (H / 2 - a.y) * 0.02;
      const v = Math.hypot(a.vx, a.vy) || 1; const m = Math.min(v, 30 * cool + 1);
      a.x = Math.min(W - 20, Math.max(20, a.x + (a.vx / v) * m));
      a.y = Math.min(H - 20, Math.max(20, a.y + (a.vy / v) * m));
    }
  }
}

// ---------- why was this injected ----------

views.why = async () => {
  const prompt = h("textarea", { id: "why-prompt", "aria-label": "A prompt", placeholder: "Type a prompt as you would send it to Claude Code" });
  const out = h("div", { id: "why-result" });
  const form = h("form", { onsubmit: async (e) => {
    e.preventDefault();
    out.replaceChildren(h("p", { class: "muted" }, "Looking…"));
    try { out.replaceChildren(explain(await call({ context: { prompt: prompt.value } }))); }
    catch (err) { out.replaceChildren(h("p", {}, err.message)); }
  } }, prompt, h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary", id: "why-go" }, "Explain")));
  return h("section", {}, h("h1", {}, "Why was this injected?"),
    h("p", { class: "muted" }, "What the memory would add to this prompt, each message with the parts of its score — or why it stays silent."),
    form, out);
};

function explain(r) {
  const d = r.decision || {};
  const parts = ["score", "dense", "lexical", "label", "neighbour", "episode", "thread"];
  const verdict = r.skipped ? `Skipped: ${r.skipped}`
    : r.abstained ? `Silent: the best evidence ${d.evidence} is under the bar ${d.bar}.`
    : `Spoke: evidence ${d.evidence} clears the bar ${d.bar}; ${(r.messages || []).length} messages, ${r.tokens} tokens.`;
  return h("div", {},
    h("div", { class: "panel" }, h("strong", {}, verdict)),
    r.candidate ? h("div", { class: "panel" }, h("h2", {}, "Best candidate"),
      h("p", {}, h("a", { href: `#/thread/${encodeURIComponent(r.candidate.thread_id)}` }, r.candidate.title), ": ", r.candidate.snippet),
      h("p", { class: "muted" }, parts.map((p) => `${p} ${r.candidate.why[p]}`).join(" · "))) : null,
    (r.messages || []).length ? h("table", { class: "why" },
      h("thead", {}, h("tr", {}, h("th", {}, "thread"), parts.map((p) => h("th", {}, p)))),
      h("tbody", {}, r.messages.map((m) => h("tr", {},
        h("td", {}, h("a", { href: `#/thread/${encodeURIComponent(m.thread_id)}` }, m.thread_id.slice(0, 18))),
        parts.map((p) => h("td", {}, m.why[p])))))) : null,
    r.context ? h("div", {}, h("h2", {}, "The block"), h("pre", { class: "block" }, r.context)) : null);
}

// ---------- rules ----------

views.rules = async () => {
  const r = await call({ rules: {} });
  const input = h("input", { id: "rule-input", class: "wide", "aria-label": "A new rule", placeholder: "e.g. always answer in French" });
  return h("section", {}, h("h1", {}, "User rules"),
    h("p", { class: "muted" }, "Your own words, sent with every prompt in their own section."),
    r.rules.length ? h("ol", { id: "rules" }, r.rules.map((rule, i) => h("li", {}, rule, " ",
      h("button", { type: "button", class: "danger", onclick: () => confirmThen(`Remove “${rule}”?`,
        () => act({ rules: { remove: i + 1 } }, "Removed").then(rerender)) }, "Remove"))))
      : h("p", { class: "muted" }, "No rule yet."),
    h("form", { class: "toolbar", onsubmit: (e) => {
      e.preventDefault();
      if (input.value.trim()) act({ rules: { add: input.value } }, "Added").then(rerender);
    } }, input, h("button", { type: "submit", class: "primary" }, "Add")));
};

// ---------- assistant ----------

views.assistant = async (sessionId) => {
  const [sessions, automations] = await Promise.all([
    call({ sessions: { limit: 40 } }),
    call({ automation: { action: "list" } }),
  ]);
  const list = h("div", { id: "sessions" }, sessions.sessions.filter((s) => s.kind !== "SEED").map((s) =>
    h("a", { class: "list-item", href: `#/assistant/${encodeURIComponent(s.id)}`, "aria-current": s.id === sessionId ? "true" : null },
      h("strong", {}, s.name || s.id), h("div", { class: "muted" }, `${s.kind.toLowerCase()} · ${s.state} · ${ago(s.updated_at)}`))));
  const chatPane = sessionId ? await chatView(sessionId) : newChat();
  current.onEvent = (kind, data) => {
    if (kind === "session" || kind === "lagged") {
      if (!sessionId || !data.session_id || data.session_id === sessionId || kind === "lagged") liveRefresh();
      else liveRefresh();
    }
  };
  return h("section", {}, h("h1", {}, "Assistant"),
    h("div", { class: "grid2" },
      h("div", {},
        h("div", { class: "panel" }, h("h2", {}, "Sessions"), h("a", { href: "#/assistant", class: "list-item" }, "+ New chat"), list),
        automationsPanel(automations.automations)),
      chatPane));
};

function newChat() {
  const text = h("textarea", { id: "chat-input", "aria-label": "Message to the assistant", placeholder: "Ask about the memory, or ask it to tidy something" });
  const validate = h("input", { type: "checkbox", id: "chat-validate" });
  return h("div", { class: "panel" }, h("h2", {}, "New chat"),
    h("form", { onsubmit: async (e) => {
      e.preventDefault();
      if (!text.value.trim()) return;
      try {
        const r = await call({ chat: { message: text.value, require_validation: validate.checked } });
        location.hash = `#/assistant/${encodeURIComponent(r.session_id)}`;
      } catch (err) { toast(err.message); }
    } }, text, h("div", { class: "toolbar" },
      h("label", {}, validate, " every action waits for my approval"),
      h("button", { type: "submit", class: "primary", id: "chat-send" }, "Send"))));
}

function bodyText(body) {
  switch (body.variant) {
    case "USER_RICH": return ["user", body.rich_content.linear_text];
    case "USER_TEXT": return ["user", body.text_content];
    case "AI_TEXT": return ["ai", body.text_content];
    case "AI": {
      const m = body.ai_message || {};
      const lines = [m.preText || ""];
      if (m.actionCommands) lines.push("Actions: " + m.actionCommands.map((c) => JSON.stringify(c)).join("; "));
      if (m.dataCommands) lines.push("Looking up: " + m.dataCommands.map((c) => JSON.stringify(c)).join("; "));
      if (m.communicationModule && m.communicationModule.data && m.communicationModule.data.question) lines.push(m.communicationModule.data.question);
      return ["ai", lines.filter(Boolean).join("\n")];
    }
    case "SYSTEM": return ["system", body.system_message.summary];
    default: return ["system", JSON.stringify(body)];
  }
}

async function chatView(id) {
  const s = await call({ session: { id } });
  const log = h("div", { class: "chat", id: "chat-log", "aria-live": "polite" }, s.messages.map((m) => {
    const [who, text] = bodyText(m.body);
    return h("div", { class: `bubble ${who}`, "data-variant": m.body.variant }, h("pre", {}, text));
  }));
  const reply = (kind, extra) => act({ [kind]: { session: id, ...extra } }).then(rerender);
  let waiting = null;
  if (s.state === "waiting_validation") {
    const last = [...s.messages].reverse().find((m) => m.body.variant === "AI");
    const actions = last && last.body.ai_message.actionCommands || [];
    waiting = approvalDialog(actions, reply);
  } else if (s.state === "waiting_answer") {
    const last = [...s.messages].reverse().find((m) => m.body.variant === "AI");
    const module = last && last.body.ai_message.communicationModule;
    const options = module && module.data && module.data.options || ["yes", "no"];
    waiting = h("div", { class: "panel", id: "answer" }, h("strong", {}, module && module.data && (module.data.question || module.data.message) || "The assistant asks:"),
      h("div", { class: "toolbar" }, options.map((o) => h("button", { type: "button", onclick: () => reply("answer", { choice: o }) }, o))));
  }
  const text = h("textarea", { id: "chat-input", "aria-label": "Message to the assistant" });
  const ended = s.state === "ended";
  return h("div", { class: "panel" },
    h("h2", {}, s.name || s.id), h("p", { class: "muted", id: "chat-state" }, `${s.kind.toLowerCase()} · ${s.state}`),
    log, waiting,
    ended ? h("p", { class: "muted" }, "This session has ended.") : h("form", { onsubmit: (e) => {
      e.preventDefault();
      if (text.value.trim()) act({ chat: { message: text.value, session: id } }).then(rerender);
    } }, text, h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary", id: "chat-send" }, "Send"))));
}

/** The approval dialog: what the assistant wants to do, approve or reject with feedback. */
function approvalDialog(actions, reply) {
  const feedback = h("textarea", { id: "reject-feedback", "aria-label": "Why not (sent to the assistant)", placeholder: "Why not? (optional, the assistant reads it)" });
  const dialog = h("dialog", { id: "approval", "aria-labelledby": "approval-title" },
    h("h2", { id: "approval-title" }, "The assistant asks to change the memory"),
    h("ul", {}, actions.map((a) => h("li", {}, h("strong", {}, a.type || "action"),
      h("pre", {}, Object.entries(a.params || {}).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join("\n"))))),
    feedback,
    h("menu", {},
      h("button", { type: "button", id: "reject", class: "danger", onclick: () => { dialog.close(); reply("reject", { feedback: feedback.value || undefined }); } }, "Reject"),
      h("button", { type: "button", id: "approve", class: "primary", onclick: () => { dialog.close(); reply("approve", {}); } }, "Approve")));
  const open = h("button", { type: "button", class: "primary", id: "open-approval", onclick: () => dialog.showModal() }, "Review the actions waiting for you");
  setTimeout(() => { if (dialog.isConnected && !dialog.open) dialog.showModal(); }, 0);
  return h("div", { class: "panel" }, open, dialog);
}

function automationsPanel(list) {
  const name = h("input", { id: "auto-name", "aria-label": "Name", placeholder: "Name" });
  const prompt = h("textarea", { id: "auto-prompt", "aria-label": "What it does", placeholder: "What it does, in words" });
  const schedule = h("input", { id: "auto-schedule", "aria-label": "Schedule (cron)", placeholder: "0 9 * * 1 (empty: by hand)" });
  const zone = h("input", { id: "auto-zone", "aria-label": "Time zone", value: Intl.DateTimeFormat().resolvedOptions().timeZone || "" });
  const run = (action, id, done) => act({ automation: { action, id } }, done).then(rerender);
  return h("div", { class: "panel" }, h("h2", {}, "Automations"),
    list.length ? h("ul", { id: "automations" }, list.map((a) => h("li", {},
      h("strong", {}, a.name), h("span", { class: "muted" }, ` ${a.schedule || "by hand"} (${a.timezone})`,
        a.enabled ? "" : " · disabled", a.paused ? " · paused" : "",
        a.next_run ? ` · next ${when(a.next_run.at)}` : ""),
      h("div", { class: "toolbar" },
        h("button", { type: "button", onclick: () => run("run", a.id, "Started") }, "Run now"),
        h("button", { type: "button", onclick: () => run("pause", a.id, "Paused") }, "Pause"),
        a.enabled ? h("button", { type: "button", onclick: () => run("disable", a.id, "Disabled") }, "Disable")
          : h("button", { type: "button", onclick: () => run("enable", a.id, "Enabled") }, "Enable"),
        h("button", { type: "button", class: "danger", onclick: () => confirmThen(`Delete the automation “${a.name}”?`, () => run("delete", a.id, "Deleted")) }, "Delete")))))
      : h("p", { class: "muted" }, "None yet."),
    h("form", { onsubmit: (e) => {
      e.preventDefault();
      act({ automation: { action: "create", name: name.value, prompt: prompt.value,
        schedule: schedule.value.trim() || undefined, timezone: zone.value.trim() || undefined } }, "Created").then(rerender);
    } }, h("h2", {}, "New automation"), name, prompt, schedule, zone,
      h("div", { class: "toolbar" }, h("button", { type: "submit" }, "Create"))));
}

// ---------- runs ----------

views.runs = async () => {
  const r = await call({ run: { action: "list" } });
  const task = h("input", { id: "run-task", class: "wide", "aria-label": "Task", placeholder: "A task for a verified workflow run" });
  current.onEvent = (kind) => { if (kind === "run") liveRefresh(); };
  return h("section", {}, h("h1", {}, "Workflow runs"),
    h("form", { class: "toolbar", onsubmit: async (e) => {
      e.preventDefault();
      try {
        const started = await call({ run: { action: "start", task: task.value } });
        location.hash = `#/run/${encodeURIComponent(started.id)}`;
      } catch (err) { toast(err.message); }
    } }, task, h("button", { type: "submit", class: "primary" }, "Start")),
    r.runs.length ? h("table", { id: "runs-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Task"), h("th", {}, "Phase"), h("th", {}, "Verdict"), h("th", { class: "hide-narrow" }, "Started"))),
      h("tbody", {}, r.runs.map((x) => h("tr", {},
        h("td", { class: "title" }, h("a", { href: `#/run/${encodeURIComponent(x.id)}` }, x.task)),
        h("td", {}, x.phase), h("td", {}, x.verdict || ""), h("td", { class: "hide-narrow" }, when(x.created_at))))))
      : h("p", { class: "muted" }, "No run yet."));
};

views.run = async (id) => {
  const run = await call({ run: { action: "show", id } });
  const events = h("div", { class: "events", id: "run-events", "aria-live": "polite" });
  const phase = h("span", { id: "run-phase" }, run.phase);
  const stream = new EventSource(`/api/runs/${encodeURIComponent(id)}/events`);
  stream.addEventListener("run_event", (e) => {
    let ev; try { ev = JSON.parse(e.data); } catch { return; }
    if (ev.type === "phase" && ev.data && ev.data.phase) phase.textContent = ev.data.phase;
    const detail = typeof ev.data === "object" ? JSON.stringify(ev.data) : String(ev.data);
    events.append(h("div", { "data-type": ev.type || "" }, h("strong", {}, ev.type || "event"), " ", detail.length > 400 ? detail.slice(0, 400) + "…" : detail));
    events.scrollTop = events.scrollHeight;
  });
  stream.addEventListener("end", async () => {
    stream.close();
    events.append(h("div", { "data-type": "end" }, h("em", {}, "run over")));
    // The verdict and the report came with the end: show them without replaying the events.
    try { header.replaceWith(header = runHeader(await call({ run: { action: "show", id } }))); }
    catch (err) { toast(err.message); }
  });
  current.cleanup = () => stream.close();
  const action = async (a, done) => {
    try {
      const r = await call({ run: { action: a, id } });
      toast(done, true);
      location.hash = `#/run/${encodeURIComponent(r.id)}`;
      if (r.id === id) rerender();
    } catch (err) { toast(err.message); }
  };
  const exportReport = async () => {
    try {
      const report = await call({ run: { action: "export", id } });
      const blob = new Blob([JSON.stringify(report, null, 2)], { type: "application/json" });
      const a = h("a", { href: URL.createObjectURL(blob), download: `${id}.json` });
      document.body.append(a); a.click(); a.remove();
    } catch (err) { toast(err.message); }
  };
  const runHeader = (run) => {
    const v = run.verdict;
    phase.textContent = run.phase;
    return h("div", { class: "panel" },
      h("p", {}, "Phase: ", phase, ` · ${run.mode} · started ${when(run.created_at)} by ${run.started_by} · ${run.repair_cycles} repair cycles`),
      v ? h("p", { id: "run-verdict" }, h("strong", {}, `Verdict: ${v.status}`), ` (confidence ${v.confidence}) — ${v.reasoning}`) : null,
      run.error ? h("p", {}, `Error: ${run.error}`) : null,
      run.response ? h("pre", { class: "block" }, run.response) : null,
      h("div", { class: "toolbar" },
        h("button", { type: "button", onclick: () => action("reverify", "Verifying again") }, "Re-verify"),
        h("button", { type: "button", onclick: () => action("repair", "Repairing") }, "Force repair"),
        h("button", { type: "button", onclick: exportReport }, "Export report")));
  };
  let header = runHeader(run);
  return h("section", {},
    h("p", {}, h("a", { href: "#/runs" }, "← Runs")),
    h("h1", {}, run.task),
    header,
    h("h2", {}, "Events"), events);
};

// ---------- start ----------

connect();
route();
