"""Writes for rubrics: create, replace (name, aggregation and the whole criteria list) and delete.

Admins and owners edit; every criterion is validated with the trainer's schema (webapp/rubrics/validation.py)
before anything is written, and the criteria list is replaced in one transaction, in the given order.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from webapp.core.errors import InvalidInput
from webapp.rubrics.models import Criterion, Rubric
from webapp.rubrics.validation import clean_rubric
from webapp.teams.models import Project
from webapp.teams.permissions import EDIT_EXPERIMENTS, require_role
from webapp.teams.selectors import AnyUser

EDIT_RUBRICS = EDIT_EXPERIMENTS  # admins and owners; viewers and annotators read

CRITERION_FIELDS = (
    "name",
    "description",
    "scale",
    "min_value",
    "max_value",
    "weight",
    "scorer",
    "rule",
    "judge",
)


def _check_name_free(*, project: Project, name: str, exclude: int | None = None) -> None:
    taken = Rubric.objects.filter(project=project, name=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        message = f"A rubric named {name!r} exists in this project; pick another name."
        raise InvalidInput(message, {"name": [message]})


def _write_criteria(rubric: Rubric, criteria: list[dict[str, Any]]) -> None:
    rubric.criteria.all().delete()
    Criterion.objects.bulk_create(
        Criterion(rubric=rubric, position=i, **{k: c[k] for k in CRITERION_FIELDS if k in c})
        for i, c in enumerate(criteria)
    )


def rubric_create(
    *,
    project: Project,
    actor: AnyUser,
    name: str,
    description: str = "",
    aggregation: str = "weighted_sum",
    criteria: list[dict[str, Any]],
) -> Rubric:
    require_role(project=project, user=actor, minimum=EDIT_RUBRICS)
    name = name.strip()
    cleaned = clean_rubric(name=name, aggregation=aggregation, criteria=criteria)
    _check_name_free(project=project, name=name)
    with transaction.atomic():
        rubric = Rubric.objects.create(
            project=project,
            name=name,
            description=description,
            aggregation=aggregation,
            created_by=actor if actor.is_authenticated else None,
        )
        _write_criteria(rubric, cleaned)
    return rubric


def rubric_update(
    *,
    rubric: Rubric,
    actor: AnyUser,
    name: str,
    description: str = "",
    aggregation: str = "weighted_sum",
    criteria: list[dict[str, Any]],
) -> Rubric:
    """Replace the rubric's fields and its whole criteria list (in the given order)."""
    require_role(project=rubric.project, user=actor, minimum=EDIT_RUBRICS)
    name = name.strip()
    cleaned = clean_rubric(name=name, aggregation=aggregation, criteria=criteria)
    _check_name_free(project=rubric.project, name=name, exclude=rubric.pk)
    with transaction.atomic():
        rubric.name, rubric.description, rubric.aggregation = name, description, aggregation
        rubric.save(update_fields=["name", "description", "aggregation", "updated_at"])
        _write_criteria(rubric, cleaned)
    return rubric


def rubric_delete(*, rubric: Rubric, actor: AnyUser) -> None:
    require_role(project=rubric.project, user=actor, minimum=EDIT_RUBRICS)
    rubric.delete()
