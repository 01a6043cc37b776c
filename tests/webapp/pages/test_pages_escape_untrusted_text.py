"""Names, descriptions, configs and event messages are untrusted text: every page renders them escaped."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.models import Experiment, Run
from webapp.experiments.services import experiment_create, run_launch, run_log_event
from webapp.teams.models import Project

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
EVIL = f"{SCRIPT}{IMG}"


def _assert_escaped(html: str) -> None:
    assert SCRIPT not in html
    assert IMG not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def _evil_run(project: Project, alice: User) -> tuple[Experiment, Run]:
    config = {**SMALL_CONFIG, "name": EVIL}
    experiment = experiment_create(project=project, actor=alice, name=EVIL, description=EVIL, config=config)
    run = run_launch(experiment=experiment, actor=alice)
    run_log_event(run_id=run.pk, level="info", kind="note", message=EVIL)
    return experiment, run


def test_project_page_escapes_names(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    project.name = EVIL
    project.description = EVIL
    project.save()
    _evil_run(project, alice)
    client = browser_as("owner")
    _assert_escaped(client.get("/").content.decode())
    _assert_escaped(client.get(f"/projects/{project.pk}/").content.decode())


def test_experiment_pages_escape_names_and_config(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    experiment, _ = _evil_run(project, alice)
    client = browser_as("owner")
    _assert_escaped(client.get(f"/experiments/{experiment.pk}/").content.decode())
    _assert_escaped(client.get(f"/experiments/{experiment.pk}/edit/").content.decode())


def test_run_and_compare_pages_escape_event_messages_and_config(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    _, run = _evil_run(project, alice)
    client = browser_as("owner")
    _assert_escaped(client.get(f"/runs/{run.pk}/").content.decode())
    _assert_escaped(client.get(f"/projects/{project.pk}/compare/?runs={run.pk}").content.decode())
