"""The Tinker HTTP API under ``/tinker/api/v1/<call>``: the part the SDK's service, training and sampling
clients use. ``base_url=http://<host>/tinker`` points an unmodified Tinker script here (docs/tinker.md).

Calls are plain JSON except ``forward_backward``, which the SDK sends as protobuf (webapp/training_api/wire.py).
Errors use the project's one shape, ``{"message", "extra"}``, with ``x-should-retry: false`` so the SDK raises
at once instead of retrying a request that will fail again. A call this server does not implement answers 404
naming it and the supported calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from trainer.models.tiny_recipes import RECIPES
from webapp.core.errors import ApplicationError
from webapp.core.limits import RequestTooLarge, body_limit_bytes
from webapp.training_api import calls, rest, services
from webapp.training_api.auth import caller
from webapp.training_api.futures import retrieve, retrieve_async
from webapp.training_api.sampling import load_weights, sample, sampling_session_create, save_call
from webapp.training_api.wire import WireError, read_forward_backward

Handler = Callable[[HttpRequest, User], HttpResponse]


class Unsupported(ApplicationError):
    status_code = 404


class Forbidden(ApplicationError):
    """A member whose role is too low (the message names the role needed)."""

    status_code = 403


_body = calls.read_json


def _future(call: Any) -> JsonResponse:
    return JsonResponse({"request_id": call.pk, "model_id": call.model_id})


def client_config(request: HttpRequest, user: User) -> HttpResponse:
    """Feature flags for the SDK: plain API keys (no JWT exchange), plain HTTP, forward_backward chunks
    that stay under this server's body and datum limits (the SDK splits larger calls by itself)."""
    limits = services.api_limits()
    return JsonResponse(
        {
            "pjwt_auth_enabled": False,
            "use_pyqwest_transport": False,
            "proto_compress_fwdbwd": False,
            "fwdbwd_max_chunk_len": limits.max_datums_per_call,
            "fwdbwd_max_chunk_bytes_count": body_limit_bytes() * 3 // 4,
            "sample_use_retrieve_futures": False,
            "custom_loss_server_side": False,
            "sample_join_sampling_session": False,
        }
    )


def capabilities(request: HttpRequest, user: User) -> HttpResponse:
    models = [
        {"model_name": f"tiny:{name}", "trainable": True, "sampleable": True} for name in sorted(RECIPES)
    ]
    return JsonResponse({"supported_models": models})


def create_session(request: HttpRequest, user: User) -> HttpResponse:
    body = _body(request)
    session = services.session_create(
        user=user,
        project_id=calls.text(body, "project_id", required=False),
        display_name=calls.text(body, "display_name", required=False),
        sdk_version=str(body.get("sdk_version", ""))[:40],
    )
    return JsonResponse({"type": "create_session", "session_id": session.pk})


def heartbeat(request: HttpRequest, user: User) -> HttpResponse:
    services.session_heartbeat(user=user, session_id=calls.text(_body(request), "session_id") or "")
    return JsonResponse({"type": "session_heartbeat"})


def create_model(request: HttpRequest, user: User) -> HttpResponse:
    body = _body(request)
    optimizer = body.get("optimizer_config")
    if isinstance(optimizer, dict) and optimizer.get("type", "adamw") != "adamw":
        raise calls.refuse(
            "optimizer_config", f"the {optimizer.get('type')!r} optimizer is not supported: use AdamW"
        )
    lora = body.get("lora_config")
    lora = lora if isinstance(lora, dict) else {}
    call = services.model_create(
        user=user,
        session_id=calls.text(body, "session_id") or "",
        base_model=calls.text(body, "base_model", limit=1024) or "",
        lora_rank=lora.get("rank"),
        seed=calls.integer(lora, "seed"),
    )
    return _future(call)


def get_info(request: HttpRequest, user: User) -> HttpResponse:
    model = services.model_for(user=user, model_id=calls.text(_body(request), "model_id") or "")
    return JsonResponse(
        {
            "type": "get_info",
            "model_id": model.pk,
            "model_data": {
                "arch": "causal-lm",
                "model_name": model.base_model,
                "tokenizer_id": model.tokenizer_dir or None,
            },
            "is_lora": model.lora_rank is not None,
            "lora_rank": model.lora_rank,
        }
    )


