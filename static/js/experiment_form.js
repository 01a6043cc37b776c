/* The schema-generated experiment form: read inputs by data-path, POST/PATCH the API, show field errors. */
"use strict";
(function () {
  const form = document.getElementById("experiment-form");
  if (!form) return;

  function setPath(obj, path, value) {
    const parts = path.split(".");
    let node = obj;
    for (const p of parts.slice(0, -1)) node = node[p] = node[p] || {};
    node[parts[parts.length - 1]] = value;
  }

  function readValue(input) {
    const kind = input.dataset.kind;
    const raw = input.value;
    const nullable = input.dataset.nullable === "1";
    if (kind === "checkbox") return input.checked;
    if (kind === "json") {
      try { return JSON.parse(raw); } catch (e) { throw new Error("Not valid JSON: " + e.message); }
    }
    if (kind === "integer" || kind === "number") {
      if (raw.trim() === "") return nullable ? null : raw;  // the server names the missing value
      const n = Number(raw);
      return Number.isNaN(n) ? raw : n;
    }
    if (kind === "text" && nullable && raw === "") return null;
    return raw;
  }

  /* Choosing another method fills its params area with that method's defaults. */
  form.querySelectorAll("select[data-params-target]").forEach((select) => {
    select.addEventListener("change", () => {
      const target = document.getElementById(select.dataset.paramsTarget);
      const option = select.selectedOptions[0];
      if (!target || !option) return;
      target.value = option.dataset.params || "{}";
      target.rows = Math.max(3, Math.min(12, target.value.split("\n").length));
      const field = target.closest(".field");
      if (field) field.hidden = target.value.trim() === "{}";  // a method without parameters shows no area
      const help = document.getElementById(target.id + "-help");
      if (help && option.dataset.paramsHelp) help.textContent = option.dataset.paramsHelp;
    });
  });

  function clearErrors() {
    form.querySelectorAll("[data-error-for]").forEach((p) => { p.textContent = ""; p.hidden = true; });
    form.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
  }

  /* The closest error slot for a dotted path: config.verifiers.0.name -> config.verifiers. */
  function errorSlot(path) {
    let parts = path.split(".");
    while (parts.length) {
      const slot = form.querySelector('[data-error-for="' + CSS.escape(parts.join(".")) + '"]');
      if (slot) return slot;
      parts = parts.slice(0, -1);
    }
    return form.querySelector('[data-error-for="__all__"]');
  }

  function showError(path, messages) {
    const slot = errorSlot(path);
    const text = (slot.dataset.errorFor === path ? "" : path + ": ") + messages.join(" ");
    slot.textContent = slot.textContent ? slot.textContent + " " + text : text;
    slot.hidden = false;
    const field = slot.closest(".field");
    if (field) field.classList.add("invalid");
    const section = slot.closest("details");
    if (section) section.open = true;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const config = {};
    let bad = false;
    form.querySelectorAll("[data-path]").forEach((input) => {
      try { setPath(config, input.dataset.path, readValue(input)); } catch (e) {
        showError("config." + input.dataset.path, [e.message]); bad = true;
      }
    });
    if (bad) return;
    const payload = { name: form.elements.name.value, description: form.elements.description.value, config: config };
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    const resp = await window.rlvr.api(form.dataset.url, { method: form.dataset.method, json: payload });
    button.disabled = false;
    if (resp.ok) {
      window.location.assign("/experiments/" + resp.body.id + "/");
      return;
    }
    const body = resp.body || {};
    const fields = (body.extra && body.extra.fields) || {};
    if (Object.keys(fields).length === 0) showError("__all__", [body.message || "Request failed (" + resp.status + ")."]);
    for (const [path, messages] of Object.entries(fields)) showError(path, [].concat(messages));
    const first = form.querySelector(".error:not([hidden])");
    if (first) first.scrollIntoView({ block: "center" });
  });
})();
