// Flow page: the agents and the events timeline stay live on one socket for the whole flow (/ws/flows/{id}/: the
// server joins every chain of the flow, an agent or successor chain that appears later included). When something
// happens on a chain the page re-reads the server-rendered section it changes (escaped by Django) and swaps it in:
// the agents (sorted by last activity, with their loops) on messages, calls, rewrites, loops and new agents; the
// timeline when a view lands or a compaction starts/ends. Events drive it: there is no polling loop. Without
// JavaScript the page is static.
const timeline = document.getElementById("timeline");
const agents = document.getElementById("agents");
const REFRESH_DEBOUNCE_MS = 300;
const MAX_BACKOFF_MS = 15000;
const TOO_MANY_RETRY_MS = 30000;
const CLOSE_TOO_MANY = 4429; // past the per-user socket cap (WS_MAX_PER_USER)
const TIMELINE_EVENTS = new Set(["view.updated", "compaction.started", "compaction.completed", "compaction.skipped",
  "compaction.failed", "chain.rewritten", "agent.loop"]);
const AGENT_EVENTS = new Set(["message.appended", "message.appended_up_to", "gateway.call.finished", "view.updated",
  "compaction.completed", "chain.rewritten", "agent.loop", "flow.agent_added", "flow.chain_added"]);
const state = { open: 0, refreshes: 0, agentRefreshes: 0, frames: 0, capped: false, timers: {} };

function setStatus() {
  const status = document.getElementById("timeline-status");
  if (!status) return;
  status.hidden = false;
  if (state.capped) {
    const cap = timeline.dataset.wsCap;
    status.dataset.state = "capped";
    status.textContent = `○ not live: ${cap ? `${cap} live tabs` : "too many live tabs"} open for your account; close one (retrying every 30 s)`;
    return;
  }
  status.dataset.state = state.open > 0 ? "live" : "offline";
  status.textContent = state.open > 0 ? "● live" : "○ reconnecting…";
}

async function swap(url, id) {
  const res = await fetch(url, { credentials: "same-origin" });
  if (!res.ok) return null;
  const incoming = new DOMParser().parseFromString(await res.text(), "text/html").getElementById(id);
  const current = document.getElementById(id);
  if (!incoming || !current) return null;
  const node = document.adoptNode(incoming);
  current.replaceWith(node);
  return node;
}

async function refresh() {
  if (await swap(timeline.dataset.timelineUrl, "flow-timeline")) state.refreshes += 1;
}

async function refreshAgents() {
  if (agents && await swap(agents.dataset.agentsUrl, "flow-agents")) state.agentRefreshes += 1;
}

function schedule(name, fn) {
  clearTimeout(state.timers[name]);
  state.timers[name] = setTimeout(fn, REFRESH_DEBOUNCE_MS);
}

function onEvent(event) {
  if (TIMELINE_EVENTS.has(event.type)) schedule("timeline", refresh);
  if (AGENT_EVENTS.has(event.type)) schedule("agents", refreshAgents);
}

function listen(backoff = 500) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/flows/${encodeURIComponent(timeline.dataset.flowId)}/`);
  let opened = false;
  socket.addEventListener("open", () => { opened = true; state.open = 1; state.capped = false; setStatus(); });
  socket.addEventListener("message", (e) => {
    let event;
    try { event = JSON.parse(e.data); } catch { return; }
    state.frames += 1;
    onEvent(event);
    document.dispatchEvent(new CustomEvent("pentagi:live", { detail: event }));
  });
  socket.addEventListener("close", (e) => {
    if (opened) { state.open = 0; schedule("timeline", refresh); schedule("agents", refreshAgents); } // catch up
    if (e.code === 4401 || e.code === 4404) { setStatus(); return; }
    state.capped = e.code === CLOSE_TOO_MANY;
    setStatus();
    // jittered, so the tabs a server restart dropped do not all reconnect in the same instant
    const delay = state.capped ? TOO_MANY_RETRY_MS : (opened ? 500 : backoff) * (0.5 + Math.random());
    setTimeout(() => listen(Math.min(backoff * 2, MAX_BACKOFF_MS)), delay);
  });
}

if (timeline && timeline.dataset.flowId) {
  listen();
  window.pentagiFlow = { state, refresh, refreshAgents };
}
