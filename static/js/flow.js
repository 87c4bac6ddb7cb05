// Flow page: the events timeline stays live. It listens on each active chain's socket (/ws/chains/{id}/) and,
// when a view lands or a compaction starts/ends, re-reads the server-rendered timeline section (escaped by
// Django) and swaps it in. Events drive it: there is no polling loop. Without JavaScript the page is static.
const section = document.getElementById("timeline");
const REFRESH_DEBOUNCE_MS = 300;
const MAX_BACKOFF_MS = 15000;
const REFRESHING = new Set(["view.updated", "compaction.started", "compaction.completed", "compaction.skipped", "compaction.failed"]);
const state = { open: 0, refreshes: 0, timer: 0 };

function setStatus() {
  const status = document.getElementById("timeline-status");
  if (!status) return;
  status.hidden = false;
  status.dataset.state = state.open > 0 ? "live" : "offline";
  status.textContent = state.open > 0 ? "● live" : "○ reconnecting…";
}

async function refresh() {
  const res = await fetch(section.dataset.timelineUrl, { credentials: "same-origin" });
  if (!res.ok) return;
  const incoming = new DOMParser().parseFromString(await res.text(), "text/html").getElementById("flow-timeline");
  const current = document.getElementById("flow-timeline");
  if (incoming && current) {
    current.replaceWith(document.adoptNode(incoming));
    state.refreshes += 1;
  }
}

function scheduleRefresh() {
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, REFRESH_DEBOUNCE_MS);
}

function listen(chainId, backoff = 500) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/chains/${chainId}/`);
  let opened = false;
  socket.addEventListener("open", () => { opened = true; state.open += 1; setStatus(); });
  socket.addEventListener("message", (e) => {
    let event;
    try { event = JSON.parse(e.data); } catch { return; }
    if (REFRESHING.has(event.type)) scheduleRefresh();
  });
  socket.addEventListener("close", () => {
    if (opened) { state.open -= 1; setStatus(); scheduleRefresh(); } // catch up on what the gap missed
    setTimeout(() => listen(chainId, Math.min(backoff * 2, MAX_BACKOFF_MS)), opened ? 500 : backoff);
  });
}

if (section && section.dataset.chains) {
  for (const id of section.dataset.chains.split(",").filter(Boolean)) listen(Number(id));
  window.pentagiFlow = { state, refresh };
}
