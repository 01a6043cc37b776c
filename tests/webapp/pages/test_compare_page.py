"""Compare runs: chosen runs of this project only, metric keys, and the config diff."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import SMALL_CONFIG, make_user, record_steps
from webapp.experiments.models import Experiment, Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.pages.views_compare import flatten
from webapp.teams.models import Project
from webapp.teams.services import project_create


def test_flatten_turns_sections_into_dotted_paths() -> None:
    assert flatten({"training": {"lr": 1, "x": {}}, "verifiers": [1]}) == {
        "training.lr": 1,
        "training.x": {},
        "verifiers": [1],
    }


def test_it_diffs_the_configs_of_the_chosen_runs(
    browser_as: Callable[[str | None], Client],
    project: Project,
    experiment: Experiment,
    run: Run,
    alice: User,
) -> None:
    other = experiment_create(
        project=project,
        actor=alice,
        name="faster",
        config={**SMALL_CONFIG, "training": {**SMALL_CONFIG["training"], "learning_rate": 3e-4}},
    )
    second = run_launch(experiment=other, actor=alice)
    record_steps(run, range(1, 4))
    response = browser_as("viewer").get(f"/projects/{project.pk}/compare/?runs={run.pk},{second.pk}")
    html = response.content.decode()
    assert '<tr class="differs"><th scope="row" class="mono diff-field">training.learning_rate</th>' in html
    assert 'class="table diff diff-only"' in html  # the differing fields only, until "Show all fields"
    assert response.context["differing"] == sum(row.differs for row in response.context["diff"]) >= 1
    assert response.context["page_data"]["keys"] == ["actor/pg_loss", "rollout/reward_mean"]


def test_runs_of_other_projects_are_ignored(
    browser_as: Callable[[str | None], Client], project: Project, run: Run
) -> None:
    stranger = make_user("mallory")
    theirs = project_create(name="Theirs", owner=stranger)
    their_exp = experiment_create(project=theirs, actor=stranger, name="secret", config=SMALL_CONFIG)
    their_run = run_launch(experiment=their_exp, actor=stranger)
    response = browser_as("owner").get(f"/projects/{project.pk}/compare/?runs={their_run.pk},{run.pk}")
    assert [r.pk for r in response.context["chosen"]] == [run.pk]
    assert "secret" not in response.content.decode()
