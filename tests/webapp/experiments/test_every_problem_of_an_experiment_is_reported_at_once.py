"""One answer lists every problem of an experiment, from every stage (the name, pydantic's field checks,
registry names, the cross-section checks, the path checks), each keyed by the field the form shows it at."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.models import Experiment
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]


def post(api: Api, user: User, project: Project, name: str, config: Any) -> Any:
    return api(user).post(
        f"/api/projects/{project.pk}/experiments/", {"name": name, "config": config}, format="json"
    )


def test_mistakes_in_every_stage_come_back_together_each_at_its_field(
    api: Api, alice: User, project: Project
) -> None:
    config = {
        **SMALL_CONFIG,
        "training": {"learning_rate": -0.001, "max_steps": 20},  # pydantic: a field
        "rollout": {"num_generations": 0},  # pydantic: another section
        "verifiers": [{"name": "exact"}, {"name": "nosuch"}],  # the verifier registry
        "teacher": {"mode": "self", "name_or_path": "tiny:addition-teacher"},  # a cross-section check
        "data": {"source": "file", "path": "dataset:999999"},  # the path checks
    }
    response = post(api, alice, project, "   ", config)
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "extra"}
    fields = body["extra"]["fields"]
    assert set(fields) == {
        "name",
        "config.training.learning_rate",
        "config.rollout.num_generations",
        "config.verifiers.1.name",
        "config.teacher.mode",
        "config.data.path",
    }
    assert fields["name"] == ["An experiment needs a name."]
    assert fields["config.verifiers.1.name"][0].startswith("unknown verifier 'nosuch'; valid names are: ")
    assert "remove teacher.name_or_path" in fields["config.teacher.mode"][0]
    assert "is not an uploaded data file of this project" in fields["config.data.path"][0]
    assert body["message"].endswith("(and 5 more)")
    assert Experiment.objects.count() == 0


def test_a_cross_section_check_on_a_field_that_was_wrong_waits_for_the_next_answer(
    api: Api, alice: User, project: Project
) -> None:
    """prompts_per_step is refused by its own bound: the divisibility check would judge its default, so it is
    not run on it (a message about 4 when 0 was written would mislead)."""
    config = {**SMALL_CONFIG, "training": {"prompts_per_step": 0, "num_processes": 3}}
    fields = post(api, alice, project, "x", config).json()["extra"]["fields"]
    assert list(fields) == ["config.training.prompts_per_step"]
    assert fields["config.training.prompts_per_step"] == ["Input should be greater than or equal to 1"]


def test_independent_cross_section_checks_are_all_reported(api: Api, alice: User, project: Project) -> None:
    config = {
        **SMALL_CONFIG,
        "training": {**SMALL_CONFIG["training"], "prompts_per_step": 3, "num_processes": 2},
        "teacher": {"mode": "self", "privileged_template": "{prompt}"},
        "shaping": {"reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 8}}]},
    }
    fields = post(api, alice, project, "x", config).json()["extra"]["fields"]
    assert set(fields) == {
        "config.training.prompts_per_step",
        "config.teacher.privileged_template",
        "config.shaping.reward_shaping.0",
    }
    assert "divisible by training.num_processes (2)" in fields["config.training.prompts_per_step"][0]
    assert "must be below rollout.max_completion_length" in fields["config.shaping.reward_shaping.0"][0]


def test_a_sections_own_check_is_keyed_by_the_field_it_names(api: Api, alice: User, project: Project) -> None:
    config = {**SMALL_CONFIG, "algorithm": {"epsilon": 0.4, "epsilon_high": 0.1}, "data": {"source": "file"}}
    fields = post(api, alice, project, "x", config).json()["extra"]["fields"]
    assert set(fields) == {"config.algorithm.epsilon_high", "config.data.source"}
    assert "clip-higher needs epsilon_high >= epsilon" in fields["config.algorithm.epsilon_high"][0]


def test_a_verifiers_bad_parameter_and_a_methods_are_keyed_by_the_parameter(
    api: Api, alice: User, project: Project
) -> None:
    config = {
        **SMALL_CONFIG,
        "verifiers": [{"name": "numeric", "params": {"abs_tol": -1, "colour": "red"}}],
        "algorithm": {"token_credit": {"name": "top_entropy", "params": {"quantile": 2}}},
    }
    fields = post(api, alice, project, "x", config).json()["extra"]["fields"]
    assert fields["config.verifiers.0.params.abs_tol"] == ["Input should be greater than or equal to 0"]
    assert fields["config.verifiers.0.params.colour"][0].startswith(
        "unknown parameter; valid parameters are: extract,"
    )
    assert fields["config.algorithm.token_credit.params.quantile"] == [
        "Input should be less than or equal to 1"
    ]


def test_the_experiment_name_is_the_configs_name(api: Api, alice: User, project: Project) -> None:
    response = post(api, alice, project, "  sums with a teacher ", {**SMALL_CONFIG, "name": "something else"})
    assert response.status_code == 201, response.json()
    assert response.json()["name"] == "sums with a teacher"
    assert response.json()["config"]["name"] == "sums with a teacher"
    renamed = api(alice).patch(
        f"/api/experiments/{response.json()['id']}/", {"name": "renamed"}, format="json"
    )
    assert renamed.json()["config"]["name"] == "renamed"


def test_a_name_too_long_and_a_bad_config_are_reported_together(
    api: Api, alice: User, project: Project
) -> None:
    fields = post(api, alice, project, "n" * 201, {"training": {"max_steps": 0}}).json()["extra"]["fields"]
    assert fields == {
        "name": ["At most 200 characters (this one has 201)."],
        "config.training.max_steps": ["Input should be greater than or equal to 1"],
    }


def test_an_edit_reports_every_problem_too(api: Api, alice: User, experiment: Experiment) -> None:
    response = api(alice).patch(f"/api/experiments/{experiment.pk}/", {
        "name": "", "config": {**SMALL_CONFIG, "rollout": {"temperature": 0}, "verifiers": [{"name": "nope"}]},
    }, format="json")  # fmt: skip
    assert response.status_code == 400
    assert set(response.json()["extra"]["fields"]) == {
        "name",
        "config.rollout.temperature",
        "config.verifiers.0.name",
    }
    experiment.refresh_from_db()
    assert experiment.name == "addition"
