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
    if (!timer && !document.getElementById("action-step")) return;
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
  // The panel redraws with the server's numbers for the value sent; a
  // value moved meanwhile (a key held down) is sent when that reply has
  // come, so none is lost; while a pointer drags the slider, the value
  // goes on release (a redraw would end the drag).
  const slide = { since: 0, want: null, dragging: null };
  function sliderShows(r) {
    const f = document.querySelector(`form.settings [name="${r.dataset.formField}"]`);
    if (f) f.value = r.value;
    const o = r.parentElement && r.parentElement.querySelector(".slider-value");
    if (o) o.textContent = Number(r.value).toFixed(2);
    r.setAttribute("aria-valuetext", Number(r.value).toFixed(2));
  }
  function sendSlider(r) {
    slide.want = null;
    if (!r.form || !r.form.hasAttribute("ws-send")) return;
    slide.since = Date.now();
    htmx.trigger(r.form, "slide");
  }
  document.addEventListener("input", (e) => {
    const r = e.target;
    if (!(r instanceof HTMLInputElement) || !r.dataset.formField) return;
    sliderShows(r);
    if (slide.dragging === r || (slide.since && Date.now() - slide.since < 3000)) { slide.want = { name: r.name, value: r.value }; return; }
    sendSlider(r);
  });
  document.addEventListener("pointerdown", (e) => {
    if (e.target instanceof HTMLInputElement && e.target.dataset.formField) slide.dragging = e.target;
  });
  document.addEventListener("pointerup", () => {
    const r = slide.dragging;
    slide.dragging = null;
    if (r && slide.want && !(slide.since && Date.now() - slide.since < 3000)) sendSlider(r);
  });
  // after a reply: the value moved meanwhile, if any, goes now
  function slideOn() {
    slide.since = 0;
    const w = slide.want;
    if (!w || slide.dragging) return;
    const r = document.querySelector(`input[data-form-field][name="${w.name}"]`);
    if (!r) { slide.want = null; return; }
    if (r.value !== w.value) { r.value = w.value; sliderShows(r); sendSlider(r); } else slide.want = null;
  }
  document.addEventListener("submit", (e) => { if (e.target.matches && e.target.matches("form[hx-trigger='slide']")) e.preventDefault(); });
  // A form whose answer is a slow page (data-busy: what it is doing) says
  // so in its status line while the browser waits for it.
  document.addEventListener("submit", (e) => {
    const f = e.target;
    if (!f.matches || !f.matches("form[data-busy]")) return;
    const note = f.querySelector(".busy-note");
    if (note) note.textContent = f.dataset.busy;
    f.setAttribute("aria-busy", "true");
  });
  // back from the results (the page restored from the back-forward cache): nothing is running
  window.addEventListener("pageshow", () => {
    document.querySelectorAll("form[data-busy]").forEach((f) => {
      f.removeAttribute("aria-busy");
      const note = f.querySelector(".busy-note");
      if (note) note.textContent = "";
    });
  });
  // The settings form's "Switched off" field follows the run's
  // interventions (#state's data-ablate): one switched from a panel, or
  // the model restored, is written there, so the next Run keeps it; what
  // the viewer types there stays until the run's interventions change.
  let ablateSeen = null;
  function syncAblate() {
    const s = document.getElementById("state"), f = document.querySelector("form.settings [name='ablate']");
    if (!s || !f || s.dataset.ablate === undefined) return;
    if (ablateSeen !== null && s.dataset.ablate !== ablateSeen) f.value = s.dataset.ablate;
    ablateSeen = s.dataset.ablate;
  }
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
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") { dismiss(e); return; }
    if (e.key === "Tab") { trapTab(e); return; }
    if (rove(e)) return;
    const t = e.target;
    if ((e.key === "Enter" || e.key === " ") && t instanceof Element && t.matches("g[data-goto-stage]")) { // a map part (a button is clicked by the browser)
      if (gotoStage(t)) e.preventDefault();
      return;
    }
    if (!shortcutsOn() || !onStage(t) || !document.getElementById("action-step")) return;
    switch (e.key) {
      case "ArrowRight": send("step"); break;
      case "ArrowLeft": send("back"); break;
      case "n": case "N": send("next-token"); break;
      case " ": play(); break;
      default: return;
    }
    e.preventDefault();
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
    c.style.minWidth = `${w}px`; // the labels stay 12px or larger: a narrow page scrolls the heatmap instead
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
    g.font = "18px system-ui, sans-serif"; // 10px or more where the canvas shrinks to a 320px page
    g.fillText("before →", W - pad - 74, sy(0) - 4); g.fillText("after ↑", sx(0) + 4, pad - 8);
  }
  // A panel's strips, and the MLP's scatter, as tables: built when their
  // disclosure opens, from the values the canvases are painted from, so
  // every value is there for a keyboard, a finger or a screen reader.
  const num = (v) => String(Number(v.toPrecision(3)));
  function th(scope, text) {
    const e = document.createElement("th");
    e.scope = scope; e.textContent = text;
    return e;
  }
  function stripName(c) {
    const l = c.getAttribute("aria-label") || "", i = l.lastIndexOf(": ");
    return i > 0 ? l.slice(0, i) : l;
  }
  function stripTable(c) {
    const vals = stripVals(c), t = document.createElement("table");
    t.className = "stripvals";
    t.createCaption().textContent = `${stripName(c)}: ${vals.length} values, eight to a row (the row's first index, then +0 to +7)`;
    const h = t.createTHead().insertRow();
    h.append(th("col", "index"));
    for (let k = 0; k < 8; k++) h.append(th("col", "+" + k));
    const b = t.createTBody();
    for (let i = 0; i < vals.length; i += 8) {
      const r = b.insertRow();
      r.append(th("row", String(i)));
      for (let k = i; k < Math.min(i + 8, vals.length); k++) r.insertCell().textContent = num(vals[k]);
    }
    return t;
  }
  function scatterTable(d) {
    const xs = document.getElementById(d.dataset.xFrom), ys = document.getElementById(d.dataset.yFrom);
    if (!xs || !ys) return null;
    const x = stripVals(xs), y = stripVals(ys), t = document.createElement("table");
    t.className = "stripvals";
    t.createCaption().textContent = `Each hidden unit as a point of the scatter — across: ${stripName(xs)}; up: ${stripName(ys)}`;
    t.createTHead().insertRow().append(th("col", "unit"), th("col", stripName(xs)), th("col", stripName(ys)));
    const b = t.createTBody();
    x.forEach((v, i) => {
      const r = b.insertRow();
      r.append(th("row", String(i)));
      r.insertCell().textContent = num(v);
      r.insertCell().textContent = num(y[i]);
    });
    return t;
  }
  function fillValues(d) {
    if (d.dataset.filled || !d.open) return;
    let tables = [];
    if (d.matches("details.strip-values")) tables = [...(d.closest("section.panel") || document).querySelectorAll("canvas.strip")].map(stripTable);
    else if (d.matches("details.scatter-values")) tables = [scatterTable(d)].filter(Boolean);
    else return;
    d.dataset.filled = "1";
    const w = document.createElement("div");
    w.className = "scroll"; w.tabIndex = 0; w.setAttribute("role", "region"); w.setAttribute("aria-label", "the tables (scroll sideways when wider than the page)");
    w.append(...tables);
    d.append(w);
  }
  document.addEventListener("toggle", (e) => { if (e.target instanceof HTMLDetailsElement) fillValues(e.target); }, true);
  // A patching grid wider than its region (a phone) opens at the first
  // position where the two prompts differ: the positions before it are
  // the same in both runs, so patching them restores nothing (0%).
  function patchStart(root) {
    root.querySelectorAll("table.patching").forEach((t) => {
      const s = t.closest(".scroll"), d = t.querySelector("th.differs"), first = t.querySelector("tr > th:first-child");
      if (!s || !d || s.dataset.started || s.scrollWidth <= s.clientWidth) return;
      s.dataset.started = "1";
      s.scrollLeft = d.offsetLeft - (first ? first.offsetWidth : 0);
    });
  }
  document.addEventListener("DOMContentLoaded", () => patchStart(document));
  document.addEventListener("htmx:wsAfterMessage", () => patchStart(document));
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
      g.setAttribute("role", live ? "button" : "img");
      if (!live) g.setAttribute("tabindex", "-1");
      if (/\bhere\b/.test(c)) g.setAttribute("aria-current", "step"); else g.removeAttribute("aria-current");
    });
    const svg = map.querySelector("svg[data-roving]");
    if (svg) roveStop(svg);
    map.querySelectorAll("text.tag").forEach((t) => t.classList.toggle("here", /\bhere\b/.test(cls.get(t.dataset.tagOf) || "")));
    const nums = parseNums(st.dataset.nums);
    map.dataset.nums = st.dataset.nums || "";
    map.querySelectorAll("[data-tpl]").forEach((t) => { if (t.dataset.tpl) t.textContent = fillNums(t.dataset.tpl, nums); });
    map.querySelectorAll("[data-tpl-name]").forEach((g) => g.setAttribute("aria-label", fillNums(g.dataset.tplName, nums)));
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
    // the Advanced settings stay folded until the viewer opens them: the
    // first screen is the prompt, model, temperature, max tokens and Run
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
  // Each tour step brings the stage's panel into view: its heading at the
  // top (under the model map where the map sticks there), the picture
  // above the caption; smoothly, unless the viewer asked for reduced
  // motion.
  function tourScroll() {
    const p = document.querySelector("#stage section.panel[data-stage]");
    if (!tour.timer || !p) return;
    const map = document.querySelector("#stage details.map"), mh = map ? map.getBoundingClientRect().height : 0;
    const sticks = map && getComputedStyle(map).position === "sticky" && map.parentElement.getBoundingClientRect().height > mh + 1; // stuck only with room in its parent
    const over = sticks ? mh : 0;
    const top = Math.max(0, p.getBoundingClientRect().top + window.scrollY - over - 8);
    const calm = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    window.scrollTo({ top, behavior: calm ? "auto" : "smooth" });
  }
  function stopTour(last) {
    if (tour.timer) window.scrollTo({ top: window.scrollY, behavior: "instant" }); // a smooth scroll under way stops with the tour
    if (tour.timer) clearInterval(tour.timer);
    tour.timer = null;
    if (tour.box && last) { tour.box.querySelector("span").textContent = last; tour.box.querySelector("button").textContent = "Close"; }
  }
  function closeTour() {
    stopTour();
    const had = tour.box.contains(document.activeElement);
    tour.box.remove();
    tour.box = null;
    document.body.classList.remove("touring");
    if (had) document.getElementById("stage").focus();
  }
  function startTour() {
    if (!new URLSearchParams(location.search).has("tour") || !document.getElementById("action-step")) return;
    tour.box = document.createElement("aside");
    tour.box.className = "tour-caption"; tour.box.dataset.testid = "tour-caption"; // the page's live region says its sentence
    tour.box.innerHTML = "<p><strong></strong> <span></span></p><button type=\"button\">Stop the tour</button>";
    tour.box.querySelector("button").addEventListener("click", closeTour);
    document.body.append(tour.box);
    document.body.classList.add("touring"); // room under the caption, so the page's end scrolls above it
    document.querySelectorAll("details.advanced").forEach((d) => { d.open = false; });
    tourCaption();
    tour.timer = setInterval(() => send("step"), 5000);
    requestAnimationFrame(tourScroll);
    document.addEventListener("keydown", () => stopTour("Tour stopped: you are stepping now."), { once: true });
  }
  document.addEventListener("htmx:oobAfterSwap", tourCaption);
  document.addEventListener("htmx:wsAfterMessage", () => { if (tour.timer) requestAnimationFrame(tourScroll); });
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
  // the student's own); before it, the choice the student pressed is
  // pressed (aria-pressed) among the poll's buttons.
  function markMine() {
    const m = document.getElementById("poll-mine");
    document.querySelectorAll("[data-testid='poll-option'][aria-pressed]").forEach((b) => {
      b.setAttribute("aria-pressed", String(!!(m && m.dataset.answer && b.dataset.answer === m.dataset.answer)));
    });
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
  // ---- The keyboard: shortcuts, focus across redraws, roving tab
  // stops, overlays, and what the live region says.

  // Single-key shortcuts act only where no control has focus (the page
  // itself, or the stage region and what is not a control in it), and
  // the viewer can turn them off; the step buttons' aria-keyshortcuts
  // say so only while they are on.
  const CONTROL = "a[href], button, summary, input, select, textarea, [role='button'], [role='slider'], [contenteditable='true'], [data-goto-stage]";
  function shortcutsOn() {
    try { return localStorage.getItem("stepthrough-shortcuts") !== "off"; } catch (_) { return true; }
  }
  function syncShortcuts() {
    const on = shortcutsOn();
    document.querySelectorAll("input[data-shortcuts]").forEach((c) => { c.checked = on; });
    document.querySelectorAll("[data-shortcut]").forEach((b) => {
      if (on) b.setAttribute("aria-keyshortcuts", b.dataset.shortcut); else b.removeAttribute("aria-keyshortcuts");
    });
  }
  document.addEventListener("change", (e) => {
    if (!(e.target instanceof HTMLInputElement) || !e.target.hasAttribute("data-shortcuts")) return;
    try { localStorage.setItem("stepthrough-shortcuts", e.target.checked ? "on" : "off"); } catch (_) { /* storage off */ }
    syncShortcuts();
  });
  function onStage(t) {
    if (!(t instanceof Element) || t === document.body || t === document.documentElement) return true;
    return !!t.closest("#stage") && !t.closest(CONTROL);
  }

  // Rows of like buttons (the pipeline strip, the model map's parts, the
  // head thumbnails) are one tab stop each: arrow keys, Home and End move
  // inside (a roving tabindex; [data-roving] names the items).
  function roveItems(box) {
    return [...box.querySelectorAll(box.dataset.roving)].filter((el) => !el.disabled && el.getClientRects().length > 0);
  }
  function roveStop(box) {
    const items = roveItems(box);
    if (!items.length) return;
    const stop = items.find((i) => i === document.activeElement) ||
      items.find((i) => i.matches("[aria-current='step'], [aria-pressed='true']")) || items[0];
    items.forEach((i) => i.setAttribute("tabindex", i === stop ? "0" : "-1"));
  }
  function rove(e) {
    const t = e.target;
    const box = t instanceof Element && t.closest("[data-roving]");
    if (!box || !t.matches(box.dataset.roving)) return false;
    const items = roveItems(box), i = items.indexOf(t);
    let j;
    switch (e.key) {
      case "ArrowRight": case "ArrowDown": j = Math.min(items.length - 1, i + 1); break;
      case "ArrowLeft": case "ArrowUp": j = Math.max(0, i - 1); break;
      case "Home": j = 0; break;
      case "End": j = items.length - 1; break;
      default: return false;
    }
    e.preventDefault();
    items.forEach((el, k) => el.setAttribute("tabindex", k === j ? "0" : "-1"));
    items[j].focus();
    return true;
  }
  // On a phone the pipeline strip is one row that scrolls sideways (a
  // deep model's 60 and more chips would fill the first screen): the
  // current stage's chip is brought into the row's view, the page itself
  // not scrolled.
  function stripToCurrent() {
    document.querySelectorAll(".strip[data-current-stage]").forEach((s) => {
      const c = s.querySelector("[aria-current='step']");
      if (!c || s.scrollWidth <= s.clientWidth) return;
      const sr = s.getBoundingClientRect(), cr = c.getBoundingClientRect();
      s.scrollLeft += cr.left - sr.left - (sr.width - cr.width) / 2;
    });
  }
  function roveAll(root) { (root.querySelectorAll ? root : document).querySelectorAll("[data-roving]").forEach(roveStop); }

  // Focus across redraws: a message replaces the view the focused control
  // was in; afterwards focus goes back to the same control in the new view
  // (by id, else by its identifying attributes and place), or, when it is
  // gone, to the new view's heading — never to <body>. A follower's focus
  // stays where it was when the instructor steps; an instructor's is not
  // moved by the students' answers.
  const KEYS = ["data-action", "data-testid", "name", "data-head", "data-unit", "data-goto-stage", "data-goto-layer", "data-goto-filter", "data-answer", "data-term", "data-feature"];
  function focusKey(el) {
    if (el.id) return { sel: "#" + CSS.escape(el.id), n: 0 };
    let sel = el.localName;
    for (const a of KEYS) if (el.hasAttribute(a)) sel += `[${a}="${CSS.escape(el.getAttribute(a))}"]`;
    if (sel === el.localName && el.hasAttribute("href")) sel += `[href="${CSS.escape(el.getAttribute("href"))}"]`;
    return { sel, n: [...document.querySelectorAll(sel)].indexOf(el) };
  }
  function canFocus(el) { return !!el && el.isConnected && !el.disabled && el.getClientRects().length > 0; }
  // where focus goes when its control is gone: a new lesson step's
  // title, a poll's answer once revealed, else the new stage's heading,
  // else the stage region
  const lessonStep = () => (document.querySelector("#room-view") || { dataset: {} }).dataset.lessonStep;
  function focusFallback(was) {
    const sels = [];
    if (was.step !== lessonStep()) sels.push("#room-view > h2");
    if (was.poll) sels.push("#room-view [data-testid='reveal']", "#room-view [data-testid='poll']");
    sels.push("#stage section.panel[data-stage] h2", "#stage h2", "#stage");
    for (const sel of sels) {
      const el = document.querySelector(sel);
      if (canFocus(el)) return el;
    }
    return null;
  }
  let focused = null;
  document.addEventListener("htmx:wsBeforeMessage", () => {
    const a = document.activeElement;
    if (!a || a === document.body || a === document.documentElement) { focused = null; return; }
    focused = { el: a, key: focusKey(a), step: lessonStep(), poll: !!a.closest("[data-testid='poll']") || a.matches("[data-action='reveal']") };
  });
  function restoreFocus() {
    const was = focused;
    focused = null;
    const a = document.activeElement;
    if (!was || (a && a !== document.body && a !== document.documentElement)) return; // focus is where it was, or where someone put it
    const all = document.querySelectorAll(was.key.sel);
    let el = all[was.key.n] || all[0];
    const same = canFocus(el);
    if (!same) el = focusFallback(was);
    if (!el) return;
    if (el.tabIndex < 0 && !el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    const box = el.closest("[data-roving]");
    if (box && el.matches(box.dataset.roving)) roveItems(box).forEach((i) => i.setAttribute("tabindex", i === el ? "0" : "-1"));
    el.focus({ preventScroll: same });
  }

  // Overlays: Escape closes a glossary term's sentence, the tour's caption
  // and the projector's join panel; the open join panel keeps Tab inside
  // it and gives focus back where it was when it closes.
  function joinPanel() { return document.querySelector("details.projector-join[open]"); }
  let beforeJoin = null;
  document.addEventListener("toggle", (e) => {
    const d = e.target;
    if (!(d instanceof HTMLDetailsElement) || !d.matches(".projector-join")) return;
    if (d.open) {
      const a = document.activeElement;
      beforeJoin = a && a !== document.body && !d.contains(a) ? a : null;
      if (!d.contains(document.activeElement)) d.querySelector("summary").focus();
    } else if (d.contains(document.activeElement) || document.activeElement === document.body) {
      const back = beforeJoin && beforeJoin.isConnected ? beforeJoin : d.querySelector("summary");
      beforeJoin = null;
      back.focus();
    }
  }, true);
  function dismiss(e) {
    const t = e.target;
    if (t instanceof Element && t.matches("dfn.term") && !t.hasAttribute("data-dismissed")) {
      t.setAttribute("data-dismissed", "");
      e.preventDefault();
      return;
    }
    const d = joinPanel();
    if (d) {
      e.preventDefault();
      const back = beforeJoin && beforeJoin.isConnected ? beforeJoin : d.querySelector("summary");
      beforeJoin = null;
      d.open = false;
      back.focus();
      return;
    }
    if (tour.box) { e.preventDefault(); closeTour(); }
  }
  document.addEventListener("focusout", (e) => {
    if (e.target instanceof Element && e.target.matches("dfn.term")) e.target.removeAttribute("data-dismissed");
  });
  function trapTab(e) {
    const d = joinPanel();
    if (!d) return;
    const items = [...d.querySelectorAll("summary, a[href], button, input, select, textarea, [tabindex]:not([tabindex='-1'])")].filter(canFocus);
    if (!items.length) return;
    const i = items.indexOf(document.activeElement);
    let next;
    if (i < 0) next = items[0];
    else if (e.shiftKey && i === 0) next = items[items.length - 1];
    else if (!e.shiftKey && i === items.length - 1) next = items[0];
    if (next) { e.preventDefault(); next.focus(); }
  }

  // Skip links: focus their target (a button, or the stage region), with
  // no fragment in the address (it is the view's shareable URL). Enter
  // follows a link on keydown; focus moves once the key is up, or the
  // key's keypress would press the button it lands on.
  document.addEventListener("click", (e) => {
    const a = e.target instanceof Element && e.target.closest("a[data-skip]");
    if (!a) return;
    const el = document.getElementById(a.dataset.skip);
    if (!el) return;
    e.preventDefault();
    if (e.detail !== 0) { el.focus(); return; }
    let done = false;
    const go = () => { if (!done) { done = true; el.focus(); } };
    document.addEventListener("keyup", go, { once: true });
    setTimeout(go, 500);
  });

  // The page's one live region (#announce): after each message it says
  // what changed, in one go — the view's new lines (data-announce on the
  // room's view or the Explorer's state: the step, a question or its
  // reveal, the stage with the engine's number), a student's own answer,
  // a note the server sent. The first view is the page's: not said.
  const said = { lines: [], mine: "", note: null, at: 0 };
  function viewLines() {
    const v = document.querySelector("#room-view[data-announce]") || document.querySelector("#state[data-announce]");
    return v ? v.dataset.announce.split("\n").filter(Boolean) : [];
  }
  function mineText() {
    const m = document.getElementById("poll-mine");
    return m ? m.textContent.replace(/\s+/g, " ").trim() : "";
  }
  function noteNow() { return document.getElementById("room-note") || document.getElementById("explorer-note"); }
  function announce() {
    const box = document.getElementById("announce");
    if (!box) return;
    const out = [];
    const lines = viewLines();
    lines.forEach((l) => { if (!said.lines.includes(l)) out.push(l); });
    if (lines.length) said.lines = lines;
    const fromView = out.length > 0;
    const gloss = (document.getElementById("state") || { dataset: {} }).dataset.stageGloss;
    if (fromView && tour.timer && gloss) out.push(gloss); // the tour's caption, said
    const mine = mineText();
    if (mine && mine !== said.mine) out.push(mine);
    said.mine = mine;
    const n = noteNow();
    if (n && n !== said.note && n.textContent.trim()) out.push(n.textContent.trim());
    said.note = n;
    if (!out.length) return;
    // a new view replaces what was said; a student's answer or a note that
    // follows the view's message (the reveal, then the student's verdict)
    // is added to it, not put over it
    const now = Date.now();
    if (!fromView && now - said.at < 1000 && box.textContent) box.append(" " + out.join(" "));
    else box.textContent = out.join(" ");
    if (fromView) said.at = now;
  }
  document.addEventListener("DOMContentLoaded", () => {
    said.lines = viewLines(); said.mine = mineText(); said.note = noteNow();
    syncAblate();
    syncShortcuts();
    roveAll(document);
    stripToCurrent();
  });
  document.addEventListener("htmx:wsAfterMessage", () => {
    syncAblate();
    syncShortcuts();
    roveAll(document);
    stripToCurrent();
    restoreFocus();
    slideOn();
    announce();
  });
})();
