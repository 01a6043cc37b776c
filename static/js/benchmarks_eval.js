/* One evaluation: progress (websocket + REST poll), metrics with CIs, per-problem table, and a problem's
 * samples in the token view (coloured by logprob). Model text only ever goes through textContent. */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  const el = window.rlvr.el;
  const api = window.rlvr.api;
  let state = data.eval;
  const problems = new Map();
  const view = new window.TokenView({ tokens: document.getElementById("tv-tokens"), legend: document.getElementById("tv-legend"),
    panel: document.getElementById("tv-panel"), select: document.getElementById("tv-channel") });
  const ACTIVE = ["queued", "running"];

  // as the papers print them: avg@, pass@ by k, maj@ by k, then the rest (lengths, truncation)
  function order(metric) {
    const i = ["avg@", "pass@", "maj@"].findIndex((p) => metric.startsWith(p));
    return i < 0 ? 3 : i;
  }

  function drawStatus() {
    const badge = document.querySelector("#eval-status .badge");
    if (badge) { badge.textContent = state.status; badge.className = "badge status-" + state.status; }
    const position = document.getElementById("queue-position");  // recounted by each poll
    if (position && state.status !== "queued") position.remove();
    else if (position && state.queue_position) position.textContent = "Queued: " + state.queue_position.text + ".";
    const pct = state.problems_total ? (100 * state.problems_done) / state.problems_total : 0;
    document.getElementById("progress-bar").style.width = pct.toFixed(1) + "%";
    document.getElementById("progress-text").textContent = state.problems_done + " / " + (state.problems_total || "?") + " problems";
    const body = document.querySelector("#metric-table tbody");
    body.textContent = "";
    for (const [k, v] of Object.entries(state.metrics || {}).sort((a, b) => order(a[0]) - order(b[0]) || a[0].localeCompare(b[0], undefined, { numeric: true }))) {
      const ci = (state.ci || {})[k];
      body.appendChild(el("tr", { "data-metric": k }, el("td", {}, k), el("td", { class: "num" }, v === null ? "—" : (+v).toFixed(4)),
        el("td", { class: "num" }, ci ? "[" + (+ci[0]).toFixed(4) + ", " + (+ci[1]).toFixed(4) + "]" : "—")));
    }
  }

  function filterOk(p) {
    const f = document.getElementById("problem-filter").value;
    return f === "" || (f === "true" ? p.c === p.n : p.c < p.n);
  }

  function drawProblems() {
    const body = document.querySelector("#problem-table tbody");
    body.textContent = "";
    for (const p of Array.from(problems.values()).sort((a, b) => a.seed - b.seed || a.index - b.index)) {
      if (!filterOk(p)) continue;
      const tr = el("tr", { "data-id": String(p.id), tabindex: "0" }, el("td", {}, p.problem_id + (p.seed ? " (seed " + p.seed + ")" : ""),
        el("div", { class: "small muted" }, p.prompt.slice(0, 80))), el("td", { class: "num" }, p.c + " / " + p.n));
      tr.addEventListener("click", () => openProblem(p.id, tr));
      body.appendChild(tr);
    }
  }
  document.getElementById("problem-filter").addEventListener("change", drawProblems);

  function addProblems(rows) { for (const p of rows || []) problems.set(p.id, p); drawProblems(); }

  async function openProblem(id, tr) {
    document.querySelectorAll("#problem-table tr.selected").forEach((r) => r.classList.remove("selected"));
    if (tr) tr.classList.add("selected");
    const r = await api(data.samples_url + id + "/samples/");
    if (!r.ok) return;
    const d = r.body;
    const head = document.getElementById("problem-head");
    head.textContent = "";
    head.appendChild(el("div", { class: "prompt-text" }, d.prompt));
    head.appendChild(el("div", {}, "reference answer: ", el("code", {}, d.answer === null ? "—" : d.answer), " · " + d.c + " of " + d.n + " correct"));
    const body = document.querySelector("#sample-table tbody");
    body.textContent = "";
    for (const s of d.samples) {
      const row = el("tr", { "data-index": String(s.index), tabindex: "0" }, el("td", {}, String(s.index)), el("td", { class: "text" }, s.text),
        el("td", {}, s.extracted_answer === null ? "—" : s.extracted_answer), el("td", {}, s.correct ? "✓" : "✗"),
        el("td", { class: "num" }, String(s.length)), el("td", {}, s.finish_reason));
      row.addEventListener("click", () => {
        body.querySelectorAll("tr.selected").forEach((x) => x.classList.remove("selected"));
        row.classList.add("selected");
        view.render({ tokens: s.tokens, token_ids: s.token_ids, channels: s.channels });
      });
      body.appendChild(row);
    }
    const firstWrong = d.samples.find((s) => !s.correct) || d.samples[0];
    if (firstWrong) body.querySelector("tr[data-index='" + firstWrong.index + "']").click();
  }

  function onMessage(m) {
    if (m.type === "eval.hello" || m.type === "eval.status") { state = Object.assign({}, state, m); drawStatus(); }
    else if (m.type === "eval.progress") {
      state.problems_done = m.problems_done; state.problems_total = m.problems_total; drawStatus(); addProblems(m.problems);
    }
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(proto + location.host + "/ws/evals/" + state.id + "/");
    ws.onopen = () => { document.getElementById("live").textContent = "live"; };
    ws.onclose = () => { document.getElementById("live").textContent = "offline (polling)"; };
    ws.onmessage = (msg) => onMessage(JSON.parse(msg.data));
  }

  async function poll() {
    if (!ACTIVE.includes(state.status)) return;
    const [e, p] = await Promise.all([api("/api/evals/" + state.id + "/"), api("/api/evals/" + state.id + "/problems/")]);
    if (e.ok) { state = Object.assign({}, state, e.body); drawStatus(); }
    if (p.ok) addProblems(p.body);
  }

  drawStatus();
  addProblems(data.problems);
  if (ACTIVE.includes(state.status)) { connect(); setInterval(poll, 3000); }
  else document.getElementById("live").textContent = state.status;
})();
