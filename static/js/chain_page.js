// Chain page helpers on top of the server-rendered page (which works without them): "Compact now" without a
// reload, deep links to a message on whatever page holds it, search hits highlighted, and keyboard shortcuts.
// Agent text is hostile: highlighting splits text nodes and wraps hits in <mark> built with textContent.

const live = () => window.pentagiLive;
const chainLive = () => document.getElementById("chain-live");

// ---------------------------------------------------------------- "Compact now" without a reload
function compactForm() {
  const form = document.getElementById("compact-form");
  const popover = document.getElementById("compact-now");
  if (!form || !popover) return;
  form.addEventListener("submit", async (e) => {
    if (e.submitter && e.submitter.hasAttribute("data-dry-run")) return; // the dry run is its own page
    e.preventDefault();
    const button = e.submitter || form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const res = await fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin",
        headers: { Accept: "application/json" } });
      const data = await res.json().catch(() => ({}));
      if (!res.ok) {
        live() && live().notice(data.error || `Compaction not queued (HTTP ${res.status}).`, "failed", "compact-error");
        return;
      }
      live() && live().trackCompaction(data.event_id, data.message);
      form.reset();
      popover.open = false;
    } catch (err) {
      live() && live().notice(`Compaction not queued: ${err.message}`, "failed", "compact-error");
    } finally {
      button.disabled = false;
    }
  });
}

// ---------------------------------------------------------------- deep links (#m-N)
function targetSeq() {
  const m = /^#m-(\d+)$/.exec(window.location.hash);
  return m ? Number(m[1]) : null;
}

function showTarget() {
  const seq = targetSeq();
  if (seq === null) return;
  const row = document.getElementById(`m-${seq}`);
  const r = chainLive();
  if (!row && r) {
    const size = Number(r.dataset.pageSize || 200);
    const page = Math.floor((seq - 1) / size) + 1;
    if (String(page) !== r.dataset.page || r.dataset.query) {
      window.location.replace(`${window.location.pathname}?page=${page}#m-${seq}`);
    }
    return;
  }
  if (!row) return;
  for (const n of document.querySelectorAll(".is-target")) n.classList.remove("is-target");
  row.classList.add("is-target");
  const details = row.querySelector("details");
  if (details) details.open = true;
  row.scrollIntoView({ block: "center" });
  row.setAttribute("tabindex", "-1");
  row.focus({ preventScroll: true });
}

// ---------------------------------------------------------------- search hits
function highlight(root, query) {
  if (!root || !query) return 0;
  const needle = query.toLowerCase();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement && n.parentElement.closest(".msg-body, .vmsg pre")
      && !n.parentElement.closest("mark") && n.nodeValue.toLowerCase().includes(needle)
      ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let hits = 0;
  for (const node of nodes) {
    const text = node.nodeValue;
    const lower = text.toLowerCase();
    const frag = document.createDocumentFragment();
    let at = 0;
    for (let i = lower.indexOf(needle); i !== -1; i = lower.indexOf(needle, at)) {
      frag.append(document.createTextNode(text.slice(at, i)));
      const mark = document.createElement("mark");
      mark.className = "hit";
      mark.textContent = text.slice(i, i + needle.length);
      frag.append(mark);
      at = i + needle.length;
      hits += 1;
    }
    frag.append(document.createTextNode(text.slice(at)));
    node.replaceWith(frag);
  }
  return hits;
}

function highlightQuery() {
  const r = chainLive();
  if (r && r.dataset.query) highlight(r.querySelector(".sxs"), r.dataset.query);
}

// ---------------------------------------------------------------- keyboard
let cursor = null;

function move(selector, step) {
  const items = [...document.querySelectorAll(selector)].filter((n) => n.offsetParent !== null);
  if (!items.length) return;
  const at = cursor ? items.indexOf(cursor) : -1;
  let next = at === -1 ? (step > 0 ? 0 : items.length - 1) : at + step;
  if (at === -1 && cursor) { // the cursor is in the other list: continue from where it is on screen
    const y = cursor.getBoundingClientRect().top;
    next = step > 0 ? items.findIndex((n) => n.getBoundingClientRect().top > y) : items.findLastIndex((n) => n.getBoundingClientRect().top < y);
    if (next === -1) return;
  }
  const item = items[Math.max(0, Math.min(items.length - 1, next))];
  for (const n of document.querySelectorAll(".is-target")) n.classList.remove("is-target");
  item.classList.add("is-target");
  item.setAttribute("tabindex", "-1");
  item.focus({ preventScroll: true });
  item.scrollIntoView({ block: "nearest" });
  cursor = item;
}

function toggleHelp(force) {
  const help = document.getElementById("kbd-help");
  if (!help) return;
  help.hidden = force === undefined ? !help.hidden : !force;
}

function onKey(e) {
  if (e.key === "Escape") {
    const popover = document.getElementById("compact-now");
    if (popover && popover.open) { popover.open = false; popover.querySelector("summary").focus(); }
    toggleHelp(false);
    return;
  }
  const t = e.target;
  if (e.ctrlKey || e.metaKey || e.altKey || (t && t.closest && t.closest("input, textarea, select, [contenteditable]"))) return;
  const actions = {
    j: () => move(".raw-list .msg", 1), k: () => move(".raw-list .msg", -1),
    "]": () => move(".vmsg.is-summary", 1), "[": () => move(".vmsg.is-summary", -1),
    e: () => { const d = cursor && document.contains(cursor) && cursor.querySelector("details"); if (d) d.open = !d.open; },
    "?": () => toggleHelp(),
    "/": () => { const q = document.querySelector(".filters input[name=q]"); if (q) q.focus(); },
  };
  const action = actions[e.key];
  if (action) { e.preventDefault(); action(); }
}

function keyboard() {
  document.addEventListener("keydown", onKey);
  for (const b of document.querySelectorAll(".kbd-open")) {
    b.hidden = false;
    b.addEventListener("click", () => toggleHelp());
  }
}

compactForm();
keyboard();
highlightQuery();
showTarget();
window.addEventListener("hashchange", showTarget);
// The live panel is swapped when a view lands: highlight its hits again.
new MutationObserver(() => highlightQuery()).observe(document.querySelector("main") || document.body, { childList: true });
