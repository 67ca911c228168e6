// The Models page: a suggestion fills the pull form (and moves focus to
// it); a refused pull shows its reason; the page's live region (#announce) says when a pull starts and
// ends, never each poll's bytes; focus left on a control the poll
// removed (the cancel button of a pull that ended) goes to its words.
(() => {
  "use strict";
  let said = "";
  function announce() {
    const p = document.getElementById("pull-progress");
    const box = document.getElementById("announce");
    if (!p || !box) return;
    const line = p.dataset.announce || "";
    if (line && line !== said) { box.textContent = line; said = line; }
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest("button.fill-ref");
    if (!b) return;
    const input = document.getElementById("pull-ref");
    if (!input) return;
    input.value = b.dataset.ref;
    input.focus();
  });
  // a refused pull or cancel (400, 401, 403, 409) answers with its reason
  // for #pull-status: show it, where htmx leaves error answers unswapped
  document.addEventListener("htmx:beforeSwap", (e) => {
    const st = e.detail.xhr.status;
    if (st >= 400 && st < 500 && e.detail.target && e.detail.target.id === "pull-status") {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterSettle", () => {
    announce();
    if (document.activeElement === document.body || !document.activeElement) {
      const t = document.getElementById("pull-text");
      if (t) t.focus();
    }
  });
  document.addEventListener("DOMContentLoaded", () => {
    const p = document.getElementById("pull-progress");
    said = p ? p.dataset.announce || "" : "";
  });
})();
