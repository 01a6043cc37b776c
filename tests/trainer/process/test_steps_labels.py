"""Step-labelled files in Math-Shepherd's and PRM800K's formats, read through the bounded reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.data.limits import FileLimits
from trainer.errors import DataError
from trainer.process.step_labels import StepExample, read_step_labels
from trainer.process.steps import MAX_STEPS


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


SHEPHERD_IN = "Janet has 3 apples and buys 2. How many? Step 1: 3+2=5 ки\nStep 2: She has 6. ки\nStep 3: The answer is 6 ки"
SHEPHERD_LABEL = SHEPHERD_IN.replace("ки", "+", 1).replace("ки", "-")


def test_math_shepherd_rows(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "ms.jsonl",
        [
            {"input": SHEPHERD_IN, "label": SHEPHERD_LABEL, "task": "GSM8K"},
            {"input": "no tags here", "label": "no tags here"},
            {"input": "Q? Step 1: x ки", "label": "Q? Step 1: x ?"},  # a label mark that is neither + nor -
        ],
    )
    got = read_step_labels(path, "math_shepherd")
    assert got.examples == [
        StepExample(
            "Janet has 3 apples and buys 2. How many?",
            ["Step 1: 3+2=5 ", "Step 2: She has 6. ", "Step 3: The answer is 6 "],
            [1.0, 0.0, 0.0],
        )
    ]
    assert got.skipped == 2 and got.first_problem is not None and "line 2" in got.first_problem


def _prm_row(ratings: list[int], chosen_last: int | None = 0) -> dict[str, object]:
    steps: list[dict[str, object]] = [
        {"completions": [{"text": f"step {i}", "rating": r}], "chosen_completion": 0}
        for i, r in enumerate(ratings)
    ]
    steps[-1]["chosen_completion"] = chosen_last
    steps[-1]["completions"] = [{"text": "fine", "rating": 1}, {"text": "bad", "rating": -1}]
    return {
        "question": {"problem": "What is 2+2?"},
        "label": {"steps": steps, "finish_reason": "found_error"},
    }


def test_prm800k_rows(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "prm.jsonl", [_prm_row([1, 0, 1], chosen_last=None), {"question": {}}])
    got = read_step_labels(path, "prm800k")
    assert got.examples == [StepExample("What is 2+2?", ["step 0", "step 1", "bad"], [1.0, 1.0, 0.0])]
    assert got.skipped == 1
    neutral_wrong = read_step_labels(path, "prm800k", neutral=0.0)
    assert neutral_wrong.examples[0].labels == [1.0, 0.0, 0.0]


def test_bounds(tmp_path: Path) -> None:
    long = _prm_row([1] * (MAX_STEPS + 10))
    path = _jsonl(tmp_path / "many.jsonl", [long] * 5)
    got = read_step_labels(path, "prm800k", max_examples=3)
    assert len(got.examples) == 3 and all(len(e.steps) == MAX_STEPS for e in got.examples)
    with pytest.raises(DataError):
        read_step_labels(path, "prm800k", limits=FileLimits(max_bytes=100))
    with pytest.raises(DataError, match="jsonl"):
        read_step_labels(tmp_path / "x.txt", "prm800k")
