"""Checking one annotator's scores against a task's criteria (a snapshot of the rubric's criteria)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from webapp.core.errors import InvalidInput


def criterion_snapshot(criterion: Any) -> dict[str, Any]:
    """The fields of a rubrics.Criterion an annotation task keeps (so later rubric edits change nothing)."""
    return {
        "id": criterion.pk,
        "name": criterion.name,
        "description": criterion.description,
        "scale": criterion.scale,
        "min_value": 0.0
        if criterion.scale == "binary"
        else 1.0
        if criterion.scale == "likert5"
        else criterion.min_value,
        "max_value": 1.0
        if criterion.scale == "binary"
        else 5.0
        if criterion.scale == "likert5"
        else criterion.max_value,
        "scorer": criterion.scorer,
        "weight": criterion.weight,
    }


def _score_error(value: Any, criterion: Mapping[str, Any]) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "Give a number."
    scale, low, high = criterion["scale"], criterion["min_value"], criterion["max_value"]
    if scale == "binary" and value not in (0, 1):
        return "This criterion is binary: score 0 (no) or 1 (yes)."
    if scale == "likert5" and (value != int(value) or not 1 <= value <= 5):
        return "This criterion is scored 1 to 5 (whole numbers)."
    if scale == "range" and not low <= value <= high:
        return f"Score between {low:g} and {high:g}."
    return None


def validated_scores(
    scores: Any, *, criteria: Sequence[Mapping[str, Any]], complete: bool
) -> dict[str, float]:
    """``scores`` (criterion name -> number) checked; ``complete`` also requires every criterion (submit).

    A None value clears that criterion (a draft may be partial)."""
    if not isinstance(scores, Mapping):
        raise InvalidInput(
            "scores: give an object of criterion name -> score.", {"scores": ["Expected an object."]}
        )
    by_name = {c["name"]: c for c in criteria}
    errors: dict[str, list[str]] = {}
    clean: dict[str, float] = {}
    for name, value in scores.items():
        if name not in by_name:
            errors[f"scores.{name}"] = [f"No such criterion; this task's criteria are {', '.join(by_name)}."]
        elif value is not None:
            problem = _score_error(value, by_name[name])
            if problem:
                errors[f"scores.{name}"] = [problem]
            else:
                clean[name] = float(value)
    if complete:
        for name in by_name:
            if name not in clean and f"scores.{name}" not in errors:
                errors[f"scores.{name}"] = ["Score this criterion before submitting (or skip the item)."]
    if errors:
        path, messages = next(iter(errors.items()))
        raise InvalidInput(f"{path}: {messages[0]}", errors)
    return clean
