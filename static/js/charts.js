/* Chart code shared by the run page (run.js) and the compare page (compare.js), docs/charts.md:
 * - EMA smoothing, and the min/max band of a series the server downsampled (each bucket's mean is the
 *   line; its min and max, two traces filled 'tonexty', the light band behind it);
 * - the x-axis: step, wall-clock (perf/elapsed_s) or tokens (perf/tokens_total), a step mapped to x by
 *   interpolating the run's own axis series;
 * - the member's chart layout (pins, custom panels, x-axis, smoothing, log scale), kept by
 *   GET/PUT /api/projects/<id>/chart-layout/ so every run page of the project and the compare page share it;
 * - the search filter and the panel editor (templates/pages/_chart_panel_editor.html). */
"use strict";
window.rlvr.charts = (function () {
  const el = window.rlvr.el;
  const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
    "#4b5563", "#65a30d", "#7c3aed", "#0d9488"];
  const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
  const AXES = {
    step: { key: null, label: "step" },
    time: { key: "perf/elapsed_s", label: "wall-clock" },
    tokens: { key: "perf/tokens_total", label: "tokens" },
  };
  const LIMITS = { pinned: 50, panels: 20, series: 12, title: 100 };  // webapp/workspaces/chart_layouts.py

  function ema(values, alpha) {
    const out = new Array(values.length);
    let acc = null;
    for (let i = 0; i < values.length; i++) {
      acc = emaStep(acc, values[i], alpha);
      out[i] = acc;
    }
    return out;
  }

  /* The smoothing a metric gets: none for evaluations (eval/...), whose few points are each a whole
   * measurement, so an average with the earlier ones would only lag behind the latest. */
  function smoothingFor(key, alpha) {
    return key.startsWith("eval/") ? 0 : alpha;
  }

  function emaStep(acc, v, alpha) {
    if (v === null || v === undefined || !isFinite(v)) return acc;
    return acc === null ? v : alpha * acc + (1 - alpha) * v;
  }

  /* The API's columns {step, value, min, max} (min and max default to the values; the older list of points too). */
  function columns(points) {
    if (!points) return { step: [], value: [], min: [], max: [] };
    if (Array.isArray(points)) {
      const value = points.map((p) => p.value);
      return { step: points.map((p) => p.step), value: value, min: value, max: value };
    }
    const value = points.value || [];
    return { step: points.step || [], value: value, min: points.min || value, max: points.max || value };
  }

  /* True when some bucket's min and max differ: the server averaged several steps into that point. */
  function downsampled(mins, maxs) {
    for (let i = 0; i < mins.length; i++) {
      if (mins[i] !== null && maxs[i] !== null && mins[i] !== maxs[i]) return true;
    }
    return false;
  }

  /* steps -> x through a run's axis series (steps, values): elapsed seconds and cumulative tokens only
   * grow, so a downsampled bucket's max is the value at its last step. Linear between known points, from
   * (0, 0) before the first; null after the last (that step's axis value has not arrived yet). */
  function mapSteps(axis, steps, scale) {
    const xs = axis.steps, ys = axis.values;
    const out = new Array(steps.length);
    let j = 0;
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i];
      if (!xs.length || s > xs[xs.length - 1]) { out[i] = null; continue; }
      if (j > 0 && xs[j - 1] >= s) j = 0;  // steps are sorted within a call; restart when they are not
      while (j < xs.length && xs[j] < s) j++;
      const x1 = xs[j], y1 = ys[j];
      const x0 = j > 0 ? xs[j - 1] : 0, y0 = j > 0 ? ys[j - 1] : 0;
      const y = x1 === s || x1 === x0 ? y1 : y0 + ((y1 - y0) * (s - x0)) / (x1 - x0);
      out[i] = y === null || y === undefined ? null : y / scale;
    }
    return out;
  }

  /* A run's axis series from its columns: (step, max) pairs with a number. */
  function axisSeries(cols) {
    const steps = [], values = [];
    if (!cols) return { steps: steps, values: values };
    for (let i = 0; i < cols.step.length; i++) {
      const v = cols.max[i] !== null && cols.max[i] !== undefined ? cols.max[i] : cols.value[i];
      if (v !== null && v !== undefined && isFinite(v)) { steps.push(cols.step[i]); values.push(v); }
    }
    return { steps: steps, values: values };
  }

  /* The x-axis title and divisor: seconds, minutes or hours of wall-clock by the longest run shown. */
  function axisUnit(axis, largest) {
    if (axis === "time") {
      if (largest >= 7200) return { scale: 3600, title: "wall-clock (hours)" };
      if (largest >= 120) return { scale: 60, title: "wall-clock (minutes)" };
      return { scale: 1, title: "wall-clock (seconds)" };
    }
    return { scale: 1, title: axis === "tokens" ? "tokens" : "step" };
  }

  function faint(color, alpha) {
    const n = parseInt(color.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  /* One metric's traces: [band low, band high (filled to low), raw, smoothed]; the band is drawn first so
   * it sits behind the lines, and stays in the list (hidden) when there is none, so live appends always
   * extend the same four traces. The smoothed trace's hover also names the step. */
  const SPARSE_POINTS = 20;

  function metricTraces(s, xs, opts) {
    const color = opts.color || COLORS[0];
    const name = opts.name || "";
    const common = { mode: "lines", customdata: s.steps.slice(), legendgroup: name };
    const band = { ...common, showlegend: false, hoverinfo: "skip", visible: Boolean(opts.band) };
    return [
      { ...band, x: xs.slice(), y: s.mins.slice(), line: { width: 0, color: faint(color, 0) }, name: "min", meta: "min" },
      { ...band, x: xs.slice(), y: s.maxs.slice(), line: { width: 0, color: faint(color, 0) }, name: "max", meta: "max",
        fill: "tonexty", fillcolor: faint(color, 0.2) },
      { ...common, x: xs.slice(), y: s.values.slice(), line: { color: faint(color, 0.3), width: 1 }, showlegend: false,
        name: name ? name + " (raw)" : "raw", meta: "raw", hovertemplate: (name ? name + " raw" : "raw") + " %{y:.6g}<extra></extra>" },
      { ...common, x: xs.slice(), y: s.smoothed.slice(), line: { color: color, width: 2, dash: opts.dash || "solid" },
        // a series of a few points (an evaluation every N steps; the first step of a run) shows them as dots:
        // a line through one point draws nothing
        mode: s.steps.length < SPARSE_POINTS ? "lines+markers" : "lines", marker: { size: 6, color: color },
        name: name || "smoothed", meta: "smoothed", showlegend: Boolean(opts.legend),
        hovertemplate: (name ? name : "smoothed") + " %{y:.6g} · step %{customdata}<extra></extra>" },
    ];
  }

  function plotLayout(title, opts) {
    return {
      title: { text: title, font: { size: 13 } },
      margin: { l: 48, r: 12, t: 32, b: opts.legend ? 40 : 32 },
      height: opts.height || 240,
      hovermode: "x unified",
      showlegend: Boolean(opts.legend),
      legend: { orientation: "h", y: -0.22, font: { size: 10 } },
      xaxis: { title: { text: opts.xTitle || "step", font: { size: 11 } }, tickformat: opts.xTitle === "tokens" ? "~s" : "" },
      yaxis: { type: opts.log ? "log" : "linear", exponentformat: "e" },
      annotations: opts.note ? [{ text: opts.note, showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5,
        font: { color: "#6b7280" } }] : [],
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
    };
  }

  const PLOT_CONFIG = { displaylogo: false, responsive: true };

  /* The member's layout and its saving: changes are sent after a short pause (and on leaving the page);
   * body[data-layout-state] says saving / saved / error, and the status element says it in words. */
  function layoutStore(projectId, spec, statusEl) {
    const store = { spec: Object.assign({ pinned: [], panels: [], x_axis: "step", smoothing: 0.6, log: false }, spec || {}) };
    const url = "/api/projects/" + projectId + "/chart-layout/";
    let timer = null;
    function show(state, text) {
      document.body.dataset.layoutState = state;
      if (statusEl) { statusEl.textContent = text; statusEl.classList.toggle("error", state === "error"); }
    }
    async function send(keepalive) {
      timer = null;
      show("saving", "Saving layout…");
      const resp = await window.rlvr.api(url, { method: "PUT", json: { spec: store.spec }, keepalive: Boolean(keepalive) });
      if (resp.ok) show("saved", "Layout saved");
      else show("error", "Could not save the layout: " + ((resp.body && resp.body.message) || "HTTP " + resp.status));
    }
    store.save = function () {
      clearTimeout(timer);
      document.body.dataset.layoutState = "pending";
      timer = setTimeout(send, 300);
    };
    window.addEventListener("pagehide", () => { if (timer !== null) { clearTimeout(timer); send(true); } });
    /* Pin or unpin ``key``; false (and a message) when the pins are full. */
    store.togglePin = function (key) {
      const pins = store.spec.pinned;
      const at = pins.indexOf(key);
      if (at >= 0) pins.splice(at, 1);
      else if (pins.length >= LIMITS.pinned) { show("error", "At most " + LIMITS.pinned + " charts can be pinned: unpin one first."); return false; }
      else pins.push(key);
      store.save();
      return true;
    };
    return store;
  }

  /* Add (or replace, by id) a custom panel; false (and a message) when the panels are full. */
  function savePanel(store, panel) {
    const panels = store.spec.panels;
    const at = panels.findIndex((p) => p.id === panel.id);
    if (at >= 0) panels[at] = panel;
    else if (panels.length >= LIMITS.panels) { window.alert("At most " + LIMITS.panels + " panels: remove one first."); return false; }
    else panels.push(panel);
    store.save();
    return true;
  }

  function removePanel(store, id) {
    const panels = store.spec.panels;
    const at = panels.findIndex((p) => p.id === id);
    if (at >= 0) panels.splice(at, 1);
    store.save();
  }

  /* The Panels section in the layout's order: ``boxes`` (panel id -> {box, div}) gains a box with Edit and
   * Remove for each new panel and loses removed ones; ``draw(panel, div)`` plots each. */
  function syncPanels(store, grid, boxes, editor, draw) {
    const wanted = new Set(store.spec.panels.map((p) => p.id));
    for (const id of Object.keys(boxes)) {
      if (!wanted.has(id)) { Plotly.purge(boxes[id].div); boxes[id].box.remove(); delete boxes[id]; }
    }
    for (const panel of store.spec.panels) {
      if (!boxes[panel.id]) {
        const edit = el("button", { type: "button", class: "small", title: "Change the title or the series" }, "Edit");
        const remove = el("button", { type: "button", class: "small danger", title: "Remove this panel" }, "Remove");
        const id = panel.id;
        edit.addEventListener("click", () => editor.open(store.spec.panels.find((p) => p.id === id)));
        remove.addEventListener("click", () => { removePanel(store, id); editor.onChange(); });
        boxes[id] = chartBox("panel:" + id, [edit, remove]);
        boxes[id].box.classList.add("panel-box");
      }
      place(boxes[panel.id].box, grid, null);
      draw(panel, boxes[panel.id].div);
    }
  }

  /* The controls (templates/pages/_chart_controls.html) set from the layout, each change saved. */
  function bindControls(store, on) {
    const spec = store.spec;
    const smoothing = document.getElementById("smoothing");
    const shown = document.getElementById("smoothing-value");
    const log = document.getElementById("log-scale");
    const axis = document.getElementById("x-axis");
    smoothing.value = String(spec.smoothing);
    shown.textContent = Number(spec.smoothing).toFixed(2);
    log.checked = spec.log;
    axis.value = spec.x_axis;
    smoothing.addEventListener("input", () => {
      spec.smoothing = Number(smoothing.value);
      shown.textContent = spec.smoothing.toFixed(2);
      on.smoothing();
    });
    smoothing.addEventListener("change", () => store.save());
    log.addEventListener("change", () => { spec.log = log.checked; store.save(); on.log(); });
    axis.addEventListener("change", () => { spec.x_axis = axis.value; store.save(); on.axis(); });
    document.getElementById("chart-search").addEventListener("input", on.search);
    document.getElementById("add-panel").addEventListener("click", () => on.addPanel());
  }

  function searchWords(query) { return query.toLowerCase().split(/\s+/).filter(Boolean); }
  function matches(text, words) {
    const t = text.toLowerCase();
    return words.every((w) => t.includes(w));
  }

  /* Show only the boxes whose text matches every word of the query; "N of M charts" in ``countEl``;
   * a container left with no visible box is hidden too. A plot that comes back into view is sized again:
   * one drawn or resized while hidden has the wrong width. */
  function filterBoxes(boxes, query, countEl, containers) {
    const words = searchWords(query);
    const before = boxes.map((b) => b.box.offsetParent !== null);
    let visible = 0;
    for (const b of boxes) {
      const ok = matches(b.text, words);
      if (ok) visible++;
      b.box.hidden = !ok;
    }
    for (const c of containers) {
      c.hidden = !Array.from(c.querySelectorAll(".chart-box")).some((box) => !box.hidden);
    }
    boxes.forEach((b, i) => {
      const div = b.box.querySelector(".chart");
      if (!before[i] && b.box.offsetParent !== null && div.data) Plotly.Plots.resize(div);
    });
    if (countEl) countEl.textContent = words.length ? visible + " of " + boxes.length + " charts" : boxes.length + " charts";
  }

  /* Put a chart's box in ``grid`` and show the section holding it, so that Plotly measures a visible width. */
  function place(box, grid, before) {
    grid.insertBefore(box, before || null);
    const section = grid.closest("section");
    if (section) section.hidden = false;
  }

  /* A chart's box: a small toolbar (pin, or edit/remove for a panel) above its Plotly div. */
  function chartBox(id, tools) {
    const div = el("div", { class: "chart", "data-key": id });
    const box = el("div", { class: "chart-box", "data-key": id }, el("div", { class: "chart-tools" }, ...tools), div);
    return { box: box, div: div };
  }

  function pinButton(key, pinned, onClick) {
    const button = el("button", { type: "button", class: "small pin" });
    setPinned(button, pinned);
    button.addEventListener("click", () => onClick(key));
    return button;
  }

  function setPinned(button, pinned) {
    button.textContent = pinned ? "Unpin" : "Pin";
    button.setAttribute("aria-pressed", pinned ? "true" : "false");
    button.title = pinned ? "Unpin: back to its group" : "Pin to the top (on every run of this project)";
  }

  /* Enable the x-axis options a page can draw (``why`` maps an axis to the reason it cannot, or null) and
   * show the one drawn: the layout's, or step while the layout's cannot be drawn here (the layout keeps it). */
  function setAxisOptions(select, why, active) {
    select.value = active;
    const reasons = [];
    for (const option of select.options) {
      const reason = why[option.value] || "";
      option.disabled = Boolean(reason);
      option.title = reason;
      if (reason) reasons.push(AXES[option.value].label + ": " + reason);
    }
    select.title = reasons.length ? reasons.join("\n") : "What the charts' x-axis counts";
  }

  /* The panel editor (a <dialog>): a title and up to 12 series picked from a searchable list of keys;
   * saves into the layout, then calls ``onSave()`` (also after a panel's Remove). */
  function panelEditor(store, allKeys, onSave) {
    const dialog = document.getElementById("panel-editor");
    const form = document.getElementById("panel-form");
    const title = document.getElementById("panel-title");
    const search = document.getElementById("panel-series-search");
    const list = document.getElementById("panel-series-list");
    const count = document.getElementById("panel-series-count");
    const error = document.getElementById("panel-error");
    let editing = null;
    let chosen = [];

    function renderList() {
      const words = searchWords(search.value);
      const keys = Array.from(new Set(chosen.concat(allKeys()))).filter((k) => chosen.includes(k) || matches(k, words));
      list.replaceChildren(...keys.map((key) => {
        const box = el("input", { type: "checkbox", value: key });
        box.checked = chosen.includes(key);
        box.disabled = !box.checked && chosen.length >= LIMITS.series;
        box.addEventListener("change", () => {
          chosen = box.checked ? chosen.concat([key]) : chosen.filter((k) => k !== key);
          renderList();
        });
        return el("li", {}, el("label", { class: "check" }, box, " ", el("span", { class: "mono" }, key)));
      }));
      if (!keys.length) list.appendChild(el("li", { class: "muted" }, "No metric key matches."));
      count.textContent = chosen.length + " of at most " + LIMITS.series + " series chosen";
    }

    const api = { onChange: onSave };
    search.addEventListener("input", renderList);
    document.getElementById("panel-cancel").addEventListener("click", () => dialog.close());
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const text = title.value.trim();
      if (!text) { error.textContent = "Give the panel a title."; return; }
      if (!chosen.length) { error.textContent = "Choose at least one series."; return; }
      const id = editing ? editing.id : "p" + Date.now().toString(36) + Math.floor(Math.random() * 1296).toString(36);
      dialog.close();
      if (savePanel(store, { id: id, title: text.slice(0, LIMITS.title), series: chosen.slice() })) onSave();
    });

    return Object.assign(api, {
      open(panel) {
        editing = panel || null;
        chosen = panel ? panel.series.slice() : [];
        title.value = panel ? panel.title : "";
        search.value = "";
        error.textContent = "";
        document.getElementById("panel-editor-title").textContent = panel ? "Edit panel" : "Add panel";
        renderList();
        dialog.showModal();
        title.focus();
      },
    });
  }

  return {
    COLORS: COLORS, DASHES: DASHES, AXES: AXES, LIMITS: LIMITS, PLOT_CONFIG: PLOT_CONFIG,
    ema: ema, emaStep: emaStep, smoothingFor: smoothingFor, columns: columns, downsampled: downsampled, mapSteps: mapSteps,
    axisSeries: axisSeries, axisUnit: axisUnit, faint: faint, metricTraces: metricTraces, plotLayout: plotLayout,
    layoutStore: layoutStore, searchWords: searchWords, matches: matches, filterBoxes: filterBoxes,
    chartBox: chartBox, place: place, pinButton: pinButton, setPinned: setPinned, setAxisOptions: setAxisOptions,
    panelEditor: panelEditor, syncPanels: syncPanels, bindControls: bindControls,
  };
})();
