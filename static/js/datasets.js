/* Datasets page: drop or choose a data file, preview it server-side (columns, first rows, every bad row
   for the chosen prompt / answer columns), then save it. Nothing is stored until Save; the file is sent
   again for each preview and for the save. File text is shown with textContent only. */
"use strict";
(function () {
  const { api, el, pageData } = window.rlvr;
  const data = pageData();
  const zone = document.getElementById("drop-zone");
  const input = document.getElementById("file-input");
  if (!zone || !input) return;
  const status = document.getElementById("upload-status");
  const preview = document.getElementById("preview");
  const promptSelect = document.getElementById("prompt-field");
  const answerSelect = document.getElementById("answer-field");
  const nameInput = document.getElementById("dataset-name");
  const nameError = document.getElementById("name-error");
  const saveButton = document.getElementById("save-button");
  const saveHint = document.getElementById("save-hint");
  const saveError = document.getElementById("save-error");
  let file = null;
  let latest = 0; // only the newest preview request may update the page
  let nameTouched = false;
  let answerChosen = false; // the user picked the answer column (or label-free), or confirmed the guess
  let current = null; // the latest preview answer
  const guessBox = document.getElementById("answer-guess");
  const guessed = document.getElementById("answer-guessed");
  const noneFound = document.getElementById("answer-none");
  const confirmBox = document.getElementById("answer-confirm");

  function say(text, kind) {
    status.textContent = text;
    status.className = "small" + (kind ? " " + kind : "");
  }

  function mb(bytes) { return (bytes / 1048576).toFixed(1) + " MB"; }

  /* The extension and size checks the server makes too, so a wrong file is refused before it is sent. */
  function refusal(candidate) {
    const dot = candidate.name.lastIndexOf(".");
    const ext = dot >= 0 ? candidate.name.slice(dot).toLowerCase() : "";
    if (!data.accepted.includes(ext)) {
      return candidate.name + ": the format is told by the extension; use one of " + data.accepted.join(", ") + ".";
    }
    if (candidate.size > data.max_upload_bytes) {
      return candidate.name + " is " + mb(candidate.size) + "; the limit is " + data.max_upload_mb + " MB.";
    }
    return null;
  }

  function choose(candidate) {
    if (!candidate) return;
    const why = refusal(candidate);
    if (why) {
      file = null;
      preview.hidden = true;
      say(why, "error");
      return;
    }
    file = candidate;
    nameTouched = false;
    answerChosen = false;
    runPreview(null);
  }

  function formFor(mapping) {
    const form = new FormData();
    form.append("file", file, file.name);
    if (mapping) {
      form.append("prompt_field", mapping.prompt);
      if (answerChosen) form.append("answer_field", mapping.answer); // else the server guesses it again
    }
    return form;
  }

  async function runPreview(mapping) {
    const ticket = ++latest;
    saveButton.disabled = true;
    saveError.hidden = true;
    say("Checking " + file.name + " (" + mb(file.size) + ")…");
    preview.dataset.loading = "1"; // tests and styles can tell a stale preview from the current one
    const resp = await api(data.preview_url, { method: "POST", body: formFor(mapping) });
    if (ticket !== latest) return;
    delete preview.dataset.loading;
    if (!resp.ok) {
      const fields = (resp.body && resp.body.extra && resp.body.extra.fields) || {};
      say((resp.body && resp.body.message) || "The preview failed (HTTP " + resp.status + ").", "error");
      if (!fields.prompt_field && !fields.answer_field) preview.hidden = true;
      return;
    }
    showPreview(resp.body);
  }

  function fillSelect(select, columns, chosen, withNone) {
    select.replaceChildren();
    if (withNone) select.appendChild(el("option", { value: "" }, "none: label-free"));
    for (const c of columns) select.appendChild(el("option", { value: c }, c));
    select.value = chosen || "";
  }

  function showPreview(p) {
    preview.hidden = false;
    say("");
    document.getElementById("preview-facts").replaceChildren(
      el("strong", {}, p.filename), " · " + p.format.toUpperCase() + " · " + p.rows + " row" + (p.rows === 1 ? "" : "s") +
      " · " + p.columns.length + " column" + (p.columns.length === 1 ? "" : "s"));
    fillSelect(promptSelect, p.columns, p.prompt_field, false);
    fillSelect(answerSelect, p.columns, p.answer_field, true);
    if (!nameTouched) nameInput.value = p.name;
    showNameNote(p.name_taken && nameInput.value === p.name ? "A dataset named " + p.name + " exists: pick another name." : "");
    showProblems(p.problems, p.problem_count, p.rows);
    showHead(p.columns, p.head, p.prompt_field, p.answer_field, new Set(p.problems.map((pr) => pr.row)));
    current = p;
    showGuess(p);
    updateSave();
  }

  /* A guessed answer column is a proposal the user confirms; label-free by default only when no column
     looks like an answer, and then the page says so. */
  function showGuess(p) {
    const unconfirmed = p.answer_guess === "guessed" && !answerChosen;
    guessed.hidden = !unconfirmed;
    noneFound.hidden = !(p.answer_guess === "none_found" && !answerChosen);
    guessBox.hidden = guessed.hidden && noneFound.hidden;
    confirmBox.checked = false;
    if (unconfirmed) {
      document.getElementById("answer-guessed-name").textContent = p.answer_field;
      const others = p.answer_candidates.filter((c) => c !== p.answer_field);
      document.getElementById("answer-others").textContent = others.length ? " (other candidates: " + others.join(", ") + ")" : "";
    }
  }

  function updateSave() {
    const p = current;
    if (!p) return;
    const ok = p.problem_count === 0;
    const waiting = p.answer_guess === "guessed" && !answerChosen;
    saveButton.disabled = !ok || waiting;
    saveHint.textContent = !ok ? "Fix the rows above (or pick other columns) to save."
      : waiting ? "Confirm the answer column (or pick another) to save."
      : "All " + p.rows + " rows are valid.";
  }

  function showNameNote(text) {
    nameError.textContent = text;
    nameError.hidden = !text;
  }

  function showProblems(problems, count, rows) {
    const box = document.getElementById("row-errors");
    box.hidden = count === 0;
    if (count === 0) return;
    document.getElementById("row-errors-title").textContent =
      count + " of " + rows + " row" + (rows === 1 ? "" : "s") + (count === 1 ? " is" : " are") + " invalid";
    const body = document.querySelector("#row-error-table tbody");
    body.replaceChildren(...problems.map((pr) => el("tr", { "data-row": String(pr.row) },
      el("td", { class: "num" }, pr.row), el("td", { class: "muted" }, pr.where),
      el("td", { class: "mono" }, pr.column === null ? "(row)" : pr.column), el("td", {}, pr.message))));
    const more = document.getElementById("row-errors-more");
    more.hidden = count <= problems.length;
    more.textContent = "… and " + (count - problems.length) + " more (the first " + problems.length + " are shown).";
  }

  function showHead(columns, head, promptField, answerField, badRows) {
    const table = document.getElementById("preview-table");
    const mark = (c) => (c === promptField ? "prompt" : c === answerField ? "answer" : "");
    table.tHead.replaceChildren(el("tr", {}, el("th", { class: "num" }, "#"),
      ...columns.map((c) => el("th", { class: mark(c) ? "mapped" : "" }, c, mark(c) ? el("span", { class: "ds-role" }, mark(c)) : null))));
    table.tBodies[0].replaceChildren(...head.map((row) => el("tr", badRows.has(row.row) ? { class: "bad" } : {},
      el("td", { class: "num muted" }, row.row),
      ...row.cells.map((cell) => cell === null ? el("td", { class: "muted" }, "null") : el("td", {}, cell)))));
  }

  function mapping() { return { prompt: promptSelect.value, answer: answerSelect.value }; }

  async function save() {
    if (!file) return;
    saveButton.disabled = true;
    saveError.hidden = true;
    say("Saving " + file.name + "…");
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("name", nameInput.value.trim());
    form.append("prompt_field", promptSelect.value);
    form.append("answer_field", answerSelect.value);
    const resp = await api(data.upload_url, { method: "POST", body: form });
    if (resp.ok) {
      window.location.assign(data.list_url + "?saved=" + resp.body.id + "#dataset-" + resp.body.id);
      return;
    }
    const extra = (resp.body && resp.body.extra) || {};
    say("");
    saveError.textContent = (resp.body && resp.body.message) || "Saving failed (HTTP " + resp.status + ").";
    saveError.hidden = false;
    if (extra.fields && extra.fields.name) showNameNote(extra.fields.name[0]);
    if (extra.rows) showProblems(extra.rows, extra.problem_count, extra.row_count);
    saveButton.disabled = false;
  }

  input.addEventListener("change", () => choose(input.files[0]));
  ["dragenter", "dragover"].forEach((type) => zone.addEventListener(type, (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  }));
  ["dragleave", "dragend"].forEach((type) => zone.addEventListener(type, () => zone.classList.remove("dragging")));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("dragging");
    const files = event.dataTransfer && event.dataTransfer.files;
    if (!files || files.length === 0) return;
    if (files.length > 1) say("Drop one file at a time; the first one is used.", "error");
    choose(files[0]);
  });
  promptSelect.addEventListener("change", () => file && runPreview(mapping()));
  answerSelect.addEventListener("change", () => {
    answerChosen = true;
    if (file) runPreview(mapping());
  });
  confirmBox.addEventListener("change", () => {
    answerChosen = confirmBox.checked;
    updateSave();
  });
  nameInput.addEventListener("input", () => { nameTouched = true; showNameNote(""); });
  saveButton.addEventListener("click", save);
})();
