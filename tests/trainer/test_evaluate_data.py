"""Benchmark data: file import reports every bad row by number; MATH500 / GSM8K-style files evaluate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.trainer.eval_helpers import ScriptedEngine
from trainer.data.row_check import check_data_file
from trainer.errors import DataError
from trainer.evaluation.engine import evaluate, load_benchmark_samples
from trainer.evaluation.suite import resolve_benchmark

DATA = Path(__file__).resolve().parents[1] / "data"


def test_every_bad_row_is_reported_by_number():
    report = check_data_file(DATA / "bad_rows.jsonl", prompt_field="question")
    assert report.rows == 6
    assert report.bad_rows == [2, 3, 4, 6]
    messages = {p.row: p.message for p in report.problems}
    assert "'answer' field is missing" in messages[2]
    assert "not valid JSON" in messages[3]
    assert "'question' field is empty" in messages[4]
    assert "expected a JSON object" in messages[6]


def test_evaluating_a_file_with_bad_rows_names_them_all():
    config = resolve_benchmark(
        {
            "name": "bad",
            "data": {"source": "file", "path": str(DATA / "bad_rows.jsonl"), "prompt_field": "question"},
        }
    )
    with pytest.raises(DataError) as err:
        load_benchmark_samples(config)
    message = str(err.value)
    assert "4 of 6 rows are invalid" in message
    for row in ("row 2 (line 2)", "row 3 (line 3)", "row 4 (line 4)", "row 6 (line 6)"):
        assert row in message


def test_a_csv_row_with_too_many_cells_is_reported(tmp_path: Path):
    path = tmp_path / "rows.csv"
    path.write_text("prompt,answer\n1+1=,2\n2+2=,4,extra\n,6\n")
    report = check_data_file(path)
    assert [(p.row, p.where) for p in report.problems] == [(2, "row 2 (line 3)"), (3, "row 3 (line 4)")]
    assert "3 cells but the header names 2" in report.problems[0].message


def test_duplicate_ids_are_reported_with_the_first_use(tmp_path: Path):
    report = check_data_file(DATA / "duplicate_ids.jsonl", id_field="uid")
    assert report.bad_rows == [3]
    assert "already used at line 1" in report.problems[0].message


def test_a_valid_file_has_no_problems():
    report = check_data_file(DATA / "math500_style.jsonl", prompt_field="problem", id_field="unique_id")
    assert report.ok and report.rows == 5


def test_the_math500_style_benchmark_file_loads_with_its_relative_path():
    config = resolve_benchmark(str(DATA / "math500_style.yaml"))
    problems = load_benchmark_samples(config)
    assert [p.id for p in problems][:2] == ["algebra/1", "prealgebra/2"]
    assert problems[1].answer == "\\frac{3}{4}"
    assert config.pass_k == [1, 2, 4]


@pytest.mark.slow  # the math verifier starts its timeout-pool workers (a few seconds)
def test_math500_style_answers_are_verified_symbolically():
    config = resolve_benchmark(str(DATA / "math500_style.yaml"), n_samples=2, max_problems=2)
    problems = load_benchmark_samples(config)
    prompts = [config.data.prompt_template.format(prompt=p.prompt) for p in problems]
    engine = ScriptedEngine(
        {prompts[0]: ["x = \\boxed{4}", "\\boxed{5}"], prompts[1]: ["\\boxed{0.75}", "\\boxed{\\frac{6}{8}}"]}
    )
    result = evaluate(config, engine, samples=problems)
    assert [p.c for p in result.problems] == [1, 2]
    assert result.metrics["pass@2 (n=2)"] == 1.0


def test_a_gsm8k_style_file_evaluates_with_the_numeric_verifier():
    config = resolve_benchmark(
        {
            "name": "gsm8k-style",
            "data": {
                "source": "file",
                "path": str(DATA / "gsm8k_style.jsonl"),
                "prompt_field": "question",
                "answer_field": "final_answer",
            },
            "verifiers": [{"name": "numeric"}],
            "n_samples": 2,
        }
    )
    problems = load_benchmark_samples(config)
    script = {p.prompt: [f"So the answer is {p.answer}.", "I think 7"] for p in problems}
    result = evaluate(config, ScriptedEngine(script), samples=problems)
    assert result.metrics["pass@1 (n=2)"] == pytest.approx(0.5)
    assert result.metrics["maj@2"] == 1.0  # a 1-1 tie: the first answer (the right one) wins
