/* Benchmark page: results table, Pass@k-vs-k curves, metric over training steps, the Evaluate form and
 * the evaluations' live progress (websocket /ws/evals/<id>/, with a REST poll as the safety net). */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  const el = window.rlvr.el;
  const api = window.rlvr.api;
  const evals = new Map(data.evals.map((e) => [e.id, e]));
  const sockets = new Map();
  const ACTIVE = ["queued", "running"];
  const PASS = /^pass@(\d+)\b/;

  document.getElementById("config-json").textContent = JSON.stringify(window.rlvr.pageData("benchmark-config"), null, 2);

  function drawTable() {
    window.rlvrBenchmarks.renderTable(document.getElementById("results-table"), data.table);
  }

  function curves() {
    const out = [];
    for (const e of evals.values()) {
      if (e.status !== "succeeded") continue;
      const pts = Object.entries(e.metrics || {}).map(([k, v]) => [PASS.exec(k), v]).filter(([m, v]) => m && v !== null)
        .map(([m, v]) => [+m[1], v]).sort((a, b) => a[0] - b[0]);
      if (pts.length) out.push({ label: e.label, k: pts.map((p) => p[0]), value: pts.map((p) => p[1]) });
    }
    return out;
  }

  function drawCurves() {
    const div = document.getElementById("passk-chart");
    const cs = curves();
    if (!cs.length || !window.Plotly) return;
    div.textContent = "";
    Plotly.react(div, cs.map((c) => ({ x: c.k, y: c.value, name: c.label, mode: "lines+markers" })), {
      margin: { l: 48, r: 12, t: 12, b: 40 }, height: 300, xaxis: { title: { text: "k" }, type: "log", dtick: Math.log10(2) },
      yaxis: { title: { text: "pass@k" }, rangemode: "tozero" }, legend: { orientation: "h" },
    }, { displaylogo: false, responsive: true });
  }

  function drawSteps() {
    const series = data.over_steps || [];
    const select = document.getElementById("steps-metric");
    const div = document.getElementById("steps-chart");
    const metrics = Array.from(new Set(series.map((s) => s.metric)));
    if (!metrics.length || !window.Plotly) return;
    if (!select.options.length) for (const m of metrics) select.appendChild(el("option", { value: m }, m));
    const chosen = series.filter((s) => s.metric === select.value);
    div.textContent = "";
    Plotly.react(div, chosen.map((s) => ({ x: s.step, y: s.value, name: s.name, mode: "lines+markers" })), {
      margin: { l: 48, r: 12, t: 12, b: 40 }, height: 300, xaxis: { title: { text: "training step" } },
      yaxis: { title: { text: select.value } }, legend: { orientation: "h" },
    }, { displaylogo: false, responsive: true });
  }
  document.getElementById("steps-metric").addEventListener("change", drawSteps);

  function evalRow(e) {
    const pct = e.problems_total ? Math.round((100 * e.problems_done) / e.problems_total) : 0;
    const bar = el("div", { class: "progress" }, el("div", { class: "progress-bar", style: "width: " + pct + "%" }));
    return el("tr", { id: "eval-" + e.id, "data-status": e.status },
      el("td", {}, el("a", { href: "/evals/" + e.id + "/" }, "#" + e.id)),
      el("td", {}, e.label),
      el("td", {}, el("span", { class: "badge status-" + e.status }, e.status)),
      el("td", {}, bar, el("span", { class: "small muted" }, e.problems_done + " / " + (e.problems_total || "?"))),
      el("td", { class: "small error" }, e.error_message || ""));
  }

  function drawEvals() {
    const body = document.querySelector("#eval-table tbody");
    body.textContent = "";
    for (const e of Array.from(evals.values()).sort((a, b) => b.id - a.id)) body.appendChild(evalRow(e));
  }

  async function refreshTable() {
    const r = await api(data.export_url + "&export=json");
    if (r.ok && r.body) { data.table = r.body; drawTable(); }
  }

  function update(e) {
    const old = evals.get(e.id) || {};
    const merged = Object.assign({}, old, e);
    evals.set(e.id, merged);
    drawEvals();
    if (ACTIVE.includes(old.status) && !ACTIVE.includes(merged.status)) {
      drawCurves();
      refreshTable();
      const ws = sockets.get(e.id);
      if (ws) { ws.close(); sockets.delete(e.id); }
    }
  }

  function listen(id) {
    if (sockets.has(id)) return;
    const proto = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(proto + location.host + "/ws/evals/" + id + "/");
    sockets.set(id, ws);
    ws.onopen = () => { document.getElementById("live").textContent = "live"; };
    ws.onmessage = (msg) => {
      const m = JSON.parse(msg.data);
      if (m.type === "eval.hello" || m.type === "eval.status") update(m);
      else if (m.type === "eval.progress") update({ id: m.eval_run_id, problems_done: m.problems_done, problems_total: m.problems_total });
    };
  }

  async function poll() {
    for (const e of Array.from(evals.values())) {
      if (!ACTIVE.includes(e.status)) continue;
      const r = await api("/api/evals/" + e.id + "/");
      if (r.ok) update(r.body);
    }
  }
  setInterval(poll, 3000);

  function drawTargets() {
    const box = document.getElementById("targets");
    if (!box) return;
    for (const t of data.targets) {
      const group = el("fieldset", {}, el("legend", {}, t.name));
      group.appendChild(el("label", { class: "check" },
        el("input", { type: "checkbox", name: "experiment", value: String(t.experiment_id) }), " base model ", el("span", { class: "muted small" }, t.model)));
      for (const c of t.checkpoints) {
        // A checkpoint whose files checkpoint.save_total_limit deleted is listed, greyed out, never offered.
        const box = c.deleted
          ? el("input", { type: "checkbox", name: "checkpoint", value: String(c.id), disabled: "" })
          : el("input", { type: "checkbox", name: "checkpoint", value: String(c.id) });
        group.appendChild(el("label", { class: c.deleted ? "check muted" : "check", "data-deleted": c.deleted ? "1" : "0" },
          box, " run #" + c.run_id + " step " + c.step,
          c.deleted ? el("span", { class: "small" }, " (deleted: the run keeps its newest checkpoint.save_total_limit checkpoints)") : null));
      }
      box.appendChild(group);
    }
    if (!data.targets.length) box.appendChild(el("p", { class: "muted" }, "Create an experiment first: its base model and its runs' checkpoints are the models to evaluate."));
  }

  const form = document.getElementById("evaluate-form");
  if (form) {
    drawTargets();
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const picked = (name) => Array.from(form.querySelectorAll("input[name=" + name + "]:checked")).map((i) => +i.value);
      const button = document.getElementById("evaluate-button");
      const error = document.getElementById("evaluate-error");
      button.disabled = true;
      error.hidden = true;
      const r = await api(data.launch_url, { method: "POST", json: { experiments: picked("experiment"), checkpoints: picked("checkpoint") } });
      button.disabled = false;
      if (!r.ok) { error.textContent = (r.body && r.body.message) || "Could not launch (HTTP " + r.status + ")."; error.hidden = false; return; }
      for (const e of r.body) { update(Object.assign({ status: "queued", problems_done: 0, problems_total: 0 }, e)); listen(e.id); }
    });
  }

  drawTable();
  drawEvals();
  drawCurves();
  drawSteps();
  for (const id of data.active) listen(id);
})();
