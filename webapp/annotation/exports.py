"""Export rows of an annotation task as JSONL or CSV, streamed line by line.

CSV goes through the one writer of every export, webapp/core/csv_export.py, which neutralises cells a
spreadsheet would run as a formula (OWASP "CSV Injection"): model completions are untrusted text.

The records themselves come from selectors.export_records / export_csv_rows: one per assignment, each
carrying its item's adjudicated final scores (JSONL ``adjudicated``, ``final_scores``, ``adjudications``;
CSV ``adjudicated``, ``final:<criterion>``, ``final_note:<criterion>``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def jsonl_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
