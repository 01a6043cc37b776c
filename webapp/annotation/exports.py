"""Export rows of an annotation task as JSONL or CSV, streamed line by line.

CSV cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, or a tab or
carriage return that some programs skip before one) get a leading single quote (OWASP "CSV Injection").
Model completions are untrusted text: a completion such as ``=HYPERLINK(...)`` must stay text. Values that
are numbers in the data (a reward of -0.5) are written as numbers, unquoted: a spreadsheet reads them as
numbers, not formulas, and a quote would turn them into text.

The records themselves come from selectors.export_records / export_csv_rows: one per assignment, each
carrying its item's adjudicated final scores (JSONL ``adjudicated``, ``final_scores``, ``adjudications``;
CSV ``adjudicated``, ``final:<criterion>``, ``final_note:<criterion>``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value: Any) -> str:
    """One cell as text; formula-like text is prefixed with ``'`` so it is shown, never evaluated."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)  # numbers are data, never formulas
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The header and each row as one CSV-encoded line (RFC 4180 quoting), safe for spreadsheets."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(cells: Sequence[Any]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(cells)
        return buffer.getvalue()

    yield line([csv_safe(h) for h in header])
    for row in rows:
        yield line([csv_safe(cell) for cell in row])


def jsonl_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
