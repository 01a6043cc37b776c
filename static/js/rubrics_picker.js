/* The experiment form's rubric picker: choosing a project rubric fills the config's `rubric` field (the
   rubric editor's JSON store, which redraws on "input") with that rubric's trainer section (the API's
   `config`); "(no rubric)" sets it to null. A `?rubric=<id>` in the page URL (from a rubric's "Train with
   this rubric" button) preselects it. */
"use strict";
(function () {
  const picker = document.getElementById("rubric-picker");
  if (!picker) return;
  const target = document.getElementById(picker.dataset.target);
  if (!target) return;
  let configs = {};

  function fill() {
    const config = picker.value ? configs[picker.value] : null;
    target.value = JSON.stringify(config);
    target.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function current() {
    try { const value = JSON.parse(target.value); return value && value.name; } catch (e) { return null; }
  }

  window.rlvr.api(picker.dataset.url).then((resp) => {
    if (!resp.ok) return;
    const wanted = new URLSearchParams(window.location.search).get("rubric");
    const named = current();
    for (const rubric of resp.body) {
      configs[String(rubric.id)] = rubric.config;
      const option = window.rlvr.el("option", { value: String(rubric.id) }, rubric.name);
      if (String(rubric.id) === wanted || (!wanted && rubric.name === named)) option.selected = true;
      picker.appendChild(option);
    }
    if (wanted && picker.value === wanted) {
      fill();
      const section = picker.closest("details");
      if (section) section.open = true;  // the rubric section is folded; this rubric is why the page was opened
    }
  });
  picker.addEventListener("change", fill);
})();
