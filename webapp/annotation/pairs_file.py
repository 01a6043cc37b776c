"""Read an uploaded pairs file: one prompt and two completions per row, every row checked, errors by line.

A row is ``{"prompt", "completion_a", "completion_b"}`` (unlabelled: people decide) or ``{"prompt",
"chosen", "rejected"}`` (the preference format of RewardBench-style data and of TRL's RewardTrainer: the
file's own label is kept hidden on the item, so the task can report how often people agree with it); an
``answer`` (a reference answer) may come with either. The file goes through the platform's one bounded
reader (trainer/data/reader.py, the reader of uploaded datasets) under tighter limits than a training file:
``MAX_ROWS`` rows, ``MAX_TEXT_BYTES`` per text, the upload cap (RLVR_MAX_UPLOAD_MB) on the whole. Every bad
row is listed (up to ``MAX_PROBLEMS``) in the one error shape, each naming its line.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.conf import settings

from trainer.errors import DataError
from webapp.core.errors import InvalidInput

MAX_ROWS = 5000  # pairs in one task (webapp/annotation/pairing.py MAX_PAIRS)
MAX_TEXT_BYTES = 100_000  # one prompt, completion or answer, UTF-8 bytes
MAX_PROBLEMS = 20
FORMATS = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


@dataclass(frozen=True)
class PairRow:
    line: str  # where it is in the file ("line 7", "row 3 (line 5)")
    prompt: str
    first: str  # completion_a, or chosen
    second: str  # completion_b, or rejected
    answer: str | None
    labelled: bool  # True: ``first`` is the file's chosen completion


def file_format(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    if suffix not in FORMATS:
        message = f"{filename}: use a .jsonl, .json, .csv or .parquet file of pairs."
        raise InvalidInput(message, {"file": [message]})
    return FORMATS[suffix]


def _limits() -> Any:
    from trainer.data.limits import FileLimits

    cap = int(settings.RLVR_MAX_UPLOAD_MB) * 1024 * 1024
    return FileLimits(
        max_bytes=cap, max_decoded_bytes=cap, max_cell_bytes=MAX_TEXT_BYTES, max_row_bytes=4 * MAX_TEXT_BYTES,
        max_line_chars=6 * MAX_TEXT_BYTES, max_columns=32, max_rows=MAX_ROWS,
    )  # fmt: skip


def _text(record: dict[str, Any], key: str, where: str, *, required: bool) -> str | None:
    value = record.get(key)
    if value is None or value == "":
        if required:
            raise ValueError(f"{where}: '{key}' is missing or empty")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{where}: '{key}' must be text, not {type(value).__name__}")
    return value


def _pair_row(where: str, record: dict[str, Any]) -> PairRow:
    labelled = "chosen" in record or "rejected" in record
    if labelled and ("completion_a" in record or "completion_b" in record):
        raise ValueError(f"{where}: give completion_a/completion_b or chosen/rejected, not both")
    first_key, second_key = ("chosen", "rejected") if labelled else ("completion_a", "completion_b")
    prompt = _text(record, "prompt", where, required=True)
    first = _text(record, first_key, where, required=True)
    second = _text(record, second_key, where, required=True)
    answer = _text(record, "answer", where, required=False)
    assert prompt is not None and first is not None and second is not None
    return PairRow(where, prompt, first, second, answer, labelled)


def read_pairs(path: Path, fmt: str, *, display_name: str) -> list[PairRow]:
    """Every row of the file as a pair; the file's problems raise InvalidInput under ``file``, naming the
    upload (never the staging path) and each bad row's line."""
    from trainer.data.reader import RowReader

    rows: list[PairRow] = []
    problems: list[str] = []
    try:
        for read in RowReader(path, fmt, _limits()):
            if read.number > MAX_ROWS:  # JSON Lines are counted here: the reader counts CSV and JSON rows
                message = (
                    f"{display_name} has more than {MAX_ROWS:,} pairs, the limit for one task: split it."
                )
                raise InvalidInput(message, {"file": [message]})
            if read.record is None:
                problems.append(f"{read.where}: {read.problem}")
            else:
                try:
                    rows.append(_pair_row(read.where, read.record))
                except ValueError as err:
                    problems.append(str(err))
            if len(problems) >= MAX_PROBLEMS:
                problems.append(f"(stopped after {MAX_PROBLEMS} bad rows)")
                break
    except DataError as err:
        message = re.sub(re.escape(str(path)), display_name, str(err))
        raise InvalidInput(message, {"file": [message]}) from None
    if problems:
        raise InvalidInput(
            f"{display_name}, {problems[0]}", {"file": [f"{display_name}, {p}" for p in problems]}
        )
    if not rows:
        message = f"{display_name} has no pairs: give one JSON object per line with prompt, completion_a, completion_b."
        raise InvalidInput(message, {"file": [message]})
    return rows


@contextmanager
def staged_upload(file: IO[bytes], filename: str, size: int) -> Iterator[Path]:
    """The upload copied into a private temporary folder (removed afterwards), after the size check."""
    limit_mb = settings.RLVR_MAX_UPLOAD_MB
    if size > limit_mb * 1024 * 1024:
        message = f"{filename} is {size / 2**20:.1f} MB; the limit is {limit_mb} MB (RLVR_MAX_UPLOAD_MB)."
        raise InvalidInput(message, {"file": [message]})
    with tempfile.TemporaryDirectory(prefix="rlvr-pairs-") as tmp:
        staged = Path(tmp) / ("pairs" + Path(filename).suffix.lower())
        with staged.open("wb") as out:
            shutil.copyfileobj(file, out)
        yield staged
