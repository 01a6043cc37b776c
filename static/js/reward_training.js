/* The training form: where a reward model may take either kind, only the chosen kind's fields show (pairs for a
   Bradley-Terry reward model, step labels for a process reward model), and of a PRM's only the chosen label source's
   (policy and problems for the oracle and Monte Carlo, k for Monte Carlo only, the data file for a file); without JS
   all show and the radios decide.
   The reward job page: polls /api/reward-jobs/<id>/ each second until the job ends; progress ("step 40 / 200 ·
   about 30 s left"; a PRM's "labelling 40 / 200 problems" first), live loss and held-out accuracy charts (Plotly:
   pairwise accuracy, or a PRM's step accuracy and first-error accuracy), cancel, and the new version's link with its
   held-out figures. Text from the server is set with textContent only. */
"use strict";
(function () {
  const form = document.getElementById("rm-train-form");
  if (form) {
    const chosen = (name) => {
      const input = form.querySelector(`input[name=${name}]:checked`);
      return input ? input.value : null;
    };
    /* A part is off when its radio group has a choice that it does not list (data-kind: model_kind; data-labels:
       labels_source, space-separated). Its controls are disabled too, so a hidden field is neither sent nor able to
       block the submit with a validation message no one can see. */
    const off = (part) => {
      const kind = chosen("model_kind"), labels = chosen("labels_source");
      if (part.dataset.kind && kind && part.dataset.kind !== kind) return true;
      return Boolean(part.dataset.labels && labels && !part.dataset.labels.split(" ").includes(labels));
    };
    const show = () => {
      const parts = Array.from(form.querySelectorAll("[data-kind], [data-labels]"));
      for (const part of parts) part.style.display = off(part) ? "none" : "";  // style, not hidden: .stack sets display
      for (const control of form.querySelectorAll("[data-kind] :is(input, select, textarea)")) {
        control.disabled = parts.some((part) => part.contains(control) && off(part));
      }
    };
    form.querySelectorAll("input[name=model_kind], input[name=labels_source]").forEach(
      (input) => input.addEventListener("change", show));
    show();
  }
  if (!document.getElementById("page-data")) return;
  const data = window.rlvr.pageData("page-data");
  const $ = (id) => document.getElementById(id);
  const FINISHED = ["succeeded", "failed", "cancelled"];
  let timer = null;

  function chart(id, lines, title, range) {
    const div = $(id);
    if (!div || !window.Plotly) return;
    const traces = lines.map(([series, name]) => ({
      x: series.map((p) => p[0]), y: series.map((p) => p[1]), mode: "lines+markers", name: name,
    }));
    const steps = Math.max(0, ...traces.map((t) => (t.x.length ? t.x[t.x.length - 1] : 0)));  // steps only grow
    window.Plotly.react(div, traces, {
      margin: { t: 10, r: 10, b: 40, l: 50 }, height: 260,
      xaxis: { title: { text: "step" }, dtick: steps <= 10 ? 1 : undefined },  // a short job: whole steps, not "1.5"
      yaxis: { title: { text: title }, range: range }, showlegend: lines.length > 1, legend: { orientation: "h" },
    }, { displayModeBar: false, responsive: true });
  }

  const fixed = (x) => (typeof x === "number" ? x.toFixed(3) : "—");

  function progressText(p) {
    if (p && !p.total && typeof p.problems === "number") {
      return (p.phase || "") + " · " + (p.labelled_problems || 0) + " / " + p.problems + " problems sampled, " +
        (p.examples || 0) + " solutions labelled";
    }
    if (!p || !p.total) return p && p.phase ? p.phase : "";
    let text = "step " + p.step + " / " + p.total;
    if (typeof p.eta_s === "number" && p.step < p.total) text += " · about " + window.rlvr.formatDuration(p.eta_s) + " left";
    const acc = p.accuracy && p.accuracy.length ? p.accuracy[p.accuracy.length - 1][1] : null;
    if (acc !== null) text += " · held-out " + (data.prm ? "step" : "pairwise") + " accuracy " + acc.toFixed(3);
    return text;
  }

  function resultText(r) {
    if (data.prm && typeof r.held_out_step_accuracy === "number") {
      return " · held-out step accuracy " + fixed(r.held_out_step_accuracy) + " (majority class " +
        fixed(r.majority_step_accuracy) + ") on " + r.held_out_steps + " steps; first-error accuracy " +
        fixed(r.held_out_first_error_accuracy) + " (majority class " + fixed(r.majority_first_error_accuracy) +
        "), first-error F1 " + fixed(r.held_out_first_error_f1) + "; " + r.steps + " steps";
    }
    if (typeof r.held_out_accuracy === "number") {
      return " · held-out pairwise accuracy " + r.held_out_accuracy.toFixed(3) + " on " + r.held_out_pairs +
        " pairs, " + r.steps + " steps";
    }
    return "";
  }

  function render(job) {
    const p = job.progress || {};
    $("rm-job-status").textContent = job.status + (job.cancel_requested && !FINISHED.includes(job.status) ? " (stopping)" : "");
    $("rm-job-phase").textContent = p.phase && p.phase !== job.status ? "· " + p.phase : "";  // once, not twice
    $("rm-job-progress").textContent = progressText(p);
    const share = p.total ? Math.min(100, Math.round((100 * p.step) / p.total)) : 0;
    $("rm-job-bar").style.width = (job.status === "succeeded" ? 100 : share) + "%";
    $("rm-job-cancel").hidden = !job.can_cancel;
    if (job.error) { $("rm-job-error").hidden = false; $("rm-job-error").textContent = job.error; }
    const result = $("rm-job-result");
    if (job.status === "succeeded" && job.version_url) {
      result.hidden = false;
      result.replaceChildren(window.rlvr.el("a", { href: job.version_url, id: "rm-job-version" }, "Open the new version"));
      result.appendChild(document.createTextNode(resultText(job.result || {})));
    }
    chart("rm-chart-loss", [[p.loss || [], "loss"]], "loss");
    const accuracy = data.prm
      ? [[p.accuracy || [], "step accuracy"], [p.first_error_accuracy || [], "first-error accuracy"]]
      : [[p.accuracy || [], "accuracy"]];
    chart("rm-chart-accuracy", accuracy, "accuracy", [-0.02, 1.02]);  // a share: a flat line stays readable
  }

  async function poll() {
    const resp = await window.rlvr.api(data.api);
    if (resp.ok && resp.body) {
      render(resp.body);
      if (FINISHED.includes(resp.body.status)) return;
    }
    timer = window.setTimeout(poll, 1000);
  }

  $("rm-job-cancel").addEventListener("click", async function () {
    this.disabled = true;
    const resp = await window.rlvr.api(data.cancel, { method: "POST" });
    if (resp.ok && resp.body) render(resp.body);
    else { $("rm-job-error").hidden = false; $("rm-job-error").textContent = (resp.body && resp.body.message) || "Could not cancel."; }
    this.disabled = false;
  });
  poll();
  void timer;
})();
