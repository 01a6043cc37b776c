"""The one bounded reader of every data file format: rows, one at a time, each held to FileLimits.

Uploads, their previews, benchmark files and what workers train or evaluate on all read rows here
(``files.load_file_samples``, ``row_check.read_data_file``), so one format cannot be held to less than
another. Nothing is materialised whole; what the reader holds at any time is bounded:

- JSON Lines and CSV are read one bounded line at a time (limits.py); a CSV row may span lines, and each
  cell is held to the csv module's own field limit (131,072 characters) before ours.
- A ``.json`` array is streamed element by element: an element is decoded from a buffer that may not grow
  past ``max_line_chars``, so a document that is one giant string, one giant element or a 100,000-deep
  array is refused after reading that much. Several top-level values are read as JSON Lines.
- Parquet: the footer is read first (``open_parquet``): columns, rows, and every column chunk's
  ``total_uncompressed_size`` (or, if more, what its page headers claim: parquet_pages.py) against the file,
  row-group, row and cell limits; a 13 KB file holding a
  400 MB zstd (or gzip, snappy, brotli, lz4) cell is refused from the footer alone, whatever the codec.
  Then rows are decoded in batches of ``PARQUET_BATCH_ROWS`` and string and binary cells are measured in
  Arrow before a Python value is built. What this bounds: pyarrow decodes one row group at a time, page by
  page, so the decompressed data held at once is at most one row group (``max_row_group_bytes``, 128 MiB)
  plus that row group's compressed bytes (measured: 2.3 times a row group written as one page, copied once
  into Arrow before the cell check; docs/datasets.md). A page header is read as pyarrow reads it, so a
  footer that claims less than the pages is caught too.

Every row's decoded size (``limits.value_bytes``: UTF-8 bytes of text, and so on) is checked per cell and
per row, and added up against ``max_decoded_bytes`` while reading. Values are kept as written: JSON values
as parsed (``1`` stays an integer next to ``2.5``), CSV cells as text (``015`` and ``NA`` stay text),
Parquet values as its schema types them (``to_pylist``). No ``datasets`` or pandas: both build the whole
table in memory before a row can be checked.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from trainer.data.limits import (
    DEFAULT_LIMITS,
    FileLimits,
    cell_too_big,
    check_columns,
    check_decoded_total,
    check_file_size,
    check_json_depth,
    check_row_bytes,
    check_row_count,
    csv_lines,
    numbered_lines,
    size_text,
)
from trainer.data.parquet_pages import page_sizes
from trainer.errors import DataError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

PARQUET_BATCH_ROWS = 64
MAX_PAGES = 1_000_000  # page headers walked per Parquet file (each costs a few microseconds)
_JSON_CHUNK_CHARS = 1 << 16
_NON_SPACE = re.compile(r"\S")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ReadRow:
    """One data row: its record, or (a row that does not parse) the problem, in words."""

    number: int  # 1-based data row (a JSONL line that is not valid JSON still counts as a row)
    where: str  # "line 7", "row 3 (line 5)", "record 2", "row 4"
    record: dict[str, Any] | None
    problem: str | None = None
    cells: int = 0  # CSV: how many cells the row has, for the message of a ragged row


class RowReader:
    """Iterate to get every row of a data file, checked against ``limits``; each iteration reads the file
    again. File-level problems (a limit passed, not UTF-8, not Parquet) raise DataError; after iterating,
    ``columns`` (first-seen order), ``rows`` and, for CSV, ``header`` and ``quotable`` are known."""

    def __init__(self, path: Path, fmt: str, limits: FileLimits = DEFAULT_LIMITS) -> None:
        self.path, self.format, self.limits = path, fmt, limits
        self.columns: dict[str, None] = {}
        self.header: list[str] | None = None
        self.quotable = True  # messages may quote column names and cells (files.py's module docstring)
        self.rows = 0

    def __iter__(self) -> Iterator[ReadRow]:
        p, limits = self.path, self.limits
        check_file_size(p, self.format, limits)
        self.columns, self.rows, total = {}, 0, 0
        try:
            for row in self._rows():
                self.rows = row.number
                if row.record is not None:
                    total += check_row_bytes(p, row.where, row.record, limits, quotable=self.quotable)
                    check_decoded_total(p, row.where, total, limits)
                    if (
                        not row.record.keys() <= self.columns.keys()
                    ):  # only a new key can pass the column limits
                        self.columns.update(dict.fromkeys(row.record))
                        check_columns(p, row.where, self.columns, limits)
                yield row
        except UnicodeDecodeError as err:
            raise DataError(f"{p} is not UTF-8 text ({err.reason}): save it as UTF-8") from None

    def _rows(self) -> Iterator[ReadRow]:
        if self.format == "jsonl":
            return _json_lines(self.path, self.limits)
        if self.format == "json":
            return _json_document(self.path, self.limits)
        if self.format == "csv":
            return self._csv()
        return self._parquet()

    def _csv(self) -> Iterator[ReadRow]:
        p, limits = self.path, self.limits
        with p.open(encoding="utf-8", newline="") as f:
            reader = csv.reader(csv_lines(f, p, limits))  # read one bounded line at a time
            try:
                header = next(reader, None)
                if header is None:
                    raise DataError(f"{p} is empty: a CSV file needs a header row naming its columns")
                check_columns(p, "line 1 (the header)", header, limits)
                _check_csv_header(p, header)
                self.header, self.quotable = header, len(header) >= 2
                self.columns = dict.fromkeys(header)
                start, number = reader.line_num + 1, 0
                for record in reader:
                    if len(record) > limits.max_columns:
                        check_columns(p, f"line {start}", record, limits)
                    if record:  # pandas skips blank lines too
                        number += 1
                        check_row_count(p, number, limits)
                        where = f"row {number} (line {start})"
                        if len(record) == len(header):
                            yield ReadRow(
                                number, where, dict(zip(header, record, strict=True)), cells=len(record)
                            )
                        else:
                            self.quotable = False
                            yield ReadRow(
                                number,
                                where,
                                None,
                                f"has {len(record)} cells but the header names "
                                f"{len(header)} columns; quote cells that hold commas",
                                cells=len(record),
                            )
                    start = reader.line_num + 1  # a quoted field may span lines
            except csv.Error as err:
                if "field larger than field limit" in str(
                    err
                ):  # the csv module's own cap, 131,072 characters
                    raise DataError(
                        f"{p}, line {reader.line_num}: a cell longer than {csv.field_size_limit():,} characters, the "
                        "limit for one CSV cell; shorten it (or check for a quote that is never closed)"
                    ) from None
                raise DataError(f"{p}, line {reader.line_num}: not valid CSV ({err})") from None

    def _parquet(self) -> Iterator[ReadRow]:
        p, limits = self.path, self.limits
        parquet = open_parquet(p, limits)
        self.columns = dict.fromkeys(parquet.schema_arrow.names)
        number = 0
        try:
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                _check_arrow_cells(p, batch, number, limits)
                for record in batch.to_pylist():
                    number += 1
                    yield ReadRow(number, f"row {number}", record)
        except DataError:
            raise
        except Exception as err:  # pyarrow: ArrowInvalid, OSError (a corrupt page, a codec error)
            raise DataError(f"{p} could not be read as PARQUET: {str(err)[:200]}") from None
        finally:
            parquet.close()


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


def _json_lines(p: Path, limits: FileLimits) -> Iterator[ReadRow]:
    number = 0
    with p.open(encoding="utf-8-sig") as f:  # a BOM is not part of the first record
        for lineno, line in numbered_lines(f, p, limits):
            if not line.strip():
                continue
            number += 1
            where = f"line {lineno}"
            check_json_depth(p, where, line, limits)
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                yield ReadRow(
                    number,
                    where,
                    None,
                    f"not valid JSON ({err.msg} at column {err.colno}); JSON Lines "
                    "files hold one JSON object per line",
                )
                continue
            yield _object_row(number, where, record)


def _object_row(number: int, where: str, record: Any) -> ReadRow:
    if isinstance(record, dict):
        return ReadRow(number, where, record)
    return ReadRow(number, where, None, f"expected a JSON object {{...}}, got a {type(record).__name__}")


def _json_document(p: Path, limits: FileLimits) -> Iterator[ReadRow]:
    """A JSON array streamed element by element; several top-level values are read as JSON Lines."""
    with p.open(encoding="utf-8-sig") as f:
        text = _JsonText(f, p, limits)
        first = text.next_char()
        if first != "[":
            value = text.value("the document") if first else None
            if text.next_char():  # "Extra data": several top-level values, a JSON Lines file named .json
                yield from _json_lines(p, limits)
                return
            if first:
                raise DataError(
                    f"{p}: expected a JSON array of objects [{{...}}, ...] or one object per line (JSON Lines), "
                    f"got a top-level {type(value).__name__}"
                )
            return
        text.take()
        number = 0
        while True:
            if text.next_char() == "]" and number == 0:
                text.take()
                break
            number += 1
            check_row_count(p, number, limits)
            where = f"record {number}"
            yield _object_row(number, where, text.value(where))
            separator = text.next_char()
            text.expect(separator, ",]")
            if separator == "]":
                break
        if text.next_char():  # "[...] [...]": the rows of the first array are already read
            text.syntax_error(text.pos, "Extra data after the array; a .json file holds one array")


class _JsonText:
    """A JSON text read in chunks, decoded one value at a time from a buffer held to ``max_line_chars``."""

    def __init__(self, f: IO[str], p: Path, limits: FileLimits) -> None:
        self.f, self.p, self.limits = f, p, limits
        self.buffer, self.pos, self.line, self.eof = (
            "",
            0,
            1,
            False,
        )  # self.line: the line the buffer starts on

    def _more(self) -> bool:
        if self.eof:
            return False
        chunk = self.f.read(_JSON_CHUNK_CHARS)
        if not chunk:
            self.eof = True
            return False
        self.line += self.buffer.count("\n", 0, self.pos)
        self.buffer, self.pos = self.buffer[self.pos :] + chunk, 0
        return True

    def next_char(self) -> str:
        """The next character that is not white space ('' at the end), without taking it."""
        while True:
            match = _NON_SPACE.search(self.buffer, self.pos)
            if match:
                self.pos = match.start()
                return self.buffer[self.pos]
            self.pos = len(self.buffer)
            if not self._more():
                return ""

    def take(self) -> None:
        self.pos += 1

    def expect(self, char: str, allowed: str) -> None:
        if not char or char not in allowed:
            self.syntax_error(self.pos, f"Expecting {' or '.join(repr(c) for c in allowed)} delimiter")
        self.take()

    def value(self, where: str) -> Any:
        cap = self.limits.max_line_chars
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except RecursionError:
                raise DataError(
                    f"{self.p}, {where}: JSON nests more than {self.limits.max_depth} levels deep: flatten it"
                ) from None
            except json.JSONDecodeError as err:
                incomplete = err.msg.startswith("Unterminated string") or err.pos >= len(self.buffer) - 1
                if incomplete and len(self.buffer) - self.pos <= cap and self._more():
                    continue
                if incomplete and len(self.buffer) - self.pos > cap:
                    raise DataError(
                        f"{self.p}, {where}: longer than {cap:,} characters, the limit for one JSON record "
                        "(an element of the array); shorten the record or split the file"
                    ) from None
                self.syntax_error(err.pos, err.msg)
            if end == len(self.buffer) and not self.eof and self._more():
                continue  # a number at the end of the buffer may go on in the next chunk
            if end - self.pos > cap:
                raise DataError(
                    f"{self.p}, {where}: longer than {cap:,} characters, the limit for one JSON record "
                    "(an element of the array); shorten the record or split the file"
                )
            check_json_depth(self.p, where, self.buffer[self.pos : end], self.limits)
            self.pos = end
            return value

    def syntax_error(self, pos: int, msg: str) -> None:
        line = self.line + self.buffer.count("\n", 0, pos)
        column = pos - self.buffer.rfind("\n", 0, pos)
        raise DataError(f"{self.p}, line {line}: not valid JSON ({msg} at column {column})")


def open_parquet(p: Path, limits: FileLimits = DEFAULT_LIMITS) -> pq.ParquetFile:
    """The file's footer, checked before any data page is read: columns, rows, and each column chunk's
    uncompressed size against the cell, row, row-group and file limits. The caller closes it."""
    import pyarrow.parquet as pq  # a dependency of datasets; imported here so the web pays only on upload

    try:
        parquet = pq.ParquetFile(p, thrift_string_size_limit=16 << 20, thrift_container_size_limit=1 << 20)
    except Exception as err:  # pyarrow raises ArrowInvalid / OSError for a file that is not Parquet
        raise DataError(f"{p} could not be read as PARQUET: {str(err)[:200]}") from None
    try:
        meta = parquet.metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        check_columns(p, "schema", names, limits)
        check_row_count(p, meta.num_rows, limits)
        total, first_row, pages = 0, 1, [0]
        with p.open("rb") as raw:
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                sizes = [_chunk_bytes(p, raw, group.column(c), pages) for c in range(group.num_columns)]
                _check_row_group(p, g, first_row, group.num_rows, names, sizes, limits)
                total += sum(sizes)
                check_decoded_total(p, f"row group {g + 1}", total, limits)
                first_row += group.num_rows
    except BaseException:
        parquet.close()
        raise
    return parquet


def _chunk_bytes(p: Path, raw: IO[bytes], chunk: pq.ColumnChunkMetaData, pages: list[int]) -> int:
    """A column chunk's decoded size: the footer's figure, or what its page headers claim if more (pyarrow
    allocates what a page header claims). ``pages`` counts the pages walked so far in the file."""
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < start:
        start = chunk.dictionary_page_offset
    claimed = 0
    try:
        for uncompressed, _ in page_sizes(raw, start, chunk.total_compressed_size):
            claimed += uncompressed
            pages[0] += 1
            if pages[0] > MAX_PAGES:
                raise DataError(
                    f"{p} has more than {MAX_PAGES:,} pages, the limit for a Parquet file: write it "
                    "with larger pages"
                )
    except DataError as err:
        if str(err).startswith(str(p)):
            raise
        raise DataError(f"{p} could not be read as PARQUET: {err}") from None
    return max(chunk.total_uncompressed_size, claimed)


def _check_row_group(
    p: Path, g: int, first: int, rows: int, names: list[str], sizes: list[int], limits: FileLimits
) -> None:
    """A column chunk holds its cells plus a few bytes each (lengths, levels) and a dictionary of some of
    them, so one larger than twice ``rows`` cells at the limit (and a MiB of slack) must hold a cell over it."""
    where = f"row {first}" if rows == 1 else f"rows {first}-{first + rows - 1} (row group {g + 1})"
    slack = 1 << 20
    for name, size in zip(names, sizes, strict=True):
        if size > 2 * max(rows, 1) * limits.max_cell_bytes + slack:
            note = (
                " (the file's metadata says)"
                if rows == 1
                else f" for {rows:,} rows (the file's metadata says)"
            )
            raise DataError(cell_too_big(p, where, name, size, limits, note))
    group = sum(sizes)
    if group > 2 * max(rows, 1) * limits.max_row_bytes + slack:
        raise DataError(
            f"{p}, {where}: {size_text(group)} decoded for {rows:,} rows (the file's metadata says), the limit is "
            f"{size_text(limits.max_row_bytes)} per row; shorten the values or drop columns"
        )
    if group > limits.max_row_group_bytes:
        fit = max(1, int(rows * limits.max_row_group_bytes / group * 0.9))
        raise DataError(
            f"{p}, row group {g + 1}: {size_text(group)} decoded, the limit is "
            f"{size_text(limits.max_row_group_bytes)} per row group (they are read one at a time); write the "
            f"file with smaller row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size={fit:,})"
        )


def _check_arrow_cells(p: Path, batch: pa.RecordBatch, before: int, limits: FileLimits) -> None:
    """String and binary cells measured in Arrow, before ``to_pylist`` builds a Python copy of them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        kind = column.type
        if not (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
        ):
            continue  # other values are measured as Python values, within the row group bound
        lengths = pc.binary_length(column)
        longest = pc.max(lengths).as_py()
        if longest is not None and longest > limits.max_cell_bytes:
            first = pc.index(pc.greater(lengths, limits.max_cell_bytes), True).as_py()  # the first cell over
            raise DataError(
                cell_too_big(p, f"row {before + 1 + first}", name, lengths[first].as_py(), limits)
            )
