"""What the upload page shows of a data file before it is stored: its columns, its first rows, a guessed
mapping and every bad row, shaped from ``trainer.data.row_check`` (the same parse and field rules the
trainer's loader applies), plus the one error a refused upload answers with.

Pure functions on an already parsed file: no database, no request. Sizes are bounded here so a preview
of a wide or long file stays small: ``PREVIEW_ROWS`` rows, cells cut at ``PREVIEW_CELL_CHARS``
characters, and at most ``SHOWN_PROBLEMS`` bad rows listed next to the total count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webapp.core.errors import InvalidInput

if TYPE_CHECKING:
    from trainer.data.row_check import ParsedFile, RowProblem, RowReport

PREVIEW_ROWS = 20
PREVIEW_CELL_CHARS = 160
SHOWN_PROBLEMS = 50
# Column names that usually hold the problem text / the reference answer (GSM8K, MATH-500, Alpaca, ...).
PROMPT_NAMES = ("prompt", "question", "problem", "input", "query", "instruction")
ANSWER_NAMES = ("answer", "solution", "target", "output", "label", "ground_truth", "expected_answer")


@dataclass(frozen=True)
class Mapping:
    prompt_field: str
    answer_field: str | None  # None: label-free


@dataclass(frozen=True)
class DatasetPreview:
    filename: str
    format: str
    rows: int  # every data row, parsable or not
    columns: list[str]
    head: list[dict[str, Any]]  # {"row", "where", "cells": one text (or None) per column}
    prompt_field: str
    answer_field: str | None
    problems: list[dict[str, Any]]  # {"row", "where", "column", "message"}, the first SHOWN_PROBLEMS
    problem_count: int
    name: str  # the name the dataset gets unless the user types another
    name_taken: bool


class RowsInvalid(InvalidInput):
    """Some rows break the field rules: the first rows with their problems ride in ``extra.rows``."""

    def __init__(self, report: RowReport, filename: str, staged: str) -> None:
        rows = problem_rows(report.problems, filename, staged)
        first, count = rows[0], report.problem_count
        # The first problem reads as the trainer's loader words it ("data.jsonl, line 3: ..."), then the count.
        message = f"{filename}, {first['where']}: {first['message']}"
        if count > 1:
            message += (
                f" (and {count - 1} more of {report.rows} rows are invalid: fix them all and upload again)"
            )
        super().__init__(message, {"file": [message]})
        self.extra.update({"rows": rows, "problem_count": count, "row_count": report.rows})


def guess_mapping(
    columns: list[str], prompt_field: str | None, answer_field: str | None, answer_given: bool
) -> Mapping:
    """The columns the user chose, or, for those not chosen, the usual names (else the first column for the
    prompt, and label-free for the answer), so the first preview of a file already shows its problems."""
    lowered = {c.lower(): c for c in columns}
    prompt = prompt_field or next(
        (lowered[n] for n in PROMPT_NAMES if n in lowered), columns[0] if columns else ""
    )
    if answer_given:
        return Mapping(prompt, answer_field or None)
    answer = next((lowered[n] for n in ANSWER_NAMES if n in lowered and lowered[n] != prompt), None)
    return Mapping(prompt, answer)


def check_mapping(mapping: Mapping, parsed: ParsedFile) -> None:
    """InvalidInput keyed by the field when a chosen column is not in the file (or both are the same).
    Column names are listed only when the file reads as a table, as the trainer's own messages do."""
    columns = parsed.columns
    listed = (
        "its columns are: " + ", ".join(columns[:20]) + (" ..." if len(columns) > 20 else "")
        if parsed.quotable else f"it has {len(columns)} column(s)"
    )  # fmt: skip
    for field, name in (("prompt_field", mapping.prompt_field), ("answer_field", mapping.answer_field)):
        if name is not None and name not in columns:
            message = f"The file has no column {name!r}; {listed}."
            raise InvalidInput(message, {field: [message]})
    if mapping.answer_field == mapping.prompt_field:
        message = "The prompt and the answer must be different columns (pick none for label-free data)."
        raise InvalidInput(message, {"answer_field": [message]})


def head_rows(parsed: ParsedFile) -> list[dict[str, Any]]:
    """The first parsable rows, one cell per column in column order (None where a row lacks the key)."""
    return [
        {
            "row": number,
            "where": parsed.where[number - 1],
            "cells": [cell_text(record.get(c)) for c in parsed.columns],
        }
        for number, record in parsed.rows[:PREVIEW_ROWS]
    ]


def cell_text(value: Any) -> str | None:
    """A cell as short text: strings as written, other values as JSON (Parquet dates and bytes as their str);
    cut at PREVIEW_CELL_CHARS."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= PREVIEW_CELL_CHARS else text[: PREVIEW_CELL_CHARS - 1] + "…"


def problem_rows(problems: list[RowProblem], filename: str, staged: str) -> list[dict[str, Any]]:
    """The first SHOWN_PROBLEMS problems as plain dicts; the staging path never reaches the user."""
    return [
        {"row": p.row, "where": p.where, "column": p.field, "message": p.message.replace(staged, filename)}
        for p in problems[:SHOWN_PROBLEMS]
    ]
