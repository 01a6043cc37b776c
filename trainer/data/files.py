"""Local data files (JSONL, JSON, CSV, Parquet) -> Samples, read by the one bounded reader (reader.py).

reader.py reads every format one row at a time, held to FileLimits (per cell, per row, per file, once
decoded); this module turns its rows into Samples and adds what a user has to fix: the file, the line or
row, and the field. It used to read through the ``datasets`` library, which builds the whole table in
memory (a 13 KB Parquet file with one 400 MB zstd cell became gigabytes) before a row can be checked.

Values are kept as written: JSON values as parsed (the answer ``1`` in a column that also holds ``2.5``
stays ``1``), CSV cells as text (``015`` and ``NA`` stay text), Parquet values as its schema types them.
Nothing is fetched and nothing is cached: the reader opens the local path and nothing else.

Messages never quote a file's text unless it reads as a data file: a line that is not valid JSON is named
by its number and the parser's complaint, and a CSV's header names and cells are quoted only when it is a
table (two or more named columns, every row as wide as the header). Any text file parses as a
one-column CSV, and a key file's first line must not come back as "the columns are: ..." in an error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.bounds import string_problem
from trainer.data.limits import DEFAULT_LIMITS, FileLimits
from trainer.data.reader import ReadRow, RowReader
from trainer.errors import DataError
from trainer.jsonable import to_jsonable
from trainer.samples import Sample

FORMAT_BY_SUFFIX = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
FORMATS = ("jsonl", "json", "csv", "parquet")


def load_file_samples(
    path: str | Path,
    *,
    format: str = "auto",
    prompt_field: str = "prompt",
    answer_field: str | None = "answer",
    id_field: str | None = None,
    limits: FileLimits = DEFAULT_LIMITS,
) -> list[Sample]:
    """Load a local data file into Samples; raise DataError naming the file, row and field on bad data.

    ``prompt_field`` and (unless None) ``answer_field`` must be present and non-empty in every row; values
    are turned into text (JSON numbers as written). Ids come from ``id_field`` (must be unique) or are
    ``row-<n>``, 1-based. Every other column goes into ``Sample.meta`` as JSON-serialisable values. A file
    over ``limits`` (columns, rows, nesting, decoded bytes per cell, row and file; trainer/data/limits.py)
    is refused as soon as the reader meets it.
    """
    p = Path(path)
    _check_is_file(p)
    reader = RowReader(p, resolve_format(p, format), limits)
    rows: list[dict[str, Any]] = []
    where: list[str] = []
    for row in reader:
        if row.record is None:
            raise DataError(_parse_problem(p, reader, row))
        rows.append(row.record)
        where.append(row.where)
    if not rows:
        raise DataError(f"{p} has no rows: add at least one row with a {prompt_field!r} field")
    columns = list(reader.columns)
    for i, record in enumerate(rows):
        rows[i] = dict.fromkeys(columns) | record  # a key absent from a row reads as null, in column order
    return _rows_to_samples(p, rows, where, prompt_field, answer_field, id_field, reader.quotable)


def _parse_problem(p: Path, reader: RowReader, row: ReadRow) -> str:
    if reader.header is not None:  # a CSV row of another width than the header
        return (
            f"{p} could not be read as CSV: {row.where} has {row.cells} fields but the header names "
            f"{len(reader.header)} columns; quote cells that hold commas"
        )
    return f"{p}, {row.where}: {row.problem}"


def resolve_format(path: Path, format: str = "auto") -> str:
    """The file format: ``format`` itself unless it is 'auto', else inferred from the extension."""
    if format != "auto":
        if format not in FORMATS:
            raise DataError(f"unknown data format {format!r} for {path}; valid: auto, {', '.join(FORMATS)}")
        return format
    fmt = FORMAT_BY_SUFFIX.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(FORMAT_BY_SUFFIX)
        raise DataError(
            f"cannot tell the format of {path} from its extension {path.suffix or '(none)'!r}: "
            f"known extensions are {known}; rename the file or set data.format"
        )
    return fmt


def _check_is_file(p: Path) -> None:
    if p.is_file():
        return
    where = "" if p.is_absolute() else f" (resolved to {p.resolve()} from the working directory {Path.cwd()})"
    if p.exists():
        raise DataError(f"data file {p}{where} is not a regular file: point data.path at a file")
    raise DataError(f"data file {p} does not exist{where}: check data.path")


def _rows_to_samples(
    p: Path,
    rows: list[dict[str, Any]],
    where: list[str],
    prompt_field: str,
    answer_field: str | None,
    id_field: str | None,
    quotable: bool = True,
) -> list[Sample]:
    columns = list(rows[0])
    own = {prompt_field, answer_field, id_field}
    samples = []
    first_seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        at = f"{p}, {where[i]}"
        prompt = _field_text(
            row, prompt_field, at, columns, "data.prompt_field", "the problem text", quotable=quotable
        )
        answer = None
        if answer_field is not None:
            answer = _field_text(
                row,
                answer_field,
                at,
                columns,
                "data.answer_field",
                "the reference answer",
                hint="; set data.answer_field to null for label-free data",
                quotable=quotable,
            )
        sample_id = f"row-{i + 1}"
        if id_field is not None:
            sample_id = _field_text(
                row, id_field, at, columns, "data.id_field", "a unique id", quotable=quotable
            )
            if sample_id in first_seen:
                raise DataError(
                    f"{at}: {f'id {short_text(sample_id)!r}' if quotable else 'its id'} is already used at {first_seen[sample_id]}; "
                    f"the {id_field!r} column must hold a unique id per row"
                )
            first_seen[sample_id] = where[i]
        meta = {name: to_jsonable(value) for name, value in row.items() if name not in own}
        samples.append(Sample(id=sample_id, prompt=prompt, answer=answer, meta=meta))
    return samples


def _field_text(
    row: dict[str, Any],
    field: str,
    at: str,
    columns: list[str],
    setting: str,
    holds: str,
    hint: str = "",
    *,
    quotable: bool = True,
) -> str:
    if field not in columns:
        listed = (
            f"the columns are: {', '.join(columns)}"
            if quotable
            else f"the header (line 1) has {len(columns)} column(s), not shown as the file is not a table of "
            "named columns (two or more, every row as wide as the header)"
        )
        raise DataError(
            f"{at}: there is no {field!r} field; {listed}. Set {setting} to the column that holds {holds}{hint}"
        )
    text = _as_text(row[field])
    if text is None:
        raise DataError(f"{at}: the {field!r} field is missing or null; every row needs {holds}{hint}")
    if not text.strip():
        raise DataError(f"{at}: the {field!r} field is empty; every row needs {holds}{hint}")
    problem = string_problem(text)  # PostgreSQL cannot store it in a rollout's prompt or answer
    if problem:
        raise DataError(f"{at}: the {field!r} field {problem}")
    return text


def short_text(text: str, chars: int = 80) -> str:
    """``text`` cut for a message: an id or a cell may be a megabyte long."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _as_text(value: Any) -> str | None:
    """A cell as text: strings as they are, JSON scalars as JSON writes them, lists/objects as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value) if isinstance(value, bool) else str(value)
    return json.dumps(to_jsonable(value), ensure_ascii=False)
