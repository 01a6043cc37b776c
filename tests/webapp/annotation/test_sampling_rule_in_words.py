"""The sampling rule in words, as the task page and the API show it instead of the stored dict."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from webapp.annotation.models import AnnotationTask
from webapp.annotation.sampling import SamplingRule, describe_sampling


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ({}, "No sampling rule recorded: every item given was taken."),
        (SamplingRule(n=20).as_dict(), "Up to 20 items at random (seed 0) from every step"),
        (SamplingRule(n=1, seed=4, last_step_only=True).as_dict(), "Up to 1 item at random (seed 4) from the last step"),
        (SamplingRule(strategy="stratified", n=200, strata=4, seed=3, steps=tuple(range(10, 51)), only_incorrect=True).as_dict(),
         "Up to 200 items stratified by reward (4 strata, seed 3) from steps 10–50, only incorrect completions"),
        (SamplingRule(steps=(1, 2, 3, 7, 9, 10)).as_dict(), "Up to 20 items at random (seed 0) from steps 1–3, 7, 9–10"),
        (SamplingRule(steps=(5,)).as_dict(), "Up to 20 items at random (seed 0) from step 5"),
        (SamplingRule(steps=(5, 6), last_step_only=True).as_dict(), "Up to 20 items at random (seed 0) from the last of steps 5–6"),
        ({**SamplingRule(n=8).as_dict(), "eval_run": 7}, "Up to 8 items at random (seed 0) from the samples of evaluation #7"),
    ],
)  # fmt: skip
def test_a_rule_reads_as_a_sentence(rule: dict[str, object], text: str) -> None:
    assert describe_sampling(rule) == text


def test_the_task_page_and_api_show_the_rule_in_words_not_the_dict(
    scored_task: AnnotationTask, alice: User, api: Callable[[User | None], APIClient]
) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get(f"/annotation/{scored_task.pk}/").content.decode()
    assert "Up to 6 items at random (seed 0) from every step · 6 drawn" in html
    assert "&#x27;strategy&#x27;" not in html and "'strategy'" not in html
    body = api(alice).get(f"/api/annotation-tasks/{scored_task.pk}/").json()
    assert (
        body["sampling_text"] == "Up to 6 items at random (seed 0) from every step"
        and body["sampling"]["n"] == 6
    )
