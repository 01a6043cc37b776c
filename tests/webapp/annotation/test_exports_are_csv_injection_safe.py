"""CSV cells that a spreadsheet would evaluate start with a quote; everything else is unchanged."""

from __future__ import annotations

import csv
import io
import json

import pytest

from webapp.annotation.exports import jsonl_lines
from webapp.core.csv_export import csv_lines, csv_safe


@pytest.mark.parametrize(
    "text", ["=1+1", "+SUM(A1)", "-2+3", "@cmd", '=HYPERLINK("http://x")', "\t=1", "\r=1"]
)
def test_formula_like_text_gets_a_leading_quote(text: str) -> None:
    assert csv_safe(text) == "'" + text


@pytest.mark.parametrize(
    ("value", "cell"),
    [("plain", "plain"), ("a=b", "a=b"), (None, ""), (3, "3"), (-0.5, "-0.5"), (True, "true")],
)
def test_ordinary_values_are_unchanged(value: object, cell: str) -> None:
    assert csv_safe(value) == cell


def test_csv_lines_round_trip_through_a_csv_reader_with_newlines_and_commas() -> None:
    lines = list(csv_lines(["prompt", "completion"], [["1+1=", '=cmd|" /C calc"!A0\nline, two']]))
    assert len(lines) == 2  # streamed one record per chunk
    rows = list(csv.reader(io.StringIO("".join(lines))))
    assert rows == [["prompt", "completion"], ["1+1=", '\'=cmd|" /C calc"!A0\nline, two']]


def test_jsonl_lines_are_one_object_per_line_and_keep_text_verbatim() -> None:
    lines = list(jsonl_lines([{"completion": "=1+1\n<b>"}, {"completion": "x"}]))
    assert [json.loads(line)["completion"] for line in lines] == ["=1+1\n<b>", "x"]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
