// Flow page: the agents and the events timeline stay live. It listens on each active chain's socket
// (/ws/chains/{id}/) and, when something happens on one, re-reads the server-rendered section it changes
// (escaped by Django) and swaps it in: the agents (sorted by last activity, with their loops) on messages, calls,
// rewrites, loops and new agents; the timeline when a view lands or a compaction starts/ends. A new agent or
// successor chain is listened to as soon as it appears. Events drive it: there is no polling loop. Without
// JavaScript the page is static.
const timeline = document.getElementById("timeline");
const agents = document.getElementById("agents");
const REFRESH_DEBOUNCE_MS = 300;
const MAX_BACKOFF_MS = 15000;
const TIMELINE_EVENTS = new Set(["view.updated", "compaction.started", "compaction.completed", "compaction.skipped",
  "compaction.failed", "chain.rewritten", "agent.loop"]);
const AGENT_EVENTS = new Set(["message.appended", "message.appended_up_to", "gateway.call.finished", "view.updated",
  "compaction.completed", "chain.rewritten", "agent.loop", "flow.agent_added"]);
const state = { open: 0, refreshes: 0, agentRefreshes: 0, listening: new Set(), timers: {} };

function setStatus() {
  const status = document.getElementById("timeline-status");
  if (!status) return;
  status.hidden = false;
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
  if (timeline && await swap(timeline.dataset.timelineUrl, "flow-timeline")) state.refreshes += 1;
}

async function refreshAgents() {
  if (!agents) return;
  const node = await swap(agents.dataset.agentsUrl, "flow-agents");
  if (!node) return;
  state.agentRefreshes += 1;
  for (const id of (node.dataset.chains || "").split(",").filter(Boolean)) listen(Number(id));
}

function schedule(name, fn) {
  clearTimeout(state.timers[name]);
  state.timers[name] = setTimeout(fn, REFRESH_DEBOUNCE_MS);
}

function onEvent(event) {
  if (TIMELINE_EVENTS.has(event.type)) schedule("timeline", refresh);
  if (AGENT_EVENTS.has(event.type)) schedule("agents", refreshAgents);
  if (event.type === "chain.rewritten" && event.successor_id) listen(Number(event.successor_id));
  if (event.type === "flow.agent_added" && event.new_chain_id) listen(Number(event.new_chain_id));
}

function listen(chainId) {
  if (!chainId || state.listening.has(chainId)) return; // one socket per chain, however often it is named
  state.listening.add(chainId);
  connect(chainId, 500);
}

function connect(chainId, backoff) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/chains/${chainId}/`);
  let opened = false;
  socket.addEventListener("open", () => { opened = true; state.open += 1; setStatus(); });
  socket.addEventListener("message", (e) => {
    let event;
    try { event = JSON.parse(e.data); } catch { return; }
    onEvent(event);
  });
  socket.addEventListener("close", () => { // catch up on what the gap missed, then reconnect
    if (opened) { state.open -= 1; setStatus(); schedule("timeline", refresh); schedule("agents", refreshAgents); }
    setTimeout(() => connect(chainId, Math.min(backoff * 2, MAX_BACKOFF_MS)), opened ? 500 : backoff);
  });
}

if (timeline && timeline.dataset.chains) {
  for (const id of timeline.dataset.chains.split(",").filter(Boolean)) listen(Number(id));
  window.pentagiFlow = { state, refresh, refreshAgents };
}
