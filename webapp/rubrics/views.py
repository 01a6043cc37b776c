"""Rubric pages: a project's rubrics, one rubric, and the create/edit form (static/js/rubrics_form.js)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from trainer.rubrics.config import DEFAULT_JUDGE_TEMPLATE, DEFAULT_PARSE_PATTERN
from trainer.rubrics.rules import RULES
from webapp.core.errors import ApplicationError
from webapp.pages.views_common import report_error, role_context
from webapp.rubrics.models import Aggregation, Rubric, Scale, Scorer
from webapp.rubrics.selectors import rubric_get_for_user, rubric_to_config, rubrics_for_project
from webapp.rubrics.serializers import CriterionOut
from webapp.rubrics.services import EDIT_RUBRICS, rubric_delete
from webapp.teams.models import Project
from webapp.teams.permissions import require_role
from webapp.teams.selectors import project_get_for_user

# Starting parameters the form offers for each rule type (the user edits them as JSON).
RULE_EXAMPLES: dict[str, dict[str, Any]] = {
    "regex": {"pattern": "\\\\boxed\\{.+\\}", "mode": "search", "ignore_case": False},
    "length": {"unit": "words", "min": 1, "max": 200},
    "format": {"kind": "think_answer"},
    "json_schema": {"schema": {"type": "object", "required": ["answer"]}},
    "verifier": {"name": "math", "params": {}},
}


@login_required
def rubric_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    context = {
        "project": project,
        "rubrics": rubrics_for_project(project=project),
        **role_context(project=project, request=request),
    }
    return render(request, "rubrics/rubric_list.html", context)


@login_required
def rubric_detail(request: HttpRequest, rubric_id: int) -> HttpResponse:
    rubric = rubric_get_for_user(rubric_id=rubric_id, user=request.user)
    context = {
        "project": rubric.project,
        "rubric": rubric,
        "criteria": [(c, json.dumps(c.rule.get("params", {}))) for c in rubric.criteria.all()],
        "config_json": json.dumps(rubric_to_config(rubric), indent=2),
        **role_context(project=rubric.project, request=request),
    }
    return render(request, "rubrics/rubric_detail.html", context)


def _form_page(request: HttpRequest, *, project: Project, rubric: Rubric | None) -> HttpResponse:
    require_role(project=project, user=request.user, minimum=EDIT_RUBRICS)
    page_data = {
        "submitUrl": f"/api/rubrics/{rubric.pk}/" if rubric else f"/api/projects/{project.pk}/rubrics/",
        "method": "PUT" if rubric else "POST",
        "rubric": {
            "name": rubric.name,
            "description": rubric.description,
            "aggregation": rubric.aggregation,
            "criteria": CriterionOut(rubric.criteria.all(), many=True).data,
        }
        if rubric
        else None,
        "scales": Scale.choices,
        "scorers": Scorer.choices,
        "aggregations": Aggregation.choices,
        "ruleTypes": RULES.names(),
        "ruleExamples": RULE_EXAMPLES,
        "judgeDefaults": {"prompt_template": DEFAULT_JUDGE_TEMPLATE, "parse_pattern": DEFAULT_PARSE_PATTERN},
    }
    context = {
        "project": project,
        "rubric": rubric,
        "page_data": page_data,
        **role_context(project=project, request=request),
    }
    return render(request, "rubrics/rubric_form.html", context)


@login_required
def rubric_new(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    return _form_page(request, project=project, rubric=None)


@login_required
def rubric_edit(request: HttpRequest, rubric_id: int) -> HttpResponse:
    rubric = rubric_get_for_user(rubric_id=rubric_id, user=request.user)
    return _form_page(request, project=rubric.project, rubric=rubric)


@login_required
@require_POST
def rubric_remove(request: HttpRequest, rubric_id: int) -> HttpResponse:
    rubric = rubric_get_for_user(rubric_id=rubric_id, user=request.user)
    try:
        rubric_delete(rubric=rubric, actor=request.user)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
        return redirect("rubrics:detail", rubric_id=rubric.pk)
    return redirect("rubrics:list", project_id=rubric.project_id)
