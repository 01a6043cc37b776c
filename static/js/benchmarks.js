/* Benchmark list page: the results table, and the new-benchmark form's source switch. */
"use strict";
(function () {
  const data = window.rlvr.pageData();
  window.rlvrBenchmarks.renderTable(document.getElementById("results-table"), data.table);
  const source = document.getElementById("bm-source");
  if (!source) return;
  function show() {
    document.querySelectorAll("fieldset[data-source]").forEach((f) => { f.hidden = f.dataset.source !== source.value; });
  }
  source.addEventListener("change", show);
  show();
})();
