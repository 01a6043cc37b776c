"""Every endpoint against every role: outsiders get 404, members below the needed role get 403.

charlie acts with the role under test in alice's project; "outsider" means no membership at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG, record_steps
from webapp.experiments.models import Experiment, Rollout, Run
from webapp.experiments.services import experiment_create, run_fail, run_launch, run_record_checkpoint
from webapp.teams.models import ROLE_RANK, Project

ROLES = ["owner", "admin", "annotator", "viewer", "outsider"]

# (method, path, body, minimum role, status on success)
ENDPOINTS: list[tuple[str, str, Any, str, int]] = [
    ("GET", "/api/projects/{project}/", None, "viewer", 200),
    ("GET", "/api/projects/{project}/members/", None, "viewer", 200),
    ("POST", "/api/projects/{project}/members/", {"username": "bob", "role": "viewer"}, "admin", 201),
    ("GET", "/api/projects/{project}/experiments/", None, "viewer", 200),
    ("POST", "/api/projects/{project}/experiments/", {"name": "new", "config": SMALL_CONFIG}, "admin", 201),
    ("GET", "/api/projects/{project}/runs/", None, "viewer", 200),
    ("GET", "/api/projects/{project}/datasets/", None, "viewer", 200),
    ("POST", "/api/projects/{project}/datasets/", "upload", "admin", 201),
    ("GET", "/api/experiments/{experiment}/", None, "viewer", 200),
    ("PATCH", "/api/experiments/{experiment}/", {"description": "edited"}, "admin", 200),
    ("DELETE", "/api/experiments/{spare}/", None, "admin", 204),
    ("GET", "/api/experiments/{experiment}/runs/", None, "viewer", 200),
    ("POST", "/api/experiments/{experiment}/runs/", None, "admin", 201),
    ("POST", "/api/runs/", {"experiment": "{experiment}"}, "admin", 201),
    ("GET", "/api/runs/{failed}/", None, "viewer", 200),
    ("POST", "/api/runs/{queued}/cancel/", None, "admin", 200),
    ("POST", "/api/runs/{failed}/resume/", None, "admin", 200),
    ("GET", "/api/runs/{failed}/metrics/", None, "viewer", 200),
    ("GET", "/api/runs/{failed}/rollouts/", None, "viewer", 200),
    ("GET", "/api/runs/{failed}/rollouts/{rollout}/", None, "viewer", 200),
    ("GET", "/api/runs/{failed}/checkpoints/", None, "viewer", 200),
    ("GET", "/api/runs/{failed}/events/", None, "viewer", 200),
]


@pytest.fixture
def ids(project: Project, experiment: Experiment, alice: User) -> dict[str, int]:
    spare = experiment_create(project=project, actor=alice, name="spare", config=SMALL_CONFIG)
    failed = run_launch(experiment=experiment, actor=alice)
    record_steps(failed, range(1, 3))
    run_record_checkpoint(run_id=failed.pk, step=2, path="/ckpt/2")
    run_fail(run_id=failed.pk, message="boom", traceback_text="")
    queued = run_launch(experiment=experiment, actor=alice)
    rollout = Rollout.objects.filter(run=failed).first()
    assert rollout is not None
    return {
        "project": project.pk,
        "experiment": experiment.pk,
        "spare": spare.pk,
        "failed": failed.pk,
        "queued": queued.pk,
        "rollout": rollout.pk,
    }


def send(client: APIClient, method: str, path: str, body: Any, ids: dict[str, int]) -> Any:
    url = path.format(**ids)
    if body == "upload":
        data = SimpleUploadedFile("sums.jsonl", b'{"prompt": "1+1=", "answer": "2"}\n')
        return client.post(url, {"file": data}, format="multipart")
    if isinstance(body, dict):
        body = {k: (ids[v[1:-1]] if isinstance(v, str) and v.startswith("{") else v) for k, v in body.items()}
    return getattr(client, method.lower())(url, body, format="json")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("method", "path", "body", "minimum", "ok"), ENDPOINTS, ids=[f"{e[0]} {e[1]}" for e in ENDPOINTS]
)
def test_each_role_gets_what_it_is_allowed(
    api: Callable[[User | None], APIClient],
    join: Callable[[User, str | None], User],
    charlie: User,
    bob: User,
    ids: dict[str, int],
    role: str,
    method: str,
    path: str,
    body: Any,
    minimum: str,
    ok: int,
) -> None:
    join(charlie, None if role == "outsider" else role)
    response = send(api(charlie), method, path, body, ids)
    if role == "outsider":
        expected = 404
    elif ROLE_RANK[role] >= ROLE_RANK[minimum]:
        expected = ok
    else:
        expected = 403
    assert response.status_code == expected, response.content
    if expected >= 400:
        assert set(response.json()) == {"message", "extra"}


def test_an_outsider_cannot_tell_a_hidden_run_from_a_missing_one(
    api: Callable[[User | None], APIClient], run: Run, bob: User
) -> None:
    hidden = api(bob).get(f"/api/runs/{run.pk}/")
    missing = api(bob).get("/api/runs/987654/")
    assert (hidden.status_code, hidden.json()) == (missing.status_code, missing.json())
