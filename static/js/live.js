// Live updates for the chain page: one WebSocket, new raw messages appended as they arrive, the
// server-rendered view panel swapped in when a summarization lands, compaction notices, and a reconnect
// that catches up by seq (nothing missed, nothing twice). The page works without this file.
//
// Agent text is hostile: rows are built with createElement + textContent only, and the view panel is
// HTML that Django already escaped, parsed with DOMParser and imported node by node (no innerHTML).

const PREVIEW_CHARS = 240;
// Reconnects back off exponentially with jitter: after a server restart every open tab reconnects, and
// spreading them over the window keeps that from becoming a storm of simultaneous handshakes.
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 15000;
const CLOSE_SIGNED_OUT = 4401; // the session ended (logout, deactivation) or there is none: stop
const CLOSE_RECONNECT = 4503; // the server asks for a reconnect (password change, overload): back off, retry
const NOTICE_LIMIT = 3;
const CATCH_UP_MAX_ROUNDS = 50;

const state = { ws: null, attempt: 0, lastSeq: 0, toolNames: new Map(), refreshing: false, refreshAgain: false,
  catchingUp: false, catchUpAgain: false, selected: null, stats: { live: 0, caughtUp: 0, swaps: 0, reconnects: 0, heartbeats: 0 } };

const root = () => document.getElementById("chain-live");

function kb(n) {
  if (Math.abs(n) < 1024) return `${n} B`;
  if (Math.abs(n) < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1048576).toFixed(1)} MB`;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function messageText(m) {
  const parts = [];
  if (typeof m.content === "string") parts.push(m.content);
  else if (Array.isArray(m.content)) {
    for (const p of m.content) if (p && typeof p === "object") parts.push(String(p.text || (p.image_url && p.image_url.url) || ""));
  }
  for (const c of m.tool_calls || []) {
    const fn = (c && c.function) || {};
    parts.push(`→ ${fn.name || "?"}(${fn.arguments || ""})`);
  }
  return parts.filter(Boolean).join("\n");
}

function toolName(m) {
  if (m.role === "tool") return m.name || state.toolNames.get(m.tool_call_id) || "";
  return (m.tool_calls || []).map((c) => ((c && c.function) || {}).name || "?").join(", ");
}

function learnTools(m) {
  for (const c of m.tool_calls || []) if (c && c.id) state.toolNames.set(c.id, ((c.function || {}).name) || "");
}

// One raw row, the same shape as templates/flows/partials/raw_message.html.
function rawRow(m) {
  const li = el("li", `msg role-${m.role} is-new`);
  li.id = `m-${m.seq}`;
  li.dataset.seq = String(m.seq);
  const meta = el("div", "msg-meta");
  const seq = el("a", "seq seq-link", `#${m.seq}`);
  const size = Number((root() && root().dataset.pageSize) || 200);
  seq.href = `${window.location.pathname}?page=${Math.floor((m.seq - 1) / size) + 1}#m-${m.seq}`;
  meta.append(seq, " ", el("span", "role", m.role));
  const tool = toolName(m);
  if (tool) meta.append(" ", el("span", "tool", tool));
  const tokens = m.token_count === null || m.token_count === undefined ? "" : ` · ${m.token_count} tok`;
  meta.append(el("span", "size", kb(m.byte_size || 0) + tokens));
  li.append(meta);
  const thinking = m.reasoning && typeof m.reasoning.content === "string" ? m.reasoning.content : "";
  if (thinking) {
    const fold = el("details", "msg-body msg-thinking");
    fold.append(el("summary", "", "thinking"), el("pre", "", thinking));
    li.append(fold);
  }
  const text = messageText(m);
  if (text.length > PREVIEW_CHARS) {
    const details = el("details", "msg-body");
    details.append(el("summary", "", text.slice(0, PREVIEW_CHARS).trimEnd() + " …"), el("pre", "", text));
    li.append(details);
  } else if (text) {
    li.append(el("pre", "msg-body", text));
  }
  return li;
}

function appendMessages(messages) {
  const r = root();
  if (!r) return;
  const live = r.dataset.liveAppend === "1";
  const band = document.getElementById("pending-band");
  const list = document.getElementById("pending-list");
  let added = 0;
  let grew = 0;
  const counted = [];
  for (const m of messages.slice().sort((a, b) => a.seq - b.seq)) {
    learnTools(m);
    if (m.seq <= state.lastSeq) continue; // already shown (dedupe by seq)
    if (m.seq !== state.lastSeq + 1) { catchUp(); break; } // a gap: ask the server for what we missed
    state.lastSeq = m.seq;
    grew += m.byte_size || 0;
    counted.push(m);
    if (live && list && !document.getElementById(`m-${m.seq}`)) {
      list.append(rawRow(m));
      added += 1;
    }
  }
  if (added && band) band.hidden = false;
  if (grew) growRawLegend(grew);
  growRawCard(counted);
  if (!live && messages.length) notice(`New messages up to #${state.lastSeq}: open the newest page to see them.`, "", "new");
}

