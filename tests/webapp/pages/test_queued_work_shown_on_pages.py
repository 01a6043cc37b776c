"""Queued work on its page: a queued run's and a queued evaluation's page say how much is ahead of it in
its queue (from the database), so "waiting for a worker" is not all a user sees while another run trains;
and Cancel is offered only while a cancel can still take effect."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.benchmarks.models import EvalRun, EvalStatus
from webapp.experiments.models import Experiment, Run, RunStatus
from webapp.experiments.services import experiment_create, run_launch
from webapp.teams.models import Project


def queued_runs(project: Project, alice: User, n: int) -> list[Run]:
    experiment = experiment_create(project=project, actor=alice, name="queue", config=SMALL_CONFIG)
    return [run_launch(experiment=experiment, actor=alice) for _ in range(n)]


def test_a_queued_run_counts_the_running_and_earlier_queued_runs_ahead(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    training, earlier, mine, _later = queued_runs(project, alice, 4)
    Run.objects.filter(pk=training.pk).update(status=RunStatus.RUNNING)
    html = browser_as("owner").get(f"/runs/{mine.pk}/").content.decode()
    assert "2 ahead of it in the training queue (1 running, 1 queued)" in html
    assert (
        "1 ahead of it in the training queue (1 running, 0 queued)"
        in browser_as("owner").get(f"/runs/{earlier.pk}/").content.decode()
    )
    assert 'id="queue-position"' not in browser_as("owner").get(f"/runs/{training.pk}/").content.decode()


def test_the_first_queued_run_is_next(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    (only,) = queued_runs(project, alice, 1)
    assert (
        "Queued: next in the training queue." in browser_as("owner").get(f"/runs/{only.pk}/").content.decode()
    )


def test_a_queued_evaluation_counts_what_is_ahead_on_the_eval_queue(
    browser_as: Callable[[str | None], Client], experiment: Experiment, alice: User, settings: SettingsWrapper
) -> None:
    settings.RLVR_ENQUEUE = False
    from webapp.benchmarks.services import benchmark_create, eval_launch

    benchmark = benchmark_create(
        project=experiment.project,
        actor=alice,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config={"n_samples": 2, "max_problems": 2},
    )
    first, second = (
        eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])[0] for _ in range(2)
    )
    EvalRun.objects.filter(pk=first.pk).update(status=EvalStatus.RUNNING)
    html = browser_as("owner").get(f"/evals/{second.pk}/").content.decode()
    assert "1 ahead of it in the eval queue (1 running, 0 queued)" in html
    client = APIClient()
    client.force_authenticate(alice)
    assert client.get(f"/api/evals/{second.pk}/").json()["queue_position"]["ahead"] == 1


def test_the_run_api_gives_a_queued_runs_position_and_null_once_it_runs(
    api: Callable[[User | None], APIClient], project: Project, alice: User
) -> None:
    training, mine = queued_runs(project, alice, 2)
    Run.objects.filter(pk=training.pk).update(status=RunStatus.RUNNING)
    position = api(alice).get(f"/api/runs/{mine.pk}/").json()["queue_position"]
    assert position == {
        "queue": "training",
        "ahead": 1,
        "running": 1,
        "queued": 0,
        "text": "1 ahead of it in the training queue (1 running, 0 queued)",
    }
    assert api(alice).get(f"/api/runs/{training.pk}/").json()["queue_position"] is None


def test_an_evaluation_asked_to_stop_offers_no_second_cancel(
    browser_as: Callable[[str | None], Client], experiment: Experiment, alice: User, settings: SettingsWrapper
) -> None:
    from webapp.benchmarks.services import benchmark_create, eval_launch

    settings.RLVR_ENQUEUE = False
    benchmark = benchmark_create(
        project=experiment.project,
        actor=alice,
        name="addition",
        source="builtin",
        builtin="builtin:addition",
        config={"n_samples": 2, "max_problems": 2},
    )
    (row,) = eval_launch(benchmark=benchmark, actor=alice, experiments=[experiment])
    cancel_form = f'action="/evals/{row.pk}/cancel/"'
    assert cancel_form in browser_as("owner").get(f"/evals/{row.pk}/").content.decode()
    EvalRun.objects.filter(pk=row.pk).update(status=EvalStatus.RUNNING, cancel_requested=True)
    assert cancel_form not in browser_as("owner").get(f"/evals/{row.pk}/").content.decode()
