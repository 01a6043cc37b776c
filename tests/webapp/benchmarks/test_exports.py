"""Exports of the results table: CSV and JSON keep raw values; LaTeX escapes every user string."""

from __future__ import annotations

import csv
import io
import json

from webapp.benchmarks.exports import latex_escape, to_csv, to_json, to_latex
from webapp.benchmarks.selectors_tables import Cell, ResultsTable


def table() -> ResultsTable:
    def cell(v: float, best: bool) -> Cell:
        return Cell(value=v, ci=[v - 0.05, v + 0.05], eval_run_id=1, best=best)

    return ResultsTable(
        columns=[
            {"benchmark": "gsm_8k & co", "metric": "pass@1 (n=8)"},
            {"benchmark": "gsm_8k & co", "metric": "response_len_mean"},
        ],
        rows=[
            {
                "label": "base_model 50% $x$",
                "kind": "base",
                "step": None,
                "cells": {
                    "gsm_8k & co\tpass@1 (n=8)": cell(0.25, False),
                    "gsm_8k & co\tresponse_len_mean": cell(12.0, False),
                },
            },
            {
                "label": "run #3 step {10}",
                "kind": "checkpoint",
                "step": 10,
                "cells": {"gsm_8k & co\tpass@1 (n=8)": cell(0.625, True)},
            },
        ],
    )


def test_latex_escape_covers_every_special_character() -> None:
    assert latex_escape(r"a_b & 50% $x$ #1 {y} ~z ^w \v") == (
        r"a\_b \& 50\% \$x\$ \#1 \{y\} \textasciitilde{}z \textasciicircum{}w \textbackslash{}v"
    )


def test_the_latex_table_escapes_labels_and_bolds_the_best() -> None:
    tex = to_latex(table(), caption="lab_1")
    assert r"base\_model 50\% \$x\$ & 25.0 & 12.0 \\" in tex
    assert r"run \#3 step \{10\} & \textbf{62.5} & -- \\" in tex
    assert r"\multicolumn{2}{c}{gsm\_8k \& co}" in tex and r"\caption{lab\_1}" in tex
    assert tex.count(r"\toprule") == 1 and r"\begin{tabular}{lcc}" in tex
    body = tex.split(r"\midrule")[1]
    assert "_" not in body.replace(r"\_", "") and "%" not in body.replace(r"\%", "")


def test_csv_has_one_row_per_model_with_values_and_intervals() -> None:
    rows = list(csv.reader(io.StringIO(to_csv(table()))))
    assert rows[0][:4] == ["model", "kind", "step", "gsm_8k & co pass@1 (n=8)"]
    assert rows[1][0] == "base_model 50% $x$" and float(rows[1][3]) == 0.25 and float(rows[1][4]) == 0.2
    assert rows[2][2] == "10" and rows[2][6] == ""


def test_json_is_the_table_itself() -> None:
    assert json.loads(to_json(table()))["rows"][1]["cells"]["gsm_8k & co\tpass@1 (n=8)"]["best"] is True
