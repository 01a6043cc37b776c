/* Run page: live Plotly charts grouped by metric prefix, fed by the REST API then the run's websocket;
 * before step 1, the first-use model build's progress (run.phase events) in place of the step count.
 * Points arrive downsampled (server-side min/max buckets, about 1000 per key); each run.step appends one
 * point with Plotly.extendTraces. Every chart has a faint raw trace and an EMA-smoothed one on top. An
 * asynchronous run's staleness and idle times also show beside the step count (showAsync). */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  const runId = data.run_id;
  const GROUPS = ["rollout", "reward", "actor", "async", "perf", "eval"];
  const series = {};  // key -> {steps, values, smoothed, div}
  let lastStep = -1;
  let status = data.status;
  let smoothing = 0.6;
  let logScale = false;
  const chartsEl = document.getElementById("charts");
  const el = window.rlvr.el;

  function ema(values, alpha) {
    const out = new Array(values.length);
    let acc = null;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === null || v === undefined || !isFinite(v)) { out[i] = acc; continue; }
      acc = acc === null ? v : alpha * acc + (1 - alpha) * v;
      out[i] = acc;
    }
    return out;
  }

  function groupOf(key) {
    const prefix = key.split("/")[0];
    return GROUPS.includes(prefix) ? prefix : "other";
  }

  function groupContainer(group) {
    let box = document.getElementById("group-" + group);
    if (!box) {
      box = el("section", { id: "group-" + group, class: "chart-group" }, el("h3", {}, group + "/"), el("div", { class: "chart-grid" }));
      // keep the groups in the documented order
      const order = GROUPS.concat(["other"]);
      const after = Array.from(chartsEl.querySelectorAll(".chart-group")).find(
        (g) => order.indexOf(g.id.slice(6)) > order.indexOf(group));
      chartsEl.insertBefore(box, after || null);
    }
    return box.querySelector(".chart-grid");
  }

  function layout(key) {
    return {
      title: { text: key, font: { size: 13 } },
      margin: { l: 48, r: 12, t: 32, b: 32 },
      height: 240,
      hovermode: "x unified",
      showlegend: false,
      xaxis: { title: { text: "step", font: { size: 11 } } },
      yaxis: { type: logScale ? "log" : "linear", exponentformat: "e" },
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
    };
  }

  function createChart(key, steps, values) {
    const empty = document.getElementById("charts-empty");
    if (empty) empty.remove();
    const div = el("div", { class: "chart", "data-key": key });
    groupContainer(groupOf(key)).appendChild(div);
    const s = { steps: steps.slice(), values: values.slice(), div: div };
    s.smoothed = ema(s.values, smoothing);
    series[key] = s;
    const raw = { x: s.steps.slice(), y: s.values.slice(), mode: "lines", name: "raw", line: { color: "rgba(37,99,235,0.25)", width: 1 },
                  hovertemplate: "raw %{y:.6g}<extra></extra>" };
    const smooth = { x: s.steps.slice(), y: s.smoothed.slice(), mode: "lines", name: "smoothed", line: { color: "#2563eb", width: 2 },
                     hovertemplate: "smoothed %{y:.6g}<extra></extra>" };
    Plotly.newPlot(div, [raw, smooth], layout(key), { displaylogo: false, responsive: true });
  }

  /* Accept the columnar shape {key: {step: [], value: []}} (and the older list of points). */
  function columns(points) {
    if (Array.isArray(points)) return { step: points.map((p) => p.step), value: points.map((p) => p.value) };
    return { step: points.step || [], value: points.value || [] };
  }

  function addColumns(metrics) {
    for (const [key, points] of Object.entries(metrics || {})) {
      const c = columns(points);
      if (!c.step.length) continue;
      const s = series[key];
      if (!s) createChart(key, c.step, c.value);
      else appendPoints(key, c.step, c.value);
      lastStep = Math.max(lastStep, c.step[c.step.length - 1]);
    }
    showAsync();
  }

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

  function appendPoints(key, steps, values) {
    const s = series[key];
    const fresh = [];
    for (let i = 0; i < steps.length; i++) if (!s.steps.length || steps[i] > s.steps[s.steps.length - 1]) fresh.push(i);
    if (!fresh.length) return;
    const xs = fresh.map((i) => steps[i]);
    const ys = fresh.map((i) => values[i]);
    let acc = s.smoothed.length ? s.smoothed[s.smoothed.length - 1] : null;
    const sm = ys.map((v) => {
      if (v !== null && isFinite(v)) acc = acc === null ? v : smoothing * acc + (1 - smoothing) * v;
      return acc;
    });
    s.steps.push(...xs); s.values.push(...ys); s.smoothed.push(...sm);
    // Plotly holds copies of our arrays, so both are extended: ours for smoothing/ETA, its for drawing.
    Plotly.extendTraces(s.div, { x: [xs, xs.slice()], y: [ys.slice(), sm] }, [0, 1]);
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
    if (!["queued", "running"].includes(newStatus)) {
      // A finished run cannot be cancelled: drop the button rendered when the page loaded.
      document.querySelectorAll("form[action$='/cancel/']").forEach((form) => form.remove());
    }
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
    const perf = series["perf/step_s"];
    if (status !== "running" || !perf || !perf.values.length) { eta.textContent = status === "running" ? "ETA —" : ""; return; }
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
        if (ev.step > lastStep) catchUp();
      } else if (ev.type === "run.step") {
        if (ev.step <= lastStep) return;
        if (ev.step > lastStep + 1 && lastStep >= 0) { catchUp(); return; }  // missed some: ask the API
        for (const [key, value] of Object.entries(ev.metrics || {})) {
          if (series[key]) appendPoints(key, [ev.step], [value]); else createChart(key, [ev.step], [value]);
        }
        lastStep = ev.step;
        setProgress(ev.step, ev.max_steps);
        showAsync();
        showPhase(null);  // the first step ends the model build (the server cleared it too)
      } else if (ev.type === "run.phase") {
        showPhase(ev.phase);
      } else if (ev.type === "run.status") {
        setStatus(ev.status, ev.error_message); setProgress(ev.step, ev.max_steps); showPhase(ev.phase);
      } else if (ev.type === "run.log") {
        addEvent(ev);
      }
    };
    socket.onclose = (e) => {
      if (e.code === 4401 || e.code === 4404) { setLive("not allowed"); return; }
      setLive("reconnecting in " + Math.round(backoff / 1000) + "s…");
      catchUp();  // steps and the final status that were sent while the socket was down
      setTimeout(connect, backoff);
      backoff = Math.min(30000, backoff * 2);
    };
  }

  document.getElementById("smoothing").addEventListener("input", (e) => {
    smoothing = Number(e.target.value);
    document.getElementById("smoothing-value").textContent = smoothing.toFixed(2);
    for (const s of Object.values(series)) {
      s.smoothed = ema(s.values, smoothing);
      Plotly.restyle(s.div, { y: [s.smoothed.slice()] }, [1]);
    }
  });
  document.getElementById("log-scale").addEventListener("change", (e) => {
    logScale = e.target.checked;
    for (const s of Object.values(series)) Plotly.relayout(s.div, { "yaxis.type": logScale ? "log" : "linear" });
  });

  catchUp().then(() => {
    setProgress(data.step, data.max_steps);
    document.body.dataset.chartsReady = "1";  // read by benchmarks/browser_pages.py and the browser tests
    connect();
  });
})();
