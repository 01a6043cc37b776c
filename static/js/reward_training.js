/* The reward job page: polls /api/reward-jobs/<id>/ each second until the job ends; progress ("step 40 / 200 ·
   about 30 s left"), live loss and held-out pairwise accuracy charts (Plotly), cancel, and the new version's link.
   Text from the server is set with textContent only. */
"use strict";
(function () {
  const data = window.rlvr.pageData("page-data");
  const $ = (id) => document.getElementById(id);
  const FINISHED = ["succeeded", "failed", "cancelled"];
  let timer = null;

  function chart(id, series, title) {
    const div = $(id);
    if (!div || !window.Plotly) return;
    const xs = series.map((p) => p[0]);
    const ys = series.map((p) => p[1]);
    window.Plotly.react(div, [{ x: xs, y: ys, mode: "lines+markers", name: title }], {
      margin: { t: 10, r: 10, b: 40, l: 50 }, height: 260, xaxis: { title: { text: "step" } },
      yaxis: { title: { text: title } },
    }, { displayModeBar: false, responsive: true });
  }

  function progressText(p) {
    if (!p || !p.total) return p && p.phase ? p.phase : "";
    let text = "step " + p.step + " / " + p.total;
    if (typeof p.eta_s === "number" && p.step < p.total) text += " · about " + window.rlvr.formatDuration(p.eta_s) + " left";
    const acc = p.accuracy && p.accuracy.length ? p.accuracy[p.accuracy.length - 1][1] : null;
    if (acc !== null) text += " · held-out pairwise accuracy " + acc.toFixed(3);
    return text;
  }

  function render(job) {
    const p = job.progress || {};
    $("rm-job-status").textContent = job.status + (job.cancel_requested && !FINISHED.includes(job.status) ? " (stopping)" : "");
    $("rm-job-phase").textContent = p.phase || "";
    $("rm-job-progress").textContent = progressText(p);
    const share = p.total ? Math.min(100, Math.round((100 * p.step) / p.total)) : 0;
    $("rm-job-bar").style.width = (job.status === "succeeded" ? 100 : share) + "%";
    $("rm-job-cancel").hidden = !job.can_cancel;
    if (job.error) { $("rm-job-error").hidden = false; $("rm-job-error").textContent = job.error; }
    const result = $("rm-job-result");
    if (job.status === "succeeded" && job.version_url) {
      result.hidden = false;
      result.replaceChildren(window.rlvr.el("a", { href: job.version_url, id: "rm-job-version" }, "Open the new version"));
      const r = job.result || {};
      if (typeof r.held_out_accuracy === "number") {
        result.appendChild(document.createTextNode(" · held-out pairwise accuracy " + r.held_out_accuracy.toFixed(3) +
          " on " + r.held_out_pairs + " pairs, " + r.steps + " steps"));
      }
    }
    chart("rm-chart-loss", p.loss || [], "loss");
    chart("rm-chart-accuracy", p.accuracy || [], "accuracy");
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
