"""Loading local JSONL / JSON / CSV / Parquet files into Samples (trainer/data/files.py)."""

import json
import socket
from pathlib import Path

import pytest

from trainer.data import load_file_samples
from trainer.samples import Sample


def test_it_loads_jsonl(data_dir: Path):
    samples = load_file_samples(data_dir / "addition.jsonl")
    assert samples[0] == Sample(id="row-1", prompt="12+30=", answer="42", meta={"difficulty": "easy"})
    assert [s.answer for s in samples] == ["42", "15", "100", "9"]


def test_it_loads_a_json_array_with_ids(data_dir: Path):
    samples = load_file_samples(data_dir / "addition.json", id_field="id")
    assert [(s.id, s.prompt, s.answer) for s in samples] == [
        ("a1", "12+30=", "42"),
        ("a2", "7+8=", "15"),
        ("a3", "2.5+1=", "3.5"),
    ]
    assert samples[0].meta == {}


def test_it_keeps_integer_answers_integer_next_to_decimal_ones(data_dir: Path):
    # Arrow alone would read the column [42, 15, 3.5] as floats and the first answer as "42.0".
    assert [s.answer for s in load_file_samples(data_dir / "addition.json")] == ["42", "15", "3.5"]


def test_it_loads_csv_cells_as_written(data_dir: Path):
    samples = load_file_samples(data_dir / "addition.csv")
    assert [s.answer for s in samples] == ["42", "015", "100", "NA"]
    assert samples[2].prompt == "Add these:\n55+45="
    assert samples[1].meta == {"note": "a leading zero stays"}


def test_it_loads_parquet(data_dir: Path):
    samples = load_file_samples(data_dir / "addition.parquet")
    assert [(s.prompt, s.answer, s.meta) for s in samples][-1] == ("55+45=", "100", {"source": "manual"})


def test_it_loads_a_gsm8k_style_file_with_other_field_names(data_dir: Path):
    samples = load_file_samples(data_dir / "gsm8k_sample.jsonl", prompt_field="question")
    assert len(samples) == 10
    assert samples[0].prompt.startswith("Mia has 4 boxes")
    assert samples[0].answer is not None and samples[0].answer.endswith("#### 39")


def test_it_loads_label_free_data_without_an_answer_column(tmp_path: Path):
    path = tmp_path / "unlabelled.jsonl"
    path.write_text('{"prompt": "Name a prime."}\n')
    assert load_file_samples(path, answer_field=None) == [Sample(id="row-1", prompt="Name a prime.")]


def test_it_reads_the_format_from_config_when_the_extension_says_nothing(tmp_path: Path):
    path = tmp_path / "data.txt"
    path.write_text('{"prompt": "1+1=", "answer": 2}\n')
    assert load_file_samples(path, format="jsonl")[0].answer == "2"


def test_it_reads_json_lines_saved_as_dot_json(tmp_path: Path):
    path = tmp_path / "lines.json"
    path.write_text('{"prompt": "1+1=", "answer": 2}\n{"prompt": "2+2=", "answer": 4}\n')
    assert [s.answer for s in load_file_samples(path)] == ["2", "4"]


def test_it_skips_blank_lines_in_jsonl(tmp_path: Path):
    path = tmp_path / "gaps.jsonl"
    path.write_text('{"prompt": "1+1=", "answer": 2}\n\n   \n{"prompt": "2+2=", "answer": 4}\n\n')
    assert [s.id for s in load_file_samples(path)] == ["row-1", "row-2"]


def test_it_keeps_nested_columns_as_json_values_in_meta(tmp_path: Path):
    path = tmp_path / "nested.jsonl"
    rows = [
        {"prompt": "p1", "answer": "a", "tests": [{"in": 1, "out": 2}], "tags": ["x"]},
        {"prompt": "p2", "answer": "b", "tests": {"in": 3}, "tags": None},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = load_file_samples(path)
    assert samples[0].meta == {"tests": [{"in": 1, "out": 2}], "tags": ["x"]}
    assert samples[1].meta == {"tests": {"in": 3}, "tags": None}
    json.dumps([s.meta for s in samples])  # meta must survive checkpoints and JSON columns


def test_it_turns_non_string_values_into_text(tmp_path: Path):
    path = tmp_path / "types.jsonl"
    path.write_text('{"prompt": 7, "answer": true, "id": 3}\n{"prompt": [1, 2], "answer": 1e-07, "id": 4}\n')
    samples = load_file_samples(path, id_field="id")
    assert [(s.id, s.prompt, s.answer) for s in samples] == [("3", "7", "true"), ("4", "[1, 2]", "1e-07")]


def test_it_loads_files_without_touching_the_network(data_dir: Path, monkeypatch: pytest.MonkeyPatch):
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("data loading tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for name in ("addition.jsonl", "addition.json", "addition.csv", "addition.parquet"):
        assert load_file_samples(data_dir / name)


def test_it_leaves_no_cache_next_to_the_data(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"prompt": "1+1=", "answer": 2}\n')
    load_file_samples(path)
    assert [p.name for p in tmp_path.iterdir()] == ["a.jsonl"]
