"""Sampling sessions, sampling calls and named checkpoints (``tinker://<model>/<kind>/<name>``).

A sampling client samples from saved weights of one of the caller's training models: the worker that owns that
model runs the sample, in the model's call order, from the snapshot the sampling session names (so a sample never
sees weights the client did not save). Sampling a bare base model without a training model is not supported: open
a training client and use ``save_weights_and_get_sampling_client``.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.contrib.auth.models import User
from django.http import HttpResponse, JsonResponse

from webapp.training_api import calls, services
from webapp.training_api.models import TinkerModel, TinkerSamplingSession

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
PATH = re.compile(
    r"tinker://(model-[0-9a-f]{24})/(weights|sampler_weights)/([A-Za-z0-9][A-Za-z0-9._-]{0,99})"
)


def tinker_path(model: TinkerModel, kind: str, name: str) -> str:
    return f"tinker://{model.pk}/{kind}/{name}"


def parse_path(*, user: User, path: str, kind: str | None = None) -> tuple[TinkerModel, str, str]:
    """(model, kind, name) of a ``tinker://`` path naming a checkpoint of one of the caller's models."""
    match = PATH.fullmatch(path[:300])
    if match is None or (kind is not None and match.group(2) != kind):
        shape = f"tinker://<model id>/{kind or 'weights|sampler_weights'}/<name>"
        raise calls.refuse("path", f"{path[:300]!r} is not a checkpoint path of this server ({shape})")
    model = services.model_for(user=user, model_id=match.group(1))
    return model, match.group(2), match.group(3)


def sampling_session_create(*, user: User, body: dict[str, Any]) -> HttpResponse:
    services.session_for(user=user, session_id=calls.text(body, "session_id") or "")
    model_path = calls.text(body, "model_path", required=False, limit=300)
    if model_path is None:
        raise calls.refuse(
            "model_path",
            "sampling a base model alone is not supported here: create a training client and call "
            "save_weights_and_get_sampling_client(), or pass the tinker:// path of saved sampler weights",
        )
    model, kind, name = parse_path(user=user, path=model_path)
    created = TinkerSamplingSession.objects.create(
        id=f"sampling-{secrets.token_hex(12)}", model=model, weights_path=tinker_path(model, kind, name)
    )
    return JsonResponse({"type": "create_sampling_session", "sampling_session_id": created.pk})


def sample(*, user: User, body: dict[str, Any]) -> HttpResponse:
    session_id = calls.text(body, "sampling_session_id", required=False)
    if session_id is not None:
        sampling = TinkerSamplingSession.objects.select_related("model").filter(pk=session_id[:80]).first()
        if sampling is None:
            raise services.NotFound(f"No sampling session {session_id!r}: create a sampling client first.")
        model = services.model_for(user=user, model_id=sampling.model_id)
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
    """``load_state`` / ``load_state_with_optimizer`` into an existing training model (addressed by model_id).
    Creating a model from a checkpoint (``create_training_client_from_state``) is not supported here."""
    model_id = calls.text(body, "model_id", required=False)
    if model_id is None:
        raise calls.refuse(
            "model_id",
            "creating a training client from a saved state is not supported here: create a training client "
            "of the same base model, then call load_state(path) on it",
        )
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
