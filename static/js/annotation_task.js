/* A task's overview page for owners/admins: picking another machine scorer or criterion redraws the
   agreement panel (a GET form, so the page works without this file too), and a scoring job that is
   queued or running is polled until it finishes, then the page reloads to offer its scores. */
"use strict";
(function () {
  const { api, pageData } = window.rlvr;
  const data = pageData("task-data");
  const POLL_MS = 2000;
  const FINISHED = ["succeeded", "failed"];

  const form = document.getElementById("ann-machine-form");
  if (form) {
    for (const select of form.querySelectorAll("select")) select.addEventListener("change", () => form.submit());
  }

  const waiting = new Set(data.active_jobs || []);
  if (!waiting.size) return;

  function show(job) {
    const row = document.querySelector(`#ann-jobs tr[data-job="${job.id}"]`);
    if (!row) return;
    row.dataset.status = job.status;
    const badge = row.querySelector(".badge");
    badge.textContent = job.status;
    badge.className = `badge status-${job.status}`;
    row.querySelector("td.num").textContent = `${job.done} / ${job.total}`;
  }

  async function poll() {
    let ended = false;
    for (const id of Array.from(waiting)) {
      const r = await api(`${data.scoring_job_api}${id}/`);
      if (!r.ok) continue;
      show(r.body);
      if (FINISHED.includes(r.body.status)) { waiting.delete(id); ended = true; }
    }
    if (ended && !waiting.size) { window.location.reload(); return; }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
})();
