/* Compare runs: one chart per chosen metric key, one trace per run; the config diff's filter. */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  const el = window.rlvr.el;
  const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];
  const cache = {};  // run id -> {key: {step, value}}

  const pick = document.getElementById("compare-pick");
  pick.addEventListener("submit", (e) => {
    e.preventDefault();
    const ids = Array.from(pick.querySelectorAll("input[type=checkbox]:checked")).map((c) => c.value);
    window.location.search = ids.length ? "?runs=" + ids.join(",") : "";
  });

  const diffOnly = document.getElementById("diff-only");
  function applyDiffFilter() {
    const table = document.getElementById("config-diff");
    if (table) table.classList.toggle("diff-only", diffOnly.checked);
  }
  if (diffOnly) { diffOnly.addEventListener("change", applyDiffFilter); applyDiffFilter(); }

  const keysBox = document.getElementById("metric-keys");
  const charts = document.getElementById("compare-charts");
  if (!keysBox || !data.runs || !data.runs.length) return;

  function columns(points) {
    if (!points) return { step: [], value: [] };
    if (Array.isArray(points)) return { step: points.map((p) => p.step), value: points.map((p) => p.value) };
    return { step: points.step || [], value: points.value || [] };
  }

  async function metricsOf(runId, keys) {
    const missing = keys.filter((k) => !(cache[runId] && k in cache[runId]));
    if (missing.length) {
      const q = "?keys=" + encodeURIComponent(missing.join(","));
      const resp = await window.rlvr.api("/api/runs/" + runId + "/metrics/" + q);
      cache[runId] = cache[runId] || {};
      const got = resp.ok ? (resp.body.metrics || {}) : {};
      for (const k of missing) cache[runId][k] = columns(got[k]);
    }
    return cache[runId];
  }

  async function render() {
    const keys = Array.from(keysBox.querySelectorAll("input:checked")).map((c) => c.value);
    const perRun = await Promise.all(data.runs.map((r) => metricsOf(r.id, keys)));
    charts.replaceChildren();
    for (const key of keys) {
      const div = el("div", { class: "chart", "data-key": key });
      charts.appendChild(div);
      const traces = data.runs.map((r, i) => ({
        x: perRun[i][key].step, y: perRun[i][key].value, mode: "lines", name: r.label,
        line: { color: COLORS[i % COLORS.length], width: 1.5 },
      }));
      Plotly.newPlot(div, traces, {
        title: { text: key, font: { size: 13 } }, height: 260, hovermode: "x unified",
        margin: { l: 48, r: 12, t: 32, b: 32 }, legend: { orientation: "h", y: -0.2 },
        paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      }, { displaylogo: false, responsive: true });
    }
  }
  keysBox.addEventListener("change", render);
  render();
})();
