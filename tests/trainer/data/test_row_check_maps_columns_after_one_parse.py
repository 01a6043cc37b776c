"""``read_data_file`` parses a file once and ``check_rows`` applies any column mapping to it (the upload
preview maps columns after seeing them); each problem names its column, and the two steps together are
``check_data_file``."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.data.row_check import check_data_file, check_rows, read_data_file
from trainer.errors import DataError

DATA = Path(__file__).resolve().parents[2] / "data"


def test_the_parse_holds_columns_rows_and_the_rows_that_did_not_parse() -> None:
    parsed = read_data_file(DATA / "bad_rows.jsonl")
    assert (parsed.format, parsed.columns) == ("jsonl", ["question", "answer"])
    assert [row.number for row in parsed.rows()] == [1, 2, 4, 5]
    assert [(p.row, p.where, p.field) for p in parsed.problems] == [(3, "line 3", None), (6, "line 6", None)]


def test_one_parse_answers_several_mappings() -> None:
    parsed = read_data_file(DATA / "bad_rows.jsonl")
    labelled = check_rows(parsed, prompt_field="question", answer_field="answer")
    assert [(p.row, p.field) for p in labelled.problems] == [
        (2, "answer"),
        (3, None),
        (4, "question"),
        (6, None),
    ]
    label_free = check_rows(parsed, prompt_field="question", answer_field=None)
    assert [(p.row, p.field) for p in label_free.problems] == [(3, None), (4, "question"), (6, None)]
    assert parsed.problems == [p for p in label_free.problems if p.field is None]  # the parse is not changed


def test_the_two_steps_are_check_data_file() -> None:
    one = check_data_file(DATA / "bad_rows.jsonl", prompt_field="question")
    two = check_rows(read_data_file(DATA / "bad_rows.jsonl"), prompt_field="question")
    assert (one.rows, one.problem_count, one.problems) == (two.rows, two.problem_count, two.problems)


def test_a_duplicate_id_names_the_id_column() -> None:
    report = check_data_file(DATA / "duplicate_ids.jsonl", id_field="uid")
    assert report.problems and all(p.field == "uid" for p in report.problems)


def test_a_file_without_rows_is_refused_when_checked(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    parsed = read_data_file(empty)
    assert parsed.columns == [] and parsed.row_count == 0
    with pytest.raises(DataError, match="has no rows"):
        check_rows(parsed)
