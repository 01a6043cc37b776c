// Rollout browser: step picker, filters, the table, a prompt's whole group, and the token view.
// Every model-produced string (prompt, completion, verifier detail) goes in through textContent only. A
// multi-turn rollout says "N turns" in the table and on its card, and its token view opens with its turns
// (static/js/episode_view.js).
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("rollouts-data").textContent);
  const $ = (id) => document.getElementById(id);
  const range = $("rb-step-range"), number = $("rb-step-number"), form = $("rb-filters");
  const tbody = $("rb-table").querySelector("tbody"), status = $("rb-status");
  const steps = data.steps;
  let stepIndex = Math.max(0, steps.indexOf(data.step));
  let page = 1, pageSize = 50, count = 0, loadId = 0;
  const view = new window.TokenView({
    tokens: $("tv-tokens"), legend: $("tv-legend"), panel: $("tv-panel"), select: $("tv-channel"),
    stepsLegend: $("tv-steps-legend"), stepsToggle: $("tv-steps-toggle"),
  });

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  const num = (v, d = 3) => (v === null || v === undefined ? "—" : (+v).toFixed(d));
  const preview = (s, n) => (s.length > n ? s.slice(0, n) + "…" : s);
  const turnsText = (n) => `${n} turn${n === 1 ? "" : "s"}`;

  // --- step picker -------------------------------------------------------------------------------
  range.max = String(Math.max(0, steps.length - 1));
  for (const r of data.finish_reasons) $("rb-finish").appendChild(el("option", r)).value = r;
  function showStep() {
    range.value = String(stepIndex);
    number.value = steps.length ? String(steps[stepIndex]) : "";
  }
  function goStep(i) {
    if (!steps.length) return;
    stepIndex = Math.max(0, Math.min(steps.length - 1, i));
    showStep();
    page = 1;
    load();
  }
  range.addEventListener("input", () => goStep(+range.value));
  $("rb-step-prev").addEventListener("click", () => goStep(stepIndex - 1));
  $("rb-step-next").addEventListener("click", () => goStep(stepIndex + 1));
  number.addEventListener("change", () => {
    const s = +number.value;
    let best = 0;  // the nearest step that has rollouts
    steps.forEach((v, i) => { if (Math.abs(v - s) < Math.abs(steps[best] - s)) best = i; });
    goStep(best);
  });
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" && t.type !== "range" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    if (t === range) return;  // the slider moves itself (its input event reloads)
    if (ev.key === "ArrowLeft") { goStep(stepIndex - 1); ev.preventDefault(); }
    if (ev.key === "ArrowRight") { goStep(stepIndex + 1); ev.preventDefault(); }
  });

  // --- filters and rows ----------------------------------------------------------------------------
  function query(extra) {
    const p = new URLSearchParams();
    const f = new FormData(form);
    for (const key of ["reward_min", "reward_max", "correct", "finish_reason", "length_min", "length_max", "search"]) {
      const v = (f.get(key) || "").toString().trim();
      if (v !== "") p.set(key, v);
    }
    if (!f.get("all_steps") && steps.length) p.set("step", String(steps[stepIndex]));
    p.set("page", String(page));
    p.set("page_size", String(pageSize));
    for (const [k, v] of Object.entries(extra || {})) p.set(k, String(v));
    return p;
  }
  async function fetchJson(url) {
    const res = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText} from ${url}`);
    return res.json();
  }
  async function load() {
    const id = ++loadId;
    status.textContent = "Loading…";
    try {
      const body = await fetchJson(`${data.rows_url}?${query()}`);
      if (id === loadId) showRows(body);
    } catch (err) {
      if (id === loadId) status.textContent = `Could not load rollouts: ${err.message}`;
    }
  }
  let debounce = 0;
  form.addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(() => { page = 1; load(); }, 250); });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); page = 1; load(); });
  $("rb-prev-page").addEventListener("click", () => { if (page > 1) { page--; load(); } });
  $("rb-next-page").addEventListener("click", () => { if (page * pageSize < count) { page++; load(); } });

  function breakdown(rewards) {
    const ul = el("ul", null, "rb-breakdown");
    for (const [k, v] of Object.entries(rewards || {})) ul.appendChild(el("li", `${k}: ${num(v)}`));
    return ul;
  }
  // What each section of a rollout's details shows: a verifier's answer and reason, or how many rollouts the
  // allocator gave the prompt (trainer/step/reporting.py stores that under "allocation").
  const DETAIL_KEYS = { allocation: ["group_size", "round", "abandoned"] };
  const VERIFIER_KEYS = ["extracted", "expected", "reason", "error"];
  const absent = (key, v) => v === undefined || v === null || v === "" || (key === "abandoned" && v === false);
  function details(det) {
    const box = el("div", null, "rb-details");
    for (const [section, d] of Object.entries(det || {})) {
      const rows = [];
      if (d && typeof d === "object" && !Array.isArray(d)) {
        for (const key of DETAIL_KEYS[section] || VERIFIER_KEYS) {
          if (!absent(key, d[key])) rows.push([key, typeof d[key] === "string" ? d[key] : JSON.stringify(d[key])]);
        }
      } else if (!absent(null, d)) {
        rows.push([null, JSON.stringify(d)]);
      }
      if (!rows.length) continue;  // nothing to say: no heading either
      const dl = el("dl");
      dl.appendChild(el("dt", section, "rb-verifier"));
      for (const [key, text] of rows) {
        if (key !== null) dl.appendChild(el("dt", key.replace(/_/g, " ")));
        dl.appendChild(el("dd", text, key === "error" ? "err" : ""));
      }
      box.appendChild(dl);
    }
    return box;
  }
  // An outside run may not say whether a completion is correct (null): neither green nor red.
  function verdictClass(correct) {
    return correct === null || correct === undefined ? "unknown" : correct ? "ok" : "bad";
  }
  function showRows(body) {
    count = body.count;
    tbody.textContent = "";
    for (const r of body.results) {
      const tr = el("tr");
      tr.dataset.id = r.id;
      tr.className = verdictClass(r.correct);
      tr.appendChild(el("td", r.step));
      const p = el("td");
      const b = el("button", preview(r.prompt, 80), "rb-prompt-btn");
      b.type = "button";
      b.title = "Show the whole group";
      b.addEventListener("click", () => openGroup(r));
      p.appendChild(b);
      tr.appendChild(p);
      const completion = el("td", null, "rb-completion");
      if (r.turns) completion.appendChild(el("span", turnsText(r.turns), "rb-turns"));
      completion.appendChild(document.createTextNode(preview(r.completion, 160)));
      tr.appendChild(completion);
      const rw = el("td");
      rw.appendChild(el("strong", num(r.reward)));
      if (r.correct !== null) rw.appendChild(el("span", r.correct ? " ✓" : " ✗", verdictClass(r.correct)));
      rw.appendChild(breakdown(r.rewards));
      tr.appendChild(rw);
      const dt = el("td", null, "rb-detail-cell");
      dt.appendChild(details(r.details));
      tr.appendChild(dt);
      tr.appendChild(el("td", num(r.advantage)));
      tr.appendChild(el("td", r.length));
      tr.appendChild(el("td", r.finish_reason));
      const t = el("td");
      const tb = el("button", "tokens", "rb-tokens-btn");
      tb.type = "button";
      tb.addEventListener("click", () => openTokens(r.id));
      t.appendChild(tb);
      tr.appendChild(t);
      tbody.appendChild(tr);
    }
    const pages = Math.max(1, Math.ceil(count / pageSize));
    $("rb-page").textContent = `page ${page} of ${pages}`;
    status.textContent = count ? `${count} rollout${count === 1 ? "" : "s"}` : "No rollouts match.";
    document.body.dataset.rowsReady = "1";
  }

  // --- a prompt's group, side by side --------------------------------------------------------------
  async function openGroup(r) {
    const sec = $("rb-group");
    sec.hidden = false;
    $("rb-group-title").textContent = `Step ${r.step} · group ${r.group} · prompt ${r.prompt_id}`;
    $("rb-group-prompt").textContent = r.prompt;
    const cards = $("rb-group-cards");
    cards.textContent = "Loading…";
    const body = await fetchJson(`${data.rows_url}?step=${r.step}&group=${r.group}&page_size=200`);
    cards.textContent = "";
    for (const s of body.results) {
      const card = el("article", null, `rb-card ${verdictClass(s.correct)}`);
      card.dataset.id = s.id;
      card.appendChild(el("h3", `#${s.sample_index} · reward ${num(s.reward)} · adv ${num(s.advantage)}`));
      card.appendChild(breakdown(s.rewards));
      card.appendChild(el("pre", s.completion, "rb-card-text"));
      card.appendChild(details(s.details));
      card.appendChild(el("p", [`${s.length} tokens`, s.finish_reason, s.turns ? turnsText(s.turns) : ""].filter(Boolean).join(" · "), "muted"));
      const tb = el("button", "tokens", "rb-tokens-btn");
      tb.type = "button";
      tb.addEventListener("click", () => openTokens(s.id));
      card.appendChild(tb);
      cards.appendChild(card);
    }
    sec.scrollIntoView({ block: "start" });
  }

  // --- token view ----------------------------------------------------------------------------------
  async function openTokens(rolloutId) {
    const sec = $("tv");
    sec.hidden = false;
    $("tv-title").textContent = "Token view: loading…";
    const t0 = performance.now();
    // the REST detail plus its steps, checked against its tokens (webapp/pages/views_rollouts.py)
    const detail = await fetchJson(`${data.tokens_base}${rolloutId}/tokens/`);
    const t1 = performance.now();
    window.EpisodeView.render($("tv-episode"), detail);
    await view.render(detail);
    const t2 = performance.now();
    $("tv-title").textContent = `Token view · rollout ${detail.id} · step ${detail.step} · group ${detail.group} #${detail.sample_index} · ${detail.tokens.length} tokens`;
    $("tv-tokens").dataset.rollout = String(detail.id);
    window.__tokenViewTiming = { fetch_ms: t1 - t0, render_ms: t2 - t1 };
    sec.scrollIntoView({ block: "start" });
  }

  showStep();
  if (data.first_rows) showRows(data.first_rows);
  else status.textContent = "This run has no rollouts yet.";
  if (data.open_rollout !== null) openTokens(data.open_rollout);
})();
