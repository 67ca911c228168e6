// The little the page needs beyond HTML: keyboard shortcuts, play/pause,
// keeping the URL current (history.replaceState), a theme toggle, vector
// strips painted on canvases and the model map's clicks.
(function () {
  "use strict";
  // the projector theme outlives reloads and follows the viewer across pages
  try { const th = localStorage.getItem("stepthrough-theme"); if (th) document.documentElement.dataset.theme = th; } catch (_) { /* storage off */ }
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
  // On a projector the sampler settings fold away: the pictures need the room.
  function foldForProjector() {
    if (document.documentElement.dataset.theme === "projector") document.querySelectorAll("details.advanced").forEach((d) => { d.open = false; });
  }
  // A panel's slider and the settings form agree: moving the softmax
  // panel's temperature or top-p writes the value into the form, so the
  // next Run samples with what the bars show.
  document.addEventListener("input", (e) => {
    const r = e.target;
    if (!(r instanceof HTMLInputElement) || !r.dataset.formField) return;
    const f = document.querySelector(`form.settings [name="${r.dataset.formField}"]`);
    if (f) f.value = r.value;
    const o = r.parentElement && r.parentElement.querySelector("output");
    if (o) o.textContent = r.value;
  });
  // A click on the model map or a pipeline chip goes to that stage: the
  // hidden goto form carries it over the page's WebSocket.
  function gotoStage(el) {
    const f = document.getElementById("goto");
    if (!f || !el.dataset.gotoStage) return false;
    if (f.closest("[data-role='student'] #room-view, [data-role='projector'] #room-view")) return false; // followers watch
    f.elements.stage.value = el.dataset.gotoStage;
    f.elements.layer.value = el.dataset.gotoLayer || "0";
    f.elements.filter.value = el.dataset.gotoFilter || "0";
    htmx.trigger(f, "submit");
    return true;
  }
  // A layer's part of the model map gets its hover sentence from the
  // map's template for its kind, with the layer filled in.
  document.addEventListener("mouseover", (e) => {
    const g = e.target instanceof Element && e.target.closest("details.map g.part");
    if (!g || g.querySelector("title")) return;
    const tpl = g.closest("svg").dataset[g.dataset.partStage + "Title"];
    if (!tpl) return;
    const t = document.createElementNS("http://www.w3.org/2000/svg", "title");
    const map = g.closest("details.map");
    const nums = parseNums(map.dataset.nums || map.querySelector("#map-state").dataset.nums);
    t.textContent = fillNums(tpl.replace("{L}", g.dataset.gotoLayer || ""), nums);
    g.prepend(t);
  });
  document.addEventListener("click", (e) => {
    const g = e.target.closest("[data-goto-stage]");
    if (g && gotoStage(g)) { e.preventDefault(); return; }
    const b = e.target.closest("[data-action='play']");
    if (b) { e.preventDefault(); play(); }
    const x = e.target.closest("[data-action='export-png']");
    if (x) { e.preventDefault(); exportPNG(x.dataset.src); }
    const t = e.target.closest("[data-action='theme']");
    if (t) {
      const root = document.documentElement;
      root.dataset.theme = root.dataset.theme === "projector" ? "" : "projector";
      try { localStorage.setItem("stepthrough-theme", root.dataset.theme); } catch (_) { /* storage off */ }
      foldForProjector();
      // the canvases' text and lines took the old theme's colours
      document.querySelectorAll("canvas.heat, canvas.scatter").forEach((c) => { delete c.dataset.painted; });
      paintStrips(document);
    }
  });
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if ((e.key === "Enter" || e.key === " ") && t instanceof Element && t.matches("[data-goto-stage]")) {
      if (gotoStage(t)) { e.preventDefault(); return; }
    }
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
  // A strip's values: base64 of little-endian half floats (data-f16).
  function halfToFloat(h) {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e === 0) return s * m * 2 ** -24;
    if (e === 31) return m ? NaN : s * Infinity;
    return s * (1 + m / 1024) * 2 ** (e - 15);
  }
  function stripVals(c) {
    if (c._vals) return c._vals;
    const bin = atob(c.dataset.f16 || "");
    const out = new Array(bin.length >> 1);
    for (let i = 0; i < out.length; i++) out[i] = halfToFloat(bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8));
    c._vals = out;
    return out;
  }
  // Vector strips: a canvas per vector painted from its values with
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
    const vals = stripVals(c);
    const m = Number(c.dataset.max);
    const g = c.getContext("2d");
    vals.forEach((v, i) => { g.fillStyle = heat(v, m); g.fillRect(i, 0, 1, 1); });
    c.addEventListener("mousemove", (e) => {
      const r = c.getBoundingClientRect();
      const i = Math.min(vals.length - 1, Math.max(0, Math.floor((e.clientX - r.left) / r.width * vals.length)));
      c.title = `[${i}] = ${Number(vals[i].toPrecision(3))}`;
    });
  }
  // Attention heatmaps: a canvas per matrix painted from its data-values
  // with the server's sequential scale (views.seqHeat), the key labels
  // thinned to at most 24, the current row outlined, the value under the
  // pointer in the title.
  function seqHeat(v, lo, hi) {
    if (!Number.isFinite(v)) return "#222";
    const t = Math.max(0, Math.min(1, hi > lo ? (v - lo) / (hi - lo) : 0));
    return `rgb(${20 + Math.trunc(235 * t)},${20 + Math.trunc(200 * t)},${60 + Math.trunc(60 * t)})`;
  }
  function heatCell(g, colour, x, y, s) { g.fillStyle = colour; g.fillRect(x, y, s, s); }
  // a masked cell (a later position) is hatched, not a colour of the
  // scale: the panel's background crossed by a line of the muted text
  // colour, 3:1 or more against every colour of the scale
  function maskedCell(g, css, x, y, s) {
    heatCell(g, css.getPropertyValue("--panel").trim() || "#222", x, y, s);
    g.strokeStyle = css.getPropertyValue("--muted").trim() || "#999"; g.lineWidth = 2;
    g.beginPath(); g.moveTo(x + 2, y + s - 2); g.lineTo(x + s - 2, y + 2); g.stroke();
  }
  function paintHeat(c) {
    if (c.dataset.painted) return;
    c.dataset.painted = "1";
    const rows = (c.dataset.values || "").split(";").map((r) => r.split(" ").map((v) => (v === "x" ? NaN : Number(v))));
    const ql = JSON.parse(c.dataset.qlabels || "[]"), kl = JSON.parse(c.dataset.klabels || "[]");
    const lo = Number(c.dataset.min), hi = Number(c.dataset.max), cur = Number(c.dataset.current);
    const cw = 22, left = 100, top = 78, every = Math.max(1, Math.ceil(kl.length / 24)), dpr = 2;
    const w = left + cw * kl.length + 6, h = top + cw * rows.length + 4;
    c.width = w * dpr; c.height = h * dpr;
    c.style.width = `${Math.round(w * 1.4)}px`;
    const g = c.getContext("2d");
    g.scale(dpr, dpr);
    const css = getComputedStyle(document.documentElement);
    const short = (s) => (s.length > 10 ? s.slice(0, 9) + "…" : s);
    g.fillStyle = css.getPropertyValue("--fg").trim() || "#ddd";
    g.font = "12px system-ui, sans-serif";
    kl.forEach((k, j) => {
      if (j % every && j !== kl.length - 1) return;
      g.save(); g.translate(left + cw * j + cw / 2, top - 8); g.rotate(-1.15); g.fillText(short(k), 0, 0); g.restore();
    });
    g.textAlign = "right";
    rows.forEach((r, i) => {
      g.fillStyle = css.getPropertyValue("--fg").trim() || "#ddd";
      g.fillText(short(ql[i] || ""), left - 6, top + cw * i + 15);
      r.forEach((v, j) => (Number.isFinite(v) ? heatCell(g, seqHeat(v, lo, hi), left + cw * j, top + cw * i, cw - 1) : maskedCell(g, css, left + cw * j, top + cw * i, cw - 1)));
    });
    if (cur >= 0 && cur < rows.length) { // the current row: the page's colour around the text's, not the focus ring's
      g.strokeStyle = css.getPropertyValue("--bg").trim() || "#000"; g.lineWidth = 5;
      g.strokeRect(left - 2, top + cw * cur - 2, cw * kl.length + 3, cw + 3);
      g.strokeStyle = css.getPropertyValue("--fg").trim() || "#ddd"; g.lineWidth = 2;
      g.strokeRect(left - 2, top + cw * cur - 2, cw * kl.length + 3, cw + 3);
    }
    c.addEventListener("mousemove", (e) => {
      const b = c.getBoundingClientRect(), x = (e.clientX - b.left) * w / b.width, y = (e.clientY - b.top) * h / b.height;
      const i = Math.floor((y - top) / cw), j = Math.floor((x - left) / cw);
      c.title = i >= 0 && i < rows.length && j >= 0 && j < kl.length ? `query ${ql[i]} → key ${kl[j]}: ${Number.isNaN(rows[i][j]) ? "masked (a later position)" : rows[i][j]}` : "";
    });
  }
  // The MLP's scatter: each hidden unit as a point, before the
  // nonlinearity across and after it up, from the two strips' values.
  function paintScatter(c) {
    if (c.dataset.painted) return;
    const xs = document.getElementById(c.dataset.xFrom), ys = document.getElementById(c.dataset.yFrom);
    if (!xs || !ys) return;
    c.dataset.painted = "1";
    const x = stripVals(xs), y = stripVals(ys);
    const W = 480, H = 300, pad = 30, dpr = 2;
    c.width = W * dpr; c.height = H * dpr;
    const g = c.getContext("2d");
    g.scale(dpr, dpr);
    const lo = (v) => Math.min(...v), hi = (v) => Math.max(...v);
    const x0 = Math.min(lo(x), lo(y)), x1 = Math.max(hi(x), hi(y));
    const sx = (v) => pad + (v - x0) / (x1 - x0 || 1) * (W - 2 * pad), sy = (v) => H - pad - (v - x0) / (x1 - x0 || 1) * (H - 2 * pad);
    const css = getComputedStyle(document.documentElement);
    g.strokeStyle = css.getPropertyValue("--muted").trim() || "#888";
    g.beginPath(); g.moveTo(sx(x0), sy(0)); g.lineTo(sx(x1), sy(0)); g.moveTo(sx(0), sy(x0)); g.lineTo(sx(0), sy(x1)); g.stroke();
    g.fillStyle = css.getPropertyValue("--accent").trim() || "#7cc4ff";
    x.forEach((v, i) => g.fillRect(sx(v) - 1.5, sy(y[i]) - 1.5, 3, 3));
    g.fillStyle = css.getPropertyValue("--fg").trim() || "#ddd";
    g.font = "12px system-ui, sans-serif";
    g.fillText("before →", W - pad - 50, sy(0) - 4); g.fillText("after ↑", sx(0) + 4, pad - 8);
  }
  // The model map is open on wide screens and collapsed on phones until the
  // viewer chooses; the choice outlives each step's redraw and reloads.
  function mapOpen(d) {
    if (d.dataset.placed) return;
    d.dataset.placed = "1";
    let want = window.innerWidth > 700;
    try { const v = localStorage.getItem("stepthrough-map"); if (v) want = v === "open"; } catch (_) { /* storage off */ }
    d.open = want;
    d.querySelector("summary").addEventListener("click", () => {
      try { localStorage.setItem("stepthrough-map", d.open ? "closed" : "open"); } catch (_) { /* storage off */ }
    });
  }
  // The step's numbers travel as "K=V;K=V" (views.MapLayout.Nums).
  function parseNums(s) { return Object.fromEntries((s || "").split(";").filter(Boolean).map((p) => p.split("="))); }
  // A text of the map names the step's numbers in braces ({T}, {C}, ...).
  function fillNums(tpl, nums) { return tpl.replace(/\{(\w+)\}/g, (m, k) => (k in nums ? nums[k] : m)); }
  // The map's state alone (#map-state, sent as the viewer steps within a
  // token step): each part's classes, where the viewer is, the flow.
  function mapState(st) {
    const map = st.closest("details.map");
    if (!map || map.dataset.key !== st.dataset.key) return;
    const cls = new Map((st.dataset.states || "").split(";").filter(Boolean).map((p) => p.split("=")));
    map.querySelectorAll("g.part").forEach((g) => {
      const c = cls.get(g.dataset.testid.slice(4)) || "part";
      if (g.getAttribute("class") === c) return;
      g.setAttribute("class", c);
      const live = !/\binert\b/.test(c) && g.dataset.partStage;
      g.dataset.gotoStage = live ? g.dataset.partStage : "";
      g.setAttribute("tabindex", live ? "0" : "-1");
      g.setAttribute("role", live ? "button" : "img");
      if (/\bhere\b/.test(c)) g.setAttribute("aria-current", "step"); else g.removeAttribute("aria-current");
    });
    map.querySelectorAll("text.tag").forEach((t) => t.classList.toggle("here", /\bhere\b/.test(cls.get(t.dataset.tagOf) || "")));
    const nums = parseNums(st.dataset.nums);
    map.dataset.nums = st.dataset.nums || "";
    map.querySelectorAll("[data-tpl]").forEach((t) => { if (t.dataset.tpl) t.textContent = fillNums(t.dataset.tpl, nums); });
    map.querySelectorAll("[data-tpl-title]").forEach((g) => { const t = g.querySelector("title"); if (t) t.textContent = fillNums(g.dataset.tplTitle, nums); });
    map.querySelectorAll("g.part[data-goto-layer] title").forEach((t) => t.remove()); // rewritten on the next hover
    map.querySelectorAll("g[data-goto-filter]").forEach((g) => { // the funnel's slices
      const h = Number(nums["H" + g.dataset.gotoFilter]), r = g.querySelector("rect");
      if (r && h > 0) { r.setAttribute("height", h); r.setAttribute("y", 100 - h / 2); }
    });
    const w = map.querySelector("[data-testid='map-where']");
    if (w) w.textContent = st.dataset.where;
    const old = map.querySelector("[data-testid='map-flow']");
    if (old) old.remove();
    if (st.dataset.flow) { // a new element, so the animation runs again
      const f = document.createElementNS("http://www.w3.org/2000/svg", "path");
      f.setAttribute("class", "flow"); f.setAttribute("d", st.dataset.flow); f.dataset.testid = "map-flow";
      const first = map.querySelector("svg g.part");
      first.parentNode.insertBefore(f, first);
    }
  }
  function paintStrips(root) {
    if (!root.querySelectorAll) return;
    root.querySelectorAll("canvas.strip:not([data-painted])").forEach(paintStrip);
    root.querySelectorAll("canvas.heat:not([data-painted])").forEach(paintHeat);
    root.querySelectorAll("canvas.scatter:not([data-painted])").forEach(paintScatter);
    root.querySelectorAll("details.map:not([data-placed])").forEach(mapOpen);
  }
  new MutationObserver((records) => {
    for (const r of records) if (r.type === "attributes" && r.target.id === "map-state") mapState(r.target);
    for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1) {
      if (n.matches && n.matches("canvas.strip")) paintStrip(n);
      else if (n.matches && n.matches("canvas.heat")) paintHeat(n);
      else if (n.matches && n.matches("canvas.scatter")) paintScatter(n);
      else if (n.matches && n.matches("details.map")) mapOpen(n);
      else if (n.id === "map-state") mapState(n);
      else paintStrips(n);
    }
  }).observe(document.documentElement, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-states", "data-key"] }); // htmx settles an id's new attributes a moment after the swap
  document.addEventListener("DOMContentLoaded", () => {
    paintStrips(document);
    // the sampler chain's settings are open beside the Explorer on wide
    // screens; on a phone the prompt and Run come first
    if (window.innerWidth > 900) document.querySelectorAll("details.advanced").forEach((d) => { d.open = true; });
    foldForProjector();
  });
  // Compare's lanes from forms: a row's strategy and settings are written
  // as the lane's text (the syntax links use); a lane's text fills its
  // row on load. Settings the form lacks (top-k, min-p, …) stay in the
  // text as they were.
  const laneKeys = ["temperature", "top-p", "seed", "beam", "spec", "k"];
  function parseLane(text) {
    const parts = text.split(",").map((s) => s.trim()).filter(Boolean);
    const f = { kind: "", extra: [] };
    let greedy = false;
    for (const p of parts) {
      const [k, v] = p.split("=", 2);
      if (p === "greedy") greedy = true;
      else if (laneKeys.includes(k) && v !== undefined) f[k] = v;
      else f.extra.push(p);
    }
    if (f.spec) f.kind = "speculative";
    else if (f.beam) { f.kind = "beam"; }
    else if (greedy) f.kind = "greedy";
    else if (parts.length) f.kind = "sample";
    if (f.kind === "beam") { f.extra = f.extra.filter((p) => p.startsWith("length-penalty=")); }
    return f;
  }
  function composeLane(row) {
    const val = (k) => { const e = row.querySelector(`[data-lane-field="${k}"]`); return e ? e.value.trim() : ""; };
    const extra = (row.dataset.extra || "").split(",").filter(Boolean);
    const sampler = () => ["temperature", "top-p", "seed"].filter((k) => val(k) !== "").map((k) => `${k}=${val(k)}`);
    switch (val("kind")) {
      case "greedy": return "greedy";
      case "sample": return [...sampler(), ...extra].join(",") || "temperature=0.8";
      case "beam": return [`beam=${val("beam") || 3}`, ...extra].join(",");
      case "speculative": {
        const s = sampler();
        const base = s.length && val("temperature") !== "0" ? [...s, ...extra] : ["greedy"];
        return [...base, `spec=${val("spec")}`, ...(val("k") ? [`k=${val("k")}`] : [])].join(",");
      }
    }
    return "";
  }
  function showLaneFields(row) {
    const kind = row.querySelector('[data-lane-field="kind"]').value;
    row.querySelectorAll("[data-for-kinds]").forEach((l) => { l.hidden = !l.dataset.forKinds.split(" ").includes(kind); });
  }
  function fillLaneRow(row) {
    const text = row.querySelector('input[name="lane"]');
    const f = parseLane(text.value);
    row.dataset.extra = f.extra.join(",");
    for (const k of ["kind", ...laneKeys]) {
      const e = row.querySelector(`[data-lane-field="${k}"]`);
      if (e && f[k] !== undefined && f[k] !== "") e.value = f[k];
    }
    showLaneFields(row);
  }
  document.addEventListener("input", (e) => {
    const row = e.target.closest && e.target.closest("[data-lane-form]");
    if (!row) return;
    if (e.target.name === "lane") { fillLaneRow(row); return; }
    showLaneFields(row);
    row.querySelector('input[name="lane"]').value = composeLane(row);
  });
  document.addEventListener("change", (e) => {
    const row = e.target.closest && e.target.closest("[data-lane-form]");
    if (row && e.target.tagName === "SELECT") { showLaneFields(row); row.querySelector('input[name="lane"]').value = composeLane(row); }
  });
  document.addEventListener("DOMContentLoaded", () => document.querySelectorAll("[data-lane-form]").forEach(fillLaneRow));
  // The tour (?tour=1): steps through the first token's stages on its own,
  // paced for reading, with each stage's sentence in a caption; any key
  // or the caption's button stops it, and stepping by hand still works.
  const tour = { timer: null, box: null };
  function tourCaption() {
    const s = document.getElementById("state");
    if (!tour.box || !s) return;
    tour.box.querySelector("strong").textContent = s.dataset.stageLabel || "";
    tour.box.querySelector("span").textContent = s.dataset.stageGloss || "";
    if (Number(s.dataset.tokenStep) > 1 || s.dataset.end === "true") stopTour("The first token has been through every stage. Step on, or run your own prompt.");
  }
  function stopTour(last) {
    if (tour.timer) clearInterval(tour.timer);
    tour.timer = null;
    if (tour.box && last) { tour.box.querySelector("span").textContent = last; tour.box.querySelector("button").textContent = "Close"; }
  }
  function startTour() {
    if (!new URLSearchParams(location.search).has("tour") || !document.getElementById("action-step")) return;
    tour.box = document.createElement("aside");
    tour.box.className = "tour-caption"; tour.box.dataset.testid = "tour-caption"; tour.box.setAttribute("role", "status");
    tour.box.innerHTML = "<p><strong></strong> <span></span></p><button type=\"button\">Stop the tour</button>";
    tour.box.querySelector("button").addEventListener("click", () => { stopTour(); tour.box.remove(); tour.box = null; });
    document.body.append(tour.box);
    tourCaption();
    tour.timer = setInterval(() => send("step"), 5000);
    document.addEventListener("keydown", () => stopTour("Tour stopped: you are stepping now."), { once: true });
  }
  document.addEventListener("htmx:oobAfterSwap", tourCaption);
  document.addEventListener("DOMContentLoaded", startTour);
  // A server that does not hold this page's session (evicted, or the
  // connection moved to another server behind a load balancer) asks for a
  // reload: the address carries the run and the step, so it resumes there.
  document.addEventListener("htmx:oobAfterSwap", () => {
    if (document.querySelector("[data-resume='reload']")) location.reload();
  });
  // In a classroom the page's own address stays (it is the room's).
  const inRoom = () => document.body && document.body.dataset.room;
  // The server puts the shareable URL of the current view on #state.
  document.addEventListener("htmx:oobAfterSwap", () => {
    if (inRoom()) return;
    const s = document.getElementById("state");
    if (s && s.dataset.url) history.replaceState(null, "", s.dataset.url);
    if (s && s.dataset.end === "true" && timer) play();
  });
  // After a reveal, the student's own answer is marked in the class's
  // results (the results are the same bytes for everyone; #poll-mine is
  // the student's own).
  function markMine() {
    const m = document.getElementById("poll-mine");
    document.querySelectorAll("[data-testid='poll-result']").forEach((r) => {
      const mine = !!(m && m.dataset.answer && r.dataset.answer === m.dataset.answer);
      r.classList.toggle("mine", mine);
      r.classList.toggle("wrong", mine && m.dataset.right === "false");
    });
  }
  document.addEventListener("DOMContentLoaded", markMine);
  document.addEventListener("htmx:wsAfterMessage", markMine);
  document.addEventListener("htmx:wsAfterMessage", () => {
    if (inRoom()) return;
    const s = document.getElementById("state");
    if (s && s.dataset.url && location.pathname + location.search !== s.dataset.url) history.replaceState(null, "", s.dataset.url);
  });
})();
