"""Reward models in a real browser: set a project secret on the Secrets page (write-only: its value is nowhere on
any page afterwards, nor in the database row), create a judge reward model whose key is that secret, see its config
entry, and add it to a new experiment's reward sources with a weight from the experiment form's picker."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser.helpers import JUDGE_URL, PASSWORD

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SECRET_VALUE = "sk-browser-0123456789abcdefNEVERSHOWN"


def test_a_judge_and_its_secret_are_set_in_the_pages_and_the_value_never_comes_back(
    page: Any, sign_in: Callable[[str, str], Any], screenshot: Callable[[Any, str], Path]
) -> None:
    from tests.workers.helpers import make_project, make_user
    from webapp.rewards.models import ProjectSecret, RewardModelVersion

    project = make_project(make_user("alice"), "Lab")
    sign_in("alice", PASSWORD)
    page.goto(f"/projects/{project.pk}/")
    page.click("#reward-models-link")
    page.wait_for_url(re.compile(rf"/projects/{project.pk}/reward-models/$"))
    page.click("#secrets-link")
    page.fill("#secret-name", "OPENAI_KEY")
    page.fill("#secret-value", SECRET_VALUE)
    page.click("#secret-save")
    page.wait_for_selector("#secret-table")
    assert page.locator("#secret-table").inner_text().count("OPENAI_KEY") == 1
    assert page.input_value("#secret-value") == ""
    assert SECRET_VALUE not in page.content()
    row = ProjectSecret.objects.get(project=project, name="OPENAI_KEY")
    assert SECRET_VALUE.encode() not in bytes(row.ciphertext)
    screenshot(page, "secrets")

    page.goto(f"/projects/{project.pk}/reward-models/")
    page.fill("#rm-name", "gpt judge")
    page.click("#reward-model-create button[type=submit]")
    page.wait_for_selector("#rm-judge-form")
    page.fill("#judge-base-url", JUDGE_URL)
    page.fill("#judge-model", "tiny-judge")
    page.select_option("#judge-secret", "OPENAI_KEY")
    page.select_option("#judge-parse", "verdict")
    page.click("#judge-save")
    page.wait_for_selector("#rm-config-entry")
    entry = page.locator("#rm-config-entry").inner_text()
    assert "name: judge" in entry and "api_key_secret: OPENAI_KEY" in entry and "kind: verdict" in entry
    assert SECRET_VALUE not in page.content()
    version = RewardModelVersion.objects.get(reward_model__project=project)
    assert version.params["api_key_secret"] == "OPENAI_KEY"
    screenshot(page, "version")

    for url in (f"/projects/{project.pk}/secrets/", f"/reward-models/{version.reward_model_id}/"):
        page.goto(url)
        assert SECRET_VALUE not in page.content(), url
    for url in (f"/api/projects/{project.pk}/secrets/", f"/api/projects/{project.pk}/reward-model-versions/"):
        assert SECRET_VALUE not in page.request.get(url).text(), url

    page.goto(f"/projects/{project.pk}/experiments/new/")
    page.wait_for_selector("#reward-source-picker")
    page.select_option("#reward-source-picker", label="gpt judge v1 (judge)")
    page.fill("#reward-source-weight", "0.5")
    page.click("#reward-source-add")
    verifiers = json.loads(page.input_value("#cfg-verifiers"))
    assert verifiers[-1] == version.config_entry
    weights = json.loads(page.input_value("#cfg-algorithm-reward_weights"))
    assert weights == [1.0] * (len(verifiers) - 1) + [0.5]
    assert not page.js_errors
    screenshot(page, "form")
