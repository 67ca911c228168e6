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
    const x = e.target.closest("[data-action='export-png']");
    if (x) { e.preventDefault(); exportPNG(x.dataset.src); }
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
  // A stage's SVG export drawn onto a canvas at twice its size, saved as PNG.
  async function exportPNG(src) {
    const svg = await (await fetch(src)).text();
    const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
    const img = new Image();
    img.onload = () => {
      const c = document.createElement("canvas");
      c.width = img.width * 2; c.height = img.height * 2;
      const g = c.getContext("2d");
      g.fillStyle = "#fff"; g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      URL.revokeObjectURL(url);
      c.toBlob((b) => {
        const a = document.createElement("a");
        a.href = URL.createObjectURL(b); a.download = "stepthrough-stage.png";
        document.body.appendChild(a); a.click(); a.remove();
      }, "image/png");
    };
    img.src = url;
  }
  // Vector strips: a canvas per vector painted from its data-values with
  // the server's colour scale (views.heat); hovering shows the value.
  function heat(v, m) {
    if (!(m > 0) || Number.isNaN(v)) return "#444";
    const t = Math.max(-1, Math.min(1, v / m));
    if (t >= 0) return `rgb(${40 + Math.trunc(215 * t)},${40 + Math.trunc(120 * t)},40)`;
    return `rgb(40,${40 + Math.trunc(100 * -t)},${40 + Math.trunc(215 * -t)})`;
  }
  function paintStrip(c) {
    if (c.dataset.painted) return;
    c.dataset.painted = "1";
    const vals = (c.dataset.values || "").split(" ").map(Number);
    const m = Number(c.dataset.max);
    const g = c.getContext("2d");
    vals.forEach((v, i) => { g.fillStyle = heat(v, m); g.fillRect(i, 0, 1, 1); });
    c.addEventListener("mousemove", (e) => {
      const r = c.getBoundingClientRect();
      const i = Math.min(vals.length - 1, Math.max(0, Math.floor((e.clientX - r.left) / r.width * vals.length)));
      c.title = `[${i}] = ${vals[i]}`;
    });
  }
  function paintStrips(root) {
    if (root.querySelectorAll) root.querySelectorAll("canvas.strip:not([data-painted])").forEach(paintStrip);
  }
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1) {
      if (n.matches && n.matches("canvas.strip")) paintStrip(n); else paintStrips(n);
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", () => paintStrips(document));
  // In a classroom the page's own address stays (it is the room's).
  const inRoom = () => document.body && document.body.dataset.room;
  // The server puts the shareable URL of the current view on #state.
  document.addEventListener("htmx:oobAfterSwap", () => {
    if (inRoom()) return;
    const s = document.getElementById("state");
    if (s && s.dataset.url) history.replaceState(null, "", s.dataset.url);
    if (s && s.dataset.end === "true" && timer) play();
  });
  document.addEventListener("htmx:wsAfterMessage", () => {
    if (inRoom()) return;
    const s = document.getElementById("state");
    if (s && s.dataset.url && location.pathname + location.search !== s.dataset.url) history.replaceState(null, "", s.dataset.url);
  });
})();
