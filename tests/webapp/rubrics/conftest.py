"""Rubric payloads shared by the rubric tests (people and the project come from tests/webapp/conftest.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

RUBRIC: dict[str, Any] = {
    "name": "Helpful maths",
    "description": "Correct, boxed and clear.",
    "aggregation": "rank",
    "criteria": [
        {"name": "correct", "scorer": "rule", "rule": {"type": "verifier", "params": {"name": "exact"}}},
        {
            "name": "boxed",
            "scorer": "rule",
            "weight": 0.5,
            "rule": {"type": "format", "params": {"kind": "boxed"}},
        },
        {
            "name": "clarity",
            "scale": "likert5",
            "scorer": "judge",
            "judge": {
                "prompt_template": "Rate {completion} from {min} to {max}. Score:",
                "parse_pattern": r"(\d)",
            },
        },
        {"name": "tone", "scale": "likert5", "scorer": "human", "description": "Friendly?"},
    ],
}


@pytest.fixture
def rubric_payload() -> dict[str, Any]:
    return copy.deepcopy(RUBRIC)
