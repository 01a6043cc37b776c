"""Local data files (JSONL, JSON, CSV, Parquet) -> Samples, read through the ``datasets`` library.

``datasets`` does the reading (one code path for four formats, Arrow underneath). This module adds what
its errors lack: the file, the line or row, and the field a user has to fix. JSON and CSV text is
pre-scanned with the standard library for that reason only: datasets reports a broken JSONL line as
"An error occurred while generating the dataset" and counts rows, not lines.

Values are kept as written. Plain loading infers one Arrow type per column, so the answer ``1`` in a
column that also holds ``2.5`` comes back as ``1.0``; JSON columns are therefore loaded with datasets'
``Json`` feature (Python values as parsed, datasets >= 4.7) and CSV columns as strings.

Nothing is fetched from a hub: the packaged "json"/"csv"/"parquet" builders with a local path resolve
locally (tests/trainer/data/test_file_loading.py blocks sockets to prove it), and the Arrow cache goes
to a temporary directory removed after loading (``keep_in_memory``), not to ~/.cache/huggingface.

Messages never quote a file's text unless it reads as a data file: a line that is not valid JSON is named
by its number and the parser's complaint, and a CSV's header names and cells are quoted only when it is a
table (two or more named columns, every row as wide as the header). Any text file parses as a
one-column CSV, and a key file's first line must not come back as "the columns are: ..." in an error.
"""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.bounds import string_problem
from trainer.data.limits import (
    DEFAULT_LIMITS,
    FileLimits,
    check_columns,
    check_file_size,
    check_json_depth,
    check_parquet,
    check_row_count,
    csv_lines,
    numbered_lines,
)
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


