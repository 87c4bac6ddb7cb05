// Flow page: the events timeline stays live. One socket for the whole flow (/ws/flows/{id}/: the server joins
// every chain of the flow, new ones included) and, when a view lands or a compaction starts/ends, the page
// re-reads the server-rendered timeline section (escaped by Django) and swaps it in. Events drive it: there is
// no polling loop. Without JavaScript the page is static.
const section = document.getElementById("timeline");
const REFRESH_DEBOUNCE_MS = 300;
const MAX_BACKOFF_MS = 15000;
const TOO_MANY_RETRY_MS = 30000;
const CLOSE_TOO_MANY = 4429; // past the per-user socket cap (WS_MAX_PER_USER)
const REFRESHING = new Set(["view.updated", "compaction.started", "compaction.completed", "compaction.skipped", "compaction.failed"]);
const state = { open: 0, refreshes: 0, timer: 0, frames: 0, capped: false };

function setStatus() {
  const status = document.getElementById("timeline-status");
  if (!status) return;
  status.hidden = false;
  if (state.capped) {
    const cap = section.dataset.wsCap;
    status.dataset.state = "capped";
    status.textContent = `○ not live: ${cap ? `${cap} live tabs` : "too many live tabs"} open for your account; close one (retrying every 30 s)`;
    return;
  }
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

function listen(backoff = 500) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/flows/${encodeURIComponent(section.dataset.flowId)}/`);
  let opened = false;
  socket.addEventListener("open", () => { opened = true; state.open = 1; state.capped = false; setStatus(); });
  socket.addEventListener("message", (e) => {
    let event;
    try { event = JSON.parse(e.data); } catch { return; }
    state.frames += 1;
    if (REFRESHING.has(event.type)) scheduleRefresh();
    document.dispatchEvent(new CustomEvent("pentagi:live", { detail: event }));
  });
  socket.addEventListener("close", (e) => {
    if (opened) { state.open = 0; scheduleRefresh(); } // catch up on what the gap missed
    if (e.code === 4401 || e.code === 4404) { setStatus(); return; }
    state.capped = e.code === CLOSE_TOO_MANY;
    setStatus();
    const delay = state.capped ? TOO_MANY_RETRY_MS : (opened ? 500 : backoff);
    setTimeout(() => listen(Math.min(backoff * 2, MAX_BACKOFF_MS)), delay);
  });
}

if (section && section.dataset.flowId) {
  listen();
  window.pentagiFlow = { state, refresh };
}
