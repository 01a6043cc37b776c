"""The results table as CSV, JSON or a LaTeX ``tabular`` (booktabs), ready to paste into a paper.

Cells are percentages with one decimal in LaTeX (as the seed papers print them) and raw fractions in CSV
and JSON. The best value per column is bold in LaTeX. Every piece of user text (model labels, benchmark
and metric names) is escaped: a label like ``run_1 & 50%`` must not break the document. CSV goes through
the one writer of every export (webapp/core/csv_export.py): a benchmark named ``@SUM(1+1)`` stays text.
"""

from __future__ import annotations

import json
from typing import Any

from webapp.benchmarks.selectors_tables import ResultsTable, higher_is_better
from webapp.core.csv_export import csv_text

LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}",
}  # fmt: skip


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in text)


def _key(column: dict[str, str]) -> str:
    return f"{column['benchmark']}\t{column['metric']}"


def to_csv(table: ResultsTable) -> str:
    header = ["model", "kind", "step"]
    for c in table["columns"]:
        header += [
            f"{c['benchmark']} {c['metric']}",
            f"{c['benchmark']} {c['metric']} ci_low",
            f"{c['benchmark']} {c['metric']} ci_high",
        ]
    lines: list[list[Any]] = []
    for row in table["rows"]:
        line: list[Any] = [row["label"], row["kind"], row["step"]]
        for c in table["columns"]:
            cell = row["cells"].get(_key(c))
            ci = cell["ci"] if cell and cell["ci"] else None
            line += [
                None if not cell else cell["value"],
                None if ci is None else ci[0],
                None if ci is None else ci[1],
            ]
        lines.append(line)
    return csv_text(header, lines)


def to_json(table: ResultsTable) -> str:
    return json.dumps(table, indent=2, ensure_ascii=False)


def _latex_number(value: float | None, metric: str) -> str:
    if value is None:
        return "--"
    return f"{100 * value:.1f}" if higher_is_better(metric) else f"{value:.1f}"


def to_latex(table: ResultsTable, caption: str = "") -> str:
    """A booktabs table: one header row of benchmarks (\\multicolumn over their metrics), one of metrics."""
    columns = table["columns"]
    groups: list[tuple[str, int]] = []
    for c in columns:
        if groups and groups[-1][0] == c["benchmark"]:
            groups[-1] = (c["benchmark"], groups[-1][1] + 1)
        else:
            groups.append((c["benchmark"], 1))
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    lines += [rf"\begin{{tabular}}{{l{'c' * len(columns)}}}", r"\toprule"]
    lines.append(
        " & ".join(["Model"] + [rf"\multicolumn{{{n}}}{{c}}{{{latex_escape(b)}}}" for b, n in groups])
        + r" \\"
    )
    lines.append(" & ".join([""] + [latex_escape(c["metric"]) for c in columns]) + r" \\")
    lines.append(r"\midrule")
    for row in table["rows"]:
        cells = [latex_escape(row["label"])]
        for c in columns:
            cell = row["cells"].get(_key(c))
            text = _latex_number(cell["value"] if cell else None, c["metric"])
            cells.append(rf"\textbf{{{text}}}" if cell and cell["best"] else text)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"
