"""Check *every* row of a data file and list the bad ones by number, instead of stopping at the first.

``load_file_samples`` (files.py) stops at the first problem, which suits a training config. Importing a
benchmark file (GSM8K / MATH500-style JSONL, CSV, Parquet) needs the whole list at once, so a user fixes
one file in one pass: ``check_data_file`` returns a ``RowReport`` with one ``RowProblem`` per bad row
(1-based row number, where it sits in the file, what is wrong and how to fix it). It reuses files.py's
format detection, field rules and messages; only the iteration differs (it collects instead of raising).
File-level problems (no such file, unknown extension, a CSV header without names) still raise DataError.

The two halves are public for a caller that maps columns after seeing them (the web app's upload preview):
``read_data_file`` parses once and returns the columns and rows, ``check_rows`` applies a field mapping to them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.data.files import (
    _check_is_file,
    _field_text,
    _read_rows,
    _Scan,
    csv_is_table,
    read_csv_records,
    resolve_format,
)
from trainer.data.limits import (
    DEFAULT_LIMITS,
    FileLimits,
    check_columns,
    check_file_size,
    check_json_depth,
    check_parquet,
    check_row_count,
    numbered_lines,
)
from trainer.errors import DataError

_SHOWN_PROBLEMS = 20  # in a summary message
_KEPT_PROBLEMS = 100  # in the report (problem_count counts them all), so an error never grows with the file


@dataclass(frozen=True)
class RowProblem:
    row: int  # 1-based data row (a JSONL line that is not valid JSON still counts as a row)
    where: str  # "line 7", "row 3 (line 5)", "record 2"
    message: str
    field: str | None = None  # the column at fault; None when the row itself does not parse


@dataclass(frozen=True)
class ParsedFile:
    """A data file read once, before any field mapping: what ``check_rows`` checks and a preview shows."""

    path: str
    format: str
    columns: list[str]  # first-seen order over every parsable row
    rows: list[tuple[int, dict[str, Any]]]  # (1-based row number, record) of every parsable row
    where: list[str]  # per row number, where it sits in the file
    problems: list[RowProblem]  # rows that did not parse (not JSON, not an object, wrong width)
    quotable: bool  # messages may quote column names and cells (files.py's module docstring)


@dataclass
class RowReport:
    path: str
    rows: int
    problems: list[RowProblem] = field(default_factory=list)  # the first _KEPT_PROBLEMS, by row
    problem_count: int = 0  # all of them

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def bad_rows(self) -> list[int]:
        return [p.row for p in self.problems]

    def summary(self) -> str:
        """One message for the user: how many rows are bad, and the first few of them."""
        if self.ok:
            return f"{self.path}: all {self.rows} rows are valid"
        lines = [f"{self.path}: {self.problem_count} of {self.rows} rows are invalid (fix them and import again):"]
        lines += [f"  row {p.row} ({p.where}): {p.message}" for p in self.problems[:_SHOWN_PROBLEMS]]
        if self.problem_count > _SHOWN_PROBLEMS:
            lines.append(f"  ... and {self.problem_count - _SHOWN_PROBLEMS} more")
        return "\n".join(lines)


def check_data_file(
    path: str | Path,
    *,
    format: str = "auto",
    prompt_field: str = "prompt",
    answer_field: str | None = "answer",
    id_field: str | None = None,
    limits: FileLimits = DEFAULT_LIMITS,
) -> RowReport:
    """Validate every row of a local data file with the rules of ``load_file_samples``."""
    parsed = read_data_file(path, format=format, limits=limits)
    return check_rows(parsed, prompt_field=prompt_field, answer_field=answer_field, id_field=id_field)


def read_data_file(path: str | Path, *, format: str = "auto", limits: FileLimits = DEFAULT_LIMITS) -> ParsedFile:
    """Parse a local data file once: its columns, its parsable rows and the rows that do not parse."""
    p = Path(path)
    _check_is_file(p)
    fmt = resolve_format(p, format)
    try:
        check_file_size(p, fmt, limits)
        rows, where, problems = _parse_rows(p, fmt, limits)
        quotable = fmt != "csv" or csv_is_table(*read_csv_records(p))  # files.py: never quote a non-table
    except UnicodeDecodeError as err:
        raise DataError(f"{p} is not UTF-8 text ({err.reason}): save it as UTF-8") from None
    columns: dict[str, None] = {}
    for _, row in rows:
        columns.update(dict.fromkeys(row))
    return ParsedFile(str(p), fmt, list(columns), rows, where, problems, quotable)


def check_rows(
    parsed: ParsedFile, *, prompt_field: str = "prompt", answer_field: str | None = "answer", id_field: str | None = None
) -> RowReport:
    """Every row of ``parsed`` against a field mapping; DataError when the file has no rows at all."""
    if not parsed.where:
        raise DataError(f"{parsed.path} has no rows: add at least one row with a {prompt_field!r} field")
    report = RowReport(path=parsed.path, rows=len(parsed.where), problems=list(parsed.problems))
    columns, quotable, where = parsed.columns, parsed.quotable, parsed.where
    seen_ids: dict[str, str] = {}
    checks = [(prompt_field, "data.prompt_field", "the problem text", "")]
    if answer_field is not None:
        checks.append((answer_field, "data.answer_field", "the reference answer",
                       "; set data.answer_field to null for label-free data"))
    for index, record in parsed.rows:
        at = where[index - 1]
        row = dict.fromkeys(columns) | record  # a key absent from this row reads as null, as datasets fills it
        for name, setting, holds, hint in checks:
            try:
                _field_text(row, name, at, columns, setting, holds, hint, quotable=quotable)
            except DataError as err:
                report.problems.append(RowProblem(index, at, str(err).removeprefix(f"{at}: "), name))
        if id_field is not None:
            _check_id(report, row, index, at, id_field, columns, seen_ids, quotable)
    report.problems.sort(key=lambda problem: problem.row)
    report.problem_count = len(report.problems)
    del report.problems[_KEPT_PROBLEMS:]
    return report


def _check_id(
    report: RowReport, row: dict[str, Any], index: int, at: str, id_field: str, columns: list[str],
    seen: dict[str, str], quotable: bool,
) -> None:
    try:
        sample_id = _field_text(row, id_field, at, columns, "data.id_field", "a unique id", quotable=quotable)
    except DataError as err:
        report.problems.append(RowProblem(index, at, str(err).removeprefix(f"{at}: "), id_field))
        return
    if sample_id in seen:
        report.problems.append(RowProblem(
            index, at, f"{f'id {sample_id!r}' if quotable else 'its id'} is already used at {seen[sample_id]}; "
            f"the {id_field!r} column must "
            "hold a unique id per row", id_field,
        ))
    else:
        seen[sample_id] = at


def _parse_rows(
    p: Path, fmt: str, limits: FileLimits = DEFAULT_LIMITS
) -> tuple[list[tuple[int, dict[str, Any]]], list[str], list[RowProblem]]:
    """(row number, record) of every parsable row, where each row sits, and the rows that did not parse."""
    if fmt == "jsonl":
        return _parse_json_lines(p, limits)
    if fmt == "json":
        return _parse_json(p, limits)
    if fmt == "csv":
        return _parse_csv(p, limits)
    check_parquet(p, limits)
    records = _read_rows(p, fmt, _Scan(columns=None, where=[]))  # Parquet: typed rows, no parse errors
    where = [f"row {i + 1}" for i in range(len(records))]
    return list(enumerate(records, start=1)), where, []


def _parse_json_lines(
    p: Path, limits: FileLimits = DEFAULT_LIMITS
) -> tuple[list[tuple[int, dict[str, Any]]], list[str], list[RowProblem]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    where: list[str] = []
    problems: list[RowProblem] = []
    columns: dict[str, None] = {}
    with p.open(encoding="utf-8-sig") as f:
        for lineno, line in numbered_lines(f, p, limits):
            if not line.strip():
                continue
            where.append(f"line {lineno}")
            index = len(where)
            check_json_depth(p, where[-1], line, limits)
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                problems.append(RowProblem(index, where[-1], f"not valid JSON ({err.msg} at column {err.colno}); "
                                           "JSON Lines files hold one JSON object per line"))
                continue
            if not isinstance(record, dict):
                problems.append(RowProblem(index, where[-1], f"expected a JSON object {{...}}, got a "
                                           f"{type(record).__name__}"))
                continue
            if not record.keys() <= columns.keys():  # only a new key can pass the column limits
                columns.update(dict.fromkeys(record))
                check_columns(p, where[-1], columns, limits)
            rows.append((index, record))
    return rows, where, problems


def _parse_json(
    p: Path, limits: FileLimits = DEFAULT_LIMITS
) -> tuple[list[tuple[int, dict[str, Any]]], list[str], list[RowProblem]]:
    text = p.read_text(encoding="utf-8-sig")
    check_json_depth(p, "the document", text, limits)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":  # several top-level values: a JSON Lines file named .json
            return _parse_json_lines(p, limits)
        raise DataError(f"{p}, line {err.lineno}: not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(data, list):
        raise DataError(f"{p}: expected a JSON array of objects [{{...}}, ...] or one object per line (JSON Lines)")
    check_row_count(p, len(data), limits)
    rows, problems = [], []
    columns: dict[str, None] = {}
    where = [f"record {i + 1}" for i in range(len(data))]
    for i, record in enumerate(data, start=1):
        if isinstance(record, dict):
            if not record.keys() <= columns.keys():  # only a new key can pass the column limits
                columns.update(dict.fromkeys(record))
                check_columns(p, where[i - 1], columns, limits)
            rows.append((i, record))
        else:
            problems.append(RowProblem(i, where[i - 1], f"expected a JSON object {{...}}, got a {type(record).__name__}"))
    return rows, where, problems


def _parse_csv(
    p: Path, limits: FileLimits = DEFAULT_LIMITS
) -> tuple[list[tuple[int, dict[str, Any]]], list[str], list[RowProblem]]:
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[RowProblem] = []
    header, records = read_csv_records(p, limits)
    for index, (where, record) in enumerate(records, start=1):
        if len(record) != len(header):
            problems.append(RowProblem(index, where, f"has {len(record)} cells but the header "
                                       f"names {len(header)} columns; quote cells that hold commas"))
        else:
            rows.append((index, dict(zip(header, record, strict=True))))
    return rows, [where for where, _ in records], problems
