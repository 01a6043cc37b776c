"""The Tinker SDK's REST calls this server answers: training runs and their checkpoints (``RestClient``'s
``list_training_runs``, ``get_training_run``, ``list_checkpoints``), a sampler (``GET samplers/<id>``, which the
SDK asks for a sampling client made from a ``model_path`` alone) and ``sessions/<id>/finish``
(``ServiceClient.close``, also sent when a ``with ServiceClient() as ...`` block ends).

A training run is a training model (``training_run_id`` is the model id). Listings are read access: the caller's
own models (``access_scope=owned``, the SDK's default), or every training model of the projects the caller may
read (``accessible``), as the run pages show them to viewers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Max, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse

from webapp.experiments.run_lease import run_lease_held
from webapp.teams.selectors import projects_for_user
from webapp.training_api import calls, services
from webapp.training_api.models import (
    ModelKind,
    TinkerCheckpoint,
    TinkerModel,
    TinkerSamplingSession,
    TinkerSession,
)
from webapp.training_api.records import CLOSED_AS, end_run
from webapp.training_api.sampling import MODEL_ID

MAX_PAGE = 100
CHECKPOINT_TYPES = {"weights": "training", "sampler_weights": "sampler"}
ID = r"[A-Za-z0-9:_-]{1,80}"
Rest = Callable[[HttpRequest, User, str], HttpResponse]


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _models(request: HttpRequest, user: User) -> QuerySet[TinkerModel]:
    """The training models the caller may read under the request's ``access_scope``."""
    scope = request.GET.get("access_scope", "owned")
    if scope not in ("owned", "accessible"):
        raise calls.refuse("access_scope", "must be 'owned' or 'accessible'")
    found = TinkerModel.objects.filter(kind=ModelKind.TRAINING).select_related("session__user")
    if scope == "owned":
        return found.filter(session__user=user, session__project__in=projects_for_user(user=user))
    return found.filter(session__project__in=projects_for_user(user=user))


def _checkpoint(checkpoint: TinkerCheckpoint | None) -> dict[str, Any] | None:
    if checkpoint is None:
        return None
    return {
        "checkpoint_id": f"{checkpoint.kind}/{checkpoint.name}",
        "checkpoint_type": CHECKPOINT_TYPES.get(checkpoint.kind, "training"),
        "time": _iso(checkpoint.created_at),
        "tinker_path": f"tinker://{checkpoint.model_id}/{checkpoint.kind}/{checkpoint.name}",
        "size_bytes": None,
        "public": False,
    }


def _training_run(model: TinkerModel) -> dict[str, Any]:
    last_call = model.requests.aggregate(last=Max("created_at"))["last"] or model.created_at
    newest = model.checkpoints.order_by("-created_at")
    return {
        "training_run_id": model.pk,
        "base_model": model.base_model,
        "model_owner": model.session.user.username,
        "is_lora": model.lora_rank is not None,
        "lora_rank": model.lora_rank,
        "corrupted": False,
        "last_request_time": _iso(last_call),
        "last_checkpoint": _checkpoint(newest.filter(kind="weights").first()),
        "last_sampler_checkpoint": _checkpoint(newest.filter(kind="sampler_weights").first()),
        "user_metadata": None,
    }


def _page_number(request: HttpRequest, name: str, default: int, top: int) -> int:
    raw = request.GET.get(name, str(default))
    if not raw.isdigit() or not 0 <= int(raw) <= top:
        raise calls.refuse(name, f"must be a whole number from 0 to {top}, got {raw[:20]!r}")
    return int(raw)


def list_training_runs(request: HttpRequest, user: User, _: str) -> HttpResponse:
    models = _models(request, user)
    project = request.GET.get("project_id")
    if project:
        models = models.filter(session__project__slug=project[:200])
    limit = max(1, _page_number(request, "limit", 20, MAX_PAGE))
    offset = _page_number(request, "offset", 0, 10**9)
    page = list(models.order_by("-created_at", "pk")[offset : offset + limit])
    return JsonResponse(
        {
            "training_runs": [_training_run(m) for m in page],
            "cursor": {"offset": offset, "limit": limit, "total_count": models.count()},
        }
    )


def _readable(request: HttpRequest, user: User, model_id: str) -> TinkerModel:
    model = _models(request, user).filter(pk=model_id).first()
    if model is None:
        raise services.NotFound(f"No training run {model_id!r} among the ones you may read.")
    return model


def get_training_run(request: HttpRequest, user: User, model_id: str) -> HttpResponse:
    return JsonResponse(_training_run(_readable(request, user, model_id)))


def list_checkpoints(request: HttpRequest, user: User, model_id: str) -> HttpResponse:
    model = _readable(request, user, model_id)
    found = [_checkpoint(c) for c in model.checkpoints.order_by("created_at", "pk")]
    return JsonResponse({"checkpoints": found, "cursor": None})


def get_sampler(request: HttpRequest, user: User, sampler_id: str) -> HttpResponse:
    sampling = TinkerSamplingSession.objects.select_related("model").filter(pk=sampler_id).first()
    if sampling is None:
        raise services.NotFound(f"No sampler {sampler_id!r}: create a sampling client first.")
    model = services.model_for(user=user, model_id=sampling.model_id, training=False)
    return JsonResponse(
        {
            "sampler_id": sampling.pk,
            "base_model": model.base_model,
            "model_path": sampling.weights_path or None,
        }
    )


def finish_session(request: HttpRequest, user: User, session_id: str) -> HttpResponse:
    """``ServiceClient.close(status)``: the first reason given stands. Each model's run ends as the client
    said (success: succeeded, interrupted: cancelled, errored: failed), at once when no worker holds it, else
    when its worker has run the calls already queued."""
    body = calls.read_json(request)
    reason = body.get("reason")
    status = reason.get("type") if isinstance(reason, dict) else None
    if status not in CLOSED_AS or not status:
        raise calls.refuse("reason", "must be {'type': 'success' | 'errored' | 'interrupted'}")
    session = services.session_for(user=user, session_id=session_id)
    TinkerSession.objects.filter(pk=session.pk, finish_status="").update(finish_status=status)
    first = TinkerSession.objects.values_list("finish_status", flat=True).get(pk=session.pk)
    for model in TinkerModel.objects.filter(session=session).select_related("run"):
        if run_lease_held(run_id=model.run_id):
            services.nudge(model_id=model.pk)  # its worker ends the run once the queue is drained
        else:
            end_run(model_id=model.pk, closed=first)
    return HttpResponse(status=204)


ROUTES: list[tuple[str, re.Pattern[str], Rest]] = [
    ("GET", re.compile(r"training_runs()"), list_training_runs),
    ("GET", re.compile(rf"training_runs/({MODEL_ID})"), get_training_run),
    ("GET", re.compile(rf"training_runs/({MODEL_ID})/checkpoints"), list_checkpoints),
    ("GET", re.compile(rf"samplers/({ID})"), get_sampler),
    ("POST", re.compile(rf"sessions/({ID})/finish"), finish_session),
]


def route(name: str) -> tuple[str, Rest, str] | None:
    """(method, handler, id) of a REST call's path, None for a name that is not one."""
    for method, pattern, handler in ROUTES:
        match = pattern.fullmatch(name)
        if match is not None:
            return method, handler, match.group(1)
    return None
