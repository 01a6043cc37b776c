"""Hostile data files are refused early, with a short message naming the limit (issue 13 part 5)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from trainer.data.files import load_file_samples
from trainer.data.limits import FileLimits, csv_lines
from trainer.data.row_check import check_data_file
from trainer.errors import DataError


class CountingText(io.StringIO):
    """A text file that counts the characters its readers took."""

    taken = 0

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        line = super().readline(-1 if size is None else size)
        self.taken += len(line)
        return line


def wide_csv_header(columns: int) -> str:
    return ",".join(["prompt", "answer"] + [f"c{i}" for i in range(columns - 2)]) + "\n"


def test_a_million_column_csv_is_refused_naming_the_column_cap_with_a_short_message(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(
        wide_csv_header(1_000_000) + ",".join(["1+1=", "2"] + ["x"] * 999_998) + "\n", encoding="utf-8"
    )
    with pytest.raises(DataError, match="more than 256 columns") as err:
        load_file_samples(path)
    assert len(str(err.value)) < 1024


def test_reading_a_million_column_header_stops_after_one_bounded_line() -> None:
    text = CountingText(wide_csv_header(1_000_000))
    limits = FileLimits()
    with pytest.raises(DataError, match="more than 256 columns"):
        list(csv_lines(text, Path("wide.csv"), limits))
    assert text.taken <= limits.max_line_chars + 1
    assert text.taken < len(text.getvalue()) // 5


def test_a_header_of_300_short_columns_is_refused_naming_the_column_cap(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(wide_csv_header(300) + ",".join(["q"] * 300) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1 \(the header\): more than 256 columns"):
        load_file_samples(path)


def test_a_csv_row_with_too_many_cells_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("prompt,answer\n1+1=,2\n" + ",".join(["x"] * 400) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 3: more than 256 columns"):
        load_file_samples(path)


def test_a_jsonl_line_longer_than_the_row_limit_is_refused_without_quoting_it(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"prompt": "x" * 3_000_000, "answer": "2"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 1: longer than 1,048,576 characters") as err:
        load_file_samples(path)
    assert "xxx" not in str(err.value)


def test_deep_nesting_in_a_jsonl_record_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        '{"prompt": "1+1=", "answer": "2", "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8"
    )
    with pytest.raises(DataError, match="nests more than 64 levels"):
        load_file_samples(path)


def test_deep_nesting_in_a_json_document_is_refused_by_the_row_check_too(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(DataError, match="nests more than 64 levels"):
        check_data_file(path)


def test_json_records_whose_keys_add_up_past_the_column_cap_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys.jsonl"
    lines = [json.dumps({"prompt": "1+1=", "answer": "2", f"k{i}": 1}) for i in range(300)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="more than 256 columns"):
        load_file_samples(path)


def test_a_file_with_more_rows_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "many.csv"
    path.write_text("prompt,answer\n" + "1+1=,2\n" * 50, encoding="utf-8")
    with pytest.raises(DataError, match="more than 10 rows"):
        load_file_samples(path, limits=FileLimits(max_rows=10))


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text('{"prompt": "1+1=", "answer": "2"}\n' * 100, encoding="utf-8")
    with pytest.raises(DataError, match="the limit for a data file"):
        load_file_samples(path, limits=FileLimits(max_bytes=1000))


def test_an_over_long_column_name_is_refused_without_quoting_it(tmp_path: Path) -> None:
    path = tmp_path / "name.csv"
    path.write_text("prompt,answer," + "n" * 5000 + "\n1+1=,2,x\n", encoding="utf-8")
    with pytest.raises(DataError, match="column 3 has a name of 5,000 characters") as err:
        load_file_samples(path)
    assert "nnnn" not in str(err.value)


def test_a_parquet_file_with_too_many_columns_is_refused_from_its_footer(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{i}": [1] for i in range(300)} | {"prompt": ["1+1="], "answer": ["2"]}), path)
    with pytest.raises(DataError, match="more than 256 columns"):
        load_file_samples(path)


def test_a_row_report_keeps_the_first_hundred_problems_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "", "answer": "2"}\n' * 5000, encoding="utf-8")
    report = check_data_file(path)
    assert (len(report.problems), report.problem_count) == (100, 5000)
    summary = report.summary()
    assert "5000 of 5000 rows are invalid" in summary
    assert summary.endswith("... and 4980 more")
    assert len(summary) < 8 * 1024


def test_a_nul_character_in_a_prompt_is_refused_at_the_row_that_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "nul.jsonl"
    rows = [{"prompt": "1+1=", "answer": "2"}, {"prompt": "2+2=\u0000", "answer": "4"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    report = check_data_file(path)
    assert report.bad_rows == [2]
    assert "NUL" in report.problems[0].message
    with pytest.raises(DataError, match=r"line 2.*NUL"):
        load_file_samples(path)
