"""Sampling sessions, sampling calls and named checkpoints (``tinker://<model>/<kind>/<name>``).

A sampling client samples from saved weights of one of the caller's training models: the worker that owns that
model runs the sample, in the model's call order, from the snapshot the sampling session names (so a sample never
sees weights the client did not save). A sampling client of a bare base model is served by a sampler model of
the session (webapp/training_api/services.py ``sampler_model``): its own worker and run, under the same rule.
``create_training_client_from_state`` opens a new training model from a saved state of a model of the same
project (``model_from_state``).
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.http import HttpResponse, JsonResponse

from webapp.teams.models import Project
from webapp.training_api import calls, services
from webapp.training_api.models import (
    TinkerCheckpoint,
    TinkerModel,
    TinkerRequest,
    TinkerSamplingSession,
    TinkerSession,
)

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# A model id is ours (model-...) or the one the SDK derives for create_training_client_from_state.
MODEL_ID = r"model-[0-9a-f]{24}|session-[0-9a-f]{24}:train:[0-9]{1,18}"
PATH = re.compile(rf"tinker://({MODEL_ID})/(weights|sampler_weights)/([A-Za-z0-9][A-Za-z0-9._-]{{0,99}})")


def tinker_path(model: TinkerModel, kind: str, name: str) -> str:
    return f"tinker://{model.pk}/{kind}/{name}"


def parse_path(
    *, user: User, path: str, kind: str | None = None, project: Project | None = None
) -> tuple[TinkerModel, str, str]:
    """(model, kind, name) of a ``tinker://`` path naming a checkpoint of one of the caller's models, or with
    ``project`` of any training model of that project (the caller may operate runs there)."""
    match = PATH.fullmatch(path[:300])
    if match is None or (kind is not None and match.group(2) != kind):
        shape = f"tinker://<model id>/{kind or 'weights|sampler_weights'}/<name>"
        raise calls.refuse("path", f"{path[:300]!r} is not a checkpoint path of this server ({shape})")
    if project is None:
        return services.model_for(user=user, model_id=match.group(1)), match.group(2), match.group(3)
    model = TinkerModel.objects.filter(pk=match.group(1), session__project=project).first()
    if model is None:
        raise services.NotFound(f"No checkpoint {path[:300]!r} in project {project.slug!r}.")
    return model, match.group(2), match.group(3)


def sampling_session_create(*, user: User, body: dict[str, Any]) -> HttpResponse:
    session_id = calls.text(body, "session_id") or ""
    services.session_for(user=user, session_id=session_id)
    model_path = calls.text(body, "model_path", required=False, limit=300)
    if model_path is None:
        base_model = calls.text(body, "base_model", required=False, limit=1024)
        if base_model is None:
            raise calls.refuse("model_path", "name the weights to sample: model_path= or base_model=")
        model = services.sampler_model(user=user, session_id=session_id, base_model=base_model)
        weights = ""  # the base model itself
    else:
        model, kind, name = parse_path(user=user, path=model_path)
        weights = tinker_path(model, kind, name)
    created = TinkerSamplingSession.objects.create(
        id=f"sampling-{secrets.token_hex(12)}", model=model, weights_path=weights
    )
    return JsonResponse({"type": "create_sampling_session", "sampling_session_id": created.pk})


def sample(*, user: User, body: dict[str, Any]) -> HttpResponse:
    session_id = calls.text(body, "sampling_session_id", required=False)
    if session_id is not None:
        sampling = TinkerSamplingSession.objects.select_related("model").filter(pk=session_id[:80]).first()
        if sampling is None:
            raise services.NotFound(f"No sampling session {session_id!r}: create a sampling client first.")
        model = services.model_for(user=user, model_id=sampling.model_id, training=False)
        weights = sampling.weights_path
    else:
        path = calls.text(body, "model_path", required=False, limit=300)
        if path is None:
            raise calls.refuse(
                "model_path", "name saved sampler weights (tinker://...) or a sampling session"
            )
        model, kind, name = parse_path(user=user, path=path)
        weights = tinker_path(model, kind, name)
    payload = {**calls.sample_payload(body), "weights": weights}
    call = services.enqueue(model=model, kind="sample", payload=payload)
    ids = [
        f"{call.pk}-{i}" for i in range(int(payload["num_samples"]))
    ]  # the SDK names each sequence by these
    return JsonResponse({"request_id": call.pk, "model_id": model.pk, "sample_sequence_ids": ids})


def save_call(*, user: User, body: dict[str, Any], kind: str) -> HttpResponse:
    """``save_weights`` (kind ``weights``: weights and optimizer, for load_state) or ``save_weights_for_sampler``
    (``sampler_weights``); a sampler save without a name gets one and a sampling session at once."""
    model = services.model_for(user=user, model_id=calls.text(body, "model_id") or "")
    name = calls.text(body, "path", required=False, limit=100)
    if name is not None and NAME.fullmatch(name) is None:
        raise calls.refuse("path", "a checkpoint name is letters, digits, '.', '_' and '-' (up to 100)")
    payload: dict[str, Any] = {"kind": kind}
    if name is None:
        if kind != "sampler_weights":
            raise calls.refuse("path", "name the checkpoint: save_state('<name>')")
        name = f"sampler-{secrets.token_hex(6)}"
        sampling = TinkerSamplingSession.objects.create(
            id=f"sampling-{secrets.token_hex(12)}", model=model, weights_path=tinker_path(model, kind, name)
        )
        payload["sampling_session_id"] = sampling.pk
    payload["name"] = name
    payload["path"] = tinker_path(model, kind, name)
    call = services.enqueue(model=model, kind="save", payload=payload)
    return JsonResponse({"request_id": call.pk, "model_id": model.pk})


def load_weights(*, user: User, body: dict[str, Any]) -> HttpResponse:
    """``load_state`` / ``load_state_with_optimizer`` into an existing training model (addressed by model_id),
    or ``create_training_client_from_state[_with_optimizer]`` (addressed by session_id and model_seq_id)."""
    model_id = calls.text(body, "model_id", required=False)
    if model_id is None:
        return model_from_state(user=user, body=body)
    model = services.model_for(user=user, model_id=model_id)
    source, kind, name = parse_path(user=user, path=calls.text(body, "path", limit=300) or "", kind="weights")
    payload = {
        "source_model": source.pk,
        "name": name,
        "path": tinker_path(source, kind, name),
        "optimizer": bool(body.get("optimizer")),
    }
    call = services.enqueue(model=model, kind="load", payload=payload)
    return JsonResponse({"request_id": call.pk, "model_id": model.pk})


def model_from_state(*, user: User, body: dict[str, Any]) -> HttpResponse:
    """A new training model (and run) from a saved state of a training model of the session's project: its
    base model and LoRA rank are the state's, its weights (and with ``optimizer`` its optimizer moments) are
    loaded by its worker's first call. The model id is the one the SDK derives, ``<session>:train:<seq>``;
    a retried request answers the first one's future."""
    session = services.session_for(user=user, session_id=calls.text(body, "session_id") or "")
    seq = calls.integer(body, "model_seq_id")
    if seq is None or seq >= 10**18:
        raise calls.refuse("model_seq_id", "is required with session_id (the SDK sends it)")
    model_id = f"{session.pk}:train:{seq}"
    existing = TinkerModel.objects.filter(pk=model_id, session=session).first()
    if existing is not None:
        first = existing.requests.order_by("seq").first()
        return JsonResponse({"request_id": first.pk if first else "", "model_id": model_id})
    path = calls.text(body, "path", limit=300) or ""
    source, kind, name = parse_path(user=user, path=path, kind="weights", project=session.project)
    checkpoint = TinkerCheckpoint.objects.filter(model=source, kind=kind, name=name).first()
    if checkpoint is None:
        raise calls.refuse("path", f"no saved state at {path}: save it with save_state first")
    override = calls.text(body, "base_model", required=False, limit=1024)
    if override is not None and override != source.base_model:
        raise calls.refuse("base_model", f"the state at {path} is of {source.base_model!r}; leave it unset")
    optimizer = bool(body.get("optimizer"))
    try:
        return _open_from_state(session, model_id, source, path, checkpoint.directory, optimizer)
    except IntegrityError:  # the same request twice at once: the other one made the model
        first = TinkerRequest.objects.filter(model_id=model_id).order_by("seq").first()
        return JsonResponse({"request_id": first.pk if first else "", "model_id": model_id})


def _open_from_state(
    session: TinkerSession, model_id: str, source: TinkerModel, path: str, directory: str, optimizer: bool
) -> HttpResponse:
    with transaction.atomic():
        model = services.open_model(
            session=session,
            model_id=model_id,
            base_model=source.base_model,
            lora_rank=source.lora_rank,
            seed=int(source.seed),
            opened=f"Training client opened from {path} through the Tinker API by {session.user}.",
            source=(path, directory, optimizer),
        )
        payload = {"from_state": path, "optimizer": optimizer}
        call = services.enqueue(model=model, kind="create_model", payload=payload)
    return JsonResponse({"request_id": call.pk, "model_id": model.pk})
