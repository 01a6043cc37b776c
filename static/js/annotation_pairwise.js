/* The pairwise annotate page: one prompt, two completions side by side, judged from the keyboard; drafts
   save themselves. Keys: 1 or ← left is better, 2 or → right is better, t tie, b both bad, r focuses the
   reason, Enter or s submits (then the next open pair), j/k next/previous pair, ? toggles help, Esc leaves
   the reason field or the help. Model text goes into the page with textContent only. */
"use strict";
(function () {
  const { api, pageData } = window.rlvr;
  const data = pageData("pairwise-data");
  const queue = data.queue;
  const $ = (id) => document.getElementById(id);
  const OPEN = ["pending", "draft"];
  const STATUSES = ["pending", "draft", "submitted", "skipped"];
  const KEY_CHOICE = { "1": "left", ArrowLeft: "left", "2": "right", ArrowRight: "right", t: "tie", b: "both_bad" };
  const LABEL = { left: "left is better", right: "right is better", tie: "tie", both_bad: "both bad" };
  const SAVE_DELAY_MS = 400;
  const pending = new Set();
  let saveTimer = null;
  let chain = Promise.resolve();
  let index = 0;

  function current() { return queue[index]; }
  function setSaveState(state, text) {
    const node = $("pw-save");
    node.dataset.state = state;
    node.textContent = text;
  }
  function showError(text) { $("pw-error").textContent = text || ""; }

  function renderCounters() {
    for (const s of STATUSES) {
      const n = queue.filter((a) => a.status === s).length;
      $(`pw-count-${s}`).textContent = `${n} ${s}`;
    }
    document.body.dataset.submitted = String(queue.filter((a) => a.status === "submitted").length);
  }

  function render() {
    const a = current();
    const item = a.item;
    $("pw-position").textContent = `pair ${index + 1} of ${queue.length}`;
    const status = $("pw-status");
    status.textContent = a.status + (a.edited ? " · changed, press s to resubmit" : "");
    status.className = `badge ann-status-${a.status}`;
    $("pw-prompt").textContent = item.prompt;
    $("pw-left").textContent = item.completion;
    $("pw-right").textContent = item.completion_right;
    $("pw-reference-wrap").hidden = item.reference_answer === null;
    $("pw-reference").textContent = item.reference_answer || "";
    let src = item.source_kind;
    if (item.source_kind === "run") src = `run #${item.source_run_id}, step ${item.source_step}`;
    else if (item.source_kind === "benchmark") src = `evaluation #${item.source.eval_run}, problem ${item.source.problem_id}`;
    else if (item.source_kind === "upload") src = `uploaded file, ${item.source.where}`;
    $("pw-source").textContent = `Source: ${src}`;
    const reason = $("pw-reason");
    if (document.activeElement !== reason) reason.value = a.comment || "";
    for (const btn of $("pw-choices").querySelectorAll("button")) {
      const on = btn.dataset.choice === a.choice;
      btn.classList.toggle("chosen", on);
      btn.setAttribute("aria-pressed", String(on));
    }
    $("pw-left-card").classList.toggle("chosen", a.choice === "left");
    $("pw-right-card").classList.toggle("chosen", a.choice === "right");
    $("pw-left-card").classList.toggle("rejected", a.choice === "right");
    $("pw-right-card").classList.toggle("rejected", a.choice === "left");
    renderCounters();
    document.body.dataset.assignment = String(a.id);
    document.body.dataset.index = String(index);
    document.body.dataset.status = a.status;
    document.body.dataset.choice = a.choice || "";
  }

  function setChoice(choice) {
    const a = current();
    a.choice = choice;
    markChanged(a);
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

  function body(a) { return { choice: a.choice || null, reason: a.comment || "" }; }

  function flush() {
    clearTimeout(saveTimer);
    const batch = Array.from(pending);
    pending.clear();
    for (const a of batch) {
      chain = chain.then(async () => {
        setSaveState("saving", "Saving…");
        const r = await api(`${data.assignment_api}${a.id}/`, { method: "PATCH", json: body(a) });
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
    showError("");
    render();
  }

  async function submit() {
    const a = current();
    if (!a.choice) { showError("Choose first: 1 / ← left, 2 / → right, t tie, b both bad."); return; }
    await flush();
    const r = await api(`${data.assignment_api}${a.id}/submit/`, { method: "POST", json: body(a) });
    if (!r.ok) {
      showError(r.body && r.body.message ? r.body.message : `That failed (HTTP ${r.status}).`);
      return;
    }
    a.status = r.body.status;
    a.edited = false;
    setSaveState("saved", `Submitted: ${LABEL[a.choice]}`);
    const next = nextOpen(index);
    if (next === null) {
      render();
      $("pw-save").textContent = "All your pairs are done.";
      document.body.dataset.allDone = "1";
    } else {
      index = next;
      render();
    }
  }

  function toggleHelp(show) {
    const help = $("pw-help");
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
    if (key in KEY_CHOICE) { setChoice(KEY_CHOICE[key]); ev.preventDefault(); }
    else if (key === "r") { $("pw-reason").focus(); ev.preventDefault(); }
    else if (key === "Enter" || key === "s") {
      if (t && t.tagName === "BUTTON" && key === "Enter") return; // a focused button's own Enter
      submit();
      ev.preventDefault();
    }
    else if (key === "j") { go(index + 1); }
    else if (key === "k") { go(index - 1); }
  }

  function init() {
    if (!queue.length) {
      $("pw-empty").hidden = false;
      $("pw-layout").hidden = true;
      for (const id of ["pw-prev", "pw-next", "pw-submit"]) $(id).disabled = true;
      document.body.dataset.annReady = "1";
      return;
    }
    const start = queue.findIndex((a) => a.id === data.start_assignment);
    const open = queue.findIndex((a) => OPEN.includes(a.status));
    index = start >= 0 ? start : open >= 0 ? open : 0;
    $("pw-prev").addEventListener("click", () => go(index - 1));
    $("pw-next").addEventListener("click", () => go(index + 1));
    $("pw-submit").addEventListener("click", () => submit());
    $("pw-help-btn").addEventListener("click", () => toggleHelp());
    for (const btn of $("pw-choices").querySelectorAll("button")) {
      btn.addEventListener("click", () => setChoice(btn.dataset.choice));
    }
    $("pw-reason").addEventListener("input", (ev) => { current().comment = ev.target.value; markChanged(current()); });
    document.addEventListener("keydown", onKey);
    window.addEventListener("beforeunload", () => {
      for (const a of pending) {
        fetch(`${data.assignment_api}${a.id}/`, {
          method: "PATCH", keepalive: true, credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": window.rlvr.csrfToken() },
          body: JSON.stringify(body(a)),
        });
      }
    });
    setSaveState("idle", "");
    render();
    document.body.dataset.annReady = "1";
  }
  init();
})();
