"""A file that is not a data file (a key file read as CSV or JSON) fails with its line number and what is
wrong, never with its text: any text file parses as a one-column CSV whose "column name" is line 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.data import load_file_samples
from trainer.data.row_check import check_data_file
from trainer.errors import DataError

SECRET_LINE = "-----BEGIN OPENSSH PRIVATE KEY-----"
SECRET_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    key = tmp_path / "id_key"
    key.write_text(f"{SECRET_LINE}\n{SECRET_BODY}\n{SECRET_BODY}\n-----END OPENSSH PRIVATE KEY-----\n")
    key.chmod(0o600)
    return key


def assert_secret_free(text: str) -> None:
    assert SECRET_LINE not in text and SECRET_BODY not in text and "OPENSSH" not in text


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json", "parquet"])
def test_loading_a_key_file_never_shows_its_text(key_file: Path, fmt: str) -> None:
    with pytest.raises(DataError) as err:
        load_file_samples(key_file, format=fmt)
    assert_secret_free(str(err.value))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_checking_every_row_of_a_key_file_never_shows_its_text(key_file: Path, fmt: str) -> None:
    report = check_data_file(key_file, format=fmt)
    assert not report.ok
    assert_secret_free(report.summary())
    assert all(p.message for p in report.problems)


def test_a_one_column_csv_says_how_many_columns_it_has_and_where(key_file: Path) -> None:
    with pytest.raises(
        DataError, match=r"line 2\): there is no 'prompt' field; the header \(line 1\) has 1 column"
    ):
        load_file_samples(key_file, format="csv")


def test_the_key_file_line_used_as_an_id_is_not_shown_when_it_repeats(key_file: Path) -> None:
    with pytest.raises(DataError) as err:  # the id column named after line 1: the body lines repeat
        load_file_samples(
            key_file, format="csv", prompt_field=SECRET_LINE, answer_field=None, id_field=SECRET_LINE
        )
    assert "its id is already used at row 1 (line 2)" in str(err.value)
    assert SECRET_BODY not in str(err.value)


def test_a_repeated_header_name_is_not_quoted(tmp_path: Path) -> None:
    path = tmp_path / "twice.csv"
    path.write_text(f"{SECRET_LINE},{SECRET_LINE}\na,b\n")
    with pytest.raises(DataError) as err:
        load_file_samples(path)
    assert "columns 1 and 2 of the header have the same name" in str(err.value)
    assert_secret_free(str(err.value))


def test_a_csv_table_still_lists_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    path.write_text("question,solution\n1+1,2\n")
    with pytest.raises(DataError, match="the columns are: question, solution"):
        load_file_samples(path)
