"""Check *every* row of a data file and list the bad ones by number, instead of stopping at the first.

``load_file_samples`` (files.py) stops at the first problem, which suits a training config. Importing a
benchmark file (GSM8K / MATH500-style JSONL, CSV, Parquet) needs the whole list at once, so a user fixes
one file in one pass: ``check_data_file`` returns a ``RowReport`` with one ``RowProblem`` per bad row
(1-based row number, where it sits in the file, what is wrong and how to fix it). It reuses files.py's
format detection, field rules and messages; only the iteration differs (it collects instead of raising).
File-level problems (no such file, unknown extension, a CSV header without names) still raise DataError.

The two halves are public for a caller that maps columns after seeing them (the web app's upload preview):
``read_data_file`` reads the file once for its columns, row count and the rows that do not parse, and
``check_rows`` applies a field mapping while reading it again. Both stream it through the one bounded reader
(reader.py) and keep only counts and the first problems, so checking a file of a million rows holds one row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from trainer.data.files import _check_is_file, _field_text, resolve_format, short_text
from trainer.data.limits import DEFAULT_LIMITS, FileLimits
from trainer.data.reader import RowReader
from trainer.errors import DataError

_SHOWN_PROBLEMS = 20  # in a summary message
_KEPT_PROBLEMS = 100  # in the report (problem_count counts them all), so an error never grows with the file


@dataclass(frozen=True)
class RowProblem:
    row: int  # 1-based data row (a JSONL line that is not valid JSON still counts as a row)
    where: str  # "line 7", "row 3 (line 5)", "record 2"
    message: str
    field: str | None = None  # the column at fault; None when the row itself does not parse


class ParsedRow(NamedTuple):
    number: int  # 1-based data row
    where: str  # where it sits in the file
    record: dict[str, Any]


@dataclass(frozen=True)
class ParsedFile:
    """A data file read once, before any field mapping: what ``check_rows`` checks and a preview shows.
    Its rows are not held: ``rows()`` reads them again, one at a time."""

    path: str
    format: str
    columns: list[str]  # first-seen order over every parsable row
    row_count: int  # every data row, parsable or not
    problems: list[RowProblem]  # the first _KEPT_PROBLEMS rows that did not parse (not JSON, wrong width)
    problem_count: int  # all of them
    quotable: bool  # messages may quote column names and cells (files.py's module docstring)
    limits: FileLimits = DEFAULT_LIMITS

    def rows(self) -> Iterator[ParsedRow]:
        """Every parsable row, read again from the file (each key of ``columns`` present, null if absent)."""
        for row in RowReader(Path(self.path), self.format, self.limits):
            if row.record is not None:
                yield ParsedRow(row.number, row.where, dict.fromkeys(self.columns) | row.record)


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
        lines = [
            f"{self.path}: {self.problem_count} of {self.rows} rows are invalid (fix them and import again):"
        ]
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


def read_data_file(
    path: str | Path, *, format: str = "auto", limits: FileLimits = DEFAULT_LIMITS
) -> ParsedFile:
    """Read a local data file once: its columns, its row count and the rows that do not parse."""
    p = Path(path)
    _check_is_file(p)
    reader = RowReader(p, resolve_format(p, format), limits)
    problems: list[RowProblem] = []
    count = 0
    for row in reader:
        if row.record is None:
            count += 1
            if len(problems) < _KEPT_PROBLEMS:
                problems.append(RowProblem(row.number, row.where, row.problem or "does not parse"))
    return ParsedFile(
        str(p), reader.format, list(reader.columns), reader.rows, problems, count, reader.quotable, limits
    )


def check_rows(
    parsed: ParsedFile,
    *,
    prompt_field: str = "prompt",
    answer_field: str | None = "answer",
    id_field: str | None = None,
) -> RowReport:
    """Every row of ``parsed`` against a field mapping; DataError when the file has no rows at all."""
    if not parsed.row_count:
        raise DataError(f"{parsed.path} has no rows: add at least one row with a {prompt_field!r} field")
    columns, quotable = parsed.columns, parsed.quotable
    found: list[RowProblem] = []  # the first _KEPT_PROBLEMS field problems, in row order
    count = parsed.problem_count
    seen_ids: dict[str, str] = {}
    checks = [(prompt_field, "data.prompt_field", "the problem text", "")]
    if answer_field is not None:
        checks.append(
            (
                answer_field,
                "data.answer_field",
                "the reference answer",
                "; set data.answer_field to null for label-free data",
            )
        )
    for index, at, row in parsed.rows():
        problems: list[RowProblem] = []
        for name, setting, holds, hint in checks:
            try:
                _field_text(row, name, at, columns, setting, holds, hint, quotable=quotable)
            except DataError as err:
                problems.append(RowProblem(index, at, str(err).removeprefix(f"{at}: "), name))
        if id_field is not None:
            problems += _id_problems(row, index, at, id_field, columns, seen_ids, quotable)
        count += len(problems)
        found += problems[: max(0, _KEPT_PROBLEMS - len(found))]
    report = RowReport(path=parsed.path, rows=parsed.row_count, problem_count=count)
    report.problems = sorted(parsed.problems + found, key=lambda problem: problem.row)[:_KEPT_PROBLEMS]
    return report


def _id_problems(
    row: dict[str, Any],
    index: int,
    at: str,
    id_field: str,
    columns: list[str],
    seen: dict[str, str],
    quotable: bool,
) -> list[RowProblem]:
    try:
        sample_id = _field_text(row, id_field, at, columns, "data.id_field", "a unique id", quotable=quotable)
    except DataError as err:
        return [RowProblem(index, at, str(err).removeprefix(f"{at}: "), id_field)]
    if sample_id in seen:
        shown = f"id {short_text(sample_id)!r}" if quotable else "its id"
        return [
            RowProblem(
                index,
                at,
                f"{shown} is already used at {seen[sample_id]}; the {id_field!r} column must "
                "hold a unique id per row",
                id_field,
            )
        ]
    seen[sample_id] = at
    return []
