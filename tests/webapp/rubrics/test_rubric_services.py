"""Creating and replacing rubrics: validation with the trainer's schema, order, and the trainer config section."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from trainer.config import config_from_dict
from webapp.core.errors import InvalidInput
from webapp.rubrics.selectors import rubric_to_config
from webapp.rubrics.services import rubric_create, rubric_update
from webapp.teams.models import Project


def create(project: Project, user: User, payload: dict[str, Any]) -> Any:
    return rubric_create(project=project, actor=user, **payload)


def test_a_rubric_keeps_its_criteria_in_order_with_fixed_scale_bounds(
    project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    rubric = create(project, alice, rubric_payload)
    criteria = list(rubric.criteria.all())
    assert [c.name for c in criteria] == ["correct", "boxed", "clarity", "tone"]
    assert [c.position for c in criteria] == [0, 1, 2, 3]
    assert (criteria[2].min_value, criteria[2].max_value) == (1.0, 5.0)
    assert criteria[0].judge == {} and criteria[2].rule == {}


def test_rubric_to_config_is_a_valid_trainer_rubric_section(
    project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    section = rubric_to_config(
        create(project, alice, rubric_payload), judge_model={"name_or_path": "tiny:addition"}
    )
    cfg = config_from_dict({"rubric": section})
    assert cfg.rubric is not None and cfg.rubric.aggregation == "rank"
    assert [c.name for c in cfg.rubric.trained_criteria] == ["correct", "boxed", "clarity"]
    assert cfg.rubric.criteria[2].judge is not None
    assert cfg.rubric.criteria[2].judge.parse_pattern == r"(\d)"


def test_an_update_replaces_and_reorders_the_criteria(
    project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    rubric = create(project, alice, rubric_payload)
    criteria = list(reversed(rubric_payload["criteria"][:2]))
    rubric_update(rubric=rubric, actor=alice, name="Renamed", aggregation="weighted_sum", criteria=criteria)
    rubric.refresh_from_db()
    assert rubric.name == "Renamed" and [c.name for c in rubric.criteria.all()] == ["boxed", "correct"]


@pytest.mark.parametrize(
    ("criterion", "field", "message"),
    [
        (
            {"name": "r", "scorer": "rule", "rule": {"type": "regex", "params": {"pattern": "("}}},
            "rule",
            "not a valid regular expression",
        ),
        ({"name": "r", "scorer": "rule", "rule": {"type": "nope"}}, "rule", "valid names are"),
        ({"name": "r", "scorer": "rule", "rule": None}, "rule", "Choose a rule type"),
        (
            {"name": "j", "scorer": "judge", "judge": {"prompt_template": "{prompt}"}},
            "judge",
            "must contain {completion}",
        ),
        (
            {"name": "x", "scorer": "human", "scale": "range", "min_value": 5, "max_value": 1},
            "max_value",
            "must be greater",
        ),
        ({"name": "x", "scorer": "human", "weight": -1}, "weight", "greater than or equal to 0"),
        ({"name": "", "scorer": "human"}, "name", "at least 1 character"),
    ],
)
def test_a_bad_criterion_is_reported_at_its_field(
    project: Project, alice: User, criterion: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        rubric_create(
            project=project, actor=alice, name="r", criteria=[{"name": "ok", "scorer": "human"}, criterion]
        )
    messages = err.value.fields[f"criteria.1.{field}"]
    assert any(message in m for m in messages), messages


def test_duplicate_criterion_names_and_rubric_names_are_refused(
    project: Project, alice: User, rubric_payload: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput) as err:
        rubric_create(project=project, actor=alice, name="d", criteria=[{"name": "a", "scorer": "human"}] * 2)
    assert "criteria.1.name" in err.value.fields
    create(project, alice, rubric_payload)
    with pytest.raises(InvalidInput, match="exists in this project"):
        create(project, alice, rubric_payload)


def test_a_rubric_needs_a_criterion(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        rubric_create(project=project, actor=alice, name="empty", criteria=[])
    assert err.value.fields["criteria"] == ["Add at least one criterion."]
