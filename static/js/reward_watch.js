/* Run page: the "Learned reward vs verifier" panel of a run with a reward-hacking watch (reward_watch in its config).
 * One Plotly chart: the learned reward and the weight-0 monitor verifier's accuracy on the left axis, actor/kl and
 * actor/entropy on the right, against the step. It holds no connection of its own: run.js sends every batch of points
 * (REST catch-up and websocket steps) as a "rlvr:metrics" document event and every run.log event as "rlvr:run-log".
 * The flag banner shows when watch/hacking first reads 1 (trainer/rewards/hacking.py), with the reward_hacking
 * warning's text when the page has it; all text goes in through textContent (escaped). Keys and the first render
 * come from webapp/experiments/reward_watch.py (page data "reward_watch"). */
"use strict";
(function () {
  const C = window.rlvr.charts;
  const watch = window.rlvr.pageData().reward_watch;
  const chart = document.getElementById("reward-watch-chart");
  if (!watch || !chart) return;
  const FLAG_KIND = "reward_hacking";
  const lines = [
    { key: watch.learned_metric, name: watch.learned_metric + " (learned, trained on)", axis: "y", color: C.COLORS[0] },
    { key: watch.verifier_metric, name: watch.verifier_metric + " (verifier, weight 0)", axis: "y", color: C.COLORS[2] },
    { key: watch.context_metrics[0], name: watch.context_metrics[0], axis: "y2", color: C.COLORS[3], dash: "dot" },
    { key: watch.context_metrics[1], name: watch.context_metrics[1], axis: "y2", color: C.COLORS[4], dash: "dash" },
  ];
  const series = {};  // key -> {steps, values}
  lines.forEach((l) => { series[l.key] = { steps: [], values: [] }; });
  const flagged = { step: watch.flag ? watch.flag.step : null };
  let drawn = false;
  let timer = null;

  function traces() {
    return lines.map((l) => ({
      x: series[l.key].steps.slice(), y: series[l.key].values.slice(), name: l.name, yaxis: l.axis,
      type: "scatter", mode: "lines", connectgaps: true, line: { color: l.color, width: 1.6, dash: l.dash || "solid" },
    }));
  }

  function layout() {
    const base = C.plotLayout("", { legend: true, height: 320 });
    base.margin = { l: 48, r: 48, t: 12, b: 48 };
    base.yaxis = { title: { text: "reward / accuracy", font: { size: 11 } } };
    base.yaxis2 = { title: { text: "KL / entropy", font: { size: 11 } }, overlaying: "y", side: "right", showgrid: false };
    base.legend = { orientation: "h", y: -0.25, font: { size: 10 } };
    base.shapes = flagged.step === null ? [] : [{
      type: "line", xref: "x", yref: "paper", x0: flagged.step, x1: flagged.step, y0: 0, y1: 1,
      line: { color: "#dc2626", width: 1.5, dash: "dash" },
    }];
    return base;
  }

  function draw() {
    timer = null;
    Plotly.react(chart, traces(), layout(), C.PLOT_CONFIG);
    drawn = true;
    chart.dataset.points = String(series[watch.learned_metric].steps.length);  // read by the browser test
  }

  function schedule() { if (!timer) timer = setTimeout(draw, drawn ? 200 : 0); }

  function showFlag(step, message) {
    const box = document.getElementById("reward-watch-flag");
    if (flagged.step === null || step < flagged.step) flagged.step = step;
    document.getElementById("reward-watch-step").textContent = String(flagged.step);
    if (message) document.getElementById("reward-watch-message").textContent = message;
    box.hidden = false;
  }

  function append(key, cols) {
    const s = series[key];
    for (let i = 0; i < cols.step.length; i++) {
      if (s.steps.length && cols.step[i] <= s.steps[s.steps.length - 1]) continue;  // already drawn
      s.steps.push(cols.step[i]);
      s.values.push(cols.value[i]);
    }
  }

  document.addEventListener("rlvr:metrics", (ev) => {
    const metrics = ev.detail || {};
    let changed = false;
    for (const l of lines) {
      if (!metrics[l.key]) continue;
      append(l.key, C.columns(metrics[l.key]));
      changed = true;
    }
    const flag = C.columns(metrics[watch.flag_metric]);
    const at = flag.value.findIndex((v) => v !== null && v >= 0.5);
    if (at >= 0) { showFlag(flag.step[at], null); changed = true; }
    if (changed) schedule();
  });

  document.addEventListener("rlvr:run-log", (ev) => {
    const e = ev.detail || {};
    if (e.kind === FLAG_KIND && e.step !== null && e.step !== undefined) { showFlag(e.step, e.message); schedule(); }
  });

  draw();  // the axes and the legend before the first point
})();