@dataclass(frozen=True)
class _Scan:
    """What the pre-scan learnt: the columns (first-seen order) and where each row sits, for messages."""

    columns: list[str] | None  # None: let datasets infer the types (Parquet carries its own schema)
    where: list[str]  # per row, e.g. "line 7" (JSONL) or "row 3 (line 5)" (CSV)
    blank_lines: bool = False  # a JSON Lines file with blank lines between records
    quotable: bool = True  # messages may quote column names and cells (see the module docstring)


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
    over ``limits`` (columns, line length, rows, size, nesting; trainer/data/limits.py) is refused early.
    """
    p = Path(path)
    _check_is_file(p)
    fmt = resolve_format(p, format)
    check_file_size(p, fmt, limits)
    scan = _scan(p, fmt, limits)
    rows = _read_rows(p, fmt, scan) if scan.where or scan.columns is None else []
    if not rows:
        raise DataError(f"{p} has no rows: add at least one row with a {prompt_field!r} field")
    where = scan.where if len(scan.where) == len(rows) else [f"row {i + 1}" for i in range(len(rows))]
    return _rows_to_samples(p, rows, where, prompt_field, answer_field, id_field, scan.quotable)


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


def _scan(p: Path, fmt: str, limits: FileLimits = DEFAULT_LIMITS) -> _Scan:
    try:
        if fmt == "jsonl":
            return _scan_json_lines(p, limits)
        if fmt == "json":
            return _scan_json(p, limits)
        if fmt == "csv":
            return _scan_csv(p, limits)
    except UnicodeDecodeError as err:
        raise DataError(f"{p} is not UTF-8 text ({err.reason}): save it as UTF-8") from None
    check_parquet(p, limits)
    return _Scan(columns=None, where=[])


def _scan_json_lines(p: Path, limits: FileLimits = DEFAULT_LIMITS) -> _Scan:
    columns: dict[str, None] = {}
    where: list[str] = []
    blank_lines = False
    with p.open(encoding="utf-8-sig") as f:  # datasets strips a BOM too
        for lineno, line in numbered_lines(f, p, limits):
            if not line.strip():
                blank_lines = True
                continue
            check_json_depth(p, f"line {lineno}", line, limits)
            try:
                record = json.loads(line.strip())
            except json.JSONDecodeError as err:
                raise DataError(
                    f"{p}, line {lineno}: not valid JSON ({err.msg} at column {err.colno}); "
                    "JSON Lines files hold one JSON object per line"
                ) from None
            if not isinstance(record, dict):
                raise DataError(
                    f"{p}, line {lineno}: expected a JSON object {{...}}, got a {type(record).__name__}"
                )
            if not record.keys() <= columns.keys():  # only a new key can pass the column limits
                columns.update(dict.fromkeys(record))
                check_columns(p, f"line {lineno}", columns, limits)
            where.append(f"line {lineno}")
    return _Scan(columns=list(columns), where=where, blank_lines=blank_lines)


def _scan_json(p: Path, limits: FileLimits = DEFAULT_LIMITS) -> _Scan:
    text = p.read_text(encoding="utf-8-sig")
    check_json_depth(p, "the document", text, limits)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":  # several top-level values: a JSON Lines file named .json
            return _scan_json_lines(p, limits)
        raise DataError(f"{p}, line {err.lineno}: not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(data, list):
        raise DataError(
            f"{p}: expected a JSON array of objects [{{...}}, ...] or one object per line (JSON Lines), "
            f"got a top-level {type(data).__name__}"
        )
    check_row_count(p, len(data), limits)
    columns: dict[str, None] = {}
    for i, record in enumerate(data):
        if not isinstance(record, dict):
            raise DataError(
                f"{p}, record {i + 1}: expected a JSON object {{...}}, got a {type(record).__name__}"
            )
        if not record.keys() <= columns.keys():  # only a new key can pass the column limits
            columns.update(dict.fromkeys(record))
            check_columns(p, f"record {i + 1}", columns, limits)
    return _Scan(columns=list(columns), where=[f"record {i + 1}" for i in range(len(data))])


def _scan_csv(p: Path, limits: FileLimits = DEFAULT_LIMITS) -> _Scan:
    header, records = read_csv_records(p, limits)
    return _Scan(columns=header, where=[where for where, _ in records], quotable=csv_is_table(header, records))


def csv_is_table(header: list[str], records: list[tuple[str, list[str]]]) -> bool:
    """Whether a CSV reads as a table, so messages may quote its header names and cells: two or more columns
    and every row as wide as the header (any text file is a one-column CSV, a key file included)."""
    return len(header) >= 2 and all(len(cells) == len(header) for _, cells in records)


def read_csv_records(p: Path, limits: FileLimits = DEFAULT_LIMITS) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The checked header and every non-blank data row as (where it sits, for messages; its cells).
    DataError for an empty file, an unnamed or repeated column, or text that is not valid CSV."""
    records: list[tuple[str, list[str]]] = []
    with p.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(csv_lines(f, p, limits))  # read one bounded line at a time
        try:
            header = next(reader, None)
            if header is None:
                raise DataError(f"{p} is empty: a CSV file needs a header row naming its columns")
            check_columns(p, "line 1 (the header)", header, limits)
            _check_csv_header(p, header)
            start = reader.line_num + 1
            for record in reader:
                if len(record) > limits.max_columns:
                    check_columns(p, f"line {start}", record, limits)
                check_row_count(p, len(records) + 1, limits)
                if record:  # pandas skips blank lines too
                    records.append((f"row {len(records) + 1} (line {start})", record))
                start = reader.line_num + 1  # a quoted field may span lines
        except csv.Error as err:
            raise DataError(f"{p}, line {reader.line_num}: not valid CSV ({err})") from None
    return header, records


def _check_csv_header(p: Path, header: list[str]) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(header):
        if not name.strip():
            raise DataError(f"{p}, line 1: column {i + 1} of the header has no name; name every column")
        if name in seen:  # the name itself is not quoted: the file is not known to be a data file yet
            raise DataError(
                f"{p}, line 1: columns {seen[name] + 1} and {i + 1} of the header have the same name; column "
                "names must be unique"
            )
        seen[name] = i


