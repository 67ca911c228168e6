// The serving page while a load runs: each step and each user's text as
// the server streams them (server-sent events); the measured results are
// drawn by the server when the run ends (the page reloads then). Drawing
// happens at most once a frame, however fast the steps come.
(function () {
  "use strict";
  const run = document.querySelector('[data-testid="run"][data-done="false"]');
  if (!run) return;
  const NS = "http://www.w3.org/2000/svg";
  const live = (name) => run.querySelector('[data-live="' + name + '"]');
  const kvTotal = Number(run.dataset.kvPositions) || 1;
  const users = Number(run.dataset.users) || 1;
  const maxKV = Number(run.dataset.maxKv) || 1;
  const cols = 150, colW = 600 / cols, rowH = 4;
  const recent = []; // the last steps: [prompt tokens, decode tokens]
  const kv = new Array(users).fill(0);
  let setting = 0, pending = [], frame = 0, last = null;
  function rect(parent, x, y, w, h, cls) {
    const r = document.createElementNS(NS, "rect");
    r.setAttribute("x", x.toFixed(1)); r.setAttribute("y", y.toFixed(1));
    r.setAttribute("width", w.toFixed(1)); r.setAttribute("height", h.toFixed(1));
    r.setAttribute("class", cls);
    parent.appendChild(r);
    return r;
  }
  function clear(svg) { while (svg && svg.firstChild) svg.removeChild(svg.firstChild); }
  function drawSteps() {
    const svg = live("steps");
    clear(svg);
    let most = 1;
    for (const s of recent) most = Math.max(most, s[0] + s[1]);
    recent.forEach((s, i) => {
      const hd = 110 * s[1] / most, hp = 110 * s[0] / most;
      if (hd > 0) rect(svg, i * colW, 115 - hd, Math.max(1, colW - 1), hd, "bar-decode");
      if (hp > 0) rect(svg, i * colW, 115 - hd - hp, Math.max(1, colW - 1), hp, "bar-prefill");
    });
  }
  // one column of the who-was-in-it grid; columns wrap around the width
  function drawColumn(e) {
    const svg = live("grid");
    if (!svg) return;
    const slot = e.i % cols;
    const old = svg.querySelector('[data-slot="' + slot + '"]');
    if (old) old.remove();
    const g = document.createElementNS(NS, "g");
    g.setAttribute("data-slot", String(slot));
    for (const p of e.p) rect(g, slot * colW, p[0] * rowH, Math.max(1, colW - 0.5), rowH - 0.5, p[2] ? "bar-prefill" : "bar-decode");
    svg.appendChild(g);
    let cursor = svg.querySelector(".cursor");
    if (!cursor) cursor = rect(svg, 0, 0, 1, users * rowH, "cursor");
    cursor.setAttribute("x", ((slot + 1) * colW).toFixed(1));
  }
  function drawKV() {
    const svg = live("kvusers");
    clear(svg);
    kv.forEach((held, u) => { if (held > 0) rect(svg, 0, u * rowH, 600 * Math.min(1, held / maxKV), rowH - 0.5, "kv-used"); });
  }
  function flush() {
    frame = 0;
    for (const e of pending) {
      let pre = 0, dec = 0;
      for (const p of e.p) {
        if (p[2]) pre += p[1]; else dec += p[1];
        if (p[0] >= 0 && p[0] < users) kv[p[0]] = p[3];
      }
      recent.push([pre, dec]);
      if (recent.length > cols) recent.shift();
      drawColumn(e);
      last = e;
    }
    pending = [];
    if (!last) return;
    live("step").textContent = String(last.i + 1);
    live("running").textContent = String(last.r);
    live("waiting").textContent = String(last.w);
    live("kv").textContent = String(last.held);
    const bar = live("kv-bar");
    if (bar) bar.setAttribute("width", (600 * Math.min(1, last.held / kvTotal)).toFixed(1));
    drawSteps();
    drawKV();
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
        setting = e.s; recent.length = 0; pending = []; last = null; kv.fill(0);
        clear(live("grid"));
        live("setting").textContent = e.name;
        break;
      case "step":
        if (e.s !== setting) break;
        pending.push(e);
        if (!frame) frame = requestAnimationFrame(flush);
        break;
      case "tok": onToken(e); break;
      case "round":
        live("setting").textContent = "measuring again, quietly: round " + e.round + " of " + e.of;
        break;
    }
  };
  src.addEventListener("close", () => { src.close(); location.reload(); });
})();
