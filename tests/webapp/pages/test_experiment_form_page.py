"""The experiment form is generated from the trainer config's JSON schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser

from django.test import Client

from trainer.methods.token_credit import TOKEN_CREDIT
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
    assert fields["algorithm.loss_type.name"].kind == "select"
    assert "dapo" in fields["algorithm.loss_type.name"].choices
    assert fields["algorithm.loss_type.params"].kind == "json"
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


class MethodChoiceMarkup(HTMLParser):
    """The options of one method select, the textarea it fills in, and the descriptions listed under it."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path, self.in_select, self.in_field = path, False, False
        self.select: dict[str, str | None] = {}
        self.options: dict[str, dict[str, str | None]] = {}
        self.textareas: dict[str, dict[str, str | None]] = {}
        self.listed: list[tuple[str, str]] = []
        self._tag = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self._tag = tag
        if tag == "select" and a.get("data-path") == f"{self.path}.name":
            self.select, self.in_select, self.in_field = a, True, True
        elif tag == "option" and self.in_select:
            self.options[a["value"] or ""] = a
        elif tag == "textarea":
            self.textareas[a["id"] or ""] = a
        elif tag == "select":
            self.in_field = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self.in_select = False
        if tag == "dl":
            self.in_field = False

    def handle_data(self, data: str) -> None:
        if self.in_field and self._tag == "dt":
            self.listed.append((data, ""))
        elif self.in_field and self._tag == "dd" and self.listed:
            self.listed[-1] = (self.listed[-1][0], self.listed[-1][1] + data)


def test_a_method_choice_is_a_described_select_that_fills_a_params_area(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    page = MethodChoiceMarkup("algorithm.token_credit")
    page.feed(html)
    offered = [e.name for e in TOKEN_CREDIT.choices()]  # every registered method, the default first
    assert offered[0] == "uniform" and {"ecr", "top_entropy"} <= set(offered)
    assert list(page.options) == offered
    assert "forking" in (page.options["top_entropy"]["title"] or "")
    assert json.loads(page.options["top_entropy"]["data-params"] or "") == {"quantile": 0.2}
    assert "selected" in page.options["uniform"]  # the default
    area = page.textareas[page.select["data-params-target"] or ""]
    assert area["data-path"] == "algorithm.token_credit.params" and area["data-kind"] == "json"
    assert [name for name, _ in page.listed] == offered
    assert dict(page.listed)["top_entropy"] == page.options["top_entropy"]["title"]


def test_the_edit_form_shows_the_saved_config(
    browser_as: Callable[[str | None], Client], experiment: Experiment
) -> None:
    html = browser_as("admin").get(f"/experiments/{experiment.pk}/edit/").content.decode()
    assert 'value="0.0001"' in html  # SMALL_CONFIG's learning rate
    assert 'data-method="PATCH"' in html
