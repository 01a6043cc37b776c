/* Verifier pages: parameter help for the chosen type, the test bench, and the audit and rescore jobs (started
   here, run by a worker, polled every second, shown again when the page is reopened).
   Every model/user text goes through textContent (rlvr.el), never innerHTML. */
"use strict";
(function () {
  const el = window.rlvr.el;

  /* Parameter help: the registry's JSON schema of the selected verifier, as a table of name/default/description. */
  const select = document.querySelector("[data-registry-select]");
  const registryNode = document.getElementById("registry-data");
  if (select && registryNode) {
    const registry = JSON.parse(registryNode.textContent);
    const showHelp = () => {
      const item = registry[select.value] || {};
      document.getElementById("vf-summary").textContent = item.summary || "";
      const body = document.querySelector("#vf-param-table tbody");
      body.replaceChildren();
      const props = (item.schema && item.schema.properties) || {};
      for (const [name, prop] of Object.entries(props)) {
        const def = item.defaults && name in item.defaults ? JSON.stringify(item.defaults[name]) : "(required)";
        body.appendChild(el("tr", {}, el("td", { class: "mono" }, name), el("td", { class: "mono" }, def), el("td", {}, prop.description || "")));
      }
    };
    select.addEventListener("change", showHelp);
    showHelp();
  }

  /* Test bench: POST the completion and reference, show verdict, extracted answer, reason and the detail record. */
  const bench = document.getElementById("bench");
  if (bench) {
    const form = document.getElementById("bench-form");
    const error = document.getElementById("bench-error");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      error.hidden = true;
      const button = document.getElementById("bench-run");
      button.disabled = true;
      const resp = await window.rlvr.api("/api/verifier-versions/" + bench.dataset.version + "/test/", {
        method: "POST",
        json: { completion: document.getElementById("bench-completion").value, reference: document.getElementById("bench-reference").value },
      });
      button.disabled = false;
      if (!resp.ok) {
        error.textContent = (resp.body && resp.body.message) || "Request failed (" + resp.status + ").";
        error.hidden = false;
        return;
      }
      const v = resp.body;
      const verdict = document.getElementById("bench-verdict");
      verdict.textContent = v.error ? "error" : v.correct ? "accepted" : "rejected";
      verdict.className = "badge " + (v.error ? "test-none" : v.correct ? "test-passing" : "test-failing");
      document.getElementById("bench-reward").textContent = v.reward === null ? "absent" : String(v.reward);
      document.getElementById("bench-extracted").textContent = v.extracted === null ? "(nothing extracted)" : v.extracted;
      document.getElementById("bench-reason").textContent = v.error ? v.error : v.reason;
      document.getElementById("bench-detail").textContent = JSON.stringify(v.detail, null, 2);
      const result = document.getElementById("bench-result");
      result.hidden = false;
      result.dataset.ready = "1";
    });
  }

  const pct = (rate) => (rate === null || rate === undefined ? "—" : (100 * rate).toFixed(1) + "%");
  const versionId = () => window.rlvr.pageData().version_id;
  const POLL_MS = 1000;

  /* A verification job (audit or rescore) runs on a worker: start it, poll it every second with a progress
     bar under #<prefix>-progress, then hand its result to ``render``. ``button`` stays disabled meanwhile. */
  function jobTracker(prefix, button, unit, render) {
    const box = document.getElementById(prefix + "-progress");
    const bar = box.querySelector(".progress-bar");
    const meter = box.querySelector("[role=progressbar]");
    const status = document.getElementById(prefix + "-status");
    const summary = document.getElementById(prefix + "-summary");
    const cancel = document.getElementById(prefix + "-cancel");
    let timer = null;
    let current = null;

    const show = (job) => {
      box.hidden = false;
      box.dataset.status = job.status;
      const fraction = job.status === "succeeded" ? 1 : job.progress || 0;
      bar.style.width = (100 * fraction).toFixed(1) + "%";
      meter.setAttribute("aria-valuenow", String(Math.round(100 * fraction)));
      const counted = job.total ? job.done + " of " + job.total + " " + unit : "";
      const who = job.created_by ? " by " + job.created_by : "";
      const at = (iso) => new Date(iso).toLocaleString();  // only for times the job has: null stays out
      const ended = job.finished_at ? " " + at(job.finished_at) : "";
      const began = job.started_at ? " (started " + at(job.started_at) + who + ")" : "";
      let text;
      if (job.status === "queued") {
        const ahead = job.ahead_in_queue ? " (" + job.ahead_in_queue + " ahead of it)" : "";
        text = "Queued" + who + " at " + at(job.created_at) + ": waiting for a worker on the 'default' queue" + ahead + "…";
      } else if (job.status === "running") {
        text = "Running" + (job.started_at ? " since " + at(job.started_at) : "") + ": " + (job.done ? counted : "scoring " + job.total + " " + unit) + "…";
      } else if (job.status === "succeeded") text = "Finished" + ended + began + ".";
      else if (job.status === "failed") text = "Failed" + ended + ": " + job.error;
      else text = "Cancelled" + ended + (job.done ? " after " + counted : "") + ".";
      const live = job.status === "queued" || job.status === "running";
      if (live && job.cancel_requested) text += " Stopping at the next chunk…";
      status.textContent = text;
      cancel.hidden = !job.can_cancel;  // the server says whether a cancel can still take effect
      cancel.disabled = false;
    };
    const follow = async (jobId) => {
      clearTimeout(timer);
      const resp = await window.rlvr.api("/api/verification-jobs/" + jobId + "/");
      if (!resp.ok) {
        if (resp.status === 404) { button.disabled = false; return; }
        timer = setTimeout(() => follow(jobId), POLL_MS * 3);  // a blip: the job goes on without us
        return;
      }
      const job = resp.body;
      current = job.id;
      show(job);
      if (job.status === "succeeded") { button.disabled = false; render(job.result); return; }
      if (job.status === "failed" || job.status === "cancelled") { button.disabled = false; summary.hidden = true; return; }
      button.disabled = true;
      timer = setTimeout(() => follow(jobId), POLL_MS);
    };
    const start = async (url, body) => {
      button.disabled = true;
      summary.hidden = true;
      const resp = await window.rlvr.api(url, { method: "POST", json: body });
      if (!resp.ok) {
        button.disabled = false;
        box.hidden = true;
        summary.hidden = false;
        summary.textContent = (resp.body && resp.body.message) || "Could not start the job (" + resp.status + ").";
        return;
      }
      follow(resp.body.id);
    };
    cancel.addEventListener("click", async () => {
      if (current === null) return;
      cancel.disabled = true;
      const resp = await window.rlvr.api("/api/verification-jobs/" + current + "/cancel/", { method: "POST" });
      if (resp.ok) { follow(current); return; }
      status.textContent = (resp.body && resp.body.message) || "Could not cancel (" + resp.status + ").";
      cancel.disabled = false;
    });
    return { start: start, follow: follow };
  }

  /* Audit: acceptance rate per answer form, with up to two rejected examples each. */
  const auditButton = document.getElementById("audit-run");
  if (auditButton) {
    const renderAudit = (report) => {
      const summary = document.getElementById("audit-summary");
      summary.hidden = false;
      summary.textContent = report.accepted + " of " + (report.total - report.errors) + " scored variants accepted (" + pct(report.rate) + "), " + report.errors + " errors.";
      const body = document.querySelector("#audit-table tbody");
      body.replaceChildren();
      for (const row of report.rows) {
        const examples = el("div", {});
        for (const ex of row.rejected_examples.slice(0, 2)) {
          examples.appendChild(el("div", { class: "mono" }, ex.completion + "  vs  " + ex.reference));
        }
        const tr = el("tr", { class: row.rate !== null && row.rate < 1 ? "form-weak" : "" },
          el("td", { class: "mono" }, row.form), el("td", { class: "num" }, row.total), el("td", { class: "num" }, row.accepted),
          el("td", { class: "num" }, row.errors), el("td", { class: "num" }, pct(row.rate)), el("td", {}, examples));
        body.appendChild(tr);
      }
      const table = document.getElementById("audit-table");
      table.hidden = false;
      table.dataset.ready = "1";
    };
    const audit = jobTracker("audit", auditButton, "variants", renderAudit);
    auditButton.addEventListener("click", () => {
      document.getElementById("audit-table").hidden = true;
      audit.start("/api/verifier-versions/" + versionId() + "/audit/", {});
    });
    if (window.rlvr.pageData().audit_job) audit.follow(window.rlvr.pageData().audit_job);
  }

  /* Rescore: the verdicts of a run's stored rollouts that this version would change. */
  const rescore = document.getElementById("rescore-form");
  if (rescore) {
    const renderRescore = (r) => {
      const summary = document.getElementById("rescore-summary");
      summary.hidden = false;
      summary.textContent = "Run #" + r.run + ": scored " + r.scored + " of " + r.total + " rollouts: " + r.changed + " verdicts change (" + r.newly_correct + " now correct, " + r.newly_incorrect + " now incorrect), " + r.errors + " errors." + (r.rows_truncated ? " The first " + r.rows.length + " changes are listed." : "");
      const body = document.querySelector("#rescore-table tbody");
      body.replaceChildren();
      for (const row of r.rows) {
        body.appendChild(el("tr", {},
          el("td", { class: "num" }, row.step), el("td", { class: "mono" }, row.prompt), el("td", { class: "mono" }, row.completion),
          el("td", { class: "mono" }, row.answer === null ? "(none)" : row.answer),
          el("td", {}, row.was_correct ? "correct" : "wrong"), el("td", {}, row.now_correct ? "correct" : "wrong"), el("td", {}, row.reason)));
      }
      const table = document.getElementById("rescore-table");
      table.hidden = r.rows.length === 0;
      table.dataset.ready = "1";
    };
    const job = jobTracker("rescore", document.getElementById("rescore-go"), "rollouts", renderRescore);
    rescore.addEventListener("submit", (event) => {
      event.preventDefault();
      document.getElementById("rescore-table").hidden = true;
      const limit = document.getElementById("rescore-limit").value.trim();
      const body = { run: Number(document.getElementById("rescore-run").value), limit: limit ? Number(limit) : null };
      job.start("/api/verifier-versions/" + versionId() + "/rescore/", body);
    });
    if (window.rlvr.pageData().rescore_job) job.follow(window.rlvr.pageData().rescore_job);
  }
})();
