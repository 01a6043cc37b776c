"""Pages for reward-model training: the form (``/reward-models/<id>/train/``) and the job page (``/reward-jobs/<id>/``).

The form posts to this view, which calls the same service as the API; the job page polls ``/api/reward-jobs/<id>/``
each second (static/js/reward_training.js) and draws the loss and held-out accuracy with Plotly.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from webapp.core.errors import ApplicationError, InvalidInput
from webapp.pages.views_common import report_error, role_context
from webapp.rewards.models import JobKind
from webapp.rewards.selectors import reward_model_get_for_user
from webapp.rewards.training_selectors import (
    reward_job_get_for_user,
    training_form_choices,
    training_jobs_for_reward_model,
)
from webapp.rewards.training_services import DEFAULT_HYPER, START_TRAINING, reward_training_start
from webapp.teams.permissions import role_at_least

FORM_FIELDS: dict[str, str] = {
    "source_kind": "run", "annotation_task": "", "dataset": "", "run": "", "verifier": "", "per_prompt": "8",
    "base_model": "tiny:chain", "learning_rate": str(DEFAULT_HYPER["learning_rate"]),
    "epochs": str(DEFAULT_HYPER["epochs"]), "batch_size": str(DEFAULT_HYPER["batch_size"]),
    "max_length": str(DEFAULT_HYPER["max_length"]), "held_out_frac": "0.1", "seed": "0", "name": "",
}  # fmt: skip
NUMBERS = {"learning_rate": float, "held_out_frac": float, "epochs": int, "batch_size": int, "max_length": int,
           "seed": int}  # fmt: skip


def _number(form: dict[str, str], key: str) -> Any:
    try:
        return NUMBERS[key](form[key])
    except ValueError:
        message = f"{key.replace('_', ' ')} must be a number."
        raise InvalidInput(message, {f"hyper.{key}": [message]}) from None


def _id(form: dict[str, str], key: str) -> int:
    if not form[key].strip().isdigit():
        message = f"Choose a {key.replace('_', ' ')}."
        raise InvalidInput(message, {f"source.{key}": [message]})
    return int(form[key])


def _source(form: dict[str, str]) -> dict[str, Any]:
    kind = form["source_kind"] if form["source_kind"] in ("annotation_task", "dataset", "run") else "run"
    source: dict[str, Any] = {kind: _id(form, kind)}
    if kind == "run":
        if form["verifier"].strip():
            source["verifier"] = form["verifier"].strip()
        if form["per_prompt"].strip().isdigit():
            source["per_prompt"] = int(form["per_prompt"])
    return source


@login_required
def train_form(request: HttpRequest, reward_model_id: int) -> HttpResponse:
    reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
    project = reward_model.project
    form = dict(FORM_FIELDS)
    if request.method == "POST":
        form = {k: str(request.POST.get(k, v))[:1000] for k, v in form.items()}
        try:
            job = reward_training_start(
                reward_model=reward_model, actor=request.user, source=_source(form), base_model=form["base_model"],
                hyper={key: _number(form, key) for key in NUMBERS}, name=form["name"],
            )  # fmt: skip
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("rewards:reward-job", job_id=job.pk)
    roles = role_context(project=project, request=request)
    context = {
        "project": project,
        "reward_model": reward_model,
        "form": form,
        "choices": training_form_choices(project=project),
        "jobs": training_jobs_for_reward_model(reward_model=reward_model),
        "can_train": role_at_least(roles["role"], START_TRAINING),  # type: ignore[arg-type]
        **roles,
    }
    return render(request, "rewards/training_form.html", context)


@login_required
def reward_job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = reward_job_get_for_user(job_id=job_id, user=request.user)
    context = {
        "project": job.project,
        "job": job,
        "is_training": job.kind == JobKind.TRAIN,
        "page_data": {
            "api": reverse("reward-job-detail", kwargs={"job_id": job.pk}),
            "cancel": reverse("reward-job-cancel", kwargs={"job_id": job.pk}),
        },
        **role_context(project=job.project, request=request),
    }
    return render(request, "rewards/training_job.html", context)
