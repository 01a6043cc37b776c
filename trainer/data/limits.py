"""Caps on a data file, checked while it is read, so a hostile file is refused early in bounded memory.

A million-column CSV used to reach ``datasets`` (one Arrow column each: minutes and gigabytes) and come
back as an error message of megabytes; a 13 KB Parquet file holding one zstd-compressed 400 MB cell used
to be decompressed whole. These checks run in the one reader of every format (trainer/data/reader.py),
before any parser sees more than one line or record: every line (a JSONL record, a CSV row) is read with
a bounded ``readline``, so an over-long line is refused after ``max_line_chars`` characters; the column
count and names, the row count and JSON nesting (measured in one pass, before ``json.loads`` recurses)
are checked as they appear, and every row's *decoded* size (per cell, per row, and added up per file) as
it is decoded. Parquet's footer gives each column chunk's uncompressed size, which is checked before a
data page is read (reader.py says what that bounds). Messages are short: they give the limit and where
it was passed, never the offending text.
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
    max_bytes: int = (
        1 << 30
    )  # any data file on disk (the web app refuses uploads over RLVR_MAX_UPLOAD_MB first)
    max_decoded_bytes: int = (
        1 << 30
    )  # every cell of the file added up, once decoded (the web app: the upload cap)
    max_cell_bytes: int = 1 << 20  # one cell (a prompt, an answer, any value), UTF-8 bytes once decoded
    max_row_bytes: int = 4 << 20  # one row's cells added up (a 1 MiB line of 4-byte characters fits)
    max_row_group_bytes: int = 128 << 20  # one Parquet row group once decompressed (read one at a time)
    max_line_chars: int = 1 << 20  # one JSON Lines record, one CSV line, one element of a JSON array
    max_columns: int = 256
    max_column_name_chars: int = 200
    max_rows: int = 1_000_000
    max_depth: int = 64  # nesting of one JSON value


DEFAULT_LIMITS = FileLimits()


def check_file_size(p: Path, fmt: str, limits: FileLimits = DEFAULT_LIMITS) -> None:
    size = p.stat().st_size
    if size > limits.max_bytes:
        raise DataError(
            f"{p} is {size / 2**20:,.1f} MB; the limit for a data file is {limits.max_bytes / 2**20:,.0f} MB: "
            "split the file"
        )


def size_text(size: int) -> str:
    """A byte count as people read it in a message: '400.0 MB', '1 MiB', '812 bytes'."""
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return f"{size >> 20:,} MiB"
    return f"{size / 2**20:,.1f} MB" if size >= 1 << 20 else f"{size:,} bytes"


def value_bytes(value: object) -> int:
    """The decoded size of one cell: UTF-8 bytes of text, bytes of binary, 8 per number, and the sum of the
    parts (plus 2 each) of a list or object. Iterative, so a deep value never exhausts the stack."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) if item.isascii() else len(item.encode("utf-8", "surrogatepass"))
        elif isinstance(item, bytes | bytearray):
            total += len(item)
        elif item is None or isinstance(item, bool | int | float):
            total += 8
        elif isinstance(item, dict):
            total += 2 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            total += 2 * len(item)
            stack.extend(item)
        else:  # dates, decimals and other typed Parquet values
            total += len(str(item))
    return total


def check_row_bytes(
    p: Path,
    where: str,
    record: dict[str, object],
    limits: FileLimits = DEFAULT_LIMITS,
    *,
    quotable: bool = True,
) -> int:
    """The decoded size of one row; DataError naming the row and column when a cell or the row passes its
    limit. Column names are quoted only when the file may be quoted (files.py's module docstring)."""
    row = 0
    for index, (name, value) in enumerate(record.items(), start=1):
        size = value_bytes(value)
        if size > limits.max_cell_bytes:
            raise DataError(cell_too_big(p, where, name if quotable else index, size, limits))
        row += size
    if row > limits.max_row_bytes:
        raise DataError(
            f"{p}, {where}: {size_text(row)} decoded, the limit is {size_text(limits.max_row_bytes)} per row; "
            "shorten its values or drop columns"
        )
    return row


def cell_too_big(
    p: Path, where: str, column: str | int, size: int, limits: FileLimits, note: str = ""
) -> str:
    named = f"column {column!r}" if isinstance(column, str) else f"column {column}"
    return (
        f"{p}, {where}, {named}: {size_text(size)} decoded{note}, the limit is "
        f"{size_text(limits.max_cell_bytes)} per cell; shorten the value or drop the column"
    )


def check_decoded_total(p: Path, where: str, total: int, limits: FileLimits = DEFAULT_LIMITS) -> None:
    if total > limits.max_decoded_bytes:
        raise DataError(
            f"{p}: more than {size_text(limits.max_decoded_bytes)} of data once decoded (passed at {where}), the "
            "limit for one data file; split the file"
        )


def bounded_lines(
    f: TextIO, p: Path, limits: FileLimits = DEFAULT_LIMITS, first_lineno: int = 1
) -> Iterator[str]:
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
