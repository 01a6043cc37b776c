"""The runs table reads an outside run's config through trainer/config/outside_names.py: a TRL run sent
through the ingest API and a native run with the same beta and learning rate share those paths, the paths
TRL did not send and the per-run ones (output_dir, run name) are not offered as differing columns, and the
raw config stays stored as sent."""

from __future__ import annotations

import copy
from collections.abc import Callable

from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from tests.webapp.ingest.helpers import batch, post, token_client
from webapp.experiments.models import Run
from webapp.experiments.services import experiment_create, run_launch
from webapp.teams.models import Project

Api = Callable[[User | None], APIClient]
TRL_CONFIG = {
    "beta": 0.04,
    "learning_rate": 1e-4,
    "num_generations": 8,
    "output_dir": "/scratch/trl-out",
    "run_name": "trl-grpo",
    "bf16": True,
}


def native_and_trl_runs(project: Project, alice: User) -> tuple[Run, Run]:
    config = copy.deepcopy(SMALL_CONFIG)
    config["algorithm"] = {"beta": 0.04}  # SMALL_CONFIG's learning rate is 1e-4 too
    native = run_launch(
        experiment=experiment_create(project=project, actor=alice, name="native", config=config), actor=alice
    )
    assert post(token_client(alice), batch(project.slug, run={"config": TRL_CONFIG})).status_code == 201
    return native, Run.objects.get(source="trl")


def test_a_trl_run_and_a_native_run_with_the_same_beta_and_learning_rate_share_those_paths(
    api: Api, project: Project, alice: User
) -> None:
    native_and_trl_runs(project, alice)
    body = api(alice).get(f"/api/projects/{project.pk}/runs/table/").json()
    assert body["config_shared"]["algorithm.beta"] == 0.04
    assert body["config_shared"]["training.learning_rate"] == 1e-4
    assert not {"beta", "learning_rate", "num_generations"} & set(body["config_paths"])


def test_only_fields_both_runs_report_and_that_differ_are_the_default_columns(
    api: Api, project: Project, alice: User
) -> None:
    native, trl = native_and_trl_runs(project, alice)
    body = api(alice).get(f"/api/projects/{project.pk}/runs/table/").json()
    assert "rollout.num_generations" in body["config_differing"]  # 8 against 4: a real difference
    assert (
        "rollout.temperature" not in body["config_differing"]
    )  # TRL did not send it: unknown, not different
    assert not {"checkpoint.output_dir", "name"} & set(body["config_differing"])  # per run, whatever trained
    rows = {row["id"]: row["config"] for row in body["runs"]}
    assert rows[trl.pk]["checkpoint.output_dir"] == "/scratch/trl-out"
    assert "rollout.temperature" not in rows[trl.pk] and rows[native.pk]["rollout.temperature"] == 1.0


def test_the_raw_config_of_the_outside_run_is_kept_as_sent(project: Project, alice: User) -> None:
    _, trl = native_and_trl_runs(project, alice)
    assert trl.config == TRL_CONFIG
