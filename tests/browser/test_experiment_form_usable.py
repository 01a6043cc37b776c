"""The experiment form as people use it, in a real browser: a short first screen with the rest folded, every
error of a bad form shown at once at its field, structured verifier rows that survive a save and a reload,
and the YAML view's round trip (with a dataset preselected from the URL)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import SCREENSHOTS
from tests.browser.helpers import PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SUBMIT = "#experiment-form button[type=submit]"
LEARNING_RATE = "[data-path='training.learning_rate']"
GROUP_SIZE = "[data-path='rollout.num_generations']"

# Pasted into the YAML view: a verifier name no registry holds and a clip range of 0 (a folded section).
BAD_YAML = """\
verifiers:
  - name: nosuch
algorithm:
  epsilon: 0
training:
  max_steps: 5
"""


def open_new_form(page: Any, sign_in: Callable[[str, str], Any], query: str = "") -> Any:
    from tests.workers.helpers import make_project, make_user

    project = make_project(make_user("alice"), "Lab")
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/experiments/new/{query}")
    page.wait_for_selector("#cfg-verifiers-editor .list-row select")  # the editors are drawn
    return project


def error_at(page: Any, key: str) -> Any:
    return page.locator(f"#experiment-form p.error[data-error-for='{key}']")


def viewport_shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"test_experiment_form_usable--{name}.png"))


def test_the_form_as_first_shown_is_short_with_the_rest_folded(
    page: Any, sign_in: Callable[[str, str], Any]
) -> None:
    open_new_form(page, sign_in)
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2500, f"the form is {height} px tall as first shown"
    sections = page.locator("#experiment-form details.section")
    assert sections.count() >= 10
    assert page.evaluate("[...document.querySelectorAll('#experiment-form details')].every(d => !d.open)")
    for essential in [
        "#exp-name",
        "[data-path='model.name_or_path']",
        "#dataset-select",
        LEARNING_RATE,
        GROUP_SIZE,
        "[data-path='rollout.max_completion_length']",
        "[data-path='training.max_steps']",
        "#ed-verifiers-0-name",
    ]:
        assert page.locator(essential).is_visible(), essential
    assert page.locator("[data-path='name']").count() == 0  # the experiment's name is the config's
    assert page.get_by_text(re.compile(r"^Experiment name$")).count() == 0
    assert page.locator("#experiment-form label", has_text=re.compile(r"^\s*Name\s*$")).count() == 1
    viewport_shot(page, "top")
    assert page.js_errors == []


def test_a_bad_form_shows_every_error_at_its_field_at_once_and_saves_once_fixed(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.experiments.models import Experiment

    open_new_form(page, sign_in)
    page.click("#yaml-toggle")
    page.wait_for_function("() => document.getElementById('yaml-text').value.includes('verifiers:')")
    page.fill("#yaml-text", BAD_YAML)
    page.click("#yaml-apply")
    page.wait_for_selector("#yaml-status:not([hidden])")
    assert (
        page.input_value("#ed-verifiers-0-name") == "nosuch"
    )  # shown as it was pasted, to be refused on save
    page.click("#yaml-toggle")
    page.fill("#exp-name", "")
    page.fill(LEARNING_RATE, "-0.001")
    page.fill(GROUP_SIZE, "0")

    page.click(SUBMIT)
    page.wait_for_selector("#form-errors:not([hidden])")
    expected = {
        "name": "needs a name",
        "config.training.learning_rate": "greater than 0",
        "config.rollout.num_generations": "greater than or equal to 2",
        "config.verifiers.0.name": "unknown verifier 'nosuch'",
        "config.algorithm.epsilon": "greater than 0",
    }
    for key, words in expected.items():  # one submit: every stage's errors, each at its own field
        assert error_at(page, key).is_visible(), key
        assert words in error_at(page, key).inner_text(), key
    assert page.locator("#form-errors-list li").count() == len(expected)
    assert page.evaluate(
        "document.querySelector(\"details[data-section='algorithm']\").open"
    )  # opened for its error
    assert page.locator("details[data-section='algorithm'] .error-count").inner_text() == "1 error"
    screenshot(page, "errors")
    viewport_shot(page, "errors-first")  # scrolled to the first error, the summary above it
    page.locator("#form-errors-list a", has_text="Epsilon").click()
    assert page.evaluate("document.activeElement.dataset.path") == "algorithm.epsilon"
    viewport_shot(page, "errors-top")

    page.fill("#exp-name", "fixed in one pass")
    page.fill(LEARNING_RATE, "0.001")
    page.fill(GROUP_SIZE, "4")
    page.select_option("#ed-verifiers-0-name", "exact")
    page.fill("[data-path='algorithm.epsilon']", "0.2")
    page.click(SUBMIT)
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    config = Experiment.objects.get(name="fixed in one pass").config
    assert config["name"] == "fixed in one pass"  # one name
    assert config["training"]["learning_rate"] == 0.001 and config["training"]["max_steps"] == 5
    assert config["rollout"]["num_generations"] == 4 and config["algorithm"]["epsilon"] == 0.2
    assert [v["name"] for v in config["verifiers"]] == ["exact"]
    assert page.js_errors == []


def test_two_verifiers_added_with_the_editor_come_back_in_order_with_their_params(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from webapp.experiments.models import Experiment

    open_new_form(page, sign_in)
    add = page.locator("#cfg-verifiers-editor .list-add")
    add.click()
    page.select_option("#ed-verifiers-1-name", "regex_format")
    assert page.input_value("#ed-verifiers-1-params-pattern").startswith("<think>")  # the method's defaults
    page.fill("#ed-verifiers-1-params-pattern", "[0-9]+")
    page.select_option("#ed-verifiers-1-params-match", label="search")
    add.click()
    page.select_option("#ed-verifiers-2-name", "numeric")
    page.fill("#ed-verifiers-2-params-abs_tol", "0.5")
    page.fill("#ed-verifiers-2-label", "close")
    page.locator("#cfg-verifiers-editor .list-row").nth(2).get_by_role("button", name="Move up 3").click()
    page.locator("#cfg-verifiers-editor .list-row").nth(0).get_by_role("button", name="Remove 1").click()
    rows = page.locator("#cfg-verifiers-editor .list-row")
    assert rows.count() == 2
    section = page.locator("#experiment-form .group-reward")
    section.screenshot(path=str(SCREENSHOTS / "test_experiment_form_usable--verifier-rows.png"))

    page.fill("#exp-name", "two verifiers")
    page.click(SUBMIT)
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    experiment = Experiment.objects.get(name="two verifiers")
    verifiers = experiment.config["verifiers"]
    assert [(v["name"], v["label"]) for v in verifiers] == [("numeric", "close"), ("regex_format", None)]
    assert verifiers[0]["params"]["abs_tol"] == 0.5
    assert verifiers[1]["params"]["pattern"] == "[0-9]+" and verifiers[1]["params"]["match"] == "search"

    page.goto(f"/experiments/{experiment.pk}/edit/")
    page.wait_for_selector("#cfg-verifiers-editor .list-row select")
    assert [page.input_value(f"#ed-verifiers-{i}-name") for i in range(2)] == ["numeric", "regex_format"]
    assert page.input_value("#ed-verifiers-0-params-abs_tol") == "0.5"
    assert page.input_value("#ed-verifiers-0-label") == "close"
    assert page.input_value("#ed-verifiers-1-params-pattern") == "[0-9]+"
    screenshot(page, "edit-page")
    assert page.js_errors == []


def test_the_yaml_view_shows_the_config_and_applies_an_edited_one(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.datafiles.models import Dataset
    from webapp.experiments.models import Experiment

    project = make_project(make_user("alice"), "Lab")
    dataset = Dataset.objects.create(
        project=project,
        name="sums",
        path="/nonexistent/sums.jsonl",
        format="jsonl",
        rows=3,
        prompt_field="question",
        answer_field="answer",
    )
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/experiments/new/?dataset={dataset.pk}")  # a "train on it" link
    page.wait_for_selector("#cfg-verifiers-editor .list-row select")
    assert page.input_value("#dataset-select") == str(dataset.pk)
    assert page.input_value("[data-path='data.source']") == "file"
    assert page.input_value("[data-path='data.path']") == f"dataset:{dataset.pk}"
    assert (
        page.locator("a", has_text="Upload a dataset").get_attribute("href")
        == f"/projects/{project.pk}/datasets/"
    )

    page.click("details[data-section='algorithm'] > summary")
    page.select_option("#ed-algorithm-token_credit-name", "top_entropy")
    page.fill("#ed-algorithm-token_credit-params-quantile", "0.3")
    assert page.locator("details[data-section='algorithm'] .changed-count").inner_text() == "1 changed"
    page.fill(LEARNING_RATE, "0.002")
    page.click("#yaml-toggle")
    page.wait_for_function("() => document.getElementById('yaml-text').value.includes('top_entropy')")
    text = page.input_value("#yaml-text")
    assert (
        "learning_rate: 0.002" in text and "quantile: 0.3" in text and f"path: dataset:{dataset.pk}" in text
    )

    page.fill("#yaml-text", "training:\n  learning_rate: [1, 2\nrollout: {}\n")
    page.click("#yaml-apply")
    page.wait_for_selector("#yaml-error:not([hidden])")
    assert re.search(r"line \d+", page.inner_text("#yaml-error"))
    page.fill("#yaml-text", "base: &b {learning_rate: 0.1}\ntraining: *b\n")
    page.click("#yaml-apply")
    page.wait_for_function("() => document.getElementById('yaml-error').textContent.includes('anchors')")
    assert page.input_value(LEARNING_RATE) == "0.002"  # nothing applied from refused text

    page.fill("#yaml-text", text.replace("learning_rate: 0.002", "learning_rate: 0.005"))
    page.click("#yaml-apply")
    page.wait_for_selector("#yaml-status:not([hidden])")
    assert page.input_value(LEARNING_RATE) == "0.005"
    assert page.input_value("#ed-algorithm-token_credit-name") == "top_entropy"
    assert page.input_value("#ed-algorithm-token_credit-params-quantile") == "0.3"
    assert page.input_value("#dataset-select") == str(dataset.pk)
    screenshot(page, "yaml-view")

    page.fill("#exp-name", "from yaml")
    page.click(SUBMIT)
    page.wait_for_url(re.compile(r"/experiments/\d+/$"))
    config = Experiment.objects.get(name="from yaml").config
    assert config["training"]["learning_rate"] == 0.005
    assert config["algorithm"]["token_credit"] == {"name": "top_entropy", "params": {"quantile": 0.3}}
    assert config["data"]["path"] == f"dataset:{dataset.pk}" and config["data"]["prompt_field"] == "question"
    assert page.js_errors == []
