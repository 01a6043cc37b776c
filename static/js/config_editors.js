/* The experiment form's structured editors: the verifiers, each method choice (one, or a list of them) and
   the rubric, drawn from the field descriptions of webapp/pages/forms_editors.py (page data
   "experiment-form-data"). An editor keeps its value as JSON in the hidden textarea that carries its
   data-path, so the form posts the same config JSON as a hand-written one; a script that writes that
   textarea (the saved-verifier and rubric pickers, the YAML view) dispatches "input" on it and the editor
   redraws from it. Every value is shown through inputs and textContent, never as markup. */
"use strict";
window.rlvr.configEditors = (function () {
  const el = window.rlvr.el;
  const data = window.rlvr.pageData("experiment-form-data");
  const specs = data.editors || {};

  class InvalidJson extends Error {
    constructor(path, message) { super(message); this.path = path; }
  }

  const domId = (path) => "ed-" + path.replace(/[^A-Za-z0-9_-]/g, "-");
  const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const shown = (v) => (v === null ? "auto" : v === true ? "yes" : v === false ? "no" : String(v));
  const errorSlot = (path) => el("p", { class: "error", "data-error-for": "config." + path, hidden: "" });
  const changed = (node) => node.dispatchEvent(new Event("change", { bubbles: true }));

  /* A long help text shows its first HELP_SHOWN characters, cut after a whole word with an ellipsis, and a
     "more" button that unfolds the whole text (a CSS line clamp cut words in half). Short ones show whole. */
  const HELP_SHOWN = 150;
  function foldHelp(p) {
    const full = p.textContent.trim();
    const cut = full.lastIndexOf(" ", HELP_SHOWN);
    if (full.length <= HELP_SHOWN + 30 || p.children.length || cut < HELP_SHOWN / 2) return p;
    const short = full.slice(0, cut).replace(/[\s,;:(\u2014-]+$/, "") + "\u2026";
    const text = el("span", { class: "help-text" }, short);
    const more = el("button", { type: "button", class: "link help-more", "aria-expanded": "false" }, "more");
    more.addEventListener("click", () => {
      const open = more.getAttribute("aria-expanded") !== "true";
      text.textContent = open ? full : short;
      more.textContent = open ? "less" : "more";
      more.setAttribute("aria-expanded", String(open));
    });
    p.title = full;
    p.replaceChildren(text, " ", more);
    return p;
  }
  const helpNode = (text) => foldHelp(el("p", { class: "help" }, text));

  /* The value a new entry starts with: each field's default; a required list starts with one entry. */
  function defaultOf(spec) {
    if (spec.kind === "object") {
      const out = {};
      for (const f of spec.fields) {
        const v = f.kind === "list" || f.kind === "object" || f.kind === "method"
          ? (f.default === null || f.default === undefined) && !f.nullable ? defaultOf(f) : clone(f.default)
          : clone(f.default);
        if (v !== undefined) out[f.key] = v;
      }
      return out;
    }
    if (spec.kind === "list") return spec.item && spec.default === null ? [defaultOf(spec.item)] : [];
    if (spec.kind === "method") {
      const first = spec.choices[0];
      return { [spec.name_key || "name"]: first.name, params: clone(first.defaults) };
    }
    return clone(spec.default);
  }

  /* ``root``: the editor of a whole form field, which the page labels (a nested one labels its own select). */
  function build(spec, value, path, root) {
    if (spec.kind === "object") return spec.nullable ? optionalObject(spec, value, path) : objectEditor(spec, value, path);
    if (spec.kind === "list") return listEditor(spec, value, path);
    if (spec.kind === "method") return methodEditor(spec, value, path, Boolean(root));
    return scalarEditor(spec, value, path);
  }

  /* --- one input ------------------------------------------------------------------------------- */

  function scalarInput(spec, value, id) {
    const kind = spec.kind;
    let input;
    if (kind === "checkbox") {
      input = el("input", { type: "checkbox", id: id });
      input.checked = Boolean(value);
    } else if (kind === "select") {
      input = el("select", { id: id });
      const options = spec.options.slice();
      if (!options.some((o) => o[0] === value)) options.push([value, "not one of the choices"]);
      options.forEach(([v, about], i) => {
        const option = el("option", { value: String(i) }, shown(v));
        if (about) option.title = about;
        option.selected = v === value;
        input.appendChild(option);
      });
      input.rlvrValues = options.map((o) => o[0]);
    } else if (kind === "number" || kind === "integer") {
      input = el("input", { type: "number", id: id, step: kind === "integer" ? "1" : "any" });
      if (spec.min !== null && spec.min !== undefined) input.min = String(spec.min);
      if (spec.max !== null && spec.max !== undefined) input.max = String(spec.max);
      input.value = value === null || value === undefined ? "" : String(value);
    } else if (kind === "json" || kind === "textarea") {
      input = el("textarea", { id: id, rows: "2" });
      if (kind === "json") { input.className = "mono"; input.spellcheck = false; }
      input.value = kind === "json" ? (value === undefined ? "" : JSON.stringify(value)) : (value === null || value === undefined ? "" : String(value));
    } else {
      input = el("input", { type: "text", id: id, autocomplete: "off" });
      input.value = value === null || value === undefined ? "" : String(value);
    }
    if (spec.placeholder) input.placeholder = spec.placeholder;
    if (spec.max_length && (kind === "text" || kind === "textarea")) input.maxLength = spec.max_length;
    return input;
  }

  function readScalar(spec, input, path) {
    if (spec.kind === "checkbox") return input.checked;
    if (spec.kind === "select") return input.rlvrValues[Number(input.value)];
    const raw = input.value;
    if (spec.kind === "number" || spec.kind === "integer") {
      if (raw.trim() === "") return spec.nullable ? null : "";  // the server names the missing value
      const n = Number(raw);
      return Number.isNaN(n) ? raw : n;
    }
    if (spec.kind === "json") {
      if (raw.trim() === "") return spec.nullable ? null : undefined;
      try { return JSON.parse(raw); } catch (e) { throw new InvalidJson(path, "Not valid JSON: " + e.message); }
    }
    return raw === "" && spec.nullable ? null : raw;
  }

  function fieldBox(spec, path, control) {
    const id = control.id;
    const box = el("div", { class: "field field-" + spec.kind, "data-field": path });
    if (spec.kind === "checkbox") {
      box.appendChild(el("label", { class: "check" }, control, " " + spec.label));
    } else if (!spec.label) {  // labelled by the field around the editor
      box.appendChild(control);
    } else {
      box.appendChild(el("label", { for: id }, spec.label, spec.nullable && spec.kind !== "select" ? el("span", { class: "muted small" }, " (optional)") : null));
      box.appendChild(control);
    }
    if (spec.help) box.appendChild(helpNode(spec.help));
    box.appendChild(errorSlot(path));
    return box;
  }

  function scalarEditor(spec, value, path) {
    // A required choice without a default (a rule's kind) starts at its first option, not at a blank.
    if ((value === null || value === undefined) && spec.kind === "select" && !spec.nullable && spec.options.length) {
      value = spec.options[0][0];
    }
    const input = scalarInput(spec, value, domId(path));
    return { node: fieldBox(spec, path, input), read: () => readScalar(spec, input, path), key: spec.key };
  }

  /* --- an object: its fields; a field can be shown only for one value of another (a criterion's rule) -- */

  function objectEditor(spec, value, path) {
    const given = isObject(value) ? value : {};
    const node = el("div", { class: "fields object-editor", "data-field": path });
    const children = spec.fields.map((f) => {
      let v = given[f.key];
      if (v === undefined) v = defaultOf(f);
      // A part shown for one value of another field (a criterion's rule or judge) is there whenever shown.
      const part = f.shown_when ? Object.assign({}, f, { nullable: false }) : f;
      if (v === null && f.shown_when) v = defaultOf(part);
      const editor = build(part, v, path + "." + f.key);
      node.appendChild(f.kind === "object" || f.kind === "list" || f.kind === "method" ? nested(f, editor, path + "." + f.key) : editor.node);
      return { spec: f, editor: editor };
    });
    const valueOf = (key) => {
      const child = children.find((c) => c.spec.key === key);
      try { return child ? child.editor.read() : undefined; } catch (e) { return undefined; }
    };
    const visible = (c) => !c.spec.shown_when || Object.entries(c.spec.shown_when).every(([k, want]) => valueOf(k) === want);
    const refresh = () => children.forEach((c) => { (c.editor.node.closest(".nested") || c.editor.node).hidden = !visible(c); });
    if (children.some((c) => c.spec.shown_when)) node.addEventListener("change", refresh);
    refresh();
    const known = new Set(spec.fields.map((f) => f.key));
    return {
      node: node,
      read: () => {
        const out = {};
        for (const [k, v] of Object.entries(given)) if (!known.has(k)) out[k] = v;  // kept: the server names it
        for (const c of children) {
          const v = visible(c) ? c.editor.read() : null;
          if (v !== undefined) out[c.spec.key] = v;
        }
        return out;
      },
    };
  }

  /* A part of an object that is itself an object, a list or a method choice: its own heading and help. */
  function nested(spec, editor, path) {
    const id = domId(path) + "-label";
    const box = el("div", { class: "field nested field-" + spec.kind, "data-field": path, role: "group", "aria-labelledby": id },
      el("span", { class: "label", id: id }, spec.label), editor.node);
    if (spec.help) box.appendChild(helpNode(spec.help));
    return box;
  }

  /* A section that may be null (the rubric): a checkbox switches it on with its defaults. */
  function optionalObject(spec, value, path) {
    const id = domId(path) + "-on";
    const on = el("input", { type: "checkbox", id: id });
    const body = el("div", { class: "optional-body" });
    const node = el("div", { class: "optional-object", "data-field": path },
      el("label", { class: "check" }, on, " Use a " + spec.label.toLowerCase()), body);
    let inner = null;
    function draw(v) {
      body.replaceChildren();
      inner = v === null || v === undefined ? null : objectEditor(spec, v, path);
      if (inner) body.appendChild(inner.node);
      on.checked = inner !== null;
    }
    on.addEventListener("change", () => { draw(on.checked ? defaultOf(spec) : null); changed(node); });
    draw(value);
    return { node: node, read: () => (inner ? inner.read() : null) };
  }

  /* --- a list: one row per entry, with add, remove and move up / down -------------------------- */

  function listEditor(spec, value, path) {
    const rows = el("ol", { class: "list-rows" });
    const add = el("button", { type: "button", class: "small list-add" }, "Add " + (spec.noun || "entry"));
    const node = el("div", { class: "list-editor", "data-field": path, id: domId(path) }, rows, errorSlot(path), add);
    let editors = [];

    function values() {
      return editors.map((e) => e.read());
    }
    function redraw(next, notify) {
      rows.replaceChildren();
      editors = next.map((v, i) => {
        const itemPath = path + "." + i;
        const editor = build(spec.item, v, itemPath);
        const button = (text, label, action, disabled) => {
          const b = el("button", { type: "button", class: "small", "aria-label": label + " " + (i + 1), title: label }, text);
          b.disabled = disabled;
          b.addEventListener("click", () => edit(action));
          return b;
        };
        const tools = el("div", { class: "row-tools" },
          button("↑", "Move up", (list) => list.splice(i - 1, 0, list.splice(i, 1)[0]), i === 0),
          button("↓", "Move down", (list) => list.splice(i + 1, 0, list.splice(i, 1)[0]), i === next.length - 1),
          button("✕", "Remove", (list) => list.splice(i, 1), false));
        rows.appendChild(el("li", { class: "list-row", "data-index": String(i) },
          el("span", { class: "row-number", "aria-hidden": "true" }, String(i + 1)), editor.node, tools));
        return editor;
      });
      if (!next.length) rows.appendChild(el("li", { class: "list-empty muted small" }, "None."));
      add.disabled = spec.max !== null && spec.max !== undefined && next.length >= spec.max;
      if (notify) changed(node);
    }
    function edit(action) {
      let list;
      try { list = values(); } catch (e) {
        if (!(e instanceof InvalidJson)) throw e;
        const slot = node.querySelector('[data-error-for="config.' + CSS.escape(e.path) + '"]');
        if (slot) { slot.textContent = e.message + " Fix it first."; slot.hidden = false; }
        return;
      }
      action(list);
      redraw(list, true);
    }
    add.addEventListener("click", () => edit((list) => list.push(defaultOf(spec.item))));
    redraw(Array.isArray(value) ? value : [], false);
    return { node: node, read: values };
  }

  /* --- a method choice: a select of the registered names, then the chosen one's parameters ------- */

  function methodEditor(spec, value, path, root) {
    const nameKey = spec.name_key || "name";
    let given = typeof value === "string" ? { [nameKey]: value } : isObject(value) ? value : defaultOf(spec);
    const choice = (name) => spec.choices.find((c) => c.name === name);
    if (typeof value === "string" && choice(value)) given = { [nameKey]: value, params: clone(choice(value).defaults) };
    const select = el("select", { id: domId(path + "." + nameKey), class: "method-select" });
    for (const c of spec.choices) select.appendChild(el("option", { value: c.name, title: c.description }, c.name));
    if (!choice(given[nameKey])) {  // a pasted or saved name that is not registered: shown, refused on save
      select.appendChild(el("option", { value: String(given[nameKey]) }, String(given[nameKey]) + " (not registered)"));
    }
    select.value = String(given[nameKey]);
    // A single choice is labelled by its field ("Token credit"); a list entry or a rule says what it picks.
    const nameSpec = { kind: "select", key: nameKey, label: root ? "" : spec.choice_label || "Method" };
    if (root) select.setAttribute("aria-label", spec.label);
    const about = el("p", { class: "help method-about" });
    const extras = (spec.extras || []).map((f) => build(f, given[f.key] === undefined ? null : given[f.key], path + "." + f.key));
    const head = el("div", { class: "fields method-head" }, fieldBox(nameSpec, path + "." + nameKey, select), ...extras.map((e) => e.node));
    head.firstChild.insertBefore(about, head.firstChild.querySelector(".error"));
    const paramsBox = el("div", { class: "method-params" });
    const node = el("div", { class: "method-editor", "data-field": path }, head, paramsBox, errorSlot(path + ".params"), errorSlot(path));
    let params = null;

    function drawParams(name, values) {
      const c = choice(name);
      about.textContent = c ? c.description : "Not a registered name: choose one of the list.";
      foldHelp(about);
      paramsBox.replaceChildren();
      if (!c || c.free) {
        const box = { kind: "json", key: "params", label: "Parameters (JSON)", nullable: false,
                      help: c ? "Any parameters, as a JSON object." : "" };
        params = scalarEditor(box, isObject(values) ? values : {}, path + ".params");
      } else if (!c.fields.length) {
        const extra = isObject(values) ? values : {};
        params = { node: el("span", { class: "no-params" }), read: () => extra };
      } else {
        params = objectEditor({ kind: "object", fields: c.fields }, isObject(values) ? values : {}, path + ".params");
      }
      paramsBox.appendChild(params.node);
    }
    select.addEventListener("change", () => {
      const c = choice(select.value);
      drawParams(select.value, c ? clone(c.defaults) : {});  // a new method starts from its defaults
    });
    drawParams(given[nameKey], given.params);
    const own = new Set([nameKey, "params", ...(spec.extras || []).map((f) => f.key)]);
    return {
      node: node,
      read: () => {
        const out = {};
        for (const [k, v] of Object.entries(given)) if (!own.has(k)) out[k] = v;
        out[nameKey] = select.value;
        out.params = params.read();
        extras.forEach((e, i) => {
          const v = e.read();
          if (v !== null && v !== undefined && v !== "") out[spec.extras[i].key] = v;
        });
        return out;
      },
    };
  }

  /* --- mounting ------------------------------------------------------------------------------- */

  function mount(container) {
    const path = container.dataset.editor;
    const spec = specs[path];
    const target = document.getElementById(container.dataset.target);
    if (!spec || !target) return;
    let editor = null;
    function sync() {
      try {
        target.value = JSON.stringify(editor.read());
        delete target.dataset.invalid;
        delete target.dataset.invalidPath;
      } catch (e) {
        if (!(e instanceof InvalidJson)) throw e;
        target.dataset.invalid = e.message;
        target.dataset.invalidPath = e.path;
      }
    }
    function draw() {
      let value;
      try { value = JSON.parse(target.value); } catch (e) { value = undefined; }
      editor = build(spec, value, path, true);
      container.replaceChildren(editor.node);
      sync();
    }
    container.addEventListener("input", sync);
    container.addEventListener("change", sync);
    target.addEventListener("input", draw);  // written by a picker or the YAML view
    draw();
  }

  /* The value an editor would hold for ``value`` (defaults filled in): what "changed" compares against. */
  function normalize(path, value) {
    const spec = specs[path];
    if (!spec) return value;
    try { return build(spec, clone(value), path, true).read(); } catch (e) { return value; }
  }

  document.querySelectorAll("#experiment-form p.help").forEach(foldHelp);  // the server-drawn fields' help
  document.querySelectorAll("[data-editor]").forEach(mount);
  return { normalize: normalize, foldHelp: foldHelp };
})();
