"""Reward model pages: list per project, a reward model (versions, new scalar, judge or process reward model
version), a version (its config entry as YAML), and the project's Secrets page (names and dates; a write-only form).

Forms post here and call services (errors become messages that never hold a secret's value). Every member
reads; admins and owners write; outsiders get 404.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from trainer.bounds import UnsafeInput, strict_json_loads
from trainer.verifiers.secrets import looks_like_a_key
from webapp.core.errors import ApplicationError
from webapp.pages.views_common import report_error, role_context
from webapp.rewards.models import SourceKind
from webapp.rewards.secrets import NAME_RULE
from webapp.rewards.selectors import (
    reward_model_get_for_user,
    reward_model_is_process,
    reward_models_for_project,
    secret_names,
    secrets_for_project,
    version_get_for_user,
    version_made_from,
    versions_for_reward_model,
)
from webapp.rewards.services import (
    project_secret_delete,
    project_secret_set,
    reward_model_create,
    version_create_judge,
    version_create_prm,
    version_create_scalar,
)
from webapp.teams.selectors import project_get_for_user

MAX_FORM_JSON_CHARS = 100_000


class _BadJson(ApplicationError):
    pass


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        value = strict_json_loads(text) if text.strip() else {}  # no NaN, NUL or deep nesting
    except json.JSONDecodeError as err:
        raise _BadJson(
            f"{what} is not valid JSON ({err.msg} at line {err.lineno}): write an object such as {{}}."
        ) from None
    except UnsafeInput as err:
        raise _BadJson(f"{what}: {err}") from None
    if not isinstance(value, dict):
        raise _BadJson(f"{what} must be a JSON object such as {{}}.")
    return value


@login_required
def reward_model_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    form = {"name": "", "description": ""}
    if request.method == "POST":
        form = {k: request.POST.get(k, v)[:5000] for k, v in form.items()}
        try:
            reward_model = reward_model_create(project=project, actor=request.user, **form)
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("rewards:detail", reward_model_id=reward_model.pk)
    context = {
        "project": project,
        "reward_models": reward_models_for_project(project=project),
        "form": form,
        **role_context(project=project, request=request),
    }
    return render(request, "rewards/list.html", context)


@login_required
def reward_model_detail(request: HttpRequest, reward_model_id: int) -> HttpResponse:
    reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
    project = reward_model.project
    scalar = {"model": "", "params": "{}", "note": ""}
    prm = dict(scalar)
    judge = {"base_url": "", "model": "", "api_key_secret": "", "parse_kind": "score", "prompt_template": "",
             "params": "{}", "note": ""}  # fmt: skip
    if request.method == "POST":
        try:
            if request.POST.get("kind") == SourceKind.JUDGE:
                judge = {k: request.POST.get(k, v)[:MAX_FORM_JSON_CHARS] for k, v in judge.items()}
                version = version_create_judge(
                    reward_model=reward_model,
                    actor=request.user,
                    params=_judge_params(judge),
                    note=judge["note"],
                )
            elif request.POST.get("kind") == SourceKind.PRM:
                prm = {k: request.POST.get(k, v)[:MAX_FORM_JSON_CHARS] for k, v in prm.items()}
                version = version_create_prm(
                    reward_model=reward_model, actor=request.user, model=prm["model"],
                    params=_json_object(prm["params"], "Parameters"), note=prm["note"],
                )  # fmt: skip
            else:
                scalar = {k: request.POST.get(k, v)[:MAX_FORM_JSON_CHARS] for k, v in scalar.items()}
                version = version_create_scalar(
                    reward_model=reward_model, actor=request.user, model=scalar["model"],
                    params=_json_object(scalar["params"], "Parameters"), note=scalar["note"],
                )  # fmt: skip
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("rewards:version", version_id=version.pk)
    context = {
        "project": project,
        "reward_model": reward_model,
        "versions": versions_for_reward_model(reward_model=reward_model),
        "scalar": scalar,
        "judge": judge,
        "prm": prm,
        "is_process": reward_model_is_process(reward_model=reward_model),
        "secret_names": secret_names(project=project),
        **role_context(project=project, request=request),
    }
    return render(request, "rewards/detail.html", context)


def _judge_params(form: dict[str, str]) -> dict[str, Any]:
    params = _json_object(form["params"], "Other parameters")
    params.update(base_url=form["base_url"].strip(), model=form["model"].strip())
    params["api_key_secret"] = form["api_key_secret"] or None
    params.setdefault("parse", {})
    if isinstance(params["parse"], dict):
        params["parse"] = {**params["parse"], "kind": form["parse_kind"]}
    if form["prompt_template"].strip():
        params["prompt_template"] = form["prompt_template"]
    return params


@login_required
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = version_get_for_user(version_id=version_id, user=request.user)
    project = version.reward_model.project
    entry = version.config_entry
    context = {
        "project": project,
        "reward_model": version.reward_model,
        "version": version,
        # rm:<id>, never the server folder; a step tag such as "ки" as itself, not "\u043a\u0438"
        "params_json": json.dumps(version.reference_params, indent=2, ensure_ascii=False),
        "made_from": version_made_from(version),
        "metrics_json": json.dumps(version.metrics, indent=2, ensure_ascii=False) if version.metrics else "",
        "config_yaml": yaml.dump(
            entry if version.is_process else {"verifiers": [entry]},
            Dumper=_BlockDumper,
            sort_keys=False,
            allow_unicode=True,
        ),
        "weights_yaml": yaml.safe_dump(
            {"algorithm": {"reward_weights": [1.0, 0.0]}}, sort_keys=False, default_flow_style=None
        ),
        "entry_label": entry.get("label", ""),
        **role_context(project=project, request=request),
    }
    return render(request, "rewards/version.html", context)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (a judge's prompt template) as literal blocks, as one would type them."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _text)


@login_required
def secret_list(request: HttpRequest, project_id: int) -> HttpResponse:
    """The Secrets page: names, dates, unreadable ones flagged; the form takes a value and never shows one."""
    project = project_get_for_user(project_id=project_id, user=request.user)
    name = ""
    if request.method == "POST":
        name = request.POST.get("name", "")[:200]
        try:
            project_secret_set(
                project=project, actor=request.user, name=name, value=request.POST.get("value", "")
            )
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("rewards:secrets", project_id=project.pk)
    rows = secrets_for_project(project=project)
    if not NAME_RULE.fullmatch(name) or looks_like_a_key(name):
        name = ""  # a key pasted into the name field is not shown again
    context = {
        "project": project,
        "secrets": rows,
        "unreadable": [row.name for row in rows if not row.readable],
        "form_name": name,
        **role_context(project=project, request=request),
    }
    return render(request, "rewards/secrets.html", context)


@login_required
@require_POST
def secret_delete(request: HttpRequest, project_id: int, name: str) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    try:
        project_secret_delete(project=project, actor=request.user, name=name)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    return redirect("rewards:secrets", project_id=project.pk)
