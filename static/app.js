// The little the page needs beyond HTML: keyboard shortcuts, play/pause,
// keeping the URL current (history.replaceState) and a theme toggle.
(function () {
  "use strict";
  function send(action) {
    const el = document.getElementById("action-" + action);
    if (el) el.click();
  }
  let timer = null;
  function play() {
    if (timer) { clearInterval(timer); timer = null; document.body.dataset.playing = "false"; return; }
    const speed = Number((document.getElementById("speed") || {}).value || 500);
    document.body.dataset.playing = "true";
    timer = setInterval(() => send("step"), Math.max(50, speed));
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest("[data-action='play']");
    if (b) { e.preventDefault(); play(); }
    const t = e.target.closest("[data-action='theme']");
    if (t) {
      const root = document.documentElement;
      root.dataset.theme = root.dataset.theme === "projector" ? "" : "projector";
    }
  });
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if ((t instanceof Element && t.closest("input, textarea, select")) || e.ctrlKey || e.metaKey || e.altKey) return;
    switch (e.key) {
      case "ArrowRight": send("step"); break;
      case "ArrowLeft": send("back"); break;
      case "n": case "N": send("next-token"); break;
      case " ": e.preventDefault(); play(); break;
      default: return;
    }
  });
  // The server puts the shareable URL of the current view on #state.
  document.addEventListener("htmx:oobAfterSwap", () => {
    const s = document.getElementById("state");
    if (s && s.dataset.url) history.replaceState(null, "", s.dataset.url);
    if (s && s.dataset.end === "true" && timer) play();
  });
  document.addEventListener("htmx:wsAfterMessage", () => {
    const s = document.getElementById("state");
    if (s && s.dataset.url && location.pathname + location.search !== s.dataset.url) history.replaceState(null, "", s.dataset.url);
  });
})();