// The chart legend's raw-chain size follows appends; the charts themselves are redrawn with the next view.
function growRawLegend(bytes) {
  const legend = document.querySelector(".lg-raw[data-live-bytes]");
  if (!legend) return;
  const total = Number(legend.dataset.liveBytes || 0) + bytes;
  legend.dataset.liveBytes = String(total);
  legend.textContent = `raw chain ${kb(total)}`;
}

// Tokens as the `ktok` template filter writes them (950 / 12.3k / 1.20M), numbers as `num` (12,345).
function ktok(n) {
  if (Math.abs(n) < 1000) return String(n);
  if (Math.abs(n) < 1000000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1000000).toFixed(2)}M`;
}

const num = (n) => n.toLocaleString("en-US");

// The "Raw chain" stat card follows appends with the legend, so the card, the legend and the list agree.
function growRawCard(added) {
  const card = document.getElementById("stat-raw");
  if (!card || !added.length) return;
  const figures = { bytes: Number(card.dataset.bytes || 0), messages: Number(card.dataset.messages || 0),
    tokens: Number(card.dataset.tokens || 0) };
  for (const m of added) {
    figures.bytes += m.byte_size || 0;
    figures.tokens += m.token_count || 0;
  }
  figures.messages = Math.max(figures.messages, state.lastSeq); // seqs are contiguous from 1: the count is the last
  const shown = { bytes: kb(figures.bytes), messages: num(figures.messages), tokens: ktok(figures.tokens) };
  for (const [name, value] of Object.entries(figures)) {
    card.dataset[name] = String(value);
    const node = card.querySelector(`[data-fig="${name}"]`);
    if (node) node.textContent = shown[name];
  }
}

async function fetchJSON(url) {
  const res = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`${res.status} ${url}`);
  return res.json();
}

// Ask for everything after the last seq we hold, page by page, until the server has nothing newer.
async function catchUp() {
  if (state.catchingUp) { state.catchUpAgain = true; return; }
  const r = root();
  if (!r) return;
  state.catchingUp = true;
  try {
    for (let round = 0; round < CATCH_UP_MAX_ROUNDS; round += 1) {
      const data = await fetchJSON(`${r.dataset.messagesUrl}?after_seq=${state.lastSeq}`);
      const messages = Array.isArray(data) ? data : data.messages || [];
      if (!messages.length) break;
      const before = state.lastSeq;
      appendMessages(messages.filter((m) => m.seq > state.lastSeq));
      state.stats.caughtUp += state.lastSeq - before;
      if (state.lastSeq === before) break;
    }
  } catch (err) {
    console.warn("catch-up failed", err);
  } finally {
    state.catchingUp = false;
    if (state.catchUpAgain) { state.catchUpAgain = false; catchUp(); }
  }
}

function rememberOpen(r) {
  return new Set([...r.querySelectorAll("details[open]")].map((d) => d.closest("[id]") && d.closest("[id]").id));
}

// Swap in the server-rendered panel (escaped by Django). Nodes are imported, never assigned as HTML strings.
async function refreshPanel() {
  if (state.refreshing) { state.refreshAgain = true; return; }
  const r = root();
  if (!r) return;
  state.refreshing = true;
  try {
    const res = await fetch(r.dataset.panelUrl, { credentials: "same-origin" });
    if (!res.ok) throw new Error(`${res.status}`);
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const fresh = doc.getElementById("chain-live");
    if (!fresh) throw new Error("panel without #chain-live");
    const open = rememberOpen(r);
    const y = window.scrollY;
    const node = document.importNode(fresh, true);
    r.replaceWith(node);
    for (const id of open) { const host = id && document.getElementById(id); const d = host && host.querySelector("details"); if (d) d.open = true; }
    window.scrollTo(0, y);
    state.lastSeq = Number(node.dataset.lastSeq || 0);
    state.stats.swaps += 1;
    if (state.selected !== null) select(state.selected, false);
    catchUp();
  } catch (err) {
    console.warn("view refresh failed", err);
  } finally {
    state.refreshing = false;
    if (state.refreshAgain) { state.refreshAgain = false; refreshPanel(); }
  }
}

// One line per notice (full text on hover); a compaction's "started" line is replaced by its outcome. Notices of
// compactions this page queued itself ("own") are kept while others scroll out, so they always report back.
const ownEvents = new Set();

function notice(text, kind, key) {
  const box = document.getElementById("notices");
  if (!box) return;
  const n = el("div", `notice${kind ? ` is-${kind}` : ""}`, text);
  n.title = text;
  if (key) n.dataset.key = key;
  if (key && ownEvents.has(key)) n.classList.add("is-own");
  const old = key && [...box.children].find((c) => c.dataset.key === key);
  if (old) old.replaceWith(n); else box.prepend(n);
  while (box.children.length > NOTICE_LIMIT) {
    const others = [...box.children].filter((c) => !c.classList.contains("is-own"));
    (others.length ? others[others.length - 1] : box.lastElementChild).remove();
  }
}

// The compaction this page just queued (chain_page.js): its notices are matched by event id. The worker can be
// quicker than the answer to the POST: a notice of this event that is already here (started, or its outcome)
// is kept and marked as ours, never overwritten by "queued".
function trackCompaction(eventId, text) {
  const key = `event-${eventId}`;
  ownEvents.add(key);
  const box = document.getElementById("notices");
  const seen = box && [...box.children].find((c) => c.dataset.key === key);
  if (seen) seen.classList.add("is-own"); else notice(text, "", key);
}

function onEvent(ev) {
  switch (ev.type) {
    case "message.appended":
      state.stats.live += (ev.messages || []).length;
      appendMessages(ev.messages || []);
      if (ev.last_seq > state.lastSeq) catchUp(); // the event payload is capped; fetch the rest by seq
      break;
    case "message.appended_up_to": // a coalesced burst: its messages when small and whole, else only its range
      state.stats.live += (ev.messages || []).length;
      appendMessages(ev.messages || []);
      if (ev.last_seq > state.lastSeq) catchUp();
      break;
    case "heartbeat": // the chain's stored last seq: a frame dropped under load is caught up here
      state.stats.heartbeats += 1;
      if (ev.last_seq > state.lastSeq) catchUp();
      break;
    case "view.updated":
      refreshPanel();
      break;
    case "compaction.started":
      notice(`Compaction #${ev.event_id} started (${ev.trigger})…`, "", `event-${ev.event_id}`);
      break;
    case "compaction.completed": {
      notice(`Compaction #${ev.event_id} complete (${ev.trigger}): ${kb(ev.bytes_before)} → ${kb(ev.bytes_after)}, `
        + `${ev.tokens_before} → ${ev.tokens_after} tokens, ${ev.calls} call(s), ${ev.duration_ms} ms`, "ok", `event-${ev.event_id}`);
      const count = document.getElementById("compactions-count");
      if (count && ev.compactions !== undefined) count.textContent = String(ev.compactions);
      refreshPanel();
      break;
    }
    case "compaction.skipped": // finished without changing the view: close the notice with the reason
      notice(`Compaction #${ev.event_id} changed nothing (${ev.trigger}): ${ev.reason || "nothing to compact"}`, "skipped", `event-${ev.event_id}`);
      break;
    case "compaction.failed":
      notice(`Compaction #${ev.event_id} failed (${ev.trigger}): ${ev.reason || "unknown reason"}`, "failed", `event-${ev.event_id}`);
      refreshPanel();
      break;
    case "agent.loop": // the gateway saw the agent repeat a tool call; the page's loop list has it on reload
      notice(`Agent loop: ${ev.tool_name} called ${ev.repeats}× ${ev.in_a_row ? "in a row" : `within the last ${ev.window} calls`}`,
        "failed", `loop-${ev.loop_id}`);
      break;
    default:
      break;
  }
}

