"""``retrieve_future``: a queued call's result once its worker wrote it, in the shapes the SDK reads.

While the call is pending the answer is the SDK's ``try_again`` (``{"type": "try_again", ...}``; the SDK polls
again at once, its request held up to 45 s); a failed call answers ``{"error", "category"}``, which the SDK
raises as ``RequestFailedError`` with the message. ``ForwardBackwardOutput`` and ``SampleResponse`` results are
protobuf (the SDK 0.38 reads those two only as protobuf), every other result JSON.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.http import HttpResponse, JsonResponse

from webapp.experiments.models import FINISHED_STATUSES, Run
from webapp.training_api.models import RequestStatus, TinkerRequest
from webapp.training_api.records import NEW_CLIENT, fail_pending
from webapp.training_api.services import NotFound, _operates, pending_without_worker, wake

PROTO = "application/x-protobuf"
# How long one retrieve_future (the async view) waits for its call before answering try_again (the SDK waits up to 45 s).
LONG_POLL_S = 5.0
POLL_EVERY_S = 0.1


def call_for(*, user: User, request_id: str) -> TinkerRequest:
    call = (
        TinkerRequest.objects.select_related("model__session__project", "model__run")
        .filter(pk=str(request_id)[:64], model__session__user=user)
        .first()
    )
    if call is None or not _operates(call.model.session.project, user):
        raise NotFound(f"No request {request_id!r} of yours (request ids come from this server's answers).")
    return call


def retrieve(*, user: User, request_id: str, wait_s: float = 0.0) -> HttpResponse:
    """The call's answer; waits up to ``wait_s`` for a pending call (the async view waits without a thread)."""
    call = call_for(user=user, request_id=request_id)
    deadline = time.monotonic() + wait_s
    while call.status == RequestStatus.PENDING and time.monotonic() < deadline:
        time.sleep(POLL_EVERY_S)
        call = refreshed(call)
    return answer(call)


async def retrieve_async(*, user: User, request_id: str, wait_s: float = LONG_POLL_S) -> HttpResponse:
    """``retrieve`` for the ASGI server: a pending call is awaited with ``asyncio.sleep``, so a long poll holds
    no thread between its short database reads (Django runs sync code on one shared thread under ASGI: a
    blocking wait would stall every other request)."""
    call = await sync_to_async(call_for)(user=user, request_id=request_id)
    deadline = time.monotonic() + wait_s
    while call.status == RequestStatus.PENDING and time.monotonic() < deadline:
        await asyncio.sleep(POLL_EVERY_S)
        call = await sync_to_async(refreshed)(call)
    return await sync_to_async(answer)(call)


def _run_finished(call: TinkerRequest) -> bool:
    return Run.objects.filter(pk=call.model.run_id, status__in=FINISHED_STATUSES).exists()


def refreshed(call: TinkerRequest) -> TinkerRequest:
    call.refresh_from_db(fields=["status", "result", "result_proto", "error", "error_category"])
    return call


def answer(call: TinkerRequest) -> HttpResponse:
    """try_again while pending (sending the model's task again if its worker is gone), else the outcome."""
    if call.status == RequestStatus.PENDING and _run_finished(call):  # cancelled with no worker to say so
        fail_pending(model_id=call.model_id, message=f"The run is finished; {NEW_CLIENT}")
        call = refreshed(call)
    if call.status == RequestStatus.PENDING:
        if pending_without_worker(call):
            wake(model=call.model, force=True)
        return JsonResponse({"type": "try_again", "request_id": call.pk, "queue_state": "active"})
    if call.status == RequestStatus.FAILED:
        return JsonResponse({"error": call.error, "category": call.error_category or "server"})
    if call.result_proto is not None:
        return HttpResponse(bytes(call.result_proto), content_type=PROTO)
    result: Any = call.result if call.result is not None else {}
    return JsonResponse(result, safe=False)
