"""Pages for reward-model training: the form (``/reward-models/<id>/train/``) and the job page (``/reward-jobs/<id>/``).

The form posts to this view, which calls the same services as the API: a Bradley-Terry reward model from pairs, or a
process reward model (PRM) from step labels (``model_kind``; a reward model whose versions are PRMs, or outcome
sources, offers only its own kind). The job page polls ``/api/reward-jobs/<id>/`` each second
(static/js/reward_training.js) and draws the loss and held-out accuracy (a PRM's: step accuracy and first-error
accuracy) with Plotly.
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
from webapp.rewards.selectors import reward_model_get_for_user, reward_model_is_process
from webapp.rewards.training_prm import prm_training_start
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
# A PRM's form (prm_*: its defaults are PRMHyperParams', not the Bradley-Terry ones above).
PRM_FIELDS: dict[str, str] = {
    "labels_source": "oracle", "policy": "tiny:chain-teacher", "problems": "200", "samples_per_problem": "2",
    "level": "easy", "k": "4", "label_dataset": "", "label_format": "math_shepherd", "prm_learning_rate": "0.0003",
    "prm_epochs": "2", "prm_batch_size": "16", "prm_max_length": "256", "prm_held_out_frac": "0.2", "prm_seed": "0",
    "prm_eval_every": "20", "prm_label_threshold": "0.5", "prm_soft_labels": "",
}  # fmt: skip
PRM_NUMBERS = {"learning_rate": float, "epochs": int, "batch_size": int, "max_length": int, "held_out_frac": float,
               "seed": int, "eval_every": int, "label_threshold": float}  # fmt: skip
LABEL_NUMBERS = ("problems", "samples_per_problem", "k")


def _number(form: dict[str, str], key: str) -> Any:
    try:
        return NUMBERS[key](form[key])
    except ValueError:
        message = f"{key.replace('_', ' ')} must be a number."
        raise InvalidInput(message, {f"hyper.{key}": [message]}) from None


def _id(form: dict[str, str], key: str, field: str = "") -> int:
    if not form[key].strip().isdigit():
        message = f"Choose a {key.removeprefix('label_').replace('_', ' ')}."
        raise InvalidInput(message, {field or f"source.{key}": [message]})
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


def _prm_labels(form: dict[str, str]) -> dict[str, Any]:
    source = form["labels_source"] if form["labels_source"] in ("oracle", "monte_carlo", "file") else "oracle"
    if source == "file":
        return {"source": "file", "dataset": _id(form, "label_dataset", "labels.dataset"),
                "format": form["label_format"]}  # fmt: skip
    labels: dict[str, Any] = {"source": source, "policy": form["policy"].strip(), "level": form["level"]}
    for key in LABEL_NUMBERS if source == "monte_carlo" else LABEL_NUMBERS[:2]:
        labels[key] = _whole(form[key], f"labels.{key}")
    return labels


def _prm_hyper(form: dict[str, str]) -> dict[str, Any]:
    hyper: dict[str, Any] = {"soft_labels": bool(form["prm_soft_labels"])}
    for key, kind in PRM_NUMBERS.items():
        try:
            hyper[key] = kind(form[f"prm_{key}"])
        except ValueError:
            message = f"{key.replace('_', ' ')} must be a number."
            raise InvalidInput(message, {f"hyper.{key}": [message]}) from None
    hyper["micro_batch_size"] = hyper["batch_size"]  # the form has no gradient accumulation of its own
    return hyper


def _whole(text: str, field: str) -> int:
    if not text.strip().isdigit():
        message = f"{field.split('.')[-1].replace('_', ' ')} must be a whole number."
        raise InvalidInput(message, {field: [message]})
    return int(text)


def _start(request: HttpRequest, reward_model: Any, form: dict[str, str], process: bool) -> Any:
    if process:
        return prm_training_start(
            reward_model=reward_model, actor=request.user, labels=_prm_labels(form), base_model=form["base_model"],
            hyper=_prm_hyper(form), name=form["name"],
        )  # fmt: skip
    return reward_training_start(
        reward_model=reward_model, actor=request.user, source=_source(form), base_model=form["base_model"],
        hyper={key: _number(form, key) for key in NUMBERS}, name=form["name"],
    )  # fmt: skip


@login_required
def train_form(request: HttpRequest, reward_model_id: int) -> HttpResponse:
    reward_model = reward_model_get_for_user(reward_model_id=reward_model_id, user=request.user)
    project = reward_model.project
    is_process = reward_model_is_process(reward_model=reward_model)  # None: either kind may be trained
    form = {**FORM_FIELDS, **PRM_FIELDS, "model_kind": "prm" if is_process else "pairs"}
    if request.method == "POST":
        form = {
            k: str(request.POST.get(k, v))[:1000] for k, v in form.items()
        }  # an unticked box: its "" default
        process = is_process if is_process is not None else form["model_kind"] == "prm"
        try:
            job = _start(request, reward_model, form, process)
        except (ApplicationError, PermissionDenied) as err:
            report_error(request, err)
        else:
            return redirect("rewards:reward-job", job_id=job.pk)
    roles = role_context(project=project, request=request)
    context = {
        "project": project,
        "reward_model": reward_model,
        "form": form,
        "is_process": is_process,
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
        "is_prm": job.kind == JobKind.TRAIN and "labels" in job.config,
        "page_data": {
            "api": reverse("reward-job-detail", kwargs={"job_id": job.pk}),
            "cancel": reverse("reward-job-cancel", kwargs={"job_id": job.pk}),
            "prm": job.kind == JobKind.TRAIN and "labels" in job.config,
        },
        **role_context(project=job.project, request=request),
    }
    return render(request, "rewards/training_job.html", context)
