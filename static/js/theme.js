// Light/dark theme: the system's preference until the header toggle picks one, remembered in localStorage.
// Loaded synchronously in <head> (a file, not an inline script: the CSP forbids those) so the page never
// flashes the wrong theme; the toggle button stays hidden without JavaScript.
(function () {
  const KEY = "pentagi-theme";
  const root = document.documentElement;
  const stored = () => { try { return localStorage.getItem(KEY); } catch { return null; } };
  const systemLight = () => window.matchMedia && window.matchMedia("(prefers-color-scheme: light)").matches;
  const current = () => root.dataset.theme || (systemLight() ? "light" : "dark");
  const saved = stored();
  if (saved === "light" || saved === "dark") root.dataset.theme = saved;

  function label(button) {
    const next = current() === "light" ? "dark" : "light";
    button.textContent = next === "light" ? "☀ Light" : "☾ Dark";
    button.setAttribute("aria-label", `Switch to the ${next} theme`);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("theme-toggle");
    if (!button) return;
    button.hidden = false;
    label(button);
    button.addEventListener("click", () => {
      root.dataset.theme = current() === "light" ? "dark" : "light";
      try { localStorage.setItem(KEY, root.dataset.theme); } catch { /* private mode: this page only */ }
      label(button);
    });
  });
})();
