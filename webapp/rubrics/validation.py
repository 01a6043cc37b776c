"""Validate rubric input with the trainer's own criterion schema, reporting each error at its field.

``trainer.rubrics.config`` and ``trainer.rubrics.rules`` are torch-free, so the web process checks a
criterion with exactly the models a training run will use. Errors are keyed like the API's
``extra.fields``: ``criteria.<i>.<field>`` (``criteria.0.rule``, ``criteria.2.max_value``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from trainer.errors import RLVRError
from trainer.rubrics.aggregators import AGGREGATORS
from trainer.rubrics.config import CriterionSpec, JudgeSpec
from trainer.rubrics.rules import build_rule
from webapp.core.errors import InvalidInput

Errors = dict[str, list[str]]
SCALE_BOUNDS = {"binary": (0.0, 1.0), "likert5": (1.0, 5.0)}


def _pydantic_errors(err: ValidationError, prefix: str) -> Errors:
    fields: Errors = {}
    for e in err.errors():
        path = ".".join([prefix, *(str(p) for p in e["loc"])])
        fields.setdefault(path, []).append(e["msg"].removeprefix("Value error, "))
    return fields


def _check_rule(rule: Any, prefix: str) -> Errors:
    if not isinstance(rule, dict) or not rule.get("type"):
        return {f"{prefix}.rule": ["Choose a rule type (regex, length, format, json_schema or verifier)."]}
    params = rule.get("params", {})
    if not isinstance(params, dict):
        return {f"{prefix}.rule": ["The rule's parameters must be a JSON object."]}
    try:
        build_rule(str(rule["type"]), params)
    except RLVRError as err:
        return {f"{prefix}.rule": [str(err)]}
    return {}


def _check_judge(judge: Any, prefix: str) -> Errors:
    if not isinstance(judge, dict):
        return {
            f"{prefix}.judge": [
                "The judge settings must be an object with prompt_template and parse_pattern."
            ]
        }
    try:
        JudgeSpec.model_validate(judge)
    except ValidationError as err:
        return {f"{prefix}.judge": [m for ms in _pydantic_errors(err, "").values() for m in ms]}
    return {}


def clean_criterion(data: dict[str, Any], index: int) -> tuple[dict[str, Any], Errors]:
    """The criterion as stored (scale bounds fixed, unused scorer settings dropped) and its errors."""
    prefix = f"criteria.{index}"
    clean = dict(data)
    scorer, scale = clean.get("scorer", "rule"), clean.get("scale", "binary")
    if scale in SCALE_BOUNDS:
        clean["min_value"], clean["max_value"] = SCALE_BOUNDS[scale]
    clean["rule"] = (clean.get("rule") or {}) if scorer == "rule" else {}
    clean["judge"] = (clean.get("judge") or {}) if scorer == "judge" else {}
    errors: Errors = {}
    if scorer == "rule":
        errors.update(_check_rule(clean["rule"], prefix))
        if isinstance(clean["rule"], dict):
            clean["rule"] = {"type": clean["rule"].get("type", ""), "params": clean["rule"].get("params", {})}
    elif scorer == "judge":
        errors.update(_check_judge(clean["judge"], prefix))
    spec = {k: v for k, v in clean.items() if k not in ("rule", "judge")}
    if scorer == "rule" and not errors:
        spec["rule"] = clean["rule"]
    try:
        CriterionSpec.model_validate(spec)
    except ValidationError as err:
        for path, messages in _pydantic_errors(err, prefix).items():
            if path == prefix:  # a whole-criterion check: point at the field it names
                path = f"{prefix}.max_value" if "max_value" in messages[0] else prefix
                if "no 'rule'" in messages[0]:
                    continue  # reported above, at criteria.<i>.rule
            errors.setdefault(path, []).extend(messages)
    return clean, errors


def clean_rubric(*, name: str, aggregation: str, criteria: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cleaned criteria, or InvalidInput with every problem at its field."""
    errors: Errors = {}
    if not name.strip():
        errors["name"] = ["Give the rubric a name."]
    if aggregation not in AGGREGATORS:
        errors["aggregation"] = [
            f"Unknown aggregation {aggregation!r}; valid: {', '.join(AGGREGATORS.names())}."
        ]
    if not criteria:
        errors["criteria"] = ["Add at least one criterion."]
    cleaned = []
    seen: dict[str, int] = {}
    for index, data in enumerate(criteria):
        clean, criterion_errors = clean_criterion(data, index)
        errors.update(criterion_errors)
        key = str(clean.get("name", "")).strip()
        if key in seen:
            errors.setdefault(f"criteria.{index}.name", []).append(
                f"Criterion {index + 1} has the same name as criterion {seen[key] + 1}; names must be unique."
            )
        seen.setdefault(key, index)
        cleaned.append(clean)
    if errors:
        first_path, first = next(iter(errors.items()))
        more = len(errors) - 1
        raise InvalidInput(
            f"Invalid rubric: {first_path}: {first[0]}" + (f" (and {more} more)" if more else ""), errors
        )
    return cleaned
