/* Experiment form: pick a saved verifier version to fill an entry of the config's `verifiers` list (the
   verifier editor's JSON store, static/js/config_editors.js, which redraws its rows on "input").
   The run launched from this config records the versions whose verifier and params it uses. */
"use strict";
(function () {
  const script = document.currentScript;
  const textarea = document.getElementById("cfg-verifiers");
  if (!script || !textarea || !script.dataset.project) return;
  const el = window.rlvr.el;

  async function init() {
    const resp = await window.rlvr.api("/api/projects/" + script.dataset.project + "/verifier-versions/");
    if (!resp.ok || !Array.isArray(resp.body) || resp.body.length === 0) return;
    const versions = resp.body;
    const select = el("select", { id: "verifier-picker", "aria-label": "Saved verifier version" },
      el("option", { value: "" }, "Saved verifier…"));
    versions.forEach((v, i) => {
      const status = v.test_status === "failing" ? " — cases fail" : v.test_status === "passing" ? " — cases pass" : "";
      select.appendChild(el("option", { value: String(i) }, v.definition_name + " v" + v.number + " (" + v.verifier + ")" + status));
    });
    const replace = el("button", { type: "button", class: "small", id: "verifier-picker-replace" }, "Use as the only verifier");
    const add = el("button", { type: "button", class: "small", id: "verifier-picker-add" }, "Add");
    const box = el("div", { class: "verifier-picker" }, el("span", { class: "muted small" }, "Or use a saved verifier:"), select, replace, add);
    textarea.parentNode.insertBefore(box, textarea);

    function apply(mode) {
      if (select.value === "") return;
      const entry = versions[Number(select.value)].config_entry;
      let list = [];
      if (mode === "add") {
        try { list = JSON.parse(textarea.value || "[]"); } catch (e) { list = []; }
        if (!Array.isArray(list)) list = [];
        list = list.filter((item) => (item.label || item.name) !== entry.label);
      }
      list.push(entry);
      textarea.value = JSON.stringify(list, null, 2);
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }
    replace.addEventListener("click", () => apply("replace"));
    add.addEventListener("click", () => apply("add"));
  }
  init();
})();
