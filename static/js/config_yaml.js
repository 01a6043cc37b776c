/* The experiment form's YAML view: the whole config the form holds, written as YAML by the server
   (POST /api/configs/yaml/), editable; "Apply to the form" sends the text to the server's reader
   (POST /api/configs/parse/: YAML or JSON, bounded, no anchors) and fills the form with the mapping it
   returns. Nothing is parsed or evaluated here. */
"use strict";
(function () {
  const toggle = document.getElementById("yaml-toggle");
  const panel = document.getElementById("yaml-panel");
  const form = window.rlvr.experimentForm;
  if (!toggle || !panel || !form) return;
  const urls = window.rlvr.pageData("experiment-form-data").urls || {};
  const text = document.getElementById("yaml-text");
  const error = document.getElementById("yaml-error");
  const status = document.getElementById("yaml-status");

  function say(node, message) {
    node.textContent = message || "";
    node.hidden = !message;
  }

  async function fromForm() {
    say(error, "");
    say(status, "");
    const { config, problems } = form.collect();
    if (problems.length) {
      say(error, "The form has a value that is not valid JSON (" + problems[0][0].replace(/^config\./, "") + "): fix it first.");
      return;
    }
    const name = document.getElementById("exp-name").value.trim();
    const ordered = Object.assign(name ? { name: name } : {}, config);
    const resp = await window.rlvr.api(urls.yaml, { method: "POST", json: { config: ordered } });
    if (!resp.ok) { say(error, (resp.body && resp.body.message) || "Could not write the config (" + resp.status + ")."); return; }
    text.value = resp.body.yaml;
  }

  async function toForm() {
    say(error, "");
    say(status, "");
    const resp = await window.rlvr.api(urls.parse, { method: "POST", json: { text: text.value } });
    if (!resp.ok) { say(error, (resp.body && resp.body.message) || "Could not read the text (" + resp.status + ")."); return; }
    const left = form.apply(resp.body.config);
    say(status, "Applied to the form." + (left.length ? " Not a field of the form, so left out: " + left.join(", ") + "." : ""));
  }

  toggle.addEventListener("click", () => {
    const opening = panel.hidden;
    panel.hidden = !opening;
    toggle.setAttribute("aria-expanded", String(opening));
    toggle.textContent = opening ? "Hide YAML" : "View as YAML";
    if (opening) fromForm();
  });
  document.getElementById("yaml-refresh").addEventListener("click", fromForm);
  document.getElementById("yaml-apply").addEventListener("click", toForm);
})();
