/* Reward evaluation page: the Best-of-N chart (one line per source, plus random choice, majority vote and the
 * oracle), live progress while the job runs (polls the API each second, reloads when it ends), and Cancel. */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  const result = window.rlvr.pageData("result-data") || {};
  const ACTIVE = ["queued", "running"];

  function drawChart() {
    const div = document.getElementById("bon-chart");
    const bon = result.best_of_n;
    if (!div || !bon || !window.Plotly) return;
    const traces = [];
    for (const row of result.sources || []) {
      if (!row.best_of_n) continue;
      traces.push({ x: row.best_of_n.ns, y: row.best_of_n.best_of_n, name: row.label, mode: "lines+markers" });
    }
    const base = bon.baselines || {};
    const dashed = { random: "random choice", majority: "majority vote", oracle: "oracle (pass@N)" };
    for (const [key, name] of Object.entries(dashed)) {
      if (base[key]) traces.push({ x: bon.ns, y: base[key], name: name, mode: "lines", line: { dash: "dot" } });
    }
    div.textContent = "";
    Plotly.react(div, traces, {
      margin: { l: 48, r: 12, t: 12, b: 90 }, height: 360,
      xaxis: { title: { text: "N (samples to choose from)" }, type: "log", dtick: Math.log10(2) },
      yaxis: { title: { text: "accuracy of the chosen sample" }, rangemode: "tozero" },
      legend: { orientation: "h", y: -0.3 },
    }, { displaylogo: false, responsive: true });
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
  drawChart();
  if (ACTIVE.includes(data.status)) poll();
})();
