// Settings page: preview as you type. Each change (debounced) posts the form with action=preview and the
// X-Partial header; the server answers with the preview section alone (rendered and escaped by Django), which
// replaces the old one in place: no navigation, no scroll jump. Fields that differ from their default are
// marked as they change. Without JavaScript the Preview button does the same with a full page. Opening the
// page already warms the server's caches for the picked chain (flows/pipeline/preview_warm.py).
const DEBOUNCE_MS = 250;
const form = document.getElementById("settings-form");
const state = { timer: 0, seq: 0, controller: null, stats: { sent: 0, shown: 0, lastMs: 0 } };

function currentValue(input) {
  if (input.type === "checkbox") return input.checked ? "on" : "off";
  return input.value.trim();
}

function markChanged(input) {
  const row = input.closest(".setting");
  if (!row || !("default" in row.dataset)) return;
  row.classList.toggle("is-changed", currentValue(input) !== row.dataset.default);
}

function swapPreview(html) {
  const incoming = new DOMParser().parseFromString(html, "text/html").getElementById("preview");
  const old = document.getElementById("preview");
  if (!incoming || !old) return false;
  const y = window.scrollY;
  old.replaceWith(document.adoptNode(incoming));
  window.scrollTo(window.scrollX, y);
  return true;
}

async function preview() {
  const chain = document.getElementById("preview-chain");
  if (!form || !chain || !chain.value) return;
  const body = new FormData(form);
  body.set("action", "preview");
  if (state.controller) state.controller.abort(); // only the newest answer matters
  state.controller = new AbortController();
  const mine = ++state.seq;
  const started = performance.now();
  state.stats.sent += 1;
  document.body.dataset.preview = "loading";
  try {
    // form.getAttribute: form.action would be the buttons named "action", not the URL
    const res = await fetch(form.getAttribute("action"), { method: "POST", body, headers: { "X-Partial": "preview" },
      credentials: "same-origin", signal: state.controller.signal });
    const html = await res.text();
    if (mine !== state.seq) return;
    if (swapPreview(html)) state.stats.shown += 1;
    state.stats.lastMs = Math.round(performance.now() - started);
    document.body.dataset.preview = res.ok ? "ready" : "error";
  } catch (err) {
    if (err.name !== "AbortError") document.body.dataset.preview = "error";
  }
}

// One column (the layout stacks below 1100 px, as in app.css): the preview would sit under every field, thousands
// of pixels from the one being edited, so it moves to just below that field; two columns: it goes back beside them.
const STACKED = window.matchMedia("(max-width: 1100px)");

function placePreview(input) {
  const card = document.getElementById("preview");
  const row = input.closest(".setting");
  const home = form.parentElement;
  if (!card || !home) return;
  if (STACKED.matches && row) {
    if (row.nextElementSibling !== card) row.after(card);
  } else if (card.parentElement !== home) {
    home.append(card);
  }
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(preview, DEBOUNCE_MS);
}

if (form) {
  form.addEventListener("input", (e) => {
    if (!e.target.matches("input, select")) return;
    markChanged(e.target);
    placePreview(e.target);
    schedule();
  });
  form.addEventListener("change", (e) => {
    if (!e.target.matches("input, select")) return;
    markChanged(e.target);
    placePreview(e.target);
    // another chain picked: nothing to debounce, and its caches are cold, so the sooner the better
    if (e.target.id === "preview-chain") { clearTimeout(state.timer); preview(); } else schedule();
  });
  document.getElementById("preview-btn")?.addEventListener("click", (e) => { e.preventDefault(); preview(); });
  window.pentagiSettings = { state, preview };
}
