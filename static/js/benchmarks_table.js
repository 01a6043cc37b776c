/* The paper-style results table (rows: models, columns: benchmark x metric), shared by the benchmark
 * pages. Best per column in bold; the 95% bootstrap interval on hover (title); a base model shared by
 * several experiments is one row naming them. Text via textContent only. */
"use strict";
window.rlvrBenchmarks = (function () {
  const el = window.rlvr.el;
  const HIGHER = ["avg@", "pass@", "maj@", "acc"];

  function higherIsBetter(metric) {
    const m = metric.toLowerCase();
    return HIGHER.some((p) => m.startsWith(p));
  }

  function fmt(value, metric) {
    if (value === null || value === undefined) return "—";
    return higherIsBetter(metric) ? (100 * value).toFixed(1) : Number(value).toFixed(1);
  }

  function renderTable(container, table) {
    container.textContent = "";
    if (!table || !table.rows.length) {
      container.appendChild(el("p", { class: "muted" }, "No finished evaluations yet."));
      return;
    }
    const groups = [];
    for (const c of table.columns) {
      if (groups.length && groups[groups.length - 1].name === c.benchmark) groups[groups.length - 1].span++;
      else groups.push({ name: c.benchmark, span: 1 });
    }
    const top = el("tr", {}, el("th", { class: "model", rowspan: "2" }, "Model"));
    for (const g of groups) top.appendChild(el("th", { colspan: String(g.span) }, g.name));
    const second = el("tr", {});
    for (const c of table.columns) second.appendChild(el("th", {}, c.metric + (higherIsBetter(c.metric) ? " (%)" : "")));
    const body = el("tbody", {});
    for (const row of table.rows) {
      // a base model several experiments start from is one row: say which experiments it stands for
      const shared = row.kind === "base" && row.experiments && row.experiments.length > 1
        ? el("div", { class: "muted small shared" }, "base of " + row.experiments.join(", ")) : null;
      const tr = el("tr", { "data-kind": row.kind }, el("td", { class: "model" }, row.label, shared));
      for (const c of table.columns) {
        const cell = row.cells[c.benchmark + "\t" + c.metric];
        const attrs = { "data-benchmark": c.benchmark, "data-metric": c.metric };
        if (cell && cell.best) attrs.class = "best";
        if (cell && cell.ci) attrs.title = "95% CI [" + fmt(cell.ci[0], c.metric) + ", " + fmt(cell.ci[1], c.metric) + "]";
        tr.appendChild(el("td", attrs, cell ? fmt(cell.value, c.metric) : "—"));
      }
      body.appendChild(tr);
    }
    container.appendChild(el("table", { class: "results", id: "results" }, el("thead", {}, top, second), body));
  }

  return { renderTable: renderTable, higherIsBetter: higherIsBetter, fmt: fmt };
})();
