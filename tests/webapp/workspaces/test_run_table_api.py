"""``GET /api/projects/<id>/runs/table/``: every run with its facts, its config as dotted scalar paths (shared
values sent once) and the metric summaries asked for; bounded in keys and rows; a viewer reads, an
outsider gets 404."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.experiments.metric_summaries import MAX_SUMMARY_KEYS
from webapp.experiments.models import Experiment, MetricPoint, Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.teams.models import Project
from webapp.workspaces import run_table
from webapp.workspaces.run_table import MAX_VALUE_TEXT, flatten_config

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]
KEY = "rollout/reward_mean"


def url(project: Project, metrics: str = "") -> str:
    return f"/api/projects/{project.pk}/runs/table/" + (f"?metrics={metrics}" if metrics else "")


def launch_with_lr(project: Project, owner: User, name: str, learning_rate: float) -> Run:
    config = copy.deepcopy(SMALL_CONFIG)
    config["training"]["learning_rate"] = learning_rate
    experiment = experiment_create(project=project, actor=owner, name=name, config=config)
    return run_launch(experiment=experiment, actor=owner)


def store(run: Run, key: str, values: dict[int, float | None]) -> None:
    MetricPoint.objects.bulk_create(MetricPoint(run=run, step=s, key=key, value=v) for s, v in values.items())


def test_a_viewer_reads_each_run_with_its_differing_config_and_summaries(
    api: Api, bob: User, join: Join, project: Project, alice: User
) -> None:
    join(bob, "viewer")
    slow = launch_with_lr(project, alice, "slow", 1e-5)
    fast = launch_with_lr(project, alice, "fast", 1e-3)
    store(slow, KEY, {s: 0.1 for s in range(1, 21)})
    store(fast, KEY, {s: s / 20 for s in range(1, 21)})
    store(fast, "actor/kl", {1: 0.5, 2: 0.25})

    response = api(bob).get(url(project, f"{KEY},actor/kl"))
    assert response.status_code == 200
    body = response.json()
    assert [row["id"] for row in body["runs"]] == [fast.pk, slow.pk]  # newest first
    assert (body["total"], body["truncated"]) == (2, False)
    row = body["runs"][0]
    assert row["experiment"] == {"id": fast.experiment_id, "name": "fast"}
    assert (row["status"], row["source"], row["created_by"], row["step"]) == ("queued", "native", "alice", 0)
    assert row["config"]["training.learning_rate"] == 1e-3
    assert "rollout.num_generations" not in row["config"]  # the same in both runs: sent once
    assert body["config_shared"]["rollout.num_generations"] == 4
    assert "training.learning_rate" in body["config_differing"]
    assert "name" not in body["config_differing"]  # differs, but says nothing about training
    assert "training.learning_rate" in body["config_paths"]
    assert row["metrics"][KEY]["last"] == 1.0
    assert row["metrics"][KEY]["smooth_max"] == pytest.approx(sum(range(11, 21)) / 20 / 10)
    assert row["metrics"]["actor/kl"]["min"] == 0.25
    assert list(body["runs"][1]["metrics"]) == [KEY]  # no actor/kl reported: no summary
    assert body["runs"][1]["metrics"][KEY]["smooth_max"] == pytest.approx(0.1)
    assert body["metrics"] == {KEY: {"direction": "max"}, "actor/kl": {"direction": "min"}}
    assert body["metric_keys"] == ["actor/kl", KEY]
    assert body["smoothing_window"] == 10


def test_without_metrics_asked_for_rows_carry_none_but_the_keys_are_offered(
    api: Api, alice: User, project: Project, run: Run
) -> None:
    store(run, KEY, {1: 0.5})
    body = api(alice).get(url(project)).json()
    assert body["runs"][0]["metrics"] == {}
    assert body["metric_keys"] == [KEY]
    assert body["config_differing"] == []  # one run: nothing differs


def test_an_outsider_gets_404_and_an_anonymous_client_is_refused(
    api: Api, bob: User, join: Join, project: Project, run: Run
) -> None:
    join(bob, None)
    response = api(bob).get(url(project, KEY))
    assert response.status_code == 404
    assert set(response.json()) == {"message", "extra"}
    assert api(None).get(url(project)).status_code in (401, 403)


def test_more_metric_keys_than_the_bound_is_a_400_naming_metrics(
    api: Api, alice: User, project: Project, run: Run
) -> None:
    keys = ",".join(f"k/{i}" for i in range(MAX_SUMMARY_KEYS + 1))
    response = api(alice).get(url(project, keys))
    assert response.status_code == 400
    body = response.json()
    assert "metrics" in body["extra"]["fields"] and str(MAX_SUMMARY_KEYS) in body["message"]


def test_an_empty_project_has_no_rows_and_says_so(api: Api, alice: User, project: Project) -> None:
    body = api(alice).get(url(project, KEY)).json()
    assert (body["runs"], body["total"], body["truncated"], body["metric_keys"]) == ([], 0, False, [])


def test_the_table_holds_the_newest_runs_and_says_when_the_project_has_more(
    api: Api, alice: User, project: Project, experiment: Experiment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_table, "MAX_TABLE_RUNS", 3)
    runs = [run_launch(experiment=experiment, actor=alice) for _ in range(5)]
    body = api(alice).get(url(project)).json()
    assert [row["id"] for row in body["runs"]] == [r.pk for r in runs[::-1][:3]]
    assert (body["total"], body["limit"], body["truncated"]) == (5, 3, True)


def test_the_runs_of_another_project_never_appear(api: Api, alice: User, project: Project, run: Run) -> None:
    from webapp.teams.services import project_create

    other = project_create(name="Other", owner=alice)
    elsewhere = launch_with_lr(other, alice, "elsewhere", 1e-4)
    ids = [row["id"] for row in api(alice).get(url(project)).json()["runs"]]
    assert ids == [run.pk] and elsewhere.pk not in ids


def test_a_config_is_flattened_to_dotted_scalars_with_lists_and_long_text_summarised() -> None:
    flat = flatten_config({
        "training": {"learning_rate": 1e-6, "fsdp": False, "memory_budget_gb": None},
        "verifiers": [{"name": "exact", "params": {}}, {"name": "regex_format", "params": {"x": 1}}],
        "evaluation": {"benchmarks": [], "task_config": {}}, "algorithm": {"loss_masks": [1, 2]},
        "data": {"system_prompt": "x" * 500},
    })  # fmt: skip
    assert flat["training.learning_rate"] == 1e-6
    assert flat["training.fsdp"] is False and flat["training.memory_budget_gb"] is None
    assert flat["verifiers"] == "exact, regex_format"
    assert flat["evaluation.benchmarks"] == "[]" and flat["evaluation.task_config"] == "{}"
    assert flat["algorithm.loss_masks"] == "[1, 2]"
    assert len(str(flat["data.system_prompt"])) == MAX_VALUE_TEXT and str(
        flat["data.system_prompt"]
    ).endswith("…")


def test_a_deep_or_huge_outside_config_stays_bounded() -> None:
    deep: dict[str, object] = {"leaf": 1}
    for i in range(20):
        deep = {f"d{i}": deep}
    flat = flatten_config({"deep": deep, **{f"k{i}": i for i in range(5000)}})
    assert len(flat) == run_table.MAX_PATHS_PER_RUN
    assert all(path.count(".") <= run_table.MAX_CONFIG_DEPTH for path in flat)
    assert flatten_config(["not", "an", "object"]) == {}
