// One time format on every page: each <time datetime data-fmt> shows its instant in the browser's locale and time
// zone, whether the server rendered it or a live row added it later (a MutationObserver formats new ones). The
// server writes 24 h UTC as the text, which stays (with the ISO instant on hover) when this file does not run.
const FORMATS = {
  time: { hour: "2-digit", minute: "2-digit", second: "2-digit" },
  datetime: { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" },
  short: { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" },
};

export function formatTime(node) {
  const when = new Date(node.getAttribute("datetime") || "");
  const options = FORMATS[node.dataset.fmt];
  if (!options || Number.isNaN(when.getTime())) return;
  const text = when.toLocaleString(undefined, options);
  if (node.textContent !== text) node.textContent = text;
  node.title = when.toISOString();
  node.dataset.local = "1";
}

function formatWithin(root) {
  if (root.matches && root.matches("time[data-fmt]")) formatTime(root);
  if (root.querySelectorAll) root.querySelectorAll("time[data-fmt]").forEach(formatTime);
}

formatWithin(document);
new MutationObserver((records) => {
  for (const r of records) for (const node of r.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) formatWithin(node);
}).observe(document.documentElement, { childList: true, subtree: true });