function setStatus(stateName, text) {
  const s = document.getElementById("live-status");
  if (!s) return;
  s.dataset.state = stateName;
  s.textContent = text;
}

// Past the per-user socket cap (WS_MAX_PER_USER) the server refuses the socket with 4429: say why, retry slowly
// (a tab closed elsewhere frees a slot) instead of a silent "reconnecting" loop.
const TOO_MANY_RETRY_MS = 30000;

function tooManyTabs() {
  const cap = root()?.dataset.wsCap || "";
  setStatus("capped", `not live: ${cap ? `${cap} live tabs` : "too many live tabs"} open for your account; close one (retrying every 30 s)`);
  window.setTimeout(connect, TOO_MANY_RETRY_MS);
}

// Live once the server says hello; the backoff starts over only then.
function onLive() {
  const wasReconnect = state.attempt > 0;
  state.attempt = 0;
  setStatus("live", "live");
  if (wasReconnect) { state.stats.reconnects += 1; catchUp(); refreshPanel(); }
}

// Half the exponential step plus a random share of the other half: never 0, never in step with other tabs.
function reconnectDelay(attempt) {
  const step = Math.min(BACKOFF_BASE_MS * 2 ** attempt, BACKOFF_MAX_MS);
  return step / 2 + Math.random() * (step / 2);
}

