/* The schema-generated experiment form: read every input by its data-path into the config JSON, POST/PATCH
   the API, and show every error of the answer at its field (opening the folded section that holds it) with a
   summary at the top linking to each. Also: the count of changed values on each folded section, the dataset
   select, and window.rlvr.experimentForm {collect, apply} for the YAML view (static/js/config_yaml.js). */
"use strict";
(function () {
  const form = document.getElementById("experiment-form");
  if (!form) return;
  const el = window.rlvr.el;
  const data = window.rlvr.pageData("experiment-form-data");
  const defaults = data.defaults || {};
  const editors = window.rlvr.configEditors;
  const summary = document.getElementById("form-errors");
  const summaryList = document.getElementById("form-errors-list");
  const summaryTitle = document.getElementById("form-errors-title");
  const nameInput = document.getElementById("exp-name");
  const inputs = () => Array.from(form.querySelectorAll("[data-path]"));
  const byPath = (path) => form.querySelector('[data-path="' + CSS.escape(path) + '"]');

  function getPath(obj, path) {
    let node = obj;
    for (const p of path.split(".")) {
      if (node === null || typeof node !== "object" || !(p in node)) return undefined;
      node = node[p];
    }
    return node;
  }

  function setPath(obj, path, value) {
    const parts = path.split(".");
    let node = obj;
    for (const p of parts.slice(0, -1)) node = node[p] = node[p] || {};
    node[parts[parts.length - 1]] = value;
  }

  class FieldProblem extends Error {
    constructor(path, message) { super(message); this.path = path; }
  }

  function readValue(input) {
    const kind = input.dataset.kind;
    const raw = input.value;
    const nullable = input.dataset.nullable === "1";
    if (kind === "checkbox") return input.checked;
    if (kind === "select-json") return JSON.parse(raw);
    if (kind === "json") {
      if (input.dataset.invalid) throw new FieldProblem("config." + input.dataset.invalidPath, input.dataset.invalid);
      if (raw.trim() === "" && nullable) return null;
      try { return JSON.parse(raw); } catch (e) { throw new FieldProblem("config." + input.dataset.path, "Not valid JSON: " + e.message); }
    }
    if (kind === "integer" || kind === "number") {
      if (raw.trim() === "") return nullable ? null : raw;  // the server names the missing value
      const n = Number(raw);
      return Number.isNaN(n) ? raw : n;
    }
    if ((kind === "text" || kind === "textarea") && nullable && raw === "") return null;
    return raw;
  }

  function writeValue(input, value) {
    const kind = input.dataset.kind;
    if (kind === "checkbox") {
      input.checked = Boolean(value);
    } else if (kind === "select" || kind === "select-json") {
      const text = kind === "select-json" ? JSON.stringify(value === undefined ? null : value) : value === null || value === undefined ? "" : String(value);
      if (!Array.from(input.options).some((o) => o.value === text)) input.appendChild(el("option", { value: text }, text));
      input.value = text;
    } else if (kind === "json") {
      input.value = JSON.stringify(value === undefined ? null : value, null, input.hidden ? 0 : 2);
      if (input.hidden) input.dispatchEvent(new Event("input"));  // an editor's store: the editor redraws
    } else {
      input.value = value === null || value === undefined ? "" : String(value);
    }
  }

  /* The config the form holds, and the problems found before sending it (a JSON box that does not parse). */
  function collect() {
    const config = {};
    const problems = [];
    for (const input of inputs()) {
      try { setPath(config, input.dataset.path, readValue(input)); } catch (e) {
        if (!(e instanceof FieldProblem)) throw e;
        problems.push([e.path, [e.message]]);
      }
    }
    return { config: config, problems: problems };
  }

  /* Fill every field from a whole config (a pasted YAML); what it leaves out takes its default. Returns the
     paths of the config that no field holds (shown to the user, who may have meant something else). */
  function apply(config) {
    for (const input of inputs()) {
      const given = getPath(config, input.dataset.path);
      writeValue(input, given === undefined ? getPath(defaults, input.dataset.path) : given);
    }
    if (typeof config.name === "string" && config.name) nameInput.value = config.name;
    syncDataset();
    countChanges();
    return leftOut(config, "");
  }

  function leftOut(value, prefix) {
    const paths = inputs().map((i) => i.dataset.path);
    const out = [];
    for (const [key, v] of Object.entries(value)) {
      const path = prefix ? prefix + "." + key : key;
      if (path === "name" || paths.includes(path)) continue;
      if (paths.some((p) => p.startsWith(path + ".")) && v !== null && typeof v === "object" && !Array.isArray(v)) {
        out.push(...leftOut(v, path));
      } else {
        out.push(path);
      }
    }
    return out;
  }

  /* --- how many values of each folded section differ from the defaults ---------------------------- */

  function canonical(value) {
    if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
    if (value !== null && typeof value === "object") {
      return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
    }
    return JSON.stringify(value === undefined ? null : value);
  }

  const normalizedDefaults = {};
  function defaultFor(input) {
    const path = input.dataset.path;
    if (!(path in normalizedDefaults)) {
      const d = getPath(defaults, path);
      normalizedDefaults[path] = canonical(input.hidden && editors ? editors.normalize(path, d) : d);
    }
    return normalizedDefaults[path];
  }

  function countChanges() {
    form.querySelectorAll("details[data-section]").forEach((section) => {
      let n = 0;
      section.querySelectorAll("[data-path]").forEach((input) => {
        try { if (canonical(readValue(input)) !== defaultFor(input)) n += 1; } catch (e) { n += 1; }
      });
      const badge = section.querySelector("[data-changed-for]");
      if (!badge) return;
      badge.textContent = n + " changed";
      badge.hidden = n === 0;
    });
  }
  form.addEventListener("input", countChanges);
  form.addEventListener("change", countChanges);

  /* --- errors: at each field, and a summary linking to each ---------------------------------------- */

  function clearErrors() {
    form.querySelectorAll("[data-error-for]").forEach((p) => { p.textContent = ""; p.hidden = true; });
    form.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
    form.querySelectorAll(".error-count").forEach((n) => { n.textContent = ""; n.hidden = true; });
    summaryList.replaceChildren();
    summary.hidden = true;
  }

  /* The closest error slot for a dotted path: config.verifiers.0.params.x -> ... -> config.verifiers. */
  function errorSlot(path) {
    let parts = path.split(".");
    while (parts.length) {
      const slot = form.querySelector('[data-error-for="' + CSS.escape(parts.join(".")) + '"]');
      if (slot) return slot;
      parts = parts.slice(0, -1);
    }
    return form.querySelector('[data-error-for="__all__"]');
  }

  /* What the summary calls a field: its label (without the config key beside it), else its path. */
  function labelOf(slot, path) {
    const field = slot.closest("[data-field], .field");
    const label = field && field.querySelector("label, .label");
    if (!label) return path === "__all__" ? "The form" : path.replace(/^config\./, "");
    const copy = label.cloneNode(true);
    copy.querySelectorAll(".key, .muted").forEach((n) => n.remove());
    return copy.textContent.replace(/\s+/g, " ").trim() || path.replace(/^config\./, "");
  }

  function focusTarget(slot) {
    const field = slot.closest("[data-field], .field") || slot.parentElement;
    return field.querySelector("input:not([type=hidden]), select, textarea:not([hidden]), button") || field;
  }

  function reveal(node) {
    for (let d = node.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
  }

  function showError(path, messages) {
    const slot = errorSlot(path);
    const text = (slot.dataset.errorFor === path ? "" : path.replace(/^config\./, "") + ": ") + messages.join(" ");
    slot.textContent = slot.textContent ? slot.textContent + " " + text : text;
    slot.hidden = false;
    const field = slot.closest(".field, [data-field]");
    if (field) field.classList.add("invalid");
    reveal(slot);
    const section = slot.closest("details");
    const count = section && section.querySelector(".error-count");
    if (count) {
      const n = Number(count.dataset.n || 0) + 1;
      count.dataset.n = String(n);
      count.textContent = n === 1 ? "1 error" : n + " errors";
      count.hidden = false;
    }
    const target = focusTarget(slot);
    if (!target.id) target.id = "err-target-" + summaryList.children.length;
    const link = el("a", { href: "#" + target.id }, labelOf(slot, path));
    link.addEventListener("click", (event) => {
      event.preventDefault();
      reveal(target);
      target.scrollIntoView({ block: "center" });
      target.focus({ preventScroll: true });
    });
    const where = path.startsWith("config.") ? el("code", { class: "key" }, path.replace(/^config\./, "")) : null;
    const item = el("li", {}, link, " ", where, ": " + messages.join(" "));
    item.rlvrSlot = slot;
    summaryList.appendChild(item);
  }

  function showProblems(entries) {
    form.querySelectorAll(".error-count").forEach((n) => { n.dataset.n = "0"; });
    for (const [path, messages] of entries) showError(path, [].concat(messages));
    const items = Array.from(summaryList.children);  // in the order of the page, top to bottom
    items.sort((a, b) => (a.rlvrSlot.compareDocumentPosition(b.rlvrSlot) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
    items.forEach((item) => summaryList.appendChild(item));
    const n = items.length;
    summaryTitle.textContent = n === 1 ? "Please fix this problem" : "Please fix these " + n + " problems";
    summary.hidden = n === 0;
    const first = form.querySelector(".error:not([hidden])");
    if (first) first.scrollIntoView({ block: "center" });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const { config, problems } = collect();
    if (problems.length) { showProblems(problems); return; }
    const payload = { name: nameInput.value, description: form.elements.description.value, config: config };
    const button = form.querySelector("button[type=submit]");
    const status = document.getElementById("form-status");
    button.disabled = true;
    status.textContent = "Saving…";
    const resp = await window.rlvr.api(form.dataset.url, { method: form.dataset.method, json: payload });
    button.disabled = false;
    status.textContent = "";
    if (resp.ok) {
      window.location.assign("/experiments/" + resp.body.id + "/");
      return;
    }
    const body = resp.body || {};
    const fields = (body.extra && body.extra.fields) || {};
    const entries = Object.entries(fields);
    showProblems(entries.length ? entries : [["__all__", [body.message || "Request failed (" + resp.status + ")."]]]);
  });

  /* --- the dataset select: one of the project's datasets is data.source file, data.path dataset:<id> -- */

  const datasetSelect = document.getElementById("dataset-select");
  const datasets = data.datasets || [];

  function syncDataset() {
    if (!datasetSelect) return;
    const source = byPath("data.source");
    const file = byPath("data.path");
    const chosen = source && source.value === "file" && file ? datasets.find((d) => d.ref === file.value) : null;
    datasetSelect.value = chosen ? String(chosen.id) : "";
  }

  function chooseDataset(id) {
    const d = datasets.find((x) => String(x.id) === String(id));
    const source = byPath("data.source");
    if (d) {
      writeValue(source, "file");
      writeValue(byPath("data.path"), d.ref);
      if (byPath("data.prompt_field")) writeValue(byPath("data.prompt_field"), d.prompt_field);
      if (byPath("data.answer_field")) writeValue(byPath("data.answer_field"), d.answer_field);
    } else if (source && source.value === "file") {
      writeValue(source, getPath(defaults, "data.source"));
      writeValue(byPath("data.path"), null);
    }
    countChanges();
  }

  if (datasetSelect) {
    datasetSelect.addEventListener("change", () => chooseDataset(datasetSelect.value));
    ["data.source", "data.path"].forEach((p) => { const i = byPath(p); if (i) i.addEventListener("input", syncDataset); });
    const source = byPath("data.source");
    if (source) source.addEventListener("change", syncDataset);
    const wanted = data.dataset;
    if (wanted !== null && wanted !== undefined && datasets.some((d) => d.id === wanted)) {
      datasetSelect.value = String(wanted);
      chooseDataset(wanted);
    } else {
      syncDataset();
    }
  }

  countChanges();
  window.rlvr.experimentForm = { collect: collect, apply: apply, showProblems: showProblems };
})();
