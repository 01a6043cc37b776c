/* The runs table (/projects/<id>/runs/): one row per run with chosen config fields and metric summaries.
   Rows come once from /api/projects/<id>/runs/table/ (again only when a column needs a metric key not yet
   summarised); sorting, filtering, grouping and selection happen here. The state (columns, sort,
   filters, status, grouping) is written into the address, so a link opens the same table, and can be
   saved as a named view (/api/projects/<id>/run-views/). Every value is set as text, never as markup. */
"use strict";
(function () {
  const { api, el, pageData } = window.rlvr;
  const page = pageData("runs-table-data");
  const W = page.smoothing_window;
  const DEFAULT_KEY = "rollout/reward_mean";
  const MAX_DEFAULT_CONFIG = 8;
  const STATUSES = ["queued", "not_queued", "running", "succeeded", "failed", "cancelled"];
  const FIELDS = {
    run: { label: "Run", help: "The run's id; opens its page." },
    experiment: { label: "Experiment", help: "The experiment the run was launched from." },
    status: { label: "Status", help: "Where the run stands." },
    source: { label: "Source", help: "Who trained it: this platform's trainer, or an outside trainer." },
    steps: { label: "Steps", help: "The last step stored, of the steps planned." },
    created: { label: "Created", help: "When the run was launched or sent in." },
    created_by: { label: "Created by", help: "Who launched it." },
  };
  const GROUPABLE_FIELDS = ["experiment", "status", "source", "created_by"];
  const STATS = {
    last: { label: "last", help: "the value at the last step that has one" },
    best: { label: "best", help: "the best single value (raw: one batch's mean, so partly luck)" },
    smoothed: { label: "smoothed", help: `the best mean of ${W} consecutive values (all of them in a shorter run)` },
    smoothed_last: { label: "smoothed last", help: `the mean of the last ${W} values` },
  };

  let table = null; // the API's last answer
  let loadedKeys = new Set(); // metric keys it summarises
  let views = []; // saved views
  let state = null; // {columns, sort, descending, filters, status, group_by}: a view's spec
  let currentView = null; // the saved view the state came from
  const selected = new Set();
  const collapsed = new Set();

  const $ = (id) => document.getElementById(id);
  const tableEl = $("rt-table");

  // --- columns ---------------------------------------------------------------------------------------

  function parseColumn(id) {
    if (Object.prototype.hasOwnProperty.call(FIELDS, id)) return { kind: "field", name: id };
    if (id.startsWith("config:")) return { kind: "config", path: id.slice(7) };
    if (id.startsWith("metric:")) {
      const parts = id.slice(7).split(":");
      let direction = "";
      if (parts.length >= 3 && (parts[parts.length - 1] === "max" || parts[parts.length - 1] === "min") && isStat(parts[parts.length - 2])) {
        direction = parts.pop();
      }
      const stat = parts.pop();
      return { kind: "metric", key: parts.join(":"), stat: stat, direction: direction };
    }
    return { kind: "unknown" };
  }
  function isStat(name) {
    return Object.prototype.hasOwnProperty.call(STATS, name);
  }
  function metricColumn(key, stat, direction) {
    return `metric:${key}:${stat}` + (direction ? `:${direction}` : "");
  }
  function directionOf(col) {
    return col.direction || ((table && table.metrics[col.key]) || {}).direction || "max";
  }
  /* Headers name the last segment (reward_mean) over its prefix and the figure (rollout · smoothed ↑);
     the title has the whole key, so the table stays narrow enough for a dozen columns. */
  function splitLast(text, sep) {
    const i = text.lastIndexOf(sep);
    return i < 0 ? ["", text] : [text.slice(0, i), text.slice(i + 1)];
  }
  function columnLabel(id) {
    const col = parseColumn(id);
    if (col.kind === "field") return { main: FIELDS[col.name].label, sub: "", help: FIELDS[col.name].help, full: FIELDS[col.name].label };
    if (col.kind === "config") {
      const [prefix, last] = splitLast(col.path, ".");
      return { main: last, sub: prefix ? `config · ${prefix}` : "config", help: `Config field ${col.path}.`, full: col.path };
    }
    const dir = directionOf(col);
    const arrow = dir === "max" ? "↑" : "↓";
    const [prefix, last] = splitLast(col.key, "/");
    return {
      main: last,
      sub: `${prefix ? prefix + " · " : ""}${STATS[col.stat].label} ${arrow}`,
      help: `${col.key}: ${STATS[col.stat].help}. Best is the ${dir === "max" ? "highest" : "lowest"} value.`,
      full: `${col.key} ${STATS[col.stat].label}`,
    };
  }
  function isNumericColumn(id) {
    const col = parseColumn(id);
    return col.kind === "metric" || (col.kind === "field" && (col.name === "run" || col.name === "steps"));
  }

  /* {value, text}: value sorts and filters (a number, a string, or null when missing); text is shown. */
  function cell(run, id) {
    const col = parseColumn(id);
    if (col.kind === "field") {
      switch (col.name) {
        case "run": return { value: run.id, text: `#${run.id}` };
        case "experiment": return { value: run.experiment.name, text: run.experiment.name };
        case "status": return { value: run.status, text: run.status.replace("_", " ") };
        case "source": return { value: run.source_label, text: run.source === "native" ? "built-in" : run.source_label };
        case "steps": return { value: run.step, text: `${run.step} / ${run.max_steps}` };
        case "created": return { value: run.created_at, text: formatTime(run.created_at) };
        case "created_by": return { value: run.created_by, text: run.created_by || "" };
      }
    }
    if (col.kind === "config") {
      let v;
      if (Object.prototype.hasOwnProperty.call(run.config, col.path)) v = run.config[col.path];
      else if (Object.prototype.hasOwnProperty.call(table.config_shared, col.path)) v = table.config_shared[col.path];
      else return { value: null, text: "" };
      if (v === null) return { value: null, text: "null" };
      if (typeof v === "boolean") return { value: String(v), text: String(v) };
      return { value: v, text: String(v) };
    }
    if (col.kind === "metric") {
      const s = run.metrics[col.key];
      if (!s) return { value: null, text: "" };
      const dir = directionOf(col);
      const v = { last: s.last, best: dir === "max" ? s.max : s.min,
        smoothed: dir === "max" ? s.smooth_max : s.smooth_min, smoothed_last: s.smooth_last }[col.stat];
      return { value: v, text: formatNumber(v), title: `${s.points} values, last at step ${s.last_step}` };
    }
    return { value: null, text: "" };
  }

  function formatNumber(v) {
    if (typeof v !== "number" || !isFinite(v)) return "";
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(3).replace(/\.?0+e/, "e");
    return v.toPrecision(4); // trailing zeros kept, so a column's decimals line up
  }
  function formatTime(iso) {
    const d = new Date(iso);
    if (isNaN(d.getTime())) return iso;
    const pad = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }

  // --- sorting and filtering -------------------------------------------------------------------------

  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  /* Missing values last whichever way the column sorts; numbers before text in a mixed column. */
  function compareValues(a, b, descending) {
    const am = a === null || a === undefined, bm = b === null || b === undefined;
    if (am || bm) return am === bm ? 0 : am ? 1 : -1;
    let c;
    if (typeof a === "number" && typeof b === "number") c = a - b;
    else if (typeof a === "number") return -1;
    else if (typeof b === "number") return 1;
    else c = collator.compare(String(a), String(b));
    return descending ? -c : c;
  }

  const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
  function toNumber(text) {
    const t = text.trim();
    return NUMBER.test(t) ? Number(t) : null;
  }
  function close(a, b) {
    return a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
  }
  /* A filter-row text as {test(value, text)} or {error}: ">0.5", ">=1", "<=1e-5", "0.1..0.3" (inclusive),
     "=3" or "3" (equal, for numbers), "!=x"; anything else is a case-insensitive substring. */
  function compileFilter(raw) {
    const s = (raw || "").trim();
    if (!s) return null;
    const op = s.match(/^(>=|<=|!=|>|<|=)\s*(.*)$/);
    if (op) {
      const x = toNumber(op[2]);
      if (x === null) {
        if (op[1] === "=" || op[1] === "!=") {
          const want = op[2].trim().toLowerCase();
          return { test: (v, text) => (text.toLowerCase() === want) === (op[1] === "=") };
        }
        return { error: `${op[2] || "(nothing)"} is not a number: write e.g. ${op[1]}0.5` };
      }
      const tests = {
        ">": (v) => v > x, ">=": (v) => v >= x || close(v, x), "<": (v) => v < x,
        "<=": (v) => v <= x || close(v, x), "=": (v) => close(v, x), "!=": (v) => !close(v, x),
      };
      return { test: (v) => typeof v === "number" && tests[op[1]](v) };
    }
    const range = s.match(/^(.+?)\s*\.\.\s*(.+)$/);
    if (range && toNumber(range[1]) !== null && toNumber(range[2]) !== null) {
      const lo = Math.min(toNumber(range[1]), toNumber(range[2]));
      const hi = Math.max(toNumber(range[1]), toNumber(range[2]));
      return { test: (v) => typeof v === "number" && (v >= lo || close(v, lo)) && (v <= hi || close(v, hi)) };
    }
    const n = toNumber(s);
    const needle = s.toLowerCase();
    return { test: (v, text) => (n !== null && typeof v === "number" ? close(v, n) : text.toLowerCase().includes(needle)) };
  }

  function visibleRuns() {
    const filters = [];
    for (const [id, raw] of Object.entries(state.filters)) {
      const f = compileFilter(raw);
      if (f && f.test) filters.push([id, f]);
    }
    const statuses = new Set(state.status);
    let runs = table.runs.filter((run) => {
      if (statuses.size && !statuses.has(run.status)) return false;
      return filters.every(([id, f]) => { const c = cell(run, id); return f.test(c.value, c.text); });
    });
    if (state.sort) {
      const keyed = runs.map((run, i) => [cell(run, state.sort).value, i, run]);
      keyed.sort((a, b) => compareValues(a[0], b[0], state.descending) || a[1] - b[1]);
      runs = keyed.map((k) => k[2]);
    }
    return runs;
  }

  // --- state, address and views ----------------------------------------------------------------------

  /* A link can be edited by hand: columns the page cannot show are dropped, not fatal. */
  function validColumn(id) {
    if (typeof id !== "string" || !id) return false;
    const col = parseColumn(id);
    return col.kind === "field" || (col.kind === "config" && col.path !== "") || (col.kind === "metric" && col.key !== "" && isStat(col.stat));
  }
  function normalise(spec) {
    const columns = Array.isArray(spec.columns) ? Array.from(new Set(spec.columns.filter(validColumn))).slice(0, page.max_columns) : [];
    return {
      columns: columns,
      sort: validColumn(spec.sort) ? spec.sort : null,
      descending: spec.descending !== false,
      filters: Object.assign({}, spec.filters || {}),
      status: Array.isArray(spec.status) ? spec.status.slice() : [],
      group_by: validColumn(spec.group_by) && !String(spec.group_by).startsWith("metric:") ? spec.group_by : null,
    };
  }
  function specOf(s) {
    const filters = {};
    for (const [id, raw] of Object.entries(s.filters)) if (raw.trim() && s.columns.includes(id)) filters[id] = raw.trim();
    return { columns: s.columns.slice(), sort: s.columns.includes(s.sort) ? s.sort : null, descending: s.descending,
      filters: filters, status: s.status.slice(), group_by: s.group_by || null };
  }
  function sameSpec(a, b) {
    return JSON.stringify(specOf(normalise(a))) === JSON.stringify(specOf(normalise(b)));
  }

  function stateFromAddress(params) {
    if (!params.has("col")) return null;
    const filters = {};
    for (const [name, value] of params.entries()) if (name.startsWith("f.")) filters[name.slice(2)] = value;
    return normalise({
      columns: params.getAll("col"), sort: params.get("sort"), descending: params.get("dir") !== "asc",
      filters: filters, status: params.getAll("status"), group_by: params.get("group"),
    });
  }
  function writeAddress() {
    const spec = specOf(state);
    const params = new URLSearchParams();
    if (currentView) params.set("view", String(currentView.id));
    for (const c of spec.columns) params.append("col", c);
    if (spec.sort) { params.set("sort", spec.sort); params.set("dir", spec.descending ? "desc" : "asc"); }
    if (spec.group_by) params.set("group", spec.group_by);
    for (const s of spec.status) params.append("status", s);
    for (const [id, raw] of Object.entries(spec.filters)) params.set(`f.${id}`, raw);
    history.replaceState(null, "", `${location.pathname}?${params.toString()}`);
  }

  function defaultState() {
    const columns = ["run", "experiment", "status", "source", "steps", "created"];
    if (table.metric_keys.includes(DEFAULT_KEY)) {
      columns.push(metricColumn(DEFAULT_KEY, "smoothed"), metricColumn(DEFAULT_KEY, "last"));
    }
    for (const path of table.config_differing.slice(0, MAX_DEFAULT_CONFIG)) columns.push(`config:${path}`);
    return normalise({ columns: columns });
  }

  function metricKeysOf(s) {
    const keys = [];
    for (const id of s.columns) { const c = parseColumn(id); if (c.kind === "metric" && !keys.includes(c.key)) keys.push(c.key); }
    return keys;
  }

  function say(text, isError) {
    const node = $("rt-message");
    node.textContent = text || "";
    node.hidden = !text;
    node.classList.toggle("error", Boolean(isError));
  }

  const MAX_URL_CHARS = 15000;
  async function fetchTable(keys) {
    const wanted = keys.slice(0, page.max_metric_keys);
    const url = `${page.table_url}?metrics=${encodeURIComponent(wanted.join(","))}`;
    // daphne (Twisted) drops a request line past 16 KB without answering: say so instead of waiting.
    if (url.length > MAX_URL_CHARS) { say("These metric keys make the request too long: remove some metric columns.", true); return false; }
    const resp = await api(url);
    if (!resp.ok) {
      say((resp.body && resp.body.message) || `Could not load the runs (HTTP ${resp.status}).`, true);
      return false;
    }
    table = resp.body;
    loadedKeys = new Set(wanted);
    return true;
  }
  /* Fetch again only when a column needs a key the last answer did not summarise. */
  async function ensureKeys() {
    const keys = metricKeysOf(state);
    if (keys.length > page.max_metric_keys) {
      say(`At most ${page.max_metric_keys} metric keys at once: remove some metric columns.`, true);
      return;
    }
    if (keys.some((k) => !loadedKeys.has(k))) await fetchTable(keys);
  }

  async function loadViews() {
    const resp = await api(page.views_url);
    views = resp.ok ? resp.body : [];
    const select = $("rt-view");
    while (select.options.length > 1) select.remove(1);
    for (const v of views) {
      select.appendChild(el("option", { value: String(v.id) }, v.created_by ? `${v.name} · ${v.created_by}` : v.name));
    }
  }

  /* Any change of state: write the address, show whether it still matches the chosen view, redraw. */
  async function changed(options) {
    await ensureKeys();
    writeAddress();
    const select = $("rt-view");
    select.value = currentView ? String(currentView.id) : "";
    $("rt-view-changed").hidden = !(currentView && !sameSpec(currentView.spec, state));
    const del = $("rt-delete");
    del.hidden = !(currentView && currentView.can_change);
    if (!options || options.header !== false) renderHead();
    renderBody();
    renderChooserChecks();
  }

  async function saveView(event) {
    event.preventDefault();
    const name = $("rt-view-name").value.trim();
    if (!name) { say("Give the view a name first.", true); return; }
    const spec = specOf(state);
    const existing = views.find((v) => v.name === name);
    let resp;
    if (existing) {
      if (!existing.can_change) { say(`A view named “${name}” already exists and was saved by someone else: choose another name.`, true); return; }
      if (!window.confirm(`Overwrite the saved view “${name}”?`)) return;
      resp = await api(page.view_url.replace("/0/", `/${existing.id}/`), { method: "PUT", json: { name: name, spec: spec } });
    } else {
      resp = await api(page.views_url, { method: "POST", json: { name: name, spec: spec } });
    }
    if (!resp.ok) { say((resp.body && resp.body.message) || `Could not save the view (HTTP ${resp.status}).`, true); return; }
    await loadViews();
    currentView = views.find((v) => v.id === resp.body.id) || null;
    $("rt-view-name").value = resp.body.name;
    say(`Saved the view “${resp.body.name}”: anyone in the project can open it from the View list.`);
    await changed();
  }

  async function deleteView() {
    if (!currentView || !window.confirm(`Delete the saved view “${currentView.name}” for everyone in the project?`)) return;
    const resp = await api(page.view_url.replace("/0/", `/${currentView.id}/`), { method: "DELETE" });
    if (!resp.ok) { say((resp.body && resp.body.message) || `Could not delete the view (HTTP ${resp.status}).`, true); return; }
    say(`Deleted the view “${currentView.name}”.`);
    currentView = null;
    await loadViews();
    await changed();
  }

  async function pickView() {
    const id = Number($("rt-view").value);
    currentView = views.find((v) => v.id === id) || null;
    if (currentView) { state = normalise(currentView.spec); selected.clear(); collapsed.clear(); say(""); }
    const name = $("rt-view-name");
    if (name) name.value = currentView && currentView.can_change ? currentView.name : ""; // Save then overwrites it
    await changed();
  }

  // --- drawing ---------------------------------------------------------------------------------------

  function renderHead() {
    const thead = tableEl.tHead;
    thead.replaceChildren();
    const all = el("input", { type: "checkbox", id: "rt-select-all", "aria-label": "Select every run shown" });
    all.addEventListener("change", () => {
      for (const run of visibleRuns()) { if (all.checked) selected.add(run.id); else selected.delete(run.id); }
      renderBody();
    });
    const head = el("tr", { class: "rt-head" }, el("th", { class: "rt-check" }, all));
    const filters = el("tr", { class: "rt-filters" }, el("td", { class: "rt-check" }));
    for (const id of state.columns) {
      const label = columnLabel(id);
      const sorted = state.sort === id;
      const arrow = sorted ? (state.descending ? " ▼" : " ▲") : "";
      const button = el("button", { type: "button", class: "rt-sort", title: `${label.help} Click to sort.` },
        el("span", { class: "rt-col-main" }, label.main + arrow), label.sub ? el("span", { class: "rt-col-sub" }, label.sub) : null);
      button.addEventListener("click", () => sortBy(id));
      head.appendChild(el("th", {
        "data-col": id, class: isNumericColumn(id) ? "num" : "",
        "aria-sort": sorted ? (state.descending ? "descending" : "ascending") : "none",
      }, button));
      const input = el("input", {
        type: "text", class: "rt-filter", "data-col": id, maxlength: "100", "aria-label": `Filter ${label.full}`,
        placeholder: isNumericColumn(id) ? ">0.5, 1..2" : "filter",
      });
      input.value = state.filters[id] || "";
      markFilter(input);
      let timer = null;
      input.addEventListener("input", () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          state.filters[id] = input.value;
          markFilter(input);
          changed({ header: false });
        }, 150);
      });
      filters.appendChild(el("td", {}, input));
    }
    thead.append(head, filters);
  }

  function markFilter(input) {
    const f = compileFilter(input.value);
    const bad = Boolean(f && f.error);
    input.classList.toggle("invalid", bad);
    input.title = bad ? f.error : "Numbers: >0.5, <=1e-5, 0.1..0.3, =3. Text: any part of the value.";
  }

  function sortBy(id) {
    if (state.sort === id) state.descending = !state.descending;
    else {
      state.sort = id;
      const col = parseColumn(id);
      // best first for a metric; newest first for the creation time; A to Z otherwise
      state.descending = col.kind === "metric" ? directionOf(col) === "max" : id === "created" || id === "run";
    }
    changed();
  }

  function renderRow(run) {
    const check = el("input", { type: "checkbox", class: "rt-select", value: String(run.id), "aria-label": `Select run #${run.id}` });
    check.checked = selected.has(run.id);
    check.addEventListener("change", () => {
      if (check.checked) selected.add(run.id); else selected.delete(run.id);
      tr.classList.toggle("selected", check.checked);
      renderSelection();
    });
    const tr = el("tr", { "data-run-id": String(run.id), class: selected.has(run.id) ? "selected" : "" }, el("td", { class: "rt-check" }, check));
    for (const id of state.columns) {
      const c = cell(run, id);
      const td = el("td", { class: isNumericColumn(id) ? "num" : "" });
      if (c.title) td.title = c.title;
      if (id === "run") td.appendChild(el("a", { href: page.run_url.replace("/0/", `/${run.id}/`) }, c.text));
      else if (id === "status") td.appendChild(el("span", { class: `badge status-${run.status}` }, c.text));
      else if (id === "source" && run.source !== "native") td.appendChild(el("span", { class: "badge source-outside" }, c.text));
      else if (c.value === null && c.text === "") td.appendChild(el("span", { class: "muted" }, "—"));
      else td.textContent = c.text;
      if (id.startsWith("config:")) td.classList.add("mono");
      tr.appendChild(td);
    }
    return tr;
  }

  function groupSummary(runs) {
    if (!state.sort) return "";
    const values = runs.map((r) => cell(r, state.sort).value).filter((v) => typeof v === "number");
    if (!values.length) return "";
    const best = state.descending ? Math.max(...values) : Math.min(...values);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const label = columnLabel(state.sort);
    return ` · ${label.full}: best ${formatNumber(best)}, mean ${formatNumber(mean)}`;
  }

  function renderBody() {
    const body = tableEl.tBodies[0];
    const runs = visibleRuns();
    const rows = document.createDocumentFragment();
    const span = state.columns.length + 1;
    if (state.group_by) {
      // groups in the order of their first (best, when sorted) row; rows keep the sort within a group
      const groups = new Map();
      for (const run of runs) {
        const c = cell(run, state.group_by);
        const key = c.value === null ? "\0missing" : JSON.stringify(c.value);
        if (!groups.has(key)) groups.set(key, { text: c.value === null ? (c.text || "(not set)") : c.text, value: c.value, runs: [] });
        groups.get(key).runs.push(run);
      }
      const ordered = Array.from(groups.entries());
      if (!state.sort) ordered.sort((a, b) => compareValues(a[1].value, b[1].value, false));
      const label = columnLabel(state.group_by).full;
      for (const [key, group] of ordered) {
        const closed = collapsed.has(key);
        const toggle = el("button", { type: "button", class: "rt-group-toggle", "aria-expanded": String(!closed) }, closed ? "▸" : "▾");
        const head = el("tr", { class: "rt-group", "data-group": group.text },
          el("td", { colspan: String(span) }, el("span", { class: "rt-group-head" }, toggle, " ",
            el("span", { class: "rt-group-label" }, `${label} = `), el("b", { class: "rt-group-value" }, group.text),
            el("span", { class: "muted" }, ` · ${group.runs.length} run${group.runs.length === 1 ? "" : "s"}${groupSummary(group.runs)}`))));
        toggle.addEventListener("click", () => { if (closed) collapsed.delete(key); else collapsed.add(key); renderBody(); });
        rows.appendChild(head);
        if (!closed) for (const run of group.runs) rows.appendChild(renderRow(run));
      }
    } else {
      for (const run of runs) rows.appendChild(renderRow(run));
    }
    body.replaceChildren(rows);
    const shown = runs.length;
    let text = `${table.runs.length} run${table.runs.length === 1 ? "" : "s"}`;
    if (shown !== table.runs.length) text += ` · ${shown} match the filters`;
    if (table.truncated) text += ` · the project has ${table.total}: the table holds the newest ${table.limit}`;
    const summary = $("rt-summary");
    summary.replaceChildren(text + ".");
    for (const [id, raw] of Object.entries(state.filters)) {
      const f = compileFilter(raw);
      if (f && f.error) summary.append(" ", el("span", { class: "rt-filter-error" }, `Filter on ${columnLabel(id).full} ignored: ${f.error}.`));
    }
    const all = $("rt-select-all");
    if (all) all.checked = shown > 0 && runs.every((r) => selected.has(r.id));
    renderSelection();
    tableEl.dataset.rows = String(shown);
    tableEl.dataset.ready = "1";
  }

  function renderSelection() {
    const button = $("rt-compare");
    const n = selected.size;
    button.textContent = n ? `Compare selected (${n})` : "Compare selected";
    button.disabled = n < 1 || n > page.max_compared;
    button.title = n > page.max_compared ? `The compare page shows at most ${page.max_compared} runs.` : "Open the selected runs on the compare page.";
  }

  // --- the column chooser ----------------------------------------------------------------------------

  function toggleColumn(id, on) {
    const i = state.columns.indexOf(id);
    if (on && i < 0) {
      if (state.columns.length >= page.max_columns) { say(`A table shows at most ${page.max_columns} columns.`, true); return; }
      state.columns.push(id);
    }
    if (!on && i >= 0) {
      state.columns.splice(i, 1);
      delete state.filters[id];
      if (state.sort === id) state.sort = null;
    }
    changed();
  }

  function check(id, text, extra) {
    const box = el("input", { type: "checkbox", "data-col": id });
    box.addEventListener("change", () => toggleColumn(id, box.checked));
    return el("label", { class: "check" }, box, " ", text, extra || null);
  }

  function buildChooser() {
    const fields = $("rt-choose-fields");
    fields.replaceChildren(...Object.keys(FIELDS).map((name) => check(name, FIELDS[name].label)));
    buildConfigChoices();
    buildMetricChoices();
    const group = $("rt-group");
    while (group.options.length > 1) group.remove(1);
    for (const name of GROUPABLE_FIELDS) group.appendChild(el("option", { value: name }, FIELDS[name].label));
    const differing = new Set(table.config_differing);
    const paths = table.config_paths.slice().sort((a, b) => (differing.has(b) - differing.has(a)));
    for (const path of paths) group.appendChild(el("option", { value: `config:${path}` }, differing.has(path) ? `${path} (differs)` : path));
  }

  function buildConfigChoices() {
    const onlyDiffering = $("rt-config-differing").checked;
    const needle = $("rt-config-search").value.trim().toLowerCase();
    const differing = new Set(table.config_differing);
    const chosen = new Set(state.columns);
    const list = table.config_paths.filter((p) =>
      (!onlyDiffering || differing.has(p) || chosen.has(`config:${p}`)) && (!needle || p.toLowerCase().includes(needle)));
    const box = $("rt-choose-config");
    box.replaceChildren(...list.slice(0, 400).map((p) => check(`config:${p}`, p, differing.has(p) ? el("span", { class: "rt-tag" }, "differs") : null)));
    if (!list.length) box.appendChild(el("p", { class: "muted small" }, onlyDiffering ? "Every run has the same config here; untick “only fields that differ” to see all fields." : "No config path matches."));
    renderChooserChecks();
  }

  function buildMetricChoices() {
    const needle = $("rt-metric-search").value.trim().toLowerCase();
    const box = $("rt-choose-metrics");
    const keys = table.metric_keys.filter((k) => !needle || k.toLowerCase().includes(needle));
    box.replaceChildren();
    for (const key of keys.slice(0, 400)) {
      const direction = el("select", { class: "rt-direction", "data-key": key, "aria-label": `Which end of ${key} is best` },
        el("option", { value: "" }, "best: auto"), el("option", { value: "max" }, "best: highest"), el("option", { value: "min" }, "best: lowest"));
      direction.addEventListener("change", () => setDirection(key, direction.value));
      const stats = el("span", { class: "rt-stats" });
      for (const stat of Object.keys(STATS)) {
        const boxEl = el("input", { type: "checkbox", "data-key": key, "data-stat": stat });
        boxEl.addEventListener("change", () => toggleColumn(metricColumn(key, stat, direction.value), boxEl.checked));
        stats.appendChild(el("label", { class: "check", title: STATS[stat].help }, boxEl, " ", STATS[stat].label));
      }
      box.appendChild(el("div", { class: "rt-metric-choice" }, el("span", { class: "mono rt-key" }, key), stats, direction));
    }
    if (!keys.length) box.appendChild(el("p", { class: "muted small" }, table.metric_keys.length ? "No metric key matches." : "These runs have reported no metrics yet."));
    renderChooserChecks();
  }

  /* A key's direction rewrites its columns' ids (and the sort and filters that name them). */
  function setDirection(key, direction) {
    const rename = (id) => { const c = parseColumn(id); return c.kind === "metric" && c.key === key ? metricColumn(key, c.stat, direction) : id; };
    state.columns = state.columns.map(rename);
    if (state.sort) state.sort = rename(state.sort);
    const filters = {};
    for (const [id, raw] of Object.entries(state.filters)) filters[rename(id)] = raw;
    state.filters = filters;
    changed();
  }

  function renderChooserChecks() {
    if (!state) return;
    const chosen = new Set(state.columns);
    for (const box of document.querySelectorAll("#rt-chooser input[data-col]")) box.checked = chosen.has(box.dataset.col);
    const byKey = {};
    for (const id of state.columns) {
      const c = parseColumn(id);
      if (c.kind === "metric") { (byKey[c.key] = byKey[c.key] || { stats: new Set(), direction: "" }).stats.add(c.stat); if (c.direction) byKey[c.key].direction = c.direction; }
    }
    for (const box of document.querySelectorAll("#rt-choose-metrics input[data-stat]")) {
      box.checked = Boolean(byKey[box.dataset.key] && byKey[box.dataset.key].stats.has(box.dataset.stat));
    }
    for (const select of document.querySelectorAll("#rt-choose-metrics select.rt-direction")) {
      select.value = (byKey[select.dataset.key] || {}).direction || "";
    }
    $("rt-group").value = state.group_by || "";
    for (const box of document.querySelectorAll("#rt-status-filter input")) box.checked = state.status.includes(box.value);
  }

  function buildStatusFilter() {
    const holder = $("rt-status-filter");
    for (const s of STATUSES) {
      const box = el("input", { type: "checkbox", value: s });
      box.addEventListener("change", () => {
        state.status = STATUSES.filter((x) => (x === s ? box.checked : state.status.includes(x)));
        changed({ header: false });
      });
      holder.appendChild(el("label", { class: "check small" }, box, " ", el("span", { class: `badge status-${s}` }, s.replace("_", " "))));
    }
    holder.appendChild(el("span", { class: "muted small" }, "(none ticked: all)"));
  }

  // --- start -----------------------------------------------------------------------------------------

  async function start() {
    const params = new URLSearchParams(location.search);
    await loadViews();
    const wantedView = Number(params.get("view"));
    currentView = views.find((v) => v.id === wantedView) || null;
    if (currentView && currentView.can_change && $("rt-view-name")) $("rt-view-name").value = currentView.name;
    if (params.get("view") && !currentView) say("That saved view no longer exists; showing the table as the link describes it.", true);
    let initial = stateFromAddress(params) || (currentView ? normalise(currentView.spec) : null);
    if (initial && !initial.columns.length) initial = null; // nothing the page can show: the defaults instead
    if (!(await fetchTable(initial ? metricKeysOf(initial) : [DEFAULT_KEY]))) return;
    if (!table.runs.length) {
      $("rt-summary").hidden = true;
      $("rt-empty").hidden = false;
      $("rt-toolbar").hidden = true;
      tableEl.hidden = true;
      tableEl.dataset.ready = "1";
      return;
    }
    state = initial || defaultState();
    buildStatusFilter();
    buildChooser();
    await changed();
  }

  $("rt-view").addEventListener("change", pickView);
  const form = $("rt-save-form");
  if (form) form.addEventListener("submit", saveView);
  $("rt-delete").addEventListener("click", deleteView);
  $("rt-group").addEventListener("change", () => { state.group_by = $("rt-group").value || null; collapsed.clear(); changed({ header: false }); });
  $("rt-columns-toggle").addEventListener("click", () => {
    const chooser = $("rt-chooser");
    chooser.hidden = !chooser.hidden;
    $("rt-columns-toggle").setAttribute("aria-expanded", String(!chooser.hidden));
  });
  $("rt-config-search").addEventListener("input", buildConfigChoices);
  $("rt-config-differing").addEventListener("change", buildConfigChoices);
  $("rt-metric-search").addEventListener("input", buildMetricChoices);
  $("rt-compare").addEventListener("click", () => {
    const ids = table.runs.map((r) => r.id).filter((id) => selected.has(id));
    location.href = `${page.compare_url}?runs=${ids.join(",")}`;
  });
  start();
})();
