/* Compare runs: one chart per chosen or pinned metric key, one line per run (faint raw, the EMA on top),
 * and the member's custom panels with every run's series (a colour per run, a dash per series). The
 * x-axis, smoothing, log scale, pins and panels are the member's chart layout, shared with the run pages
 * (static/js/charts.js, docs/charts.md). The config diff shows the differing fields until "Show all fields". */
"use strict";
(function () {
  const C = window.rlvr.charts;
  const el = window.rlvr.el;
  const data = window.rlvr.pageData();

  const pick = document.getElementById("compare-pick");
  pick.addEventListener("submit", (e) => {
    e.preventDefault();
    const ids = Array.from(pick.querySelectorAll("input[type=checkbox]:checked")).map((c) => c.value);
    window.location.search = ids.length ? "?runs=" + ids.join(",") : "";
  });

  const diffAll = document.getElementById("diff-all");
  if (diffAll) diffAll.addEventListener("change", () => {
    document.getElementById("config-diff").classList.toggle("diff-only", !diffAll.checked);
  });

  const keysBox = document.getElementById("metric-keys");
  if (!keysBox || !data.runs || !data.runs.length) return;
  const runs = data.runs;
  const known = new Set(data.keys);
  const store = C.layoutStore(data.project_id, data.chart_layout, document.getElementById("layout-status"));
  const spec = store.spec;
  const cache = {};  // run id -> key -> columns
  const charts = {};  // key -> {box, div, button}
  const panels = {};  // panel id -> {box, div}
  const grid = document.getElementById("compare-charts");
  const pinnedGrid = document.getElementById("pinned-grid");
  const panelGrid = document.getElementById("panel-grid");
  const KEYS_PER_REQUEST = 40;  // keeps each metrics URL short
  let drawn = { axis: "step", unit: C.axisUnit("step", 0) };

  /* An x-axis is offered when every run compared logged its series; otherwise the title names those that did not. */
  function axisWhy() {
    const why = { step: null };
    for (const axis of ["time", "tokens"]) {
      const lacking = runs.filter((r) => !r.axes[axis]).map((r) => r.label);
      const who = lacking.length === runs.length ? "these runs have" : lacking.join(", ") + (lacking.length === 1 ? " has" : " have");
      why[axis] = lacking.length ? who + " logged no " + C.AXES[axis].key + " metric" : null;
    }
    return why;
  }

  function activeAxis() { return axisWhy()[spec.x_axis] ? "step" : spec.x_axis; }

  function wanted() {
    const pinned = spec.pinned.filter((k) => known.has(k));
    const checked = Array.from(keysBox.querySelectorAll("input:checked")).map((c) => c.value);
    const others = checked.filter((k) => !pinned.includes(k));
    const panelKeys = spec.panels.flatMap((p) => p.series).filter((k) => known.has(k));
    const axisKey = C.AXES[activeAxis()].key;
    return { pinned: pinned, others: others, fetch: Array.from(new Set(pinned.concat(others, panelKeys, axisKey ? [axisKey] : []))) };
  }

  async function ensure(keys) {
    await Promise.all(runs.map(async (r) => {
      cache[r.id] = cache[r.id] || {};
      const missing = keys.filter((k) => !(k in cache[r.id]));
      for (let i = 0; i < missing.length; i += KEYS_PER_REQUEST) {
        const part = missing.slice(i, i + KEYS_PER_REQUEST);
        const resp = await window.rlvr.api("/api/runs/" + r.id + "/metrics/?keys=" + encodeURIComponent(part.join(",")));
        const got = resp.ok ? (resp.body.metrics || {}) : {};
        for (const k of part) cache[r.id][k] = C.columns(got[k]);
      }
    }));
  }

  function xsOf(runId, steps) {
    if (drawn.axis === "step") return steps.slice();
    return C.mapSteps(C.axisSeries((cache[runId] || {})[C.AXES[drawn.axis].key]), steps, drawn.unit.scale);
  }

  /* A run's series of ``key`` as the trace builder takes it, or null when the run has no point of it. */
  function seriesOf(runId, key) {
    const c = cache[runId] && cache[runId][key];
    if (!c || !c.step.length) return null;
    return { steps: c.step, values: c.value, mins: c.min, maxs: c.max, smoothed: C.ema(c.value, C.smoothingFor(key, spec.smoothing)) };
  }

  function keyTraces(key) {
    const traces = [];
    runs.forEach((r, i) => {
      const s = seriesOf(r.id, key);
      if (s) traces.push(...C.metricTraces(s, xsOf(r.id, s.steps), { color: C.COLORS[i % C.COLORS.length], name: r.label }).slice(2));
    });
    return traces;
  }

  function panelTraces(panel) {
    const traces = [];
    runs.forEach((r, i) => panel.series.forEach((key, j) => {
      const s = seriesOf(r.id, key);
      if (!s) return;
      const opts = { color: C.COLORS[i % C.COLORS.length], dash: C.DASHES[j % C.DASHES.length], name: r.label + " · " + key };
      traces.push(C.metricTraces(s, xsOf(r.id, s.steps), opts)[3]);
    }));
    return traces;
  }

  /* The runs' colours once above the charts, instead of a legend of up to 12 long names in every chart. */
  function showLegend() {
    document.getElementById("compare-legend").replaceChildren(...runs.map((r, i) => {
      const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
      swatch.style.background = C.COLORS[i % C.COLORS.length];
      return el("li", {}, swatch, el("a", { href: "/runs/" + r.id + "/" }, r.label));
    }));
  }

  /* Under a panel: which dash is which series (the colour is the run). */
  function panelCaption(panel, div) {
    let caption = div.parentNode.querySelector(".panel-caption");
    if (!caption) { caption = el("p", { class: "panel-caption muted small" }); div.parentNode.appendChild(caption); }
    caption.replaceChildren(...panel.series.map((key, j) => el("span", { class: "dash-" + C.DASHES[j % C.DASHES.length] }, key)));
  }

  function chartLayout(title, extra) {
    return C.plotLayout(title, Object.assign({ xTitle: drawn.unit.title, log: spec.log, height: 260 }, extra || {}));
  }

  function chartFor(key) {
    if (!charts[key]) {
      const button = C.pinButton(key, false, togglePin);
      charts[key] = Object.assign(C.chartBox(key, [button]), { button: button });
    }
    C.setPinned(charts[key].button, spec.pinned.includes(key));
    return charts[key];
  }

  /* Every chart from the cache: the pinned keys in pin order, then the chosen ones, then the panels. */
  function draw() {
    const w = wanted();
    const axisKey = C.AXES[activeAxis()].key;
    const largest = axisKey ? Math.max(0, ...runs.map((r) => C.axisSeries((cache[r.id] || {})[axisKey]).values.slice(-1)[0] || 0)) : 0;
    drawn = { axis: activeAxis(), unit: C.axisUnit(activeAxis(), largest) };
    const keep = new Set(w.pinned.concat(w.others));
    for (const key of Object.keys(charts)) {
      if (!keep.has(key)) { Plotly.purge(charts[key].div); charts[key].box.remove(); delete charts[key]; }
    }
    for (const key of w.pinned) C.place(chartFor(key).box, pinnedGrid, null);
    for (const key of w.others) C.place(chartFor(key).box, grid, null);
    for (const key of keep) Plotly.react(charts[key].div, keyTraces(key), chartLayout(key), C.PLOT_CONFIG);
    C.syncPanels(store, panelGrid, panels, editor, (panel, div) => {
      const traces = panelTraces(panel);
      const note = traces.length ? "" : "These runs have none of these series";
      Plotly.react(div, traces, chartLayout(panel.title, { note: note }), C.PLOT_CONFIG);
      panelCaption(panel, div);
    });
    applySearch();
  }

  async function render() {
    await ensure(wanted().fetch);
    draw();
    document.body.dataset.chartsReady = "1";
  }

  function togglePin(key) {
    if (store.togglePin(key)) render();
  }

  function applySearch() {
    const query = document.getElementById("chart-search").value;
    const words = C.searchWords(query);
    let listed = 0;
    for (const label of keysBox.querySelectorAll("label")) {
      label.hidden = !C.matches(label.textContent, words);
      if (!label.hidden) listed++;
    }
    document.getElementById("keys-count").textContent = "(" + (words.length ? listed + " of " : "") + data.keys.length + " keys)";
    const boxes = Object.entries(charts).map(([key, c]) => ({ box: c.box, text: key }))
      .concat(spec.panels.filter((p) => panels[p.id]).map((p) => ({ box: panels[p.id].box, text: p.title + " " + p.series.join(" ") })));
    C.filterBoxes(boxes, query, document.getElementById("chart-count"),
      [document.getElementById("chart-pinned"), document.getElementById("chart-panels")]);
  }

  const editor = C.panelEditor(store, () => data.keys, render);
  C.bindControls(store, { smoothing: draw, log: draw, axis: render, search: applySearch, addPanel: () => editor.open(null) });
  C.setAxisOptions(document.getElementById("x-axis"), axisWhy(), activeAxis());
  keysBox.addEventListener("change", render);
  showLegend();
  render();
})();
