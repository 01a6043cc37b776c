"""Caps on a data file, checked while it is read, so a hostile file is refused early in bounded memory.

A million-column CSV used to reach ``datasets`` (one Arrow column each: minutes and gigabytes) and come
back as an error message of megabytes. These checks run in the pre-scan of files.py / row_check.py,
before any parser sees more than one line: every line (a JSONL record, a CSV row) is read with a bounded
``readline``, so an over-long line is refused after ``max_line_chars`` characters; the column count and
names, the row count, JSON nesting (measured in one pass, before ``json.loads`` recurses) and, for
Parquet, the footer's column/row counts and uncompressed size are checked against ``FileLimits``.
Messages are short: they give the limit and where it was passed, never the offending text.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from trainer.bounds import json_depth_problem
from trainer.errors import DataError


@dataclass(frozen=True)
class FileLimits:
    max_bytes: int = 1 << 30  # any data file (the web app refuses uploads over RLVR_MAX_UPLOAD_MB first)
    max_document_bytes: int = 256 << 20  # a .json array, which is parsed whole (JSON Lines is streamed)
    max_uncompressed_bytes: int = 4 << 30  # a Parquet file's data once decompressed (its footer says)
    max_line_chars: int = 1 << 20  # one JSON Lines record or one CSV line
    max_columns: int = 256
    max_column_name_chars: int = 200
    max_rows: int = 1_000_000
    max_depth: int = 64  # nesting of one JSON value


DEFAULT_LIMITS = FileLimits()


def check_file_size(p: Path, fmt: str, limits: FileLimits = DEFAULT_LIMITS) -> None:
    size = p.stat().st_size
    cap, what = (limits.max_document_bytes, "a .json file (parsed whole; JSON Lines is streamed)") if fmt == "json" \
        else (limits.max_bytes, "a data file")
    if size > cap:
        raise DataError(
            f"{p} is {size / 2**20:,.1f} MB; the limit for {what} is {cap / 2**20:,.0f} MB: split the file"
            + (" or save it as JSON Lines" if fmt == "json" else "")
        )


def bounded_lines(f: TextIO, p: Path, limits: FileLimits = DEFAULT_LIMITS, first_lineno: int = 1) -> Iterator[str]:
    """The lines of ``f``, each read with a bounded readline: DataError at the first over-long one."""
    cap = limits.max_line_chars
    for lineno in itertools.count(first_lineno):
        line = f.readline(cap + 1)
        if not line:
            return
        if _too_long(line, cap):
            raise DataError(_line_too_long(p, lineno, cap))
        yield line


def csv_lines(f: TextIO, p: Path, limits: FileLimits = DEFAULT_LIMITS) -> Iterator[str]:
    """``bounded_lines`` for a CSV: a header line too long to read names the column limit when its first
    ``max_line_chars`` characters already hold more separators than that (a million-column header)."""
    cap = limits.max_line_chars
    header = f.readline(cap + 1)
    if _too_long(header, cap):
        if header.count(",") >= limits.max_columns:
            raise DataError(_too_many_columns(p, "line 1 (the header)", limits))
        raise DataError(_line_too_long(p, 1, cap))
    if header:
        yield header
        yield from bounded_lines(f, p, limits, first_lineno=2)


def _too_long(line: str, cap: int) -> bool:
    return len(line) > cap and not (len(line) == cap + 1 and line[-1] in "\r\n")


def _line_too_long(p: Path, lineno: int, cap: int) -> str:
    return (
        f"{p}, line {lineno}: longer than {cap:,} characters, the limit for one line or row; shorten the "
        "record or split the file"
    )


def _too_many_columns(p: Path, where: str, limits: FileLimits) -> str:
    return (
        f"{p}, {where}: more than {limits.max_columns} columns, the limit for a data file; keep the prompt, "
        "answer and id columns and drop the others"
    )


def numbered_lines(f: TextIO, p: Path, limits: FileLimits = DEFAULT_LIMITS) -> Iterator[tuple[int, str]]:
    """``enumerate(bounded_lines(...), start=1)``, refusing a file with more lines than ``max_rows``
    (blank ones included, which is close enough to stop a file of millions of records)."""
    for lineno, line in enumerate(bounded_lines(f, p, limits), start=1):
        if lineno > limits.max_rows + 1:
            raise DataError(_too_many_rows(p, limits))
        yield lineno, line


def check_row_count(p: Path, rows: int, limits: FileLimits = DEFAULT_LIMITS) -> None:
    if rows > limits.max_rows:
        raise DataError(_too_many_rows(p, limits))


def _too_many_rows(p: Path, limits: FileLimits) -> str:
    return f"{p} has more than {limits.max_rows:,} rows, the limit for one data file: split it"


def check_columns(p: Path, where: str, names: Iterable[str], limits: FileLimits = DEFAULT_LIMITS) -> None:
    """DataError when ``names`` (a header, a record's keys, or all keys seen so far) holds more columns
    than the limit, or a name longer than the name limit."""
    for count, name in enumerate(names, start=1):
        if count > limits.max_columns:
            raise DataError(_too_many_columns(p, where, limits))
        if len(name) > limits.max_column_name_chars:
            raise DataError(
                f"{p}, {where}: column {count} has a name of {len(name):,} characters; the limit is "
                f"{limits.max_column_name_chars}"
            )


def check_json_depth(p: Path, where: str, text: str, limits: FileLimits = DEFAULT_LIMITS) -> None:
    problem = json_depth_problem(text, limits.max_depth)
    if problem:
        raise DataError(f"{p}, {where}: {problem}")


def check_parquet(p: Path, limits: FileLimits = DEFAULT_LIMITS) -> None:
    """Columns, rows and decompressed size from the Parquet footer, before any data page is read."""
    import pyarrow.parquet as pq  # datasets depends on pyarrow

    try:
        meta = pq.ParquetFile(p).metadata
    except Exception as err:  # pyarrow raises ArrowInvalid / OSError for a file that is not Parquet
        raise DataError(f"{p} could not be read as PARQUET: {str(err)[:200]}") from None
    check_columns(p, "schema", (meta.schema.column(i).name for i in range(meta.num_columns)), limits)
    check_row_count(p, meta.num_rows, limits)
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > limits.max_uncompressed_bytes:
        raise DataError(
            f"{p} holds {size / 2**20:,.0f} MB once decompressed; the limit is "
            f"{limits.max_uncompressed_bytes / 2**20:,.0f} MB: split the file"
        )
