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


def load_file_samples(
    path: str | Path,
    *,
    format: str = "auto",
    prompt_field: str = "prompt",
    answer_field: str | None = "answer",
    id_field: str | None = None,
) -> list[Sample]:
    """Load a local data file into Samples; raise DataError naming the file, row and field on bad data.

    ``prompt_field`` and (unless None) ``answer_field`` must be present and non-empty in every row; values
    are turned into text (JSON numbers as written). Ids come from ``id_field`` (must be unique) or are
    ``row-<n>``, 1-based. Every other column goes into ``Sample.meta`` as JSON-serialisable values.
    """
    p = Path(path)
    _check_is_file(p)
    fmt = resolve_format(p, format)
    scan = _scan(p, fmt)
    rows = _read_rows(p, fmt, scan) if scan.where or scan.columns is None else []
    if not rows:
        raise DataError(f"{p} has no rows: add at least one row with a {prompt_field!r} field")
    where = scan.where if len(scan.where) == len(rows) else [f"row {i + 1}" for i in range(len(rows))]
    return _rows_to_samples(p, rows, where, prompt_field, answer_field, id_field)


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


def _scan(p: Path, fmt: str) -> _Scan:
    try:
        if fmt == "jsonl":
            return _scan_json_lines(p)
        if fmt == "json":
            return _scan_json(p)
        if fmt == "csv":
            return _scan_csv(p)
    except UnicodeDecodeError as err:
        raise DataError(f"{p} is not UTF-8 text ({err.reason}): save it as UTF-8") from None
    return _Scan(columns=None, where=[])


def _scan_json_lines(p: Path) -> _Scan:
    columns: dict[str, None] = {}
    where: list[str] = []
    blank_lines = False
    with p.open(encoding="utf-8-sig") as f:  # datasets strips a BOM too
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                blank_lines = True
                continue
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
            columns.update(dict.fromkeys(record))
            where.append(f"line {lineno}")
    return _Scan(columns=list(columns), where=where, blank_lines=blank_lines)


def _scan_json(p: Path) -> _Scan:
    text = p.read_text(encoding="utf-8-sig")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":  # several top-level values: a JSON Lines file named .json
            return _scan_json_lines(p)
        raise DataError(f"{p}, line {err.lineno}: not valid JSON ({err.msg} at column {err.colno})") from None
    if not isinstance(data, list):
        raise DataError(
            f"{p}: expected a JSON array of objects [{{...}}, ...] or one object per line (JSON Lines), "
            f"got a top-level {type(data).__name__}"
        )
    columns: dict[str, None] = {}
    for i, record in enumerate(data):
        if not isinstance(record, dict):
            raise DataError(
                f"{p}, record {i + 1}: expected a JSON object {{...}}, got a {type(record).__name__}"
            )
        columns.update(dict.fromkeys(record))
    return _Scan(columns=list(columns), where=[f"record {i + 1}" for i in range(len(data))])


def _scan_csv(p: Path) -> _Scan:
    header, records = read_csv_records(p)
    return _Scan(columns=header, where=[where for where, _ in records])


def read_csv_records(p: Path) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The checked header and every non-blank data row as (where it sits, for messages; its cells).
    DataError for an empty file, an unnamed or repeated column, or text that is not valid CSV."""
    records: list[tuple[str, list[str]]] = []
    with p.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError(f"{p} is empty: a CSV file needs a header row naming its columns")
            _check_csv_header(p, header)
            start = reader.line_num + 1
            for record in reader:
                if record:  # pandas skips blank lines too
                    records.append((f"row {len(records) + 1} (line {start})", record))
                start = reader.line_num + 1  # a quoted field may span lines
        except csv.Error as err:
            raise DataError(f"{p}, line {reader.line_num}: not valid CSV ({err})") from None
    return header, records


def _check_csv_header(p: Path, header: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(header):
        if not name.strip():
            raise DataError(f"{p}, line 1: column {i + 1} of the header has no name; name every column")
        if name in seen:
            raise DataError(
                f"{p}, line 1: the header names column {name!r} twice; column names must be unique"
            )
        seen.add(name)


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
) -> list[Sample]:
    columns = list(rows[0])
    own = {prompt_field, answer_field, id_field}
    samples = []
    first_seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        at = f"{p}, {where[i]}"
        prompt = _field_text(row, prompt_field, at, columns, "data.prompt_field", "the problem text")
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
            )
        sample_id = f"row-{i + 1}"
        if id_field is not None:
            sample_id = _field_text(row, id_field, at, columns, "data.id_field", "a unique id")
            if sample_id in first_seen:
                raise DataError(
                    f"{at}: id {sample_id!r} is already used at {first_seen[sample_id]}; "
                    f"the {id_field!r} column must hold a unique id per row"
                )
            first_seen[sample_id] = where[i]
        meta = {name: to_jsonable(value) for name, value in row.items() if name not in own}
        samples.append(Sample(id=sample_id, prompt=prompt, answer=answer, meta=meta))
    return samples


def _field_text(
    row: dict[str, Any], field: str, at: str, columns: list[str], setting: str, holds: str, hint: str = ""
) -> str:
    if field not in columns:
        raise DataError(
            f"{at}: there is no {field!r} field; the columns are: {', '.join(columns)}. "
            f"Set {setting} to the column that holds {holds}{hint}"
        )
    text = _as_text(row[field])
    if text is None:
        raise DataError(f"{at}: the {field!r} field is missing or null; every row needs {holds}{hint}")
    if not text.strip():
        raise DataError(f"{at}: the {field!r} field is empty; every row needs {holds}{hint}")
    return text


def _as_text(value: Any) -> str | None:
    """A cell as text: strings as they are, JSON scalars as JSON writes them, lists/objects as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value) if isinstance(value, bool) else str(value)
    return json.dumps(to_jsonable(value), ensure_ascii=False)
