"""What the upload page shows of a data file before it is stored: its columns, its first rows, a guessed
mapping and every bad row, shaped from ``trainer.data.row_check`` (the same parse and field rules the
trainer's loader applies), plus the one error a refused upload answers with.

Pure functions on an already parsed file: no database, no request. Sizes are bounded here so a preview
of a wide or long file stays small: ``PREVIEW_ROWS`` rows, cells cut at ``PREVIEW_CELL_CHARS``
characters, and at most ``SHOWN_PROBLEMS`` bad rows listed next to the total count.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from webapp.core.errors import InvalidInput

if TYPE_CHECKING:
    from trainer.data.row_check import ParsedFile, RowProblem, RowReport

PREVIEW_ROWS = 20
PREVIEW_CELL_CHARS = 160
SHOWN_PROBLEMS = 50
# Column names that usually hold the problem text / the reference answer (GSM8K, MATH-500, Alpaca, ...),
# compared lower-cased with spaces and dashes read as underscores, in this order of preference.
PROMPT_NAMES = ("prompt", "question", "problem", "input", "query", "instruction")
ANSWER_NAMES = (
    "answer", "final_answer", "answers", "solution", "label", "target", "ground_truth", "groundtruth", "gold",
    "gold_answer", "expected", "expected_answer", "expected_output", "reference", "reference_answer",
    "correct_answer", "output",
)  # fmt: skip
# A column is also a candidate when one word of its name is one of these (``Final Answer``, ``answer_text``,
# ``goldLabel``): offered, and picked only when no name above matched.
ANSWER_WORDS = frozenset({"answer", "answers", "solution", "label", "target", "gold", "truth", "expected"})
# How the answer column of a preview was decided: "chosen" by the user (a column, or none: label-free),
# "guessed" from the names above (the page asks the user to confirm it), or "none_found": no column looks
# like an answer, so the preview is label-free and the page says so.
AnswerGuess = Literal["chosen", "guessed", "none_found"]


@dataclass(frozen=True)
class Mapping:
    prompt_field: str
    answer_field: str | None  # None: label-free
    answer_guess: AnswerGuess = "chosen"
    answer_candidates: tuple[str, ...] = ()  # columns that look like answers, the likeliest first


@dataclass(frozen=True)
class DatasetPreview:
    filename: str
    format: str
    rows: int  # every data row, parsable or not
    columns: list[str]
    head: list[dict[str, Any]]  # {"row", "where", "cells": one text (or None) per column}
    prompt_field: str
    answer_field: str | None
    answer_guess: AnswerGuess
    answer_candidates: list[str]
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


def _normalised(column: str) -> str:
    return re.sub(r"[\s\-]+", "_", column.strip().lower())


def _words(column: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", column)  # goldLabel -> gold Label
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w}


def answer_candidates(columns: list[str], prompt: str) -> tuple[str, ...]:
    """Columns whose name says they hold a reference answer, the likeliest first: the usual names in
    ``ANSWER_NAMES`` order, then any column with an answer word in its name, in file order.

    >>> answer_candidates(["id", "question", "Final Answer", "answer_text"], "question")
    ('Final Answer', 'answer_text')
    """
    others = [c for c in columns if c != prompt]
    by_name = {_normalised(c): c for c in reversed(others)}  # the first of equal names wins
    named = [by_name[n] for n in ANSWER_NAMES if n in by_name]
    worded = [c for c in others if c not in named and _words(c) & ANSWER_WORDS]
    return tuple(dict.fromkeys(named + worded))


def guess_mapping(
    columns: list[str], prompt_field: str | None, answer_field: str | None, answer_given: bool
) -> Mapping:
    """The columns the user chose, or, for those not chosen, the usual names (else the first column for the
    prompt; the likeliest answer candidate, else label-free), so the first preview of a file already shows
    its problems. A guessed answer column is only a proposal: the page asks the user to confirm it."""
    by_name = {_normalised(c): c for c in reversed(columns)}
    prompt = prompt_field or next(
        (by_name[n] for n in PROMPT_NAMES if n in by_name), columns[0] if columns else ""
    )
    candidates = answer_candidates(columns, prompt)
    if answer_given:
        return Mapping(prompt, answer_field or None, "chosen", candidates)
    if not candidates:
        return Mapping(prompt, None, "none_found", ())
    return Mapping(prompt, candidates[0], "guessed", candidates)


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
        {"row": number, "where": where, "cells": [cell_text(record.get(c)) for c in parsed.columns]}
        for number, where, record in itertools.islice(parsed.rows(), PREVIEW_ROWS)
    ]


def cell_text(value: Any) -> str | None:
    """A cell as short text: strings as written, other values as JSON (Parquet dates and bytes as their str);
    cut at PREVIEW_CELL_CHARS and ended with "…" when cut, so a preview never echoes a long cell."""
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