def _read_rows(p: Path, fmt: str, scan: _Scan) -> list[dict[str, Any]]:
    import datasets  # imported here: it costs ~0.7 s and only file sources need it

    columns = scan.columns
    kwargs: dict[str, Any] = {}
    if columns is not None and fmt in ("json", "jsonl"):
        kwargs["features"] = datasets.Features({name: datasets.Json() for name in columns})
    elif columns is not None and fmt == "csv":
        kwargs["features"] = datasets.Features({name: datasets.Value("string") for name in columns})
        kwargs["keep_default_na"] = False  # an answer "NA" or "null" stays text; empty cells stay ""
    builder = "json" if fmt == "jsonl" else fmt
    with tempfile.TemporaryDirectory(prefix="rlvr-datasets-") as cache_dir, _progress_bars_off(datasets):
        source = p.resolve()
        if scan.blank_lines:
            # datasets 5.2 re-parses each line for Json features with no blank-line check ("Expected object
            # or value"), so it reads a copy without them; scan.where keeps the original line numbers.
            source = Path(cache_dir) / "records.jsonl"
            with p.open(encoding="utf-8-sig") as src, source.open("w", encoding="utf-8") as dst:
                dst.writelines(line for line in src if line.strip())
        try:
            ds = datasets.load_dataset(
                builder,
                data_files=str(source),
                split="train",
                cache_dir=cache_dir,
                keep_in_memory=True,
                **kwargs,
            )
        except Exception as err:  # datasets wraps parser errors (pandas, pyarrow) in several types
            raise DataError(f"{p} could not be read as {fmt.upper()}: {_innermost_message(err)}") from err
        rows: list[dict[str, Any]] = ds.to_list()
    return rows


@contextmanager
def _progress_bars_off(datasets: Any) -> Iterator[None]:
    """Silence "Generating train split" bars in worker logs, then restore the caller's setting."""
    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _innermost_message(err: BaseException) -> str:
    """The parser's own words: datasets' outer message is "An error occurred while generating the dataset"."""
    inner: BaseException | None = err
    while inner is not None:
        err, inner = inner, inner.__cause__ or inner.__context__
    return str(err) or type(err).__name__


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
        prompt = _field_text(row, prompt_field, at, columns, "data.prompt_field", "the problem text", quotable=quotable)
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
            sample_id = _field_text(row, id_field, at, columns, "data.id_field", "a unique id", quotable=quotable)
            if sample_id in first_seen:
                raise DataError(
                    f"{at}: {f'id {sample_id!r}' if quotable else 'its id'} is already used at {first_seen[sample_id]}; "
                    f"the {id_field!r} column must hold a unique id per row"
                )
            first_seen[sample_id] = where[i]
        meta = {name: to_jsonable(value) for name, value in row.items() if name not in own}
        samples.append(Sample(id=sample_id, prompt=prompt, answer=answer, meta=meta))
    return samples


def _field_text(
    row: dict[str, Any], field: str, at: str, columns: list[str], setting: str, holds: str, hint: str = "",
    *, quotable: bool = True,
) -> str:
    if field not in columns:
        listed = (
            f"the columns are: {', '.join(columns)}" if quotable
            else f"the header (line 1) has {len(columns)} column(s), not shown as the file is not a table of "
            "named columns (two or more, every row as wide as the header)"
        )
        raise DataError(f"{at}: there is no {field!r} field; {listed}. Set {setting} to the column that holds {holds}{hint}")
    text = _as_text(row[field])
    if text is None:
        raise DataError(f"{at}: the {field!r} field is missing or null; every row needs {holds}{hint}")
    if not text.strip():
        raise DataError(f"{at}: the {field!r} field is empty; every row needs {holds}{hint}")
    problem = string_problem(text)  # PostgreSQL cannot store it in a rollout's prompt or answer
    if problem:
        raise DataError(f"{at}: the {field!r} field {problem}")
    return text


def _as_text(value: Any) -> str | None:
    """A cell as text: strings as they are, JSON scalars as JSON writes them, lists/objects as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value) if isinstance(value, bool) else str(value)
    return json.dumps(to_jsonable(value), ensure_ascii=False)
