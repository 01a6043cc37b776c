/* The rubric editor: criteria as cards (add / remove / move), scorer settings, PUT/POST to the API,
   and the API's field errors (criteria.<i>.<field>) shown under each field. Text goes in via textContent
   and .value only, never innerHTML. */
"use strict";
(function () {
  const form = document.getElementById("rubric-form");
  if (!form) return;
  const data = window.rlvr.pageData("page-data");
  const el = window.rlvr.el;
  const list = document.getElementById("criteria");
  let criteria = [];

  function blankCriterion() {
    return { name: "", description: "", scale: "binary", min_value: 0, max_value: 1, weight: 1, scorer: "rule",
             rule: { type: "regex", params: data.ruleExamples.regex }, judge: null };
  }

  function options(select, choices, value) {
    for (const choice of choices) {
      const [v, label] = Array.isArray(choice) ? choice : [choice, choice];
      const opt = el("option", { value: v }, label);
      if (v === value) opt.selected = true;
      select.appendChild(opt);
    }
  }

  function errorSlot(path) { return el("p", { class: "error", "data-error-for": path, hidden: "" }); }

  function labelled(text, input, path) {
    return el("label", null, text, input, errorSlot(path));
  }

  /* Read the cards back into `criteria` (so a re-render keeps what was typed). */
  function readCards() {
    criteria = Array.from(list.children).map((card) => {
      const q = (name) => card.querySelector('[data-field="' + name + '"]');
      const c = {
        name: q("name").value, description: q("description").value, scale: q("scale").value,
        min_value: q("min_value").value, max_value: q("max_value").value, weight: q("weight").value,
        scorer: q("scorer").value, rule: null, judge: null,
      };
      c.rule = { type: q("rule_type").value, paramsText: q("rule_params").value };
      c.judge = { prompt_template: q("prompt_template").value, parse_pattern: q("parse_pattern").value };
      return c;
    });
  }

  function paramsText(c) {
    if (c.rule && c.rule.paramsText !== undefined) return c.rule.paramsText;
    return JSON.stringify((c.rule && c.rule.params) || {}, null, 2);
  }

  function card(c, i) {
    const p = "criteria." + i + ".";
    const name = el("input", { "data-field": "name", maxlength: "80", required: "" }); name.value = c.name || "";
    const description = el("textarea", { "data-field": "description", rows: "2" }); description.value = c.description || "";
    const scale = el("select", { "data-field": "scale" }); options(scale, data.scales, c.scale || "binary");
    const minV = el("input", { "data-field": "min_value", type: "number", step: "any" }); minV.value = c.min_value ?? 0;
    const maxV = el("input", { "data-field": "max_value", type: "number", step: "any" }); maxV.value = c.max_value ?? 1;
    const weight = el("input", { "data-field": "weight", type: "number", step: "any", min: "0" }); weight.value = c.weight ?? 1;
    const scorer = el("select", { "data-field": "scorer" }); options(scorer, data.scorers, c.scorer || "rule");
    const ruleType = el("select", { "data-field": "rule_type" });
    options(ruleType, data.ruleTypes, (c.rule && c.rule.type) || "regex");
    const ruleParams = el("textarea", { "data-field": "rule_params", rows: "4", class: "mono", spellcheck: "false" });
    ruleParams.value = paramsText(c);
    const judge = c.judge || {};
    const template = el("textarea", { "data-field": "prompt_template", rows: "5", class: "mono", spellcheck: "false" });
    template.value = judge.prompt_template || data.judgeDefaults.prompt_template;
    const pattern = el("input", { "data-field": "parse_pattern", class: "mono" });
    pattern.value = judge.parse_pattern || data.judgeDefaults.parse_pattern;

    const up = el("button", { type: "button", class: "small", "data-action": "up", title: "Move up" }, "↑");
    const down = el("button", { type: "button", class: "small", "data-action": "down", title: "Move down" }, "↓");
    const remove = el("button", { type: "button", class: "small danger", "data-action": "remove" }, "Remove");
    const range = el("div", { class: "row range-bounds" },
      labelled("Lowest score", minV, p + "min_value"), labelled("Highest score", maxV, p + "max_value"));
    const ruleBox = el("div", { class: "scorer-rule" },
      el("div", { class: "row" }, labelled("Rule", ruleType, p + "rule.type")),
      labelled("Rule parameters (JSON)", ruleParams, p + "rule"));
    const judgeBox = el("div", { class: "scorer-judge" },
      labelled("Judge prompt template ({prompt} {completion} {answer} {criterion} {description} {min} {max})", template, p + "judge"),
      labelled("Score pattern (regular expression; first group = score)", pattern, p + "judge.parse_pattern"));
    const node = el("li", { class: "criterion", "data-index": String(i) },
      el("div", { class: "tools" }, el("strong", null, "Criterion " + (i + 1)), up, down, remove),
      errorSlot("criteria." + i),
      el("div", { class: "row" }, labelled("Name", name, p + "name"), labelled("Scale", scale, p + "scale"),
        labelled("Weight", weight, p + "weight"), labelled("Scored by", scorer, p + "scorer")),
      range,
      labelled("Description", description, p + "description"),
      ruleBox, judgeBox);
    function sync() {
      range.hidden = scale.value !== "range";
      ruleBox.hidden = scorer.value !== "rule";
      judgeBox.hidden = scorer.value !== "judge";
    }
    scale.addEventListener("change", sync);
    scorer.addEventListener("change", sync);
    ruleType.addEventListener("change", () => {
      ruleParams.value = JSON.stringify(data.ruleExamples[ruleType.value] || {}, null, 2);
    });
    sync();
    return node;
  }

  function render() {
    list.replaceChildren(...criteria.map(card));
  }

  list.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    readCards();
    const i = Number(button.closest(".criterion").dataset.index);
    const action = button.dataset.action;
    if (action === "remove") criteria.splice(i, 1);
    if (action === "up" && i > 0) [criteria[i - 1], criteria[i]] = [criteria[i], criteria[i - 1]];
    if (action === "down" && i < criteria.length - 1) [criteria[i + 1], criteria[i]] = [criteria[i], criteria[i + 1]];
    clearErrors();
    render();
  });
  document.getElementById("add-criterion").addEventListener("click", () => {
    readCards();
    criteria.push(blankCriterion());
    render();
    list.lastElementChild.querySelector('[data-field="name"]').focus();
  });

  function clearErrors() {
    form.querySelectorAll("[data-error-for]").forEach((n) => { n.textContent = ""; n.hidden = true; });
    form.querySelectorAll(".invalid").forEach((n) => n.classList.remove("invalid"));
  }

  /* The closest slot for a dotted path: criteria.0.rule.params.pattern -> criteria.0.rule. */
  function showError(path, messages) {
    let parts = path.split(".");
    let slot = null;
    while (parts.length && !slot) {
      slot = form.querySelector('[data-error-for="' + CSS.escape(parts.join(".")) + '"]');
      if (!slot) parts = parts.slice(0, -1);
    }
    slot = slot || form.querySelector('[data-error-for="__all__"]');
    const text = (slot.dataset.errorFor === path ? "" : path + ": ") + messages.join(" ");
    slot.textContent = slot.textContent ? slot.textContent + " " + text : text;
    slot.hidden = false;
    const input = slot.parentElement && slot.parentElement.querySelector("input, select, textarea");
    if (input) input.classList.add("invalid");
  }

  function number(text) {
    const n = Number(text);
    return text === "" || Number.isNaN(n) ? text : n;
  }

  function payload() {
    readCards();
    let bad = false;
    const out = criteria.map((c, i) => {
      const item = { name: c.name, description: c.description, scale: c.scale, min_value: number(c.min_value),
                     max_value: number(c.max_value), weight: number(c.weight), scorer: c.scorer, rule: null, judge: null };
      if (c.scorer === "rule") {
        try { item.rule = { type: c.rule.type, params: JSON.parse(c.rule.paramsText || "{}") }; } catch (e) {
          showError("criteria." + i + ".rule", ["Rule parameters are not valid JSON: " + e.message]); bad = true;
        }
      } else if (c.scorer === "judge") {
        item.judge = { prompt_template: c.judge.prompt_template, parse_pattern: c.judge.parse_pattern };
      }
      return item;
    });
    return bad ? null : { name: form.elements.name.value, description: form.elements.description.value,
                          aggregation: form.elements.aggregation.value, criteria: out };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const body = payload();
    if (!body) return;
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    const resp = await window.rlvr.api(data.submitUrl, { method: data.method, json: body });
    button.disabled = false;
    if (resp.ok) { window.location.assign("/rubrics/" + resp.body.id + "/"); return; }
    const answer = resp.body || {};
    const fields = (answer.extra && answer.extra.fields) || {};
    if (Object.keys(fields).length === 0) showError("__all__", [answer.message || "Request failed (" + resp.status + ")."]);
    for (const [path, messages] of Object.entries(fields)) showError(path, [].concat(messages));
    const first = form.querySelector(".error:not([hidden])");
    if (first) first.scrollIntoView({ block: "center" });
  });

  options(form.elements.aggregation, data.aggregations, data.rubric ? data.rubric.aggregation : "weighted_sum");
  if (data.rubric) {
    form.elements.name.value = data.rubric.name;
    form.elements.description.value = data.rubric.description;
    criteria = data.rubric.criteria.map((c) => Object.assign({}, c, {
      rule: c.scorer === "rule" ? c.rule : null, judge: c.scorer === "judge" ? c.judge : null }));
  } else {
    criteria = [blankCriterion()];
  }
  render();
})();
