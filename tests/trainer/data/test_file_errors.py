"""Bad data files fail with a DataError that names the file, the line or row, and the field to fix."""

from pathlib import Path

import pytest

from trainer.data import load_file_samples
from trainer.errors import DataError


def test_it_names_the_path_of_a_missing_file(tmp_path: Path):
    with pytest.raises(DataError, match=r"nowhere\.jsonl does not exist"):
        load_file_samples(tmp_path / "nowhere.jsonl")


def test_it_says_where_a_relative_path_was_looked_for():
    with pytest.raises(DataError, match="from the working directory"):
        load_file_samples("no/such/file.jsonl")


def test_it_refuses_a_directory(tmp_path: Path):
    with pytest.raises(DataError, match="not a regular file"):
        load_file_samples(tmp_path)


def test_it_refuses_an_unknown_extension(tmp_path: Path):
    path = tmp_path / "data.xml"
    path.write_text("<rows/>")
    with pytest.raises(DataError, match=r"extension '\.xml'.*\.jsonl.*set data\.format"):
        load_file_samples(path)


def test_it_refuses_an_unknown_format_name(data_dir: Path):
    with pytest.raises(DataError, match="unknown data format 'xml'"):
        load_file_samples(data_dir / "addition.jsonl", format="xml")


def test_it_names_the_line_of_malformed_jsonl(data_dir: Path):
    with pytest.raises(DataError, match=r"malformed_line\.jsonl, line 3: not valid JSON"):
        load_file_samples(data_dir / "malformed_line.jsonl")


def test_it_counts_blank_lines_when_naming_a_malformed_line(tmp_path: Path):
    path = tmp_path / "gaps.jsonl"
    path.write_text('{"prompt": "a", "answer": 1}\n\n{"prompt": "b", "answer": 2\n')
    with pytest.raises(DataError, match=r"gaps\.jsonl, line 3: not valid JSON"):
        load_file_samples(path)


def test_it_refuses_a_jsonl_line_that_is_not_an_object(tmp_path: Path):
    path = tmp_path / "list.jsonl"
    path.write_text('{"prompt": "a", "answer": 1}\n[1, 2]\n')
    with pytest.raises(DataError, match="line 2: expected a JSON object"):
        load_file_samples(path)


def test_it_names_the_line_of_malformed_json(tmp_path: Path):
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"prompt": "a", "answer": 1},\n  {"prompt": "b" "answer": 2}\n]\n')
    with pytest.raises(DataError, match=r"broken\.json, line 3: not valid JSON"):
        load_file_samples(path)


def test_it_refuses_a_json_object_at_the_top_level(tmp_path: Path):
    path = tmp_path / "wrapped.json"
    path.write_text('{\n  "data": [{"prompt": "a", "answer": 1}]\n}\n')
    with pytest.raises(DataError, match="expected a JSON array of objects"):
        load_file_samples(path)


def test_it_names_the_row_with_the_missing_field(data_dir: Path):
    with pytest.raises(DataError) as err:
        load_file_samples(data_dir / "missing_answer.jsonl")
    message = str(err.value)
    assert "missing_answer.jsonl, line 3" in message
    assert "'answer'" in message


def test_it_lists_the_columns_when_a_field_does_not_exist(data_dir: Path):
    with pytest.raises(DataError) as err:
        load_file_samples(data_dir / "addition.jsonl", prompt_field="question")
    message = str(err.value)
    assert "addition.jsonl, line 1: there is no 'question' field" in message
    assert "the columns are: prompt, answer, difficulty" in message
    assert "data.prompt_field" in message


def test_it_suggests_null_when_the_answer_column_is_missing(tmp_path: Path):
    path = tmp_path / "unlabelled.jsonl"
    path.write_text('{"prompt": "Name a prime."}\n')
    with pytest.raises(DataError, match=r"set data\.answer_field to null"):
        load_file_samples(path)


def test_it_names_the_row_with_an_empty_prompt(data_dir: Path):
    with pytest.raises(DataError, match=r"empty_prompt\.csv, row 3 \(line 4\): the 'prompt' field is empty"):
        load_file_samples(data_dir / "empty_prompt.csv")


def test_it_refuses_a_whitespace_only_prompt(tmp_path: Path):
    path = tmp_path / "blank.jsonl"
    path.write_text('{"prompt": "   ", "answer": 1}\n')
    with pytest.raises(DataError, match="line 1: the 'prompt' field is empty"):
        load_file_samples(path)


def test_it_counts_csv_lines_across_quoted_newlines(tmp_path: Path):
    path = tmp_path / "multi.csv"
    path.write_text('prompt,answer\n"two\nlines",1\n"",2\n')
    with pytest.raises(DataError, match=r"row 2 \(line 4\)"):
        load_file_samples(path)


def test_it_names_both_rows_of_a_duplicate_id(data_dir: Path):
    with pytest.raises(DataError, match="line 3: id 'p1' is already used at line 1"):
        load_file_samples(data_dir / "duplicate_ids.jsonl", id_field="uid")


def test_it_refuses_an_empty_file(tmp_path: Path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(DataError, match="has no rows"):
        load_file_samples(path)


def test_it_refuses_a_csv_without_a_header(tmp_path: Path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(DataError, match="needs a header row"):
        load_file_samples(path)


def test_it_refuses_a_csv_header_with_a_repeated_column(tmp_path: Path):
    path = tmp_path / "twice.csv"
    path.write_text("prompt,answer,prompt\na,1,b\n")
    with pytest.raises(DataError, match="columns 1 and 3 of the header have the same name"):
        load_file_samples(path)


def test_it_explains_a_csv_row_with_too_many_cells(tmp_path: Path):
    path = tmp_path / "wide.csv"
    path.write_text("prompt,answer\na,1\nb,2,3\n")
    with pytest.raises(DataError, match=r"wide\.csv could not be read as CSV: .*fields"):
        load_file_samples(path)


def test_it_explains_a_file_that_is_not_parquet(tmp_path: Path):
    path = tmp_path / "fake.parquet"
    path.write_text("not parquet at all")
    with pytest.raises(DataError, match=r"fake\.parquet could not be read as PARQUET: .*"):
        load_file_samples(path)


def test_it_refuses_text_that_is_not_utf8(tmp_path: Path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"prompt": "café", "answer": 1}\n'.encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8"):
        load_file_samples(path)


def test_it_refuses_a_csv_with_only_a_header(tmp_path: Path):
    path = tmp_path / "header.csv"
    path.write_text("prompt,answer\n")
    with pytest.raises(DataError, match="has no rows"):
        load_file_samples(path)
