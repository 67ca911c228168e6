// The serving page while a load runs: each step and each user's text as
// the server streams them (server-sent events); the measured results are
// drawn by the server when the run ends (the page reloads then).
(function () {
  "use strict";
  const run = document.querySelector('[data-testid="run"][data-done="false"]');
  if (!run) return;
  const NS = "http://www.w3.org/2000/svg";
  const live = (name) => run.querySelector('[data-live="' + name + '"]');
  const kvTotal = Number(run.dataset.kvPositions) || 1;
  const recent = []; // the last steps: [prompt tokens, decode tokens]
  const keep = 150;
  let setting = 0;
  function drawSteps() {
    const svg = live("steps");
    if (!svg) return;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    let most = 1;
    for (const s of recent) most = Math.max(most, s[0] + s[1]);
    const w = 600 / keep;
    recent.forEach((s, i) => {
      const hd = 110 * s[1] / most, hp = 110 * s[0] / most;
      for (const [y, h, cls] of [[115 - hd, hd, "bar-decode"], [115 - hd - hp, hp, "bar-prefill"]]) {
        if (h <= 0) continue;
        const r = document.createElementNS(NS, "rect");
        r.setAttribute("x", (i * w).toFixed(1));
        r.setAttribute("y", y.toFixed(1));
        r.setAttribute("width", Math.max(1, w - 1).toFixed(1));
        r.setAttribute("height", h.toFixed(1));
        r.setAttribute("class", cls);
        svg.appendChild(r);
      }
    });
  }
  function onStep(e) {
    let pre = 0, dec = 0;
    for (const p of e.p) { if (p[2]) pre += p[1]; else dec += p[1]; }
    recent.push([pre, dec]);
    if (recent.length > keep) recent.shift();
    live("step").textContent = String(e.i + 1);
    live("running").textContent = String(e.r);
    live("waiting").textContent = String(e.w);
    live("kv").textContent = String(e.held);
    const bar = live("kv-bar");
    if (bar) bar.setAttribute("width", (600 * Math.min(1, e.held / kvTotal)).toFixed(1));
    drawSteps();
  }
  function onToken(e) {
    const cell = run.querySelector('tr[data-user="' + (e.u + 1) + '"] td[data-setting="' + e.s + '"]');
    if (cell) cell.textContent += e.x;
  }
  const src = new EventSource(run.dataset.events);
  src.onmessage = (m) => {
    const e = JSON.parse(m.data);
    switch (e.t) {
      case "setting":
        setting = e.s; recent.length = 0;
        live("setting").textContent = e.name;
        break;
      case "step": if (e.s === setting) onStep(e); break;
      case "tok": onToken(e); break;
    }
  };
  src.addEventListener("close", () => { src.close(); location.reload(); });
})();
