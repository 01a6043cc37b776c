/* Experiment form: add a reward-model version (a scalar reward model or a judge) of the project as one more entry
   of the config's `verifiers` list, with its weight in `algorithm.reward_weights` (the verifier editor's JSON store,
   static/js/config_editors.js, redraws its rows on "input"). Sources already listed keep their weights (1.0 where
   none were set); an entry with the same label is replaced. Process reward model versions (kind "prm") are not
   verifiers entries: they are offered nowhere here, and their page shows the process_reward snippet to use. */
"use strict";
(function () {
  const script = document.currentScript;
  const textarea = document.getElementById("cfg-verifiers");
  if (!script || !textarea || !script.dataset.project) return;
  const el = window.rlvr.el;

  function parseList(text) {
    try { const value = JSON.parse(text || "[]"); return Array.isArray(value) ? value : null; } catch (e) { return null; }
  }

  async function init() {
    const resp = await window.rlvr.api("/api/projects/" + script.dataset.project + "/reward-model-versions/");
    if (!resp.ok || !Array.isArray(resp.body)) return;
    const versions = resp.body.filter((v) => v.kind !== "prm");  // a PRM is the process_reward scorer, not an entry
    if (versions.length === 0) return;
    const select = el("select", { id: "reward-source-picker", "aria-label": "Reward model version" },
      el("option", { value: "" }, "Reward model…"));
    versions.forEach((v, i) => {
      select.appendChild(el("option", { value: String(i) }, v.reward_model_name + " v" + v.number + " (" + v.kind + ")"));
    });
    const weight = el("input", { type: "number", id: "reward-source-weight", step: "any", min: "-1000", max: "1000",
      value: "1", "aria-label": "Weight", title: "Its entry in algorithm.reward_weights (0: computed and shown, not trained on)" });
    const add = el("button", { type: "button", class: "small", id: "reward-source-add" }, "Add with weight");
    const box = el("div", { class: "verifier-picker" }, el("span", { class: "muted small" }, "Or add a reward model:"),
      select, weight, add);
    textarea.parentNode.insertBefore(box, textarea);

    add.addEventListener("click", () => {
      if (select.value === "") return;
      const entry = versions[Number(select.value)].config_entry;
      const w = Number(weight.value);
      if (!Number.isFinite(w)) { weight.focus(); return; }
      const list = parseList(textarea.value) || [];
      const weightsBox = document.getElementById("cfg-algorithm-reward_weights");
      const given = weightsBox ? parseList(weightsBox.value) : null;
      const weights = list.map((_, i) => (given && given.length === list.length ? given[i] : 1.0));
      const keep = list.map((item) => (item.label || item.name) !== entry.label);
      const nextList = list.filter((_, i) => keep[i]).concat([entry]);
      const nextWeights = weights.filter((_, i) => keep[i]).concat([w]);
      textarea.value = JSON.stringify(nextList, null, 2);
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
      if (weightsBox) {
        weightsBox.value = JSON.stringify(nextWeights);
        weightsBox.dispatchEvent(new Event("input", { bubbles: true }));
        weightsBox.dispatchEvent(new Event("change", { bubbles: true }));
      }
    });
  }
  init();
})();
