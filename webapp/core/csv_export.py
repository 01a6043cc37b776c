"""The one CSV writer for every export (annotation rows, benchmark results, anything a user downloads).

Cells that a spreadsheet would run as a formula (text starting with ``=``, ``+``, ``-``, ``@``, or a tab or
carriage return that some programs skip before one) get a leading single quote (OWASP "CSV Injection"):
a model completion such as ``=HYPERLINK(...)`` or a benchmark named ``@SUM(1+1)`` must stay text. Values
that are numbers in the data (a reward of -0.5) are written as numbers, unquoted: a spreadsheet reads them
as numbers, not formulas, and a quote would turn them into text.
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


def csv_lines(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The header and each row as one CSV-encoded line (RFC 4180 quoting), every cell through ``csv_safe``:
    stream it (``StreamingHttpResponse``) or join it (``csv_text``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(cells: Sequence[Any]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([csv_safe(cell) for cell in cells])
        return buffer.getvalue()

    yield line(header)
    for row in rows:
        yield line(row)


def csv_text(header: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """The whole CSV document as one string (small exports answered in one response)."""
    return "".join(csv_lines(header, rows))
