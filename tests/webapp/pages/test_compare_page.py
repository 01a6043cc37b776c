"""Compare runs: chosen runs of this project only, metric keys, and the config diff."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import SMALL_CONFIG, make_user, record_steps
from tests.webapp.ingest.helpers import batch, post, token_client
from webapp.experiments.models import Experiment, Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.pages.selectors_compare import flatten
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
    assert (
        '<tr class="differs" data-path="training.learning_rate"><th scope="row" class="mono diff-field">'
        in html
    )
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


def test_a_trl_run_is_diffed_on_the_native_paths_with_one_row_for_beta(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    config = {**SMALL_CONFIG, "algorithm": {"beta": 0.04}}
    native = run_launch(
        experiment=experiment_create(project=project, actor=alice, name="native", config=config), actor=alice
    )
    trl_config = {"beta": 0.04, "learning_rate": 1e-4, "num_generations": 8, "output_dir": "/scratch/trl-out"}
    assert post(token_client(alice), batch(project.slug, run={"config": trl_config})).status_code == 201
    trl = Run.objects.get(source="trl")

    response = browser_as("viewer").get(f"/projects/{project.pk}/compare/?runs={native.pk},{trl.pk}")
    rows = {row.path: row for row in response.context["diff"]}
    assert "beta" not in rows and "learning_rate" not in rows
    assert rows["algorithm.beta"].values == ("0.04", "0.04") and not rows["algorithm.beta"].differs
    assert rows["algorithm.beta"].cells[1].outside_name == "beta"  # the TRL name is still shown in its cell
    assert rows["rollout.temperature"].unreported and not rows["rollout.temperature"].differs
    assert {path for path, row in rows.items() if row.differs} == {
        "checkpoint.output_dir",
        "rollout.num_generations",
    }
    html = response.content.decode()
    assert '<tr class="same" data-path="algorithm.beta">' in html
    assert "2 of " in html and "not reported by the outside run" in html
