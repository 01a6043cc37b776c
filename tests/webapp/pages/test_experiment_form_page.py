"""The experiment form is generated from the trainer config's JSON schema."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client

from webapp.experiments.models import Experiment
from webapp.pages.forms_config import config_sections
from webapp.teams.models import Project


def test_sections_are_the_schemas_top_level_objects() -> None:
    keys = [section.key for section in config_sections()]
    assert keys == [
        "general", "model", "data", "rollout", "verifiers", "algorithm", "training", "checkpoint",
        "evaluation", "shaping", "budget", "teacher", "rubric",
    ]


def test_inputs_follow_the_field_types() -> None:
    fields = {f.path: f for section in config_sections() for f in section.fields}
    assert fields["algorithm.loss_type"].kind == "select"
    assert "dapo" in fields["algorithm.loss_type"].choices
    assert fields["data.shuffle"].kind == "checkbox"
    assert fields["training.learning_rate"].kind == "number"
    assert fields["rollout.num_generations"].kind == "integer"
    assert fields["rollout.num_generations"].minimum == 2
    assert fields["rollout.top_p"].maximum == 1
    assert fields["verifiers"].kind == "json"
    assert fields["algorithm.epsilon_high"].nullable


def test_the_new_form_prefills_defaults_and_shows_help(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="training.learning_rate"' in html
    assert 'value="1e-06"' in html
    assert 'data-error-for="config.training.learning_rate"' in html
    assert "KL coefficient to the frozen reference model" in html
    assert f'data-url="/api/projects/{project.pk}/experiments/"' in html
    assert "csrfmiddlewaretoken" in html


def test_the_edit_form_shows_the_saved_config(
    browser_as: Callable[[str | None], Client], experiment: Experiment
) -> None:
    html = browser_as("admin").get(f"/experiments/{experiment.pk}/edit/").content.decode()
    assert 'value="0.0001"' in html  # SMALL_CONFIG's learning rate
    assert 'data-method="PATCH"' in html
