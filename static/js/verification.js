/* Verifier pages: parameter help for the chosen type, the test bench, the audit table and the rescore table.
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
      document.getElementById("bench-reward").textContent = String(v.reward);
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

  /* Audit: acceptance rate per answer form, with up to two rejected examples each. */
  const auditButton = document.getElementById("audit-run");
  if (auditButton) {
    auditButton.addEventListener("click", async () => {
      const summary = document.getElementById("audit-summary");
      auditButton.disabled = true;
      summary.hidden = false;
      summary.textContent = "Scoring the variants…";
      const resp = await window.rlvr.api("/api/verifier-versions/" + versionId() + "/audit/", { method: "POST", json: {} });
      auditButton.disabled = false;
      if (!resp.ok) { summary.textContent = (resp.body && resp.body.message) || "Audit failed."; return; }
      const report = resp.body;
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
    });
  }

  /* Rescore: the verdicts of a run's stored rollouts that this version would change. */
  const rescore = document.getElementById("rescore-form");
  if (rescore) {
    rescore.addEventListener("submit", async (event) => {
      event.preventDefault();
      const summary = document.getElementById("rescore-summary");
      const button = document.getElementById("rescore-go");
      button.disabled = true;
      summary.hidden = false;
      summary.textContent = "Re-scoring…";
      const run = Number(document.getElementById("rescore-run").value);
      const resp = await window.rlvr.api("/api/verifier-versions/" + versionId() + "/rescore/", { method: "POST", json: { run: run } });
      button.disabled = false;
      if (!resp.ok) { summary.textContent = (resp.body && resp.body.message) || "Rescore failed."; return; }
      const r = resp.body;
      summary.textContent = "Scored " + r.scored + " of " + r.total + " rollouts: " + r.changed + " verdicts change (" + r.newly_correct + " now correct, " + r.newly_incorrect + " now incorrect), " + r.errors + " errors.";
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
    });
  }
})();
