"""A project's saved rubric as a reward source of an evaluation: ``{"rubric": id}`` becomes the rubric's config section
(label: its name), another project's rubric is refused in the one error shape, a judge criterion needs a judge model
confined as an experiment's is, a ``verifier`` rule's reward model is confined too, and the form's checkboxes post it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from tests.webapp.pages.conftest import browser_as  # noqa: F401 -- fixture
from webapp.rewards.evaluation_services import evaluation_inputs_for_worker
from webapp.rewards.models import RewardJob
from webapp.rubrics.models import Criterion, Rubric
from webapp.teams.models import Project
from webapp.teams.services import project_create

Api = Callable[[User | None], APIClient]
BrowserAs = Callable[[str | None], Client]
RULES: list[dict[str, Any]] = [
    {"name": "correct", "scorer": "rule", "rule": {"type": "verifier", "params": {"name": "exact"}}},
    {"name": "short", "scorer": "rule", "weight": 3.0,
     "rule": {"type": "length", "params": {"unit": "words", "max": 3}}},
    {"name": "tone", "scorer": "human", "scale": "likert5", "min_value": 1.0, "max_value": 5.0},
]  # fmt: skip
JUDGED: dict[str, Any] = {"name": "clear", "scorer": "judge", "scale": "likert5", "min_value": 1.0, "max_value": 5.0,
                          "judge": {"prompt_template": "Rate {completion}. Score:", "parse_pattern": r"(\d)"}}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_queue(settings: SettingsWrapper) -> None:
    settings.RLVR_ENQUEUE = False


def _rubric(
    project: Project, name: str, criteria: list[dict[str, Any]], aggregation: str = "weighted_sum"
) -> Rubric:
    rubric = Rubric.objects.create(project=project, name=name, aggregation=aggregation)
    for position, c in enumerate(criteria):
        Criterion.objects.create(rubric=rubric, position=position, **c)
    return rubric


def _post(api: Api, user: User, project: Project, sources: list[Any]) -> Any:
    body = {"sources": sources, "audit": True, "audit_problems": 2}
    return api(user).post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")


def test_a_rubric_of_the_project_becomes_its_config_section_labelled_by_its_name(
    api: Api, alice: User, project: Project
) -> None:
    rubric = _rubric(project, "Short and right", RULES, aggregation="rank")
    resp = _post(api, alice, project, [{"rubric": rubric.pk}, {"name": "chain_arithmetic"}])
    assert resp.status_code == 202, resp.json()
    entry = resp.json()["config"]["sources"][0]
    assert (entry["name"], entry["label"]) == ("rubric", "Short and right")
    assert entry["origin"] == {"rubric": rubric.pk, "name": "Short and right"}
    params = entry["params"]
    assert params["aggregation"] == "rank" and [c["name"] for c in params["criteria"]] == [
        "correct",
        "short",
        "tone",
    ]
    assert params["criteria"][1]["weight"] == 3.0
    # A snapshot: editing the rubric later does not change the job; the worker resolves the same entry.
    Criterion.objects.filter(rubric=rubric, name="short").update(weight=9.0)
    job = RewardJob.objects.get(pk=resp.json()["id"])
    worker = evaluation_inputs_for_worker(job=job)
    assert worker["sources"][0]["params"]["criteria"][1]["weight"] == 3.0 and worker["secret_names"] == []


def test_a_rubric_of_another_project_is_refused_in_the_one_error_shape(
    api: Api, alice: User, bob: User, project: Project
) -> None:
    other = project_create(name="Other", owner=alice)
    rubric = _rubric(other, "Theirs", RULES)
    resp = _post(api, alice, project, [{"rubric": rubric.pk}])
    assert resp.status_code == 400
    body = resp.json()
    assert set(body) == {"message", "extra"} and "not a rubric of this project" in body["message"]
    assert "sources.0" in body["extra"]["fields"]
    assert _post(api, alice, project, [{"rubric": 999_999}]).status_code == 400
    assert _post(api, bob, project, [{"rubric": rubric.pk}]).status_code == 404  # bob is no member of project
    assert RewardJob.objects.count() == 0


@pytest.mark.parametrize(
    "source",
    [{"rubric": True}, {"rubric": "1"}, {"rubric": 1, "extra": 2}, {"rubric": 1, "judge_model": 5}],
)
def test_malformed_rubric_references_are_refused(
    api: Api, alice: User, project: Project, source: Any
) -> None:
    resp = _post(api, alice, project, [source])
    assert resp.status_code == 400 and any(k.startswith("sources.0") for k in resp.json()["extra"]["fields"])


def test_a_rubric_is_no_best_of_n_oracle(api: Api, alice: User, project: Project) -> None:
    from webapp.datafiles.models import Dataset

    rubric = _rubric(project, "Mine", RULES)
    dataset = Dataset.objects.create(project=project, name="d.jsonl", format="jsonl", prompt_field="prompt", rows=2,
                                     answer_field="answer")  # fmt: skip
    body = {"sources": [{"name": "exact"}],
            "best_of_n": {"benchmark": f"dataset:{dataset.pk}", "oracle": {"rubric": rubric.pk}}}  # fmt: skip
    resp = api(alice).post(f"/api/projects/{project.pk}/reward-evaluations/", body, format="json")
    assert resp.status_code == 400 and "best_of_n.oracle" in resp.json()["extra"]["fields"], resp.json()
    assert "not a rubric" in resp.json()["message"]


def test_judge_criteria_need_a_judge_model_the_project_may_use(
    api: Api, alice: User, project: Project
) -> None:
    rubric = _rubric(project, "Judged", [*RULES, JUDGED])
    missing = _post(api, alice, project, [{"rubric": rubric.pk}])
    assert missing.status_code == 400 and "judge_model.name_or_path" in missing.json()["message"]
    outside = _post(api, alice, project, [{"rubric": rubric.pk, "judge_model": "/etc"}])
    assert outside.status_code == 400
    assert "sources.0.judge_model.name_or_path" in outside.json()["extra"]["fields"]
    bad_setting = _post(api, alice, project, [{"rubric": rubric.pk, "judge_model": {"name_or_path": "tiny:chain",
                                                                                    "top_k": -1}}])  # fmt: skip
    assert (
        bad_setting.status_code == 400
        and "sources.0.judge_model.top_k" in bad_setting.json()["extra"]["fields"]
    )
    ok = _post(api, alice, project, [{"rubric": rubric.pk, "judge_model": "tiny:chain"}])
    assert ok.status_code == 202, ok.json()
    assert ok.json()["config"]["sources"][0]["params"]["judge_model"]["name_or_path"] == "tiny:chain"


def test_a_verifier_rule_naming_a_reward_model_is_refused(api: Api, alice: User, project: Project) -> None:
    rule = {"type": "verifier", "params": {"name": "reward_model", "params": {"model": "/etc"}}}
    rubric = _rubric(project, "Sneaky", [{"name": "rm", "scorer": "rule", "rule": rule}])
    resp = _post(api, alice, project, [{"rubric": rubric.pk}])
    assert resp.status_code == 400, resp.json()
    assert "is a reward source" in str(resp.json()), (
        resp.json()
    )  # a model inside a rubric rule: refused outright


def test_the_form_offers_the_projects_rubrics_and_posts_the_chosen_ones(
    browser_as: BrowserAs,  # noqa: F811
    alice: User,
    project: Project,
) -> None:
    rubric = _rubric(project, "Short <b>and</b> right", RULES)
    other = _rubric(project_create(name="Other", owner=alice), "Elsewhere", RULES)
    client = browser_as("viewer")
    page = client.get(f"/projects/{project.pk}/reward-evaluations/")
    assert f'name="source_rubric" value="{rubric.pk}"'.encode() in page.content
    assert b"Short &lt;b&gt;and&lt;/b&gt; right" in page.content and b"Elsewhere" not in page.content
    form = {
        "name": "",
        "sources_json": "[]",
        "audit": "on",
        "audit_problems": "2",
        "source_rubric": [str(rubric.pk)],
    }
    resp = client.post(f"/projects/{project.pk}/reward-evaluations/", form)
    assert resp.status_code == 302, resp.content.decode()[-2000:]
    (entry,) = RewardJob.objects.get().config["sources"]
    assert entry["origin"]["rubric"] == rubric.pk and entry["label"] == rubric.name
    refused = client.post(
        f"/projects/{project.pk}/reward-evaluations/", {**form, "source_rubric": [str(other.pk)]}, follow=True
    )
    assert b"is not a rubric of this project" in refused.content and RewardJob.objects.count() == 1
