"""Reads for rubrics: a project's rubrics, one rubric, and the trainer's ``rubric`` config section for it."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from django.http import Http404

from webapp.rubrics.models import Criterion, Rubric
from webapp.teams.models import Project
from webapp.teams.permissions import READ, require_role
from webapp.teams.selectors import AnyUser


def rubrics_for_project(*, project: Project) -> QuerySet[Rubric]:
    return Rubric.objects.filter(project=project).annotate(criteria_count=Count("criteria"))


def rubric_get_for_user(*, rubric_id: int, user: AnyUser) -> Rubric:
    """The rubric with its criteria, for any member of its project; 404 for outsiders and unknown ids."""
    rubric = (
        Rubric.objects.select_related("project").prefetch_related("criteria").filter(pk=rubric_id).first()
    )
    if rubric is None:
        raise Http404("No such rubric.")
    require_role(project=rubric.project, user=user, minimum=READ)
    return rubric


def criterion_to_config(criterion: Criterion) -> dict[str, Any]:
    """One criterion as a ``trainer.rubrics.config.CriterionSpec`` dict."""
    spec: dict[str, Any] = {
        "name": criterion.name,
        "description": criterion.description,
        "scale": criterion.scale,
        "min_value": criterion.min_value,
        "max_value": criterion.max_value,
        "weight": criterion.weight,
        "scorer": criterion.scorer,
        "rule": None,
        "judge": None,
    }
    if criterion.scorer == "rule":
        spec["rule"] = {"type": criterion.rule.get("type", ""), "params": criterion.rule.get("params", {})}
    elif criterion.scorer == "judge":
        spec["judge"] = {
            k: v for k, v in criterion.judge.items() if k in ("prompt_template", "parse_pattern")
        }
    return spec


def rubric_to_config(rubric: Rubric, *, judge_model: dict[str, Any] | None = None) -> dict[str, Any]:
    """The trainer config's ``rubric`` section (``trainer.rubrics.config.RubricConfig``) for this rubric.

    ``judge_model`` overrides the judge model settings (default: the trainer's defaults). Human-only
    criteria are included (the trainer skips them in the reward); the result is not validated here:
    validate it as part of the experiment config (webapp/experiments/config_validation.py).
    """
    section: dict[str, Any] = {
        "name": rubric.name,
        "aggregation": rubric.aggregation,
        "criteria": [criterion_to_config(c) for c in rubric.criteria.all()],
    }
    if judge_model:
        section["judge_model"] = dict(judge_model)
    return section
