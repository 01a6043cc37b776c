"""Verifier pages: list per project, definition detail (versions, test cases, bench), edit form, version page.

Forms post here and call services (errors become messages); the test bench runs through the API from
static/js/verification.js, which also starts audit and rescore jobs and polls them. Viewers read (and use
the bench, audit and rescore); admins and owners edit; outsiders get 404.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from trainer.bounds import UnsafeInput, strict_json_loads
from webapp.core.errors import ApplicationError
from webapp.experiments.selectors import runs_for_project
from webapp.pages.views_common import report_error, role_context
from webapp.teams.permissions import require_role
from webapp.teams.selectors import project_get_for_user
from webapp.verification.job_services import RESCORE_CAP
from webapp.verification.models import JobKind, VerificationJob
from webapp.verification.selectors import (
    definition_get_for_user,
    definitions_for_project,
    latest_job,
    latest_version,
    registry_schema,
    test_case_get_for_user,
    test_cases_for_definition,
    version_get_for_user,
    versions_for_definition,
)
from webapp.verification.services import (
    EDIT_VERIFIERS,
    verifier_definition_create,
    verifier_test_case_create,
    verifier_test_case_delete,
    verifier_version_create,
)

RUNS_OFFERED = 50  # newest runs offered for a rescore


class _BadJson(ApplicationError):
    pass


def _params(text: str) -> Any:
    try:
        return strict_json_loads(text) if text.strip() else {}  # no NaN, NUL or deep nesting
    except json.JSONDecodeError as err:
        raise _BadJson(
            f"Params are not valid JSON ({err.msg} at line {err.lineno}): write an object such as {{}}."
        ) from None
    except UnsafeInput as err:
        raise _BadJson(f"Params: {err}") from None


def _registry_context() -> dict[str, Any]:
    """The verifier choices, and their schemas for the page script (shown as parameter help)."""
    registry = registry_schema()
    return {"registry": registry, "registry_data": {item["name"]: item for item in registry}}


@login_required
def verifier_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    form = {"name": "", "description": "", "verifier": "math", "params": "{}"}
    if request.method == "POST":
        form = {k: request.POST.get(k, v) for k, v in form.items()}
        try:
            definition = verifier_definition_create(
                project=project, actor=request.user, name=form["name"], description=form["description"],
                verifier=form["verifier"], params=_params(form["params"]),
            )  # fmt: skip
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("verification:detail", definition_id=definition.pk)
    context = {
        "project": project,
        "definitions": definitions_for_project(project=project),
        "form": form,
        **_registry_context(),
        **role_context(project=project, request=request),
    }
    return render(request, "verification/list.html", context)


@login_required
def verifier_detail(request: HttpRequest, definition_id: int) -> HttpResponse:
    definition = definition_get_for_user(definition_id=definition_id, user=request.user)
    latest = latest_version(definition=definition)
    results = {r["case"]: r for r in (latest.test_results if latest else [])}
    context = {
        "project": definition.project,
        "definition": definition,
        "version_rows": [
            (v, json.dumps(v.params, sort_keys=True)) for v in versions_for_definition(definition=definition)
        ],
        "latest": latest,
        "case_rows": [
            (case, results.get(case.pk)) for case in test_cases_for_definition(definition=definition)
        ],
        "page_data": {"version_id": latest.pk if latest else None},
        **role_context(project=definition.project, request=request),
    }
    return render(request, "verification/detail.html", context)


@login_required
def verifier_edit(request: HttpRequest, definition_id: int) -> HttpResponse:
    """The edit form: saving creates a new version (the old ones stay as they were)."""
    definition = definition_get_for_user(definition_id=definition_id, user=request.user)
    require_role(project=definition.project, user=request.user, minimum=EDIT_VERIFIERS)
    latest = latest_version(definition=definition)
    form = {
        "verifier": latest.verifier if latest else "math",
        "params": json.dumps(latest.params if latest else {}, indent=2),
        "note": "",
    }
    if request.method == "POST":
        form = {k: request.POST.get(k, v) for k, v in form.items()}
        try:
            verifier_version_create(
                definition=definition, actor=request.user, verifier=form["verifier"],
                params=_params(form["params"]), note=form["note"],
            )  # fmt: skip
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("verification:detail", definition_id=definition.pk)
    context = {
        "project": definition.project,
        "definition": definition,
        "latest": latest,
        "form": form,
        **_registry_context(),
        **role_context(project=definition.project, request=request),
    }
    return render(request, "verification/edit.html", context)


@login_required
@require_POST
def case_add(request: HttpRequest, definition_id: int) -> HttpResponse:
    definition = definition_get_for_user(definition_id=definition_id, user=request.user)
    reference = request.POST.get("reference", "")
    try:
        verifier_test_case_create(
            definition=definition, actor=request.user, name=request.POST.get("name", ""),
            completion=request.POST.get("completion", ""),
            reference=None if request.POST.get("no_reference") else reference,
            expected_correct=request.POST.get("expected") == "accept",
        )  # fmt: skip
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("verification:detail", definition_id=definition.pk)


@login_required
@require_POST
def case_delete(request: HttpRequest, case_id: int) -> HttpResponse:
    case = test_case_get_for_user(case_id=case_id, user=request.user)
    definition_id = case.definition_id
    try:
        verifier_test_case_delete(case=case, actor=request.user)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("verification:detail", definition_id=definition_id)


@login_required
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = version_get_for_user(version_id=version_id, user=request.user)
    project = version.definition.project
    context = {
        "project": project,
        "definition": version.definition,
        "version": version,
        "params_json": json.dumps(version.params, indent=2),
        "config_entry_json": json.dumps(version.config_entry, indent=2),
        "used_by": version.runs.select_related("experiment").order_by("-id")[:20],
        "runs": runs_for_project(project=project).select_related("experiment").order_by("-id")[:RUNS_OFFERED],
        "rescore_cap": RESCORE_CAP,
        # The newest audit and rescore jobs: the page shows their progress or result again when reopened.
        "page_data": {
            "version_id": version.pk,
            "audit_job": _job_id(latest_job(version=version, kind=JobKind.AUDIT)),
            "rescore_job": _job_id(latest_job(version=version, kind=JobKind.RESCORE)),
        },
        **role_context(project=project, request=request),
    }
    return render(request, "verification/version.html", context)


def _job_id(job: VerificationJob | None) -> int | None:
    return None if job is None else job.pk
