/* Reward evaluation page: the Best-of-N chart (one line per source, plus random choice, majority vote and the
 * oracle; the step scorers' PRM Best-of-N curves dashed beside them, or in the process card's own chart when the
 * process part scored a subset of the samples), live progress while the job runs (polls the API each second,
 * reloads when it ends), and Cancel. */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  const result = window.rlvr.pageData("result-data") || {};
  const ACTIVE = ["queued", "running"];

  const DASHED = { random: "random choice", majority: "majority vote", oracle: "oracle (pass@N)" };

  function plot(div, lines, ns, baselines) {
    const traces = lines.slice();
    for (const [key, name] of Object.entries(DASHED)) {
      if (baselines && baselines[key]) {
        traces.push({ x: ns, y: baselines[key], name: name, mode: "lines", line: { dash: "dot" } });
      }
    }
    div.textContent = "";
    Plotly.react(div, traces, {
      margin: { l: 48, r: 12, t: 12, b: 90 }, height: 360,
      xaxis: { title: { text: "N (samples to choose from)" }, type: "log", dtick: Math.log10(2) },
      yaxis: { title: { text: "accuracy of the chosen sample" }, rangemode: "tozero" },
      legend: { orientation: "h", y: -0.3 },
    }, { displaylogo: false, responsive: true });
  }

  /* The step scorers' PRM Best-of-N curves (the solution scored by the aggregate of its step scores). */
  function prmLines() {
    const process = result.process || {};
    const lines = [];
    for (const row of result.sources || []) {
      const curve = row.process && row.process.best_of_n;
      if (!curve) continue;
      lines.push({ x: curve.ns, y: curve.best_of_n, name: row.label + " (PRM, " + (process.aggregate || "min") + ")",
        mode: "lines+markers", marker: { symbol: "diamond" }, line: { dash: "dash" } });
    }
    return lines;
  }

  function drawCharts() {
    if (!window.Plotly) return;
    const bon = result.best_of_n;
    const shared = (result.process || {}).best_of_n;
    const main = document.getElementById("bon-chart");
    if (main && bon) {
      const lines = [];
      for (const row of result.sources || []) {
        if (!row.best_of_n) continue;
        lines.push({ x: row.best_of_n.ns, y: row.best_of_n.best_of_n, name: row.label, mode: "lines+markers" });
      }
      plot(main, shared && shared.same_samples ? lines.concat(prmLines()) : lines, bon.ns, bon.baselines || {});
    }
    const own = document.getElementById("prm-bon-chart");
    if (own && shared) {  // on a subset of the samples: the scalar sources' curves recomputed on the same subset
      const orm = (shared.orm || []).map(function (c) {
        return { x: c.ns, y: c.best_of_n, name: c.label, mode: "lines+markers" };
      });
      plot(own, orm.concat(prmLines()), shared.ns, shared.baselines || {});
    }
  }

  function showProgress(job) {
    const p = job.progress || {};
    const bar = document.getElementById("progress-bar");
    const text = document.getElementById("progress-text");
    if (bar) bar.style.width = (p.total ? Math.round((100 * p.done) / p.total) : 0) + "%";
    if (text) text.textContent = (p.phase || job.status) + (p.total ? " · " + p.done + " / " + p.total : "");
  }

  async function poll() {
    const resp = await window.rlvr.api(data.api);
    if (resp.ok && resp.body) {
      showProgress(resp.body);
      if (!ACTIVE.includes(resp.body.status)) { window.location.reload(); return; }
    }
    window.setTimeout(poll, 1000);
  }

  const cancel = document.getElementById("cancel-job");
  if (cancel) {
    cancel.addEventListener("click", async function () {
      cancel.disabled = true;
      const resp = await window.rlvr.api(data.cancel, { method: "POST" });
      if (!resp.ok) { cancel.disabled = false; window.alert((resp.body && resp.body.detail) || "Could not cancel."); }
    });
  }
  drawCharts();
  if (ACTIVE.includes(data.status)) poll();
})();
