"""Shared people and objects for webapp tests: alice owns the project "lab"; bob and charlie join it in
whatever role a test gives them (or stay outsiders). Nothing here talks to Celery or Redis."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG, make_user
from webapp.experiments.models import Experiment, Run
from webapp.teams.models import Membership, Project


@pytest.fixture(autouse=True)
def _isolated_files(settings: SettingsWrapper, tmp_path: Path) -> Iterator[None]:
    """Run outputs, uploads and rollout token objects go to the test's own directory; the login throttle
    starts fresh."""
    settings.RLVR_RUNS_DIR = tmp_path / "runs"
    settings.RLVR_TOKEN_STORE = str(tmp_path / "rollout-tokens")
    settings.RLVR_DATASETS_DIR = tmp_path / "datasets"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast users
    cache.clear()
    yield


@pytest.fixture
def memory_channel_layer(settings: SettingsWrapper) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Run ids that would have been sent to Celery (collected when on-commit callbacks run)."""
    sent: list[int] = []

    def fake_enqueue(run_id: int) -> str:
        sent.append(run_id)
        return f"task-{run_id}"

    monkeypatch.setattr("webapp.experiments.services.enqueue_training", fake_enqueue)
    return sent


@pytest.fixture
def alice(db: None) -> User:
    return make_user("alice")


@pytest.fixture
def bob(db: None) -> User:
    return make_user("bob")


@pytest.fixture
def charlie(db: None) -> User:
    return make_user("charlie")


@pytest.fixture
def project(alice: User) -> Project:
    from webapp.teams.services import project_create

    return project_create(name="Lab", owner=alice, description="alice's lab")


@pytest.fixture
def join(project: Project) -> Callable[[User, str | None], User]:
    """``join(user, role)`` makes ``user`` a member with ``role``; ``join(user, None)`` leaves an outsider."""

    def add(user: User, role: str | None) -> User:
        if role is not None:
            Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
        return user

    return add


@pytest.fixture
def api() -> Callable[[User | None], APIClient]:
    """``api(user)``: a client authenticated as ``user`` (None: anonymous)."""

    def client(user: User | None) -> APIClient:
        c = APIClient()
        if user is not None:
            c.force_authenticate(user=user)
        return c

    return client


@pytest.fixture
def experiment(project: Project, alice: User) -> Experiment:
    from webapp.experiments.services import experiment_create

    return experiment_create(project=project, actor=alice, name="addition", config=SMALL_CONFIG)


@pytest.fixture
def run(experiment: Experiment, alice: User) -> Run:
    """A queued run (nothing is sent to Celery: on-commit callbacks do not run in these tests)."""
    from webapp.experiments.services import run_launch

    return run_launch(experiment=experiment, actor=alice)