def forward_backward(request: HttpRequest, user: User) -> HttpResponse:
    if request.headers.get("Content-Encoding", "identity") not in ("", "identity"):
        raise calls.refuse("body", "send forward_backward uncompressed (this server's client config says so)")
    try:
        raw = request.body
    except RequestDataTooBig:
        raise RequestTooLarge(
            f"The body is over {body_limit_bytes() // 1024} KB (RLVR_MAX_BODY_KB)."
        ) from None
    try:
        decoded = read_forward_backward(raw, max_datums=services.api_limits().max_datums_per_call)
    except WireError as err:
        raise calls.refuse("body", f"is not a ForwardBackwardRequest: {err}") from None
    model = services.model_for(user=user, model_id=decoded.model_id)
    payload = calls.forward_backward_payload(decoded)
    kind = "forward" if decoded.forward_only else "forward_backward"
    return _future(services.enqueue(model=model, kind=kind, payload=payload))


def optim_step(request: HttpRequest, user: User) -> HttpResponse:
    body = _body(request)
    model = services.model_for(user=user, model_id=calls.text(body, "model_id") or "")
    return _future(services.enqueue(model=model, kind="optim_step", payload=calls.optim_step_payload(body)))


def retrieve_future(request: HttpRequest, user: User) -> HttpResponse:
    return retrieve(user=user, request_id=calls.text(_body(request), "request_id") or "")


@csrf_exempt
async def retrieve_future_async(request: HttpRequest) -> HttpResponse:
    """``retrieve_future`` as an async view: its long poll awaits the worker without holding a thread."""
    if request.method != "POST":
        return _error(ApplicationError("Send retrieve_future as a POST."))
    try:
        user = await sync_to_async(caller)(request)
        request_id = calls.text(_body(request), "request_id") or ""
        return await retrieve_async(user=user, request_id=request_id)
    except ApplicationError as err:
        return _error(err)


def telemetry(request: HttpRequest, user: User) -> HttpResponse:
    return JsonResponse({"status": "accepted"})  # the SDK's own usage events: not kept


def dynamic_config(request: HttpRequest, user: User) -> HttpResponse:
    return JsonResponse({"refresh_interval_sec": 300, "sample_cancel_enabled": False})


CALLS: dict[str, Handler] = {
    "client/config": client_config,
    "client/dynamic_config": dynamic_config,
    "get_server_capabilities": capabilities,
    "create_session": create_session,
    "session_heartbeat": heartbeat,
    "create_model": create_model,
    "get_info": get_info,
    "forward_backward": forward_backward,
    "optim_step": optim_step,
    "asample": lambda request, user: sample(user=user, body=_body(request)),
    "create_sampling_session": lambda request, user: sampling_session_create(user=user, body=_body(request)),
    "save_weights": lambda request, user: save_call(user=user, body=_body(request), kind="weights"),
    "save_weights_for_sampler": lambda r, u: save_call(user=u, body=_body(r), kind="sampler_weights"),
    "load_weights": lambda request, user: load_weights(user=user, body=_body(request)),
    "retrieve_future": retrieve_future,
    "telemetry": telemetry,
}


def _error(err: ApplicationError) -> JsonResponse:
    response = JsonResponse({"message": err.message, "extra": err.extra}, status=err.status_code)
    response["x-should-retry"] = "false"
    return response


@csrf_exempt
def tinker_call(request: HttpRequest, name: str) -> HttpResponse:
    """One call of the Tinker API: authenticated with the caller's API token, then its handler."""
    if name == "healthz":
        return JsonResponse({"status": "ok"})
    try:
        found = rest.route(name)
        if found is not None:
            method, rest_handler, object_id = found
            if request.method != method:
                raise ApplicationError(f"Send {name} as a {method}.")
            return rest_handler(request, caller(request), object_id)
        handler = CALLS.get(name)
        if handler is None:
            raise Unsupported(
                f"The Tinker call {name!r} is not supported by this server. Supported: "
                f"{', '.join(sorted(CALLS))}, and the REST calls training_runs, training_runs/<id>, "
                "training_runs/<id>/checkpoints, samplers/<id>, sessions/<id>/finish (docs/tinker.md).",
                {"call": name[:100]},
            )
        if request.method != "POST" and name not in ("get_server_capabilities",):
            raise ApplicationError(f"Send {name} as a POST.")
        return handler(request, caller(request))
    except ApplicationError as err:
        return _error(err)
    except PermissionDenied as err:
        return _error(Forbidden(str(err)))
    except Http404:
        return _error(services.NotFound("Not found among your projects."))
