/* The annotate page: one item at a time, scored from the keyboard; drafts save themselves.
   Keys: 0-9 score the focused criterion (then focus the next), ↑/↓ move between criteria, j/k between
   items, s submits, x skips, ? toggles help. Model text goes into the page with textContent only. */
"use strict";
(function () {
  const { api, el, pageData } = window.rlvr;
  const data = pageData("annotate-data");
  const criteria = data.criteria;
  const queue = data.queue;
  const $ = (id) => document.getElementById(id);
  const OPEN = ["pending", "draft"]; // where s / x move on to
  const SAVE_DELAY_MS = 400;
  const pending = new Set(); // assignments with unsaved changes
  let saveTimer = null;
  let chain = Promise.resolve();
  let index = 0;
  let focus = 0;

  function scaleValues(c) {
    if (c.scale === "binary") return [0, 1];
    if (c.scale === "likert5") return [1, 2, 3, 4, 5];
    return null;
  }
  function scaleLabel(c) {
    if (c.scale === "binary") return "0 = no, 1 = yes";
    if (c.scale === "likert5") return "1 to 5";
    return `${c.min_value} to ${c.max_value}`;
  }
  function digitValue(c, d) {
    const values = scaleValues(c);
    if (values) return values.includes(d) ? d : null;
    return d >= c.min_value && d <= c.max_value ? d : null;
  }
  function current() { return queue[index]; }
  function firstUnscored(a) {
    const i = criteria.findIndex((c) => a.scores[c.name] === undefined || a.scores[c.name] === null);
    return i < 0 ? 0 : i;
  }

  function setSaveState(state, text) {
    const node = $("ann-save");
    node.dataset.state = state;
    node.textContent = text;
  }
  function showError(text) { $("ann-error").textContent = text || ""; }

  function render() {
    const a = current();
    $("ann-position").textContent = `item ${index + 1} of ${queue.length}`;
    const status = $("ann-status");
    status.textContent = a.status + (a.edited ? " · edited, press s to resubmit" : "");
    status.className = `badge ann-status-${a.status}`;
    $("ann-prompt").textContent = a.item.prompt;
    $("ann-completion").textContent = a.item.completion;
    $("ann-reference-wrap").hidden = a.item.reference_answer === null;
    $("ann-reference").textContent = a.item.reference_answer || "";
    const src = a.item.source_run_id ? `run #${a.item.source_run_id}, step ${a.item.source_step}, rollout ${a.item.source_rollout_id}` : a.item.source_kind;
    $("ann-source").textContent = `Source: ${src}`;
    const comment = $("ann-comment");
    if (document.activeElement !== comment) comment.value = a.comment || "";
    renderCriteria(a);
    document.body.dataset.assignment = String(a.id);
    document.body.dataset.index = String(index);
    document.body.dataset.focus = String(focus);
    document.body.dataset.status = a.status;
  }

  function renderCriteria(a) {
    const list = $("ann-criteria");
    list.replaceChildren();
    criteria.forEach((c, i) => {
      const chosen = a.scores[c.name];
      const li = el("li", { class: "ann-criterion" + (i === focus ? " focused" : ""), "data-name": c.name, "data-i": String(i) },
        el("div", {}, el("span", { class: "ann-name" }, `${i + 1}. ${c.name}`), " ", el("span", { class: "muted small" }, scaleLabel(c))));
      if (c.description) li.appendChild(el("div", { class: "ann-desc" }, c.description));
      const scale = el("div", { class: "ann-scale" });
      const values = scaleValues(c);
      if (values) {
        for (const v of values) {
          const btn = el("button", { type: "button", class: chosen === v ? "chosen" : "", "data-value": String(v), "aria-pressed": String(chosen === v) }, String(v));
          btn.addEventListener("click", (ev) => { ev.stopPropagation(); focus = i; setScore(c, v, false); });
          scale.appendChild(btn);
        }
      } else {
        const input = el("input", { type: "number", step: "any", min: String(c.min_value), max: String(c.max_value), "aria-label": `${c.name} score` });
        if (chosen !== undefined && chosen !== null) input.value = String(chosen);
        input.addEventListener("change", () => {
          const v = input.value === "" ? null : Number(input.value);
          focus = i;
          setScore(c, v, false);
        });
        scale.appendChild(input);
      }
      li.appendChild(scale);
      li.addEventListener("click", () => { focus = i; render(); });
      list.appendChild(li);
    });
  }

  function setScore(c, value, advance) {
    const a = current();
    a.scores = Object.assign({}, a.scores, { [c.name]: value });
    markChanged(a);
    if (advance) focus = Math.min(focus + 1, criteria.length - 1);
    showError("");
    render();
  }

  function markChanged(a) {
    if (a.status === "submitted") { a.edited = true; return; } // a save must not reopen it: resubmit with s
    pending.add(a);
    setSaveState("unsaved", "Unsaved changes…");
    clearTimeout(saveTimer);
    saveTimer = setTimeout(flush, SAVE_DELAY_MS);
  }

  function flush() {
    clearTimeout(saveTimer);
    const batch = Array.from(pending);
    pending.clear();
    for (const a of batch) {
      chain = chain.then(async () => {
        setSaveState("saving", "Saving…");
        const r = await api(`${data.assignment_api}${a.id}/`, { method: "PATCH", json: { scores: a.scores, comment: a.comment || "" } });
        if (r.ok) {
          a.status = r.body.status;
          setSaveState("saved", "Draft saved");
        } else {
          setSaveState("error", "Not saved");
          showError(r.body && r.body.message ? r.body.message : `Saving failed (HTTP ${r.status}).`);
        }
        if (a === current()) render();
      });
    }
    return chain;
  }

  function nextOpen(from) {
    for (let step = 1; step <= queue.length; step++) {
      const i = (from + step) % queue.length;
      if (OPEN.includes(queue[i].status)) return i;
    }
    return null;
  }

  function go(i) {
    if (i < 0 || i >= queue.length || i === index) return;
    flush();
    index = i;
    focus = firstUnscored(current());
    showError("");
    render();
  }

  async function act(kind) {
    const a = current();
    await flush();
    const url = `${data.assignment_api}${a.id}/${kind}/`;
    const r = kind === "submit"
      ? await api(url, { method: "POST", json: { scores: a.scores, comment: a.comment || "" } })
      : await api(url, { method: "POST" });
    if (!r.ok) {
      showError(r.body && r.body.message ? r.body.message : `That failed (HTTP ${r.status}).`);
      const fields = (r.body && r.body.extra && r.body.extra.fields) || {};
      const missing = criteria.findIndex((c) => `scores.${c.name}` in fields);
      if (missing >= 0) { focus = missing; render(); }
      return;
    }
    a.status = r.body.status;
    a.edited = false;
    setSaveState("saved", kind === "submit" ? "Submitted" : "Skipped");
    const next = nextOpen(index);
    if (next === null) {
      render();
      showError("");
      $("ann-save").textContent = "All your items are done.";
      document.body.dataset.allDone = "1";
    } else {
      index = next;
      focus = firstUnscored(current());
      render();
    }
  }

  function toggleHelp(show) {
    const help = $("ann-help");
    help.hidden = show === undefined ? !help.hidden : !show;
  }

  function onKey(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    const typing = t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "checkbox") || t.isContentEditable);
    if (typing) {
      if (ev.key === "Escape") t.blur();
      return;
    }
    const key = ev.key;
    if (key === "?") { toggleHelp(); ev.preventDefault(); return; }
    if (key === "Escape") { toggleHelp(false); return; }
    if (/^[0-9]$/.test(key)) {
      const c = criteria[focus];
      const v = digitValue(c, Number(key));
      if (v === null) showError(`${c.name} takes ${scaleLabel(c)}.`);
      else setScore(c, v, true);
      ev.preventDefault();
    } else if (key === "ArrowDown" || key === "ArrowUp") {
      focus = Math.max(0, Math.min(criteria.length - 1, focus + (key === "ArrowDown" ? 1 : -1)));
      render();
      ev.preventDefault();
    } else if (key === "j") { go(index + 1); }
    else if (key === "k") { go(index - 1); }
    else if (key === "s") { act("submit"); ev.preventDefault(); }
    else if (key === "x") { act("skip"); ev.preventDefault(); }
  }

  function init() {
    if (!queue.length) {
      $("ann-empty").hidden = false;
      $("ann-layout").hidden = true;
      for (const id of ["ann-prev", "ann-next", "ann-skip", "ann-submit"]) $(id).disabled = true;
      document.body.dataset.annReady = "1";
      return;
    }
    for (const a of queue) a.scores = a.scores || {};
    const start = queue.findIndex((a) => a.id === data.start_assignment);
    const open = queue.findIndex((a) => a.status === "pending" || a.status === "draft");
    index = start >= 0 ? start : open >= 0 ? open : 0;
    focus = firstUnscored(current());
    $("ann-prev").addEventListener("click", () => go(index - 1));
    $("ann-next").addEventListener("click", () => go(index + 1));
    $("ann-skip").addEventListener("click", () => act("skip"));
    $("ann-submit").addEventListener("click", () => act("submit"));
    $("ann-help-btn").addEventListener("click", () => toggleHelp());
    $("ann-comment").addEventListener("input", (ev) => { current().comment = ev.target.value; markChanged(current()); });
    document.addEventListener("keydown", onKey);
    window.addEventListener("beforeunload", () => {
      for (const a of pending) {
        fetch(`${data.assignment_api}${a.id}/`, {
          method: "PATCH", keepalive: true, credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": window.rlvr.csrfToken() },
          body: JSON.stringify({ scores: a.scores, comment: a.comment || "" }),
        });
      }
    });
    setSaveState("idle", "");
    render();
    document.body.dataset.annReady = "1";
  }
  init();
})();
