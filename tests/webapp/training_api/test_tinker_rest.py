"""The Tinker API's web side for the calls beyond one training client: a base model's sampling client (its own
sampler model and run, reused within a session, refused training calls), create_training_client_from_state
(a new model from a saved state of the same project, idempotent on a retry, nothing across projects), the REST
listings (owned and accessible, outsiders see nothing) and ServiceClient.close ending runs as it says.

No worker runs here (the calls stay pending rows; the worker's record functions write what a worker would).
The SDK drives the same calls end to end in tests/workers/test_training_api_more.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.accounts.tokens import issue_token
from webapp.experiments.models import RunStatus
from webapp.teams.models import Project
from webapp.training_api import records
from webapp.training_api.models import ModelKind, TinkerModel, TinkerRequest

pytestmark = pytest.mark.django_db
BASE = "/tinker/api/v1/"


@pytest.fixture(autouse=True)
def no_queue(settings: Any) -> None:
    settings.RLVR_ENQUEUE = False


def key(user: User) -> dict[str, Any]:
    return {"HTTP_X_API_KEY": "tml-" + issue_token(user).token}


def call(name: str, body: Any, headers: dict[str, Any]) -> Any:
    return Client().post(BASE + name, json.dumps(body), content_type="application/json", **headers)


def open_model(user: User, project: Project) -> tuple[dict[str, Any], str]:
    headers, session = new_session(user, project)
    body = {
        "session_id": session,
        "model_seq_id": 0,
        "base_model": "tiny:addition",
        "lora_config": {"rank": 8},
    }
    created = call("create_model", body, headers)
    assert created.status_code == 200, created.json()
    return headers, created.json()["model_id"]


def get(path: str, headers: dict[str, Any], **params: Any) -> Any:
    return Client().get(BASE + path, params, **headers)


def new_session(user: User, project: Project) -> tuple[dict[str, Any], str]:
    headers = key(user)
    body = {"project_id": project.slug, "sdk_version": "0.38.0"}
    return headers, call("create_session", body, headers).json()["session_id"]


def saved(model_id: str, name: str, kind: str = "weights") -> str:
    records.checkpoint_done(model_id=model_id, kind=kind, name=name, directory=f"/tmp/{name}", step=1)
    return f"tinker://{model_id}/{kind}/{name}"


def test_a_base_model_sampler_is_a_model_of_the_session_reused_and_refused_training_calls(
    alice: User, project: Project
) -> None:
    headers, session = new_session(alice, project)
    body = {"session_id": session, "sampling_session_seq_id": 0, "base_model": "tiny:addition"}
    first = call("create_sampling_session", body, headers).json()["sampling_session_id"]
    second = call("create_sampling_session", {**body, "sampling_session_seq_id": 1}, headers).json()
    sampler = TinkerModel.objects.get()
    assert sampler.kind == ModelKind.SAMPLER and sampler.run.status == RunStatus.RUNNING
    assert first != second["sampling_session_id"]  # two sampling clients, one sampler model and run
    assert list(sampler.requests.values_list("kind", flat=True)) == ["create_model"]
    assert get(f"samplers/{first}", headers).json() == {
        "sampler_id": first,
        "base_model": "tiny:addition",
        "model_path": None,
    }

    prompt = {"chunks": [{"type": "encoded_text", "tokens": [5, 6]}]}
    sample = {"sampling_session_id": first, "prompt": prompt, "num_samples": 2}
    queued = call("asample", {**sample, "sampling_params": {"max_tokens": 3}}, headers)
    assert queued.status_code == 200
    assert TinkerRequest.objects.get(pk=queued.json()["request_id"]).payload["weights"] == ""
    refused = call("optim_step", {"model_id": sampler.pk, "adam_params": {"learning_rate": 1e-3}}, headers)
    assert refused.status_code == 404 and "No training model" in refused.json()["message"]

    outside = call("create_sampling_session", {**body, "base_model": "/etc"}, headers)
    assert outside.status_code == 400 and "base_model" in outside.json()["message"]


def test_a_training_client_from_a_saved_state_of_the_same_project(
    alice: User, bob: User, project: Project, join: Callable[[User, str | None], User]
) -> None:
    join(bob, "admin")
    _, alice_model = open_model(alice, project)
    path = saved(alice_model, "after-one")
    headers, session = new_session(bob, project)  # another member of the project may start from it
    body = {"session_id": session, "model_seq_id": 0, "path": path, "optimizer": True}
    created = call("load_weights", body, headers)
    assert created.status_code == 200, created.json()
    model = TinkerModel.objects.get(pk=f"{session}:train:0")
    assert created.json()["model_id"] == model.pk and model.session.user == bob
    assert (model.base_model, model.lora_rank, model.source_optimizer) == ("tiny:addition", 8, True)
    assert model.source_state == "/tmp/after-one" and model.run.external_key == model.pk.replace(":", "-")
    assert TinkerRequest.objects.get(model=model).payload == {"from_state": path, "optimizer": True}
    again = call("load_weights", body, headers)  # the SDK retries a request whose answer it lost
    assert again.json() == created.json() and TinkerModel.objects.filter(session_id=session).count() == 1

    chained = saved(model.pk, "later")  # a model opened from a state has checkpoints too
    next_body = {"session_id": session, "model_seq_id": 1, "path": chained, "optimizer": False}
    assert call("load_weights", next_body, headers).status_code == 200

    missing = call("load_weights", {**body, "model_seq_id": 2, "path": path + "x"}, headers)
    assert missing.status_code == 400 and "save_state" in missing.json()["message"]
    other = call("load_weights", {**body, "model_seq_id": 3, "base_model": "tiny:other"}, headers)
    assert other.status_code == 400 and "base_model" in other.json()["message"]

    from webapp.teams.services import project_create

    elsewhere = project_create(name="Elsewhere", owner=bob)
    headers, far = new_session(bob, elsewhere)  # a state never crosses into another project
    refused = call("load_weights", {**body, "session_id": far}, headers)
    assert refused.status_code == 404
    assert not TinkerModel.objects.filter(session_id=far).exists()


def test_rest_listings_show_owned_or_readable_runs_and_their_checkpoints(
    alice: User, bob: User, charlie: User, project: Project, join: Callable[[User, str | None], User]
) -> None:
    join(bob, "viewer")
    headers, model_id = open_model(alice, project)
    saved(model_id, "s1")
    saved(model_id, "snap", kind="sampler_weights")
    runs = get("training_runs", headers).json()
    assert runs["cursor"] == {"offset": 0, "limit": 20, "total_count": 1}
    run = runs["training_runs"][0]
    assert (run["training_run_id"], run["model_owner"], run["is_lora"], run["lora_rank"]) == (
        model_id,
        "alice",
        True,
        8,
    )
    assert run["last_checkpoint"]["tinker_path"] == f"tinker://{model_id}/weights/s1"
    assert run["last_sampler_checkpoint"]["checkpoint_type"] == "sampler"
    listed = get(f"training_runs/{model_id}/checkpoints", headers).json()["checkpoints"]
    assert [(c["checkpoint_id"], c["checkpoint_type"]) for c in listed] == [
        ("weights/s1", "training"),
        ("sampler_weights/snap", "sampler"),
    ]

    viewer = key(bob)
    assert get("training_runs", viewer).json()["training_runs"] == []  # owned: none of bob's
    shared = get("training_runs", viewer, access_scope="accessible").json()["training_runs"]
    assert [r["training_run_id"] for r in shared] == [model_id]
    assert get(f"training_runs/{model_id}", viewer, access_scope="accessible").status_code == 200
    outsider = key(charlie)
    assert get("training_runs", outsider, access_scope="accessible").json()["training_runs"] == []
    hidden = get(f"training_runs/{model_id}/checkpoints", outsider, access_scope="accessible")
    assert hidden.status_code == 404
    assert get("training_runs", headers, limit="1000").status_code == 400
    assert Client().post(BASE + "training_runs", **headers).status_code == 400  # a GET call


@pytest.mark.parametrize(
    ("reason", "status"),
    [("success", RunStatus.SUCCEEDED), ("interrupted", RunStatus.CANCELLED), ("errored", RunStatus.FAILED)],
)
def test_closing_the_session_ends_its_runs_as_the_client_said(
    alice: User, project: Project, reason: str, status: str
) -> None:
    headers, model_id = open_model(alice, project)
    model = TinkerModel.objects.get(pk=model_id)
    finish = f"sessions/{model.session_id}/finish"
    bad = call(finish, {"reason": {"type": "done"}}, headers)
    assert bad.status_code == 400 and "success" in bad.json()["message"]
    assert call(finish, {"reason": {"type": reason}, "detail": None}, headers).status_code == 204
    model.run.refresh_from_db()
    assert model.run.status == status  # no worker holds it: ended at once
    pending = TinkerRequest.objects.get(model=model)  # its create_model never ran: it fails, saying why
    assert pending.status == "failed" and "session was closed" in pending.error
    call(finish, {"reason": {"type": "errored"}}, headers)  # the first reason stands
    model.run.refresh_from_db()
    assert model.run.status == status
