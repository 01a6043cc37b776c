from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from tests.webapp.helpers import SMALL_CONFIG
from webapp.core.errors import Conflict, InvalidInput
from webapp.experiments.models import Experiment, Run
from webapp.experiments.services import experiment_create, experiment_delete, experiment_update
from webapp.teams.models import Project

Join = Callable[[User, str | None], User]


def with_changes(**sections: dict[str, Any]) -> dict[str, Any]:
    config = {k: dict(v) if isinstance(v, dict) else v for k, v in SMALL_CONFIG.items()}
    for section, values in sections.items():
        config[section] = {**config.get(section, {}), **values}
    return config


def test_an_experiment_stores_its_config_with_every_default_filled_in(project: Project, alice: User) -> None:
    experiment = experiment_create(project=project, actor=alice, name="gsm8k", config=SMALL_CONFIG)
    assert experiment.config["training"]["learning_rate"] == 1e-4
    # a default method, now explicit, with its own params' defaults filled in
    assert experiment.config["algorithm"]["advantage_estimator"] == {
        "name": "grpo",
        "params": {"scale_rewards": "group", "advantage_eps": 1e-4},
    }
    assert experiment.created_by == alice


def test_an_invalid_config_names_the_field_path(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        experiment_create(
            project=project, actor=alice, name="x", config=with_changes(training={"learning_rate": -1})
        )
    assert list(err.value.fields) == ["config.training.learning_rate"]
    assert "greater than 0" in err.value.fields["config.training.learning_rate"][0]
    assert Experiment.objects.count() == 0


def test_an_unknown_registry_name_lists_the_valid_ones(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        experiment_create(
            project=project,
            actor=alice,
            name="x",
            config={"verifiers": [{"name": "exact"}, {"name": "nope"}]},
        )
    assert list(err.value.fields) == ["config.verifiers.1.name"]  # the entry's own name, as the form shows it
    assert (
        "unknown verifier 'nope'; valid names are: chain_arithmetic, code, exact,"
        in (err.value.fields["config.verifiers.1.name"][0])
    )


def test_bad_verifier_parameters_point_at_the_verifiers(project: Project, alice: User) -> None:
    config = {"verifiers": [{"name": "regex_format", "params": {"colour": "red"}}]}
    with pytest.raises(InvalidInput) as err:
        experiment_create(project=project, actor=alice, name="x", config=config)
    assert list(err.value.fields) == ["config.verifiers.0.params.colour"]
    assert (
        "unknown parameter; valid parameters are: pattern, match"
        in err.value.fields["config.verifiers.0.params.colour"][0]
    )


def test_a_config_that_is_not_an_object_is_refused(project: Project, alice: User) -> None:
    with pytest.raises(InvalidInput) as err:
        experiment_create(project=project, actor=alice, name="x", config=["not", "a", "mapping"])
    assert "object of sections" in err.value.fields["config"][0]


def test_experiment_names_are_unique_in_a_project(
    project: Project, alice: User, experiment: Experiment
) -> None:
    with pytest.raises(InvalidInput) as err:
        experiment_create(project=project, actor=alice, name="addition", config=SMALL_CONFIG)
    assert "name" in err.value.fields


def test_an_annotator_cannot_create_experiments(project: Project, join: Join, charlie: User) -> None:
    join(charlie, "annotator")
    with pytest.raises(PermissionDenied):
        experiment_create(project=project, actor=charlie, name="x", config=SMALL_CONFIG)


def test_editing_the_config_leaves_launched_runs_as_they_were(
    experiment: Experiment, run: Run, alice: User
) -> None:
    experiment_update(
        experiment=experiment, actor=alice, config=with_changes(training={"learning_rate": 0.5})
    )
    run.refresh_from_db()
    assert experiment.config["training"]["learning_rate"] == 0.5
    assert run.config["training"]["learning_rate"] == 1e-4


def test_an_experiment_with_a_queued_run_cannot_be_deleted(
    experiment: Experiment, run: Run, alice: User
) -> None:
    with pytest.raises(Conflict, match="cancel them first"):
        experiment_delete(experiment=experiment, actor=alice)


def test_deleting_an_experiment_deletes_its_finished_runs(
    experiment: Experiment, run: Run, alice: User
) -> None:
    Run.objects.filter(pk=run.pk).update(status="failed")
    experiment_delete(experiment=experiment, actor=alice)
    assert not Run.objects.exists()