function connect() {
  const r = root();
  if (!r) return;
  const proto = window.location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${proto}://${window.location.host}/ws/chains/${r.dataset.chainId}/`);
  state.ws = ws;
  ws.addEventListener("message", (msg) => {
    let ev;
    try { ev = JSON.parse(msg.data); } catch { return; }
    if (!ev || typeof ev !== "object") return;
    if (ev.type === "hello") onLive(); // not on open: a busy server accepts, then closes with 4503
    onEvent(ev);
    // One socket per page: the page's other modules (gateway_calls.js) hear the same frames from here.
    document.dispatchEvent(new CustomEvent("pentagi:live", { detail: ev }));
  });
  ws.addEventListener("close", (e) => {
    if (state.ws !== ws) return;
    document.dispatchEvent(new CustomEvent("pentagi:live", { detail: { type: "socket.closed", code: e.code } }));
    if (e.code === CLOSE_SIGNED_OUT) { setStatus("off", "not live: signed out (log in again)"); return; }
    if (e.code === 4404) { setStatus("off", "live updates unavailable (not allowed)"); return; }
    if (e.code === 4429) { tooManyTabs(); return; }
    const delay = reconnectDelay(state.attempt);
    state.attempt += 1;
    const why = e.code === CLOSE_RECONNECT ? "the server asked to reconnect; " : "";
    setStatus("reconnecting", `${why}reconnecting in ${Math.max(1, Math.round(delay / 1000))} s…`);
    window.setTimeout(connect, delay);
  });
}

// Lineage: selecting a summary highlights the raw messages it replaced (click, Enter or Space).
function parseRanges(text) {
  const out = [];
  for (const part of (text || "").split(",")) {
    if (!part) continue;
    const [a, b] = part.split("-").map(Number);
    out.push([a, Number.isNaN(b) || b === undefined ? a : b]);
  }
  return out;
}

function select(index, toggle) {
  const article = document.getElementById(`v-${index}`);
  const same = state.selected === index && toggle;
  for (const n of document.querySelectorAll(".msg.is-lineage")) n.classList.remove("is-lineage");
  for (const n of document.querySelectorAll(".vmsg.is-selected")) n.classList.remove("is-selected");
  for (const n of document.querySelectorAll(".lineage-link[aria-pressed='true']")) n.setAttribute("aria-pressed", "false");
  if (same || !article) { state.selected = null; return; }
  state.selected = index;
  article.classList.add("is-selected");
  const link = article.querySelector(".lineage-link");
  if (link) link.setAttribute("aria-pressed", "true");
  const ranges = parseRanges(article.dataset.lineage);
  let first = null;
  for (const row of document.querySelectorAll(".raw-list .msg")) {
    const seq = Number(row.dataset.seq);
    if (ranges.some(([a, b]) => seq >= a && seq <= b)) { row.classList.add("is-lineage"); first = first || row; }
  }
  if (first && toggle) first.scrollIntoView({ block: "nearest", behavior: "smooth" });
}

document.addEventListener("click", (e) => {
  const link = e.target.closest(".lineage-link");
  if (!link) return;
  e.preventDefault();
  select(Number(link.dataset.index), true);
});
document.addEventListener("keydown", (e) => {
  const link = e.target.closest && e.target.closest(".lineage-link");
  if (link && e.key === " ") { e.preventDefault(); select(Number(link.dataset.index), true); }
});

const start = root();
if (start) {
  state.lastSeq = Number(start.dataset.lastSeq || 0);
  const preselected = start.querySelector(".vmsg.is-selected");
  if (preselected) state.selected = Number(preselected.dataset.index);
  setStatus("connecting", "connecting…");
  connect();
  // A small handle for debugging and for the browser tests (drop the socket, read counters).
  window.pentagiLive = { state, drop: () => state.ws && state.ws.close(), refresh: refreshPanel, catchUp,
    trackCompaction, notice };
}
