/* Run page: live Plotly charts grouped by metric prefix, fed by the REST API then the run's websocket;
 * before step 1, the first-use model build's progress (run.phase events) in place of the step count.
 * Points arrive downsampled (server-side min/max buckets, about 1000 per key): a downsampled series gets
 * its min/max band; each run.step appends one point to every trace with Plotly.extendTraces. Pins, custom
 * panels, the x-axis, smoothing and the log scale come from the member's chart layout and search filters
 * the charts (static/js/charts.js, docs/charts.md). An asynchronous run's staleness and idle times also
 * show beside the step count (showAsync). Every batch of points is also sent as a "rlvr:metrics" document event,
 * and every run.log event as "rlvr:run-log", for the page's other panels (static/js/reward_watch.js). A greedy benchmark's accuracy (eval/<name>/accuracy (greedy)) heads
 * the page, first and latest value with its chart (showHeadline; webapp/experiments/headline.py). */
"use strict";
(function () {
  const C = window.rlvr.charts;
  const el = window.rlvr.el;
  const data = window.rlvr.pageData();
  const runId = data.run_id;
  const GROUPS = ["rollout", "reward", "watch", "actor", "async", "perf", "eval"];
  const FINISHED = ["succeeded", "failed", "cancelled"];
  const HEADLINE_SUFFIX = "/accuracy (greedy)";
  const headlines = {};  // key -> {box, grid, schedule}: the greedy-accuracy tiles at the top of the page
  const AXIS_KEYS = [C.AXES.time.key, C.AXES.tokens.key];
  const series = {};  // key -> {steps, values, mins, maxs, smoothed, band}
  const charts = {};  // key -> {box, div, button}
  const panels = {};  // panel id -> {box, div}
  let lastStep = -1;
  let status = data.status;
  const chartsEl = document.getElementById("charts");
  const pinnedGrid = document.getElementById("pinned-grid");
  const panelGrid = document.getElementById("panel-grid");
  const store = C.layoutStore(data.project_id, data.chart_layout, document.getElementById("layout-status"));
  const spec = store.spec;
  let drawn = { axis: "step", unit: C.axisUnit("step", 0) };  // what the charts are drawn against now

  function groupOf(key) {
    const prefix = key.split("/")[0];
    return GROUPS.includes(prefix) ? prefix : "other";
  }

  function groupContainer(group) {
    let box = document.getElementById("group-" + group);
    if (!box) {
      box = el("section", { id: "group-" + group, class: "chart-group metric-group" }, el("h3", {}, group + "/"), el("div", { class: "chart-grid" }));
      const order = GROUPS.concat(["other"]);  // the groups in the documented order
      const after = Array.from(chartsEl.querySelectorAll(".metric-group")).find(
        (g) => order.indexOf(g.id.slice(6)) > order.indexOf(group));
      chartsEl.insertBefore(box, after || null);
    }
    return box.querySelector(".chart-grid");
  }

  // --- the x-axis ------------------------------------------------------------------------------------

  function axisWhy() {
    const why = { step: null };
    for (const axis of ["time", "tokens"]) {
      const key = C.AXES[axis].key;
      why[axis] = series[key] && series[key].steps.length ? null : "this run has logged no " + key + " metric";
    }
    return why;
  }

  function activeAxis() { return axisWhy()[spec.x_axis] ? "step" : spec.x_axis; }

  function xsOf(steps) {
    if (drawn.axis === "step") return steps.slice();
    const s = series[C.AXES[drawn.axis].key];
    return C.mapSteps(C.axisSeries({ step: s.steps, value: s.values, max: s.maxs }), steps, drawn.unit.scale);
  }

  function chartLayout(title, extra) {
    return C.plotLayout(title, Object.assign({ xTitle: drawn.unit.title, log: spec.log }, extra || {}));
  }

  /* Every chart again, against the x-axis the layout asks for (step while this run lacks its series). */
  function redrawAll() {
    const axis = activeAxis();
    const axisKey = C.AXES[axis].key;
    const largest = axisKey ? series[axisKey].maxs.reduce((m, v) => (v !== null && v > m ? v : m), 0) : 0;
    drawn = { axis: axis, unit: C.axisUnit(axis, largest) };
    for (const key of Object.keys(charts)) drawChart(key);
    drawPanels();
  }

  function refreshAxisOptions() {
    C.setAxisOptions(document.getElementById("x-axis"), axisWhy(), activeAxis());
    if (activeAxis() !== drawn.axis) redrawAll();
  }

  // --- metric charts ---------------------------------------------------------------------------------

  function drawChart(key) {
    const s = series[key];
    Plotly.react(charts[key].div, C.metricTraces(s, xsOf(s.steps), { band: s.band }), chartLayout(key), C.PLOT_CONFIG);
  }

  function createChart(key, c) {
    const empty = document.getElementById("charts-empty");
    if (empty) empty.remove();
    const s = { steps: c.step.slice(), values: c.value.slice(), mins: c.min.slice(), maxs: c.max.slice() };
    s.smoothed = C.ema(s.values, C.smoothingFor(key, spec.smoothing));
    s.band = C.downsampled(s.mins, s.maxs);
    series[key] = s;
    const button = C.pinButton(key, spec.pinned.includes(key), togglePin);
    charts[key] = Object.assign(C.chartBox(key, [button]), { button: button });
    placeChart(key);
    drawChart(key);
  }

  /* Pinned: in the Pinned section, in pin order; otherwise in its prefix group, by key. */
  function placeChart(key) {
    const box = charts[key].box;
    const at = spec.pinned.indexOf(key);
    let grid, before;
    if (at >= 0) {
      grid = pinnedGrid;
      const later = spec.pinned.slice(at + 1).find((k) => charts[k] && charts[k].box.parentNode === pinnedGrid);
      before = later ? charts[later].box : null;
    } else if (isHeadline(key)) {
      grid = headlineFor(key).grid;
      before = null;
    } else {
      grid = groupContainer(groupOf(key));
      before = Array.from(grid.children).find((b) => b.dataset.key > key) || null;
    }
    const moved = box.parentNode !== null;
    C.place(box, grid, before);
    if (moved && charts[key].div.data) Plotly.Plots.resize(charts[key].div);
  }

  function togglePin(key) {
    if (!store.togglePin(key)) return;
    C.setPinned(charts[key].button, spec.pinned.includes(key));
    placeChart(key);
    applySearch();
  }

  function appendPoints(key, c) {
    const s = series[key];
    const fresh = [];
    for (let i = 0; i < c.step.length; i++) if (!s.steps.length || c.step[i] > s.steps[s.steps.length - 1]) fresh.push(i);
    if (!fresh.length) return;
    const pick = (col) => fresh.map((i) => col[i]);
    const st = pick(c.step), ys = pick(c.value), mn = pick(c.min), mx = pick(c.max);
    let acc = s.smoothed.length ? s.smoothed[s.smoothed.length - 1] : null;
    const sm = ys.map((v) => (acc = C.emaStep(acc, v, C.smoothingFor(key, spec.smoothing))));
    s.steps.push(...st); s.values.push(...ys); s.mins.push(...mn); s.maxs.push(...mx); s.smoothed.push(...sm);
    if (!charts[key]) return;
    if (!s.band && C.downsampled(mn, mx)) {  // a catch-up after a long disconnect can come bucketed
      s.band = true;
      Plotly.restyle(charts[key].div, { visible: true }, [0, 1]);
    }
    // Plotly holds copies of our arrays, so both are extended: ours for smoothing/ETA/redraws, its for drawing.
    const xs = xsOf(st);
    Plotly.extendTraces(charts[key].div, {
      x: [xs, xs.slice(), xs.slice(), xs.slice()], y: [mn, mx, ys.slice(), sm],
      customdata: [st, st.slice(), st.slice(), st.slice()],
    }, [0, 1, 2, 3]);
  }

  /* New points of every key (columns from the API, or one step from the websocket): the x-axis series
   * first, so the other keys' points of the same step find their x. */
  function addColumns(metrics) {
    const keys = Object.keys(metrics || {}).sort((a, b) => AXIS_KEYS.includes(b) - AXIS_KEYS.includes(a));
    let created = false;
    for (const key of keys) {
      const c = C.columns(metrics[key]);
      if (!c.step.length) continue;
      if (!series[key]) { createChart(key, c); created = true; }
      else appendPoints(key, c);
      lastStep = Math.max(lastStep, c.step[c.step.length - 1]);
    }
    if (created) { refreshAxisOptions(); applySearch(); }
    schedulePanels(keys);
    showAsync();
    keys.filter(isHeadline).forEach(showHeadline);
    // Other panels of the page follow the same points (static/js/reward_watch.js).
    document.dispatchEvent(new CustomEvent("rlvr:metrics", { detail: metrics }));
  }

  // --- the headline: greedy accuracy on held-out problems, before training and now -------------------

  function isHeadline(key) { return key.startsWith("eval/") && key.endsWith(HEADLINE_SUFFIX); }

  /* The tile of ``key``: rendered by the server for the config's greedy benchmarks, made here for another. */
  function headlineFor(key) {
    if (headlines[key]) return headlines[key];
    const card = document.getElementById("run-headline");
    let box = Array.from(card.querySelectorAll(".headline")).find((b) => b.dataset.key === key);
    if (!box) {
      const name = key.slice("eval/".length, key.length - HEADLINE_SUFFIX.length);
      box = el("div", { class: "headline", "data-key": key },
        el("p", { class: "headline-text" }, el("strong", {}, "Greedy accuracy"), " on held-out problems ",
          el("span", { class: "muted" }, "(" + name + ")"), ": ", el("span", { class: "headline-values" })),
        el("div", { class: "chart-grid headline-grid" }));
      card.appendChild(box);
    }
    card.hidden = false;
    const planned = (data.headlines || []).find((h) => h.key === key);
    headlines[key] = { box: box, grid: box.querySelector(".headline-grid"), schedule: planned ? planned.schedule : "" };
    return headlines[key];
  }

  /* Mirrors headline_summary (webapp/experiments/headline.py): "0.086 → 0.268 (step 0 → 200)". */
  function headlineSummary(s, schedule) {
    if (!s || !s.steps.length) return schedule ? "not measured yet (" + schedule + ")" : "not measured yet";
    const value = (v) => (v === null || v === undefined || !isFinite(v) ? "—" : v.toFixed(3));
    const last = s.steps.length - 1;
    if (s.steps[0] === s.steps[last]) return value(s.values[0]) + " at step " + s.steps[0];
    return value(s.values[0]) + " → " + value(s.values[last]) + " (step " + s.steps[0] + " → " + s.steps[last] + ")";
  }

  function showHeadline(key) {
    const h = headlineFor(key);
    h.box.querySelector(".headline-values").textContent = headlineSummary(series[key], h.schedule);
  }

  // --- custom panels ---------------------------------------------------------------------------------

  function panelTraces(panel) {
    const traces = [];
    panel.series.forEach((key, i) => {
      const s = series[key];
      if (!s) return;
      traces.push(...C.metricTraces(s, xsOf(s.steps), { color: C.COLORS[i % C.COLORS.length], name: key, legend: true }).slice(2));
    });
    return traces;
  }

  function drawPanels() {
    C.syncPanels(store, panelGrid, panels, editor, (panel, div) => {
      const traces = panelTraces(panel);
      const note = traces.length ? "" : "This run has none of these series yet";
      Plotly.react(div, traces, chartLayout(panel.title, { legend: true, height: 280, note: note }), C.PLOT_CONFIG);
    });
    applySearch();
  }

  let panelTimer = null;
  function schedulePanels(keys) {
    if (panelTimer || !spec.panels.some((p) => p.series.some((k) => keys.includes(k)))) return;
    panelTimer = setTimeout(() => { panelTimer = null; drawPanels(); }, 250);
  }

  const editor = C.panelEditor(store, () => Object.keys(series).sort(), drawPanels);

  // --- search ----------------------------------------------------------------------------------------

  function applySearch() {
    const boxes = Object.entries(charts).map(([key, c]) => ({ box: c.box, text: key }))
      .concat(spec.panels.filter((p) => panels[p.id]).map((p) => ({ box: panels[p.id].box, text: p.title + " " + p.series.join(" ") })));
    const containers = [document.getElementById("chart-pinned"), document.getElementById("chart-panels"),
      ...chartsEl.querySelectorAll(".metric-group")];
    C.filterBoxes(boxes, document.getElementById("chart-search").value, document.getElementById("chart-count"), containers);
  }

  // --- the run's status, progress and events ---------------------------------------------------------

  /* An asynchronous run (training.max_off_policy_steps > 0): how stale its rollouts are and how long each
   * side waited for the other at the latest step, beside the step count. */
  function lastValue(key) {
    const s = series[key];
    return s && s.values.length ? s.values[s.values.length - 1] : null;
  }

  function showAsync() {
    const box = document.getElementById("async-summary");
    const staleness = lastValue("async/staleness");
    if (!box || staleness === null) return;
    const secs = (v) => (v === null || !isFinite(v) ? "—" : v.toFixed(v < 10 ? 2 : 0) + " s");
    box.textContent = "staleness " + staleness + " step" + (staleness === 1 ? "" : "s") +
      " · trainer idle " + secs(lastValue("async/trainer_idle_s")) +
      " · generator idle " + secs(lastValue("async/generator_idle_s"));
    document.getElementById("async-part").style.display = "";
  }

  function setStatus(newStatus, errorMessage) {
    status = newStatus;
    const badge = document.querySelector("#run-status .badge");
    if (badge) { badge.textContent = newStatus.replace(/_/g, " "); badge.className = "badge status-" + newStatus; }
    if (errorMessage !== undefined) showError(errorMessage);
    const queueAgain = document.getElementById("queue-again");
    if (queueAgain) queueAgain.style.display = newStatus === "not_queued" ? "" : "none";
    const position = document.getElementById("queue-position");  // recounted by refreshStatus
    if (position && newStatus !== "queued") position.remove();
    document.getElementById("live-part").hidden = FINISHED.includes(newStatus);  // nothing more will stream in
    if (!["queued", "running"].includes(newStatus)) {
      // A finished run cannot be cancelled: drop the button rendered when the page loaded.
      document.querySelectorAll("form[action$='/cancel/']").forEach((form) => form.remove());
    }
  }

  // Rollouts an outside run's client could not deliver: the count beside the status, never a silent success.
  function showDropped(count) {
    if (!count) return;
    document.getElementById("run-dropped-count").textContent = String(count);
    document.getElementById("run-dropped").hidden = false;
    const badge = document.getElementById("run-dropped-badge");
    badge.textContent = count + (count === 1 ? " rollout missing" : " rollouts missing");
    badge.hidden = false;
  }

  function showError(message) {
    const p = document.getElementById("run-error");
    if (!p) return;
    p.textContent = message || "";
    p.style.display = message ? "" : "none";
  }

  // A run the task queue refused (Redis down) is "not_queued": this button sends it again.
  const queueAgainButton = document.getElementById("queue-again");
  if (queueAgainButton) queueAgainButton.addEventListener("click", async () => {
    queueAgainButton.disabled = true;
    const resp = await window.rlvr.api("/api/runs/" + runId + "/queue/", { method: "POST" });
    queueAgainButton.disabled = false;
    if (resp.ok) setStatus(resp.body.status, resp.body.error_message);
    else showError((resp.body && resp.body.message) || "Could not queue the run (HTTP " + resp.status + ").");
  });

  function setProgress(step, maxSteps) {
    const pct = maxSteps ? Math.min(100, (100 * step) / maxSteps) : 0;
    document.getElementById("progress-bar").style.width = pct.toFixed(1) + "%";
    document.getElementById("progress-text").textContent = "step " + step + " / " + maxSteps;
    const bar = document.getElementById("step-progress");
    bar.setAttribute("aria-valuenow", String(step));
    bar.setAttribute("aria-valuemax", String(maxSteps));
    const eta = document.getElementById("eta");
    document.getElementById("eta-part").hidden = status !== "running";  // no "step 200 / 200 ·  · " once it ended
    const perf = series["perf/step_s"];
    if (status !== "running" || !perf || !perf.values.length) { eta.textContent = "ETA —"; return; }
    const recent = perf.values.slice(-20).filter((v) => v !== null && isFinite(v));
    const mean = recent.reduce((a, b) => a + b, 0) / Math.max(1, recent.length);
    const seconds = Math.max(0, maxSteps - step) * mean;
    eta.textContent = "ETA " + window.rlvr.formatDuration(seconds);
  }

  /* The words after the count; the page's first render says the same (webapp/experiments/phases.py). */
  function phaseTimeLeft(phase) {
    if (phase.total && phase.done >= phase.total) return "done, loading";
    if (phase.eta_s === null || phase.eta_s === undefined) return "estimating time left";
    return "about " + window.rlvr.formatDuration(phase.eta_s) + " left";
  }

  /* What the run does before step 1 (a first-use model build, from run.phase events): its label, a bar
   * and the time left in place of "step 0 / N · ETA —". null (the first step came) shows the steps again. */
  function showPhase(phase) {
    const active = Boolean(phase) && ["queued", "running"].includes(status);
    document.getElementById("run-phase").style.display = active ? "" : "none";
    document.getElementById("phase-text").style.display = active ? "" : "none";
    document.getElementById("step-progress").style.display = active ? "none" : "";
    document.getElementById("step-text").style.display = active ? "none" : "";
    if (!active) return;
    const pct = phase.total ? Math.min(100, (100 * phase.done) / phase.total) : 0;
    document.getElementById("phase-label").textContent = phase.label;
    document.getElementById("phase-bar").style.width = pct.toFixed(1) + "%";
    const bar = document.getElementById("phase-progress");
    bar.setAttribute("aria-valuenow", String(phase.done));
    bar.setAttribute("aria-valuemax", String(phase.total));
    document.getElementById("phase-count").textContent = phase.done + " / " + phase.total + " steps";
    document.getElementById("phase-eta").textContent = phaseTimeLeft(phase);
  }

  function addEvent(e) {
    const list = document.getElementById("events");
    const none = document.getElementById("no-events");
    if (none) none.remove();
    const time = new Date().toTimeString().slice(0, 8);
    list.appendChild(el("li", { class: "event level-" + e.level }, el("time", {}, time), " ", el("span", { class: "kind" }, e.kind),
      e.step !== null && e.step !== undefined ? el("span", { class: "muted" }, " step " + e.step) : null, " ",
      el("span", { class: "message" }, e.message)));
  }

  async function refreshStatus() {
    // The run itself over REST: its status and message reach the page even when the websocket is down.
    const resp = await window.rlvr.api("/api/runs/" + runId + "/");
    if (resp.ok && resp.body) {
      setStatus(resp.body.status, resp.body.error_message);
      setProgress(resp.body.step, resp.body.max_steps);
      showPhase(resp.body.phase);
      showDropped(resp.body.rollouts_dropped);
      const position = document.getElementById("queue-position");
      if (position && resp.body.queue_position) position.textContent = "Queued: " + resp.body.queue_position.text + ".";
    }
  }

  async function catchUp() {
    const since = lastStep >= 0 ? "?since_step=" + lastStep : "";
    const resp = await window.rlvr.api("/api/runs/" + runId + "/metrics/" + since);
    refreshStatus();
    if (!resp.ok) return;
    addColumns(resp.body.metrics || {});
    const empty = document.getElementById("charts-empty");
    if (empty && !Object.keys(series).length) empty.textContent = "No metrics yet: charts appear with the first step.";
  }

  function setLive(text) { document.getElementById("live").textContent = text; }

  let backoff = 1000;
  let socket = null;
  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + "/ws/runs/" + runId + "/");
    socket.onopen = () => { backoff = 1000; setLive("live"); };
    socket.onmessage = (msg) => {
      const ev = JSON.parse(msg.data);
      if (ev.type === "run.hello") {
        // On every (re)connect: where the run stands now, final status and its message included, even
        // when the run.status event that ended it was sent while this page was disconnected.
        setStatus(ev.status, ev.error_message); setProgress(ev.step, ev.max_steps); showPhase(ev.phase);
        showDropped(ev.rollouts_dropped);
        if (ev.step > lastStep) catchUp();
      } else if (ev.type === "run.step") {
        if (ev.step <= lastStep) return;
        if (ev.step > lastStep + 1 && lastStep >= 0) { catchUp(); return; }  // missed some: ask the API
        const metrics = {};
        for (const [key, value] of Object.entries(ev.metrics || {})) metrics[key] = { step: [ev.step], value: [value] };
        addColumns(metrics);
        lastStep = ev.step;
        setProgress(ev.step, ev.max_steps);
        showPhase(null);  // the first step ends the model build (the server cleared it too)
      } else if (ev.type === "run.phase") {
        showPhase(ev.phase);
      } else if (ev.type === "run.status") {
        setStatus(ev.status, ev.error_message); setProgress(ev.step, ev.max_steps); showPhase(ev.phase);
        showDropped(ev.rollouts_dropped);
      } else if (ev.type === "run.log") {
        addEvent(ev);
        document.dispatchEvent(new CustomEvent("rlvr:run-log", { detail: ev }));
      } else if (ev.type === "live.paused") {
        document.getElementById("live").title = ev.message;  // the server cannot reach Redis; 4503 follows
      }
    };
    socket.onclose = (e) => {
      if (e.code === 4401 || e.code === 4404) { setLive("not allowed"); return; }
      if (e.code === 4503) backoff = Math.max(backoff, 15000);  // Redis is down: retry slowly
      const paused = e.code === 4503 ? "live updates paused; " : "";
      setLive(paused + "reconnecting in " + Math.round(backoff / 1000) + "s…");
      catchUp();  // steps and the final status that were sent while the socket was down
      setTimeout(connect, backoff);
      backoff = Math.min(30000, backoff * 2);
    };
  }

  // --- the controls ----------------------------------------------------------------------------------

  C.bindControls(store, {
    smoothing() {
      for (const [key, s] of Object.entries(series)) s.smoothed = C.ema(s.values, C.smoothingFor(key, spec.smoothing));
      for (const key of Object.keys(charts)) Plotly.restyle(charts[key].div, { y: [series[key].smoothed.slice()] }, [3]);
      drawPanels();
    },
    log() {
      for (const c of Object.values(charts).concat(Object.values(panels))) Plotly.relayout(c.div, { "yaxis.type": spec.log ? "log" : "linear" });
    },
    axis: redrawAll,
    search: applySearch,
    addPanel: () => editor.open(null),
  });
  C.setAxisOptions(document.getElementById("x-axis"), axisWhy(), activeAxis());

  catchUp().then(() => {
    setProgress(data.step, data.max_steps);
    refreshAxisOptions();
    drawPanels();
    document.body.dataset.chartsReady = "1";  // read by benchmarks/browser_pages.py and the browser tests
    connect();
  });
})();
