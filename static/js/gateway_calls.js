// Live gateway calls on the chain page: rows for calls as they start, retry and finish, and the text of a
// streaming answer as it arrives. It listens to the page's one socket (live.js) rather than opening its own.
// Agent text is hostile: everything is built with createElement + textContent.

const section = document.getElementById("gateway-calls");

function cell(text, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.textContent = text;
  return td;
}

function badge(text, className) {
  const span = document.createElement("span");
  span.className = className;
  span.textContent = text;
  return span;
}

const num = (n) => Number(n || 0).toLocaleString("en-US"); // as the `num` template filter: 12,345

// The same element the server renders; static/js/times.js formats it like every other time on the page.
function timeCell(iso) {
  const td = document.createElement("td");
  const time = document.createElement("time");
  time.setAttribute("datetime", iso);
  time.dataset.fmt = "time";
  time.textContent = iso.slice(11, 19);
  td.append(time);
  return td;
}

function usageText(usage) {
  if (!usage || typeof usage !== "object") return "–";
  return `${usage.prompt_tokens ?? "–"} / ${usage.completion_tokens ?? "–"}`;
}

function renderRow(ev) {
  const chainId = section.dataset.chainId;
  const tr = document.createElement("tr");
  tr.dataset.callId = String(ev.call_id);
  tr.className = `call-${ev.status}`;
  const link = document.createElement("a");
  link.href = `/chains/${encodeURIComponent(chainId)}/calls/${encodeURIComponent(ev.call_id)}/`;
  link.textContent = `#${ev.call_id}`;
  const first = document.createElement("td");
  first.append(link);
  const mode = document.createElement("td");
  mode.append(badge(ev.mode, "badge"));
  if (ev.stream) mode.append(" ", badge("stream", "muted small"));
  const status = document.createElement("td");
  status.append(badge(ev.status, `badge outcome ${ev.status}`));
  if (ev.error) {
    const err = document.createElement("div");
    err.className = "small muted";
    err.textContent = ev.error.slice(0, 160);
    status.append(err);
  }
  tr.append(first, timeCell(new Date().toISOString()), mode, cell(ev.model, "small"), status,
    cell(num(ev.sent_message_count), "num"), cell(num(ev.sent_tokens), "num"), cell(usageText(ev.usage), "num"),
    cell(String(ev.attempts), "num"), cell(`${num(ev.latency_ms)} ms`, "num"),
    cell(ev.cost_usd ? `$${Number(ev.cost_usd).toFixed(4)}` : "–", "num"));
  return tr;
}

function upsert(ev) {
  const rows = document.getElementById("gateway-calls-rows");
  const empty = rows.querySelector("tr.empty");
  if (empty) empty.remove();
  const row = renderRow(ev);
  const existing = rows.querySelector(`tr[data-call-id="${CSS.escape(String(ev.call_id))}"]`);
  if (existing) {
    row.cells[1].replaceWith(existing.cells[1]); // the call's start time, not the time of its last update
    existing.replaceWith(row);
  } else rows.prepend(row);
}

function liveAnswer(ev) {
  const box = document.getElementById("gateway-live-answer");
  const pre = box.querySelector("pre");
  if (box.dataset.callId !== String(ev.call_id)) {
    box.dataset.callId = String(ev.call_id);
    pre.textContent = "";
  }
  box.hidden = false;
  pre.textContent += ev.text;
}

function handle(ev) {
  if (ev.type === "hello") section.dataset.live = "on";
  else if (ev.type === "socket.closed") section.dataset.live = "off";
  else if (ev.type === "gateway.call.started" || ev.type === "gateway.call.retried") upsert(ev);
  else if (ev.type === "gateway.call.finished") {
    upsert(ev);
    const box = document.getElementById("gateway-live-answer");
    if (box.dataset.callId === String(ev.call_id)) box.hidden = true;
  } else if (ev.type === "gateway.call.delta") liveAnswer(ev);
}

// The chain page's one socket belongs to live.js, which re-dispatches every frame as a "pentagi:live" event.
if (section) {
  document.addEventListener("pentagi:live", (e) => {
    try { handle(e.detail); } catch (err) { console.warn("gateway event ignored", err); }
  });
  // The socket may have opened before this module ran (modules load one after another).
  if (window.pentagiLive?.state.ws?.readyState === WebSocket.OPEN) section.dataset.live = "on";
}
