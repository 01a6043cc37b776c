"""The Tinker API's web side: who may call it, the bounds checked before anything is queued, a call this server
does not implement, and a call's future from pending to its result (written by the worker's record functions).

The SDK itself drives the server in tests/workers/test_training_api_e2e.py; here the bodies are the ones it
sends (JSON, and forward_backward as protobuf encoded by the SDK's own generated code)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from webapp.accounts.tokens import issue_token
from webapp.experiments.models import Run, RunSource, RunStatus
from webapp.teams.models import Project
from webapp.training_api import records
from webapp.training_api.models import TinkerModel, TinkerRequest
from webapp.training_api.wire import WireSequence, write_sample_response

pytestmark = pytest.mark.django_db
BASE = "/tinker/api/v1/"


@pytest.fixture(autouse=True)
def no_queue(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False  # the calls stay pending rows: no worker in these tests


def key(user: User) -> dict[str, Any]:
    return {"HTTP_X_API_KEY": "tml-" + issue_token(user).token}


def call(name: str, body: Any, headers: dict[str, Any]) -> Any:
    if isinstance(body, bytes):
        return Client().post(BASE + name, body, content_type="application/x-protobuf", **headers)
    return Client().post(BASE + name, json.dumps(body), content_type="application/json", **headers)


def open_model(user: User, project: Project, **lora: Any) -> tuple[dict[str, str], str]:
    headers = key(user)
    session = call(
        "create_session", {"project_id": project.slug, "sdk_version": "0.38.0", "tags": []}, headers
    )
    assert session.status_code == 200, session.json()
    body = {
        "session_id": session.json()["session_id"], "model_seq_id": 0, "base_model": "tiny:addition",
        "lora_config": {"rank": 8, **lora},
    }  # fmt: skip
    created = call("create_model", body, headers)
    assert created.status_code == 200, created.json()
    return headers, created.json()["model_id"]


def fwd_bwd_body(model_id: str, n_datums: int = 1, tokens: int = 4, loss_fn: Any = "cross_entropy") -> bytes:
    from tinker import types
    from tinker.proto.request_conv import forward_backward_request_to_proto

    datum = types.Datum(
        model_input=types.ModelInput.from_ints(list(range(1, tokens + 1))),
        loss_fn_inputs={"target_tokens": list(range(2, tokens + 2)), "weights": [1.0] * tokens},  # type: ignore[dict-item]  # the SDK converts lists
    )
    request = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(data=[datum] * n_datums, loss_fn=loss_fn),
        model_id=model_id,
        seq_id=1,
    )
    return forward_backward_request_to_proto(request).SerializeToString()


def test_a_session_and_model_make_a_tinker_run_with_a_queued_create_call(
    alice: User, project: Project
) -> None:
    _, model_id = open_model(alice, project)

    model = TinkerModel.objects.get(pk=model_id)
    assert (model.run.source, model.run.status, model.lora_rank) == (RunSource.TINKER, RunStatus.RUNNING, 8)
    assert model.run.experiment.project == project
    assert list(model.requests.values_list("kind", "seq", "status")) == [("create_model", 1, "pending")]


def test_no_key_a_wrong_key_and_a_revoked_key_are_refused(alice: User, project: Project) -> None:
    body = {"project_id": project.slug, "sdk_version": "0.38.0", "tags": []}
    assert call("create_session", body, {}).status_code == 401
    assert "tml-" in call("create_session", body, {}).json()["message"]
    assert call("create_session", body, {"HTTP_X_API_KEY": "tml-rlvr_nope"}).status_code == 401
    issued = issue_token(alice)
    from webapp.accounts.tokens import revoke_token

    revoke_token(issued.record)
    refused = call("create_session", body, {"HTTP_X_API_KEY": "tml-" + issued.token})
    assert refused.status_code == 401 and "revoked" in refused.json()["message"]
    assert refused["x-should-retry"] == "false"


def test_an_outsider_cannot_open_a_session_in_a_project_nor_touch_its_models(
    alice: User, bob: User, project: Project, join: Any
) -> None:
    body = {"project_id": project.slug, "sdk_version": "0.38.0", "tags": []}
    assert call("create_session", body, key(bob)).status_code == 404
    join(bob, "viewer")  # a member, but one who may not operate runs: told which role it needs
    refused = call("create_session", body, key(bob))
    assert refused.status_code == 403 and "admin role" in refused.json()["message"]
    _, model_id = open_model(alice, project)
    join(bob, "admin")  # even an admin of the project uses models only through their own sessions
    for name, payload in (
        ("get_info", {"model_id": model_id}),
        ("optim_step", {"model_id": model_id, "adam_params": {"learning_rate": 1e-3}}),
        ("save_weights", {"model_id": model_id, "path": "x"}),
    ):
        assert call(name, payload, key(bob)).status_code == 404, name
    assert call("forward_backward", fwd_bwd_body(model_id), key(bob)).status_code == 404
    first = TinkerRequest.objects.get(model_id=model_id)
    assert call("retrieve_future", {"request_id": first.pk}, key(bob)).status_code == 404


def test_bounds_are_checked_before_anything_is_queued(alice: User, project: Project) -> None:
    headers, model_id = open_model(alice, project)
    cases: list[tuple[str, Any, str]] = [
        ("forward_backward", fwd_bwd_body(model_id, n_datums=513), "datums"),
        ("forward_backward", fwd_bwd_body(model_id, tokens=4097), "4096"),
        ("forward_backward", fwd_bwd_body(model_id, loss_fn="gspo"), "gspo"),
        ("forward_backward", b"\xff\xff\xff", "ForwardBackwardRequest"),
        ("optim_step", {"model_id": model_id, "adam_params": {"learning_rate": -1.0}}, "learning_rate"),
        ("asample", _sample_body(model_id, num_samples=129), "num_samples"),
        ("asample", _sample_body(model_id, max_tokens=100_000), "max_tokens"),
        ("asample", {**_sample_body(model_id), "topk_sample_logprobs": 5}, "top-k"),
    ]
    for name, body, named in cases:
        response = call(name, body, headers)
        assert response.status_code == 400, (name, response.json())
        assert named in response.json()["message"], (name, response.json())
        assert set(response.json()) == {"message", "extra"}
    assert TinkerRequest.objects.filter(model_id=model_id).count() == 1  # only create_model


def _sample_body(model_id: str, num_samples: int = 2, max_tokens: int = 4) -> dict[str, Any]:
    return {
        "model_path": f"tinker://{model_id}/sampler_weights/s1",
        "num_samples": num_samples,
        "prompt": {"chunks": [{"tokens": [1, 2, 3], "type": "encoded_text"}]},
        "sampling_params": {"max_tokens": max_tokens, "temperature": 1.0},
        "type": "sample",
    }


def test_a_base_model_outside_the_model_folders_is_refused(alice: User, project: Project) -> None:
    headers = key(alice)
    session = call("create_session", {"project_id": project.slug, "sdk_version": "0.38.0"}, headers).json()
    body = {
        "session_id": session["session_id"],
        "model_seq_id": 0,
        "base_model": "/etc",
        "lora_config": {"rank": 8},
    }
    response = call("create_model", body, headers)
    assert response.status_code == 400 and "base_model" in response.json()["message"]
    assert not Run.objects.exists()


def test_an_unsupported_call_answers_a_clear_error_naming_it(alice: User, project: Project) -> None:
    response = call("copy_weights", {}, key(alice))
    assert response.status_code == 404
    assert "'copy_weights' is not supported" in response.json()["message"]
    assert "forward_backward" in response.json()["message"]  # and says what is
    headers = key(alice)
    session = call("create_session", {"project_id": project.slug, "sdk_version": "0.38.0"}, headers).json()
    nothing = {"session_id": session["session_id"], "sampling_session_seq_id": 0}
    refused = call("create_sampling_session", nothing, headers)
    assert refused.status_code == 400 and "model_path= or base_model=" in refused.json()["message"]


def test_a_future_is_try_again_while_pending_then_its_result(alice: User, project: Project) -> None:
    headers, model_id = open_model(alice, project)
    queued = call(
        "optim_step", {"model_id": model_id, "adam_params": {"learning_rate": 1e-3}}, headers
    ).json()
    sampled = call("asample", _sample_body(model_id), headers).json()
    assert len(sampled["sample_sequence_ids"]) == 2
    seqs = list(
        TinkerRequest.objects.filter(model_id=model_id).order_by("seq").values_list("kind", flat=True)
    )
    assert seqs == ["create_model", "optim_step", "sample"]  # in the order they came

    from webapp.training_api import futures

    pending = futures.retrieve(user=alice, request_id=queued["request_id"], wait_s=0)
    assert json.loads(pending.content) == {
        "type": "try_again",
        "request_id": queued["request_id"],
        "queue_state": "active",
    }

    records.call_done(
        call_id=queued["request_id"], result={"metrics": {"grad_norm:mean": 1.5}, "type": "optim_step"}
    )
    done = call("retrieve_future", {"request_id": queued["request_id"]}, headers)
    assert done.json() == {"metrics": {"grad_norm:mean": 1.5}, "type": "optim_step"}

    proto = write_sample_response([WireSequence([4, 5], [-0.5, -0.25], "stop")], None)
    records.call_done(call_id=sampled["request_id"], proto=proto)
    answer = call("retrieve_future", {"request_id": sampled["request_id"]}, headers)
    assert answer["content-type"] == "application/x-protobuf"
    from tinker.proto.response_conv import deserialize_sample_response

    sequence = deserialize_sample_response(answer.content).sequences[0]
    assert (list(sequence.tokens), list(sequence.logprobs or []), sequence.stop_reason) == (
        [4, 5],
        [-0.5, -0.25],
        "stop",
    )


def test_a_failed_call_answers_the_sdk_error_shape(alice: User, project: Project) -> None:
    headers, model_id = open_model(alice, project)
    first = TinkerRequest.objects.get(model_id=model_id)
    records.call_failed(call_id=first.pk, message="create_model: no such model", category="user")
    response = call("retrieve_future", {"request_id": first.pk}, headers)
    assert response.json() == {"error": "create_model: no such model", "category": "user"}


def test_a_cancelled_run_takes_no_more_calls(alice: User, project: Project) -> None:
    headers, model_id = open_model(alice, project)
    run = TinkerModel.objects.get(pk=model_id).run
    from webapp.experiments.services import run_cancel

    run_cancel(run=run, actor=alice)  # no worker holds it: cancelled at once
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    response = call("optim_step", {"model_id": model_id, "adam_params": {"learning_rate": 1e-3}}, headers)
    assert response.status_code == 400 and "new training client" in response.json()["message"]


def test_a_body_over_the_limit_is_refused_in_the_error_shape(
    alice: User, project: Project, settings: SettingsWrapper
) -> None:
    headers, model_id = open_model(alice, project)
    settings.RLVR_MAX_BODY_KB = 64
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    response = call("forward_backward", fwd_bwd_body(model_id, n_datums=400, tokens=64), headers)
    assert response.status_code == 413
    assert "RLVR_MAX_BODY_KB" in response.json()["message"]
    assert TinkerRequest.objects.filter(model_id=model_id).count() == 1


def test_a_call_left_pending_on_a_cancelled_run_fails_instead_of_waiting_forever(
    alice: User, project: Project
) -> None:
    headers, model_id = open_model(alice, project)
    queued = call(
        "optim_step", {"model_id": model_id, "adam_params": {"learning_rate": 1e-3}}, headers
    ).json()
    from webapp.experiments.services import run_cancel

    run_cancel(run=TinkerModel.objects.get(pk=model_id).run, actor=alice)  # no worker: cancelled at once
    answer = call("retrieve_future", {"request_id": queued["request_id"]}, headers).json()
    assert answer["category"] == "user" and "new training client" in answer["error"]


def test_without_project_id_the_callers_only_training_project_is_used(
    alice: User, project: Project, charlie: User
) -> None:
    session = call("create_session", {"sdk_version": "0.38.0"}, key(alice))
    assert session.status_code == 200
    from webapp.training_api.models import TinkerSession

    assert TinkerSession.objects.get(pk=session.json()["session_id"]).project == project
    from webapp.teams.services import project_create

    project_create(name="Second", owner=alice)
    refused = call("create_session", {"sdk_version": "0.38.0"}, key(alice))
    assert (
        refused.status_code == 400
        and "lab" in refused.json()["message"]
        and "second" in refused.json()["message"]
    )
    nowhere = call("create_session", {"sdk_version": "0.38.0"}, key(charlie))
    assert nowhere.status_code == 400 and "none" in nowhere.json()["message"]
