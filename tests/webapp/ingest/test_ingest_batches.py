"""POST /api/ingest/batches/: the first batch makes an outside run, every item is applied idempotently,
and every bad batch gets the one error shape."""

from __future__ import annotations

import gzip
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper

from tests.webapp.ingest.helpers import batch, post, rollout, token_client
from webapp.experiments.models import Checkpoint, MetricPoint, Rollout, Run, RunSource, RunStatus
from webapp.experiments.selectors import rollout_detail
from webapp.teams.models import Project

pytestmark = pytest.mark.django_db


def test_the_first_batch_makes_a_running_outside_run_in_its_own_experiment(
    alice: User, project: Project
) -> None:
    response = post(token_client(alice), batch(project.slug))

    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["run_id"])
    assert (run.source, run.status, run.max_steps, run.external_key) == (
        RunSource.TRL,
        RunStatus.RUNNING,
        10,
        "run-a",
    )
    assert run.experiment.name == "trl-grpo" and run.experiment.project == project
    assert run.source_info["version"] == "1.16.0" and run.worker == "gpu-3"
    assert "TRL 1.16.0 on gpu-3" in run.events.get(kind="started").message


def test_resending_a_batch_stores_nothing_twice(alice: User, project: Project) -> None:
    client = token_client(alice)
    body = batch(
        project.slug,
        metrics=[
            {"step": 1, "values": {"rollout/reward_mean": 0.5}},
            {"step": 2, "values": {"rollout/reward_mean": 0.7}},
        ],
        rollouts=[rollout(1, 0, 0), rollout(1, 0, 1), rollout(2, 0, 0)],
        checkpoints=[{"step": 2, "uri": "s3://bucket/ckpt-2"}],
    )
    first, second = post(client, body), post(client, body)

    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["run_id"] == second.json()["run_id"]
    run = Run.objects.get()
    assert MetricPoint.objects.filter(run=run).count() == 2
    assert Rollout.objects.filter(run=run).count() == 3
    assert list(Checkpoint.objects.filter(run=run).values_list("step", "path")) == [(2, "s3://bucket/ckpt-2")]
    assert run.step == 2


def test_a_resent_slot_replaces_the_rollout_and_keeps_the_others_of_its_step(
    alice: User, project: Project
) -> None:
    client = token_client(alice)
    post(client, batch(project.slug, rollouts=[rollout(1, 0, 0), rollout(1, 0, 1)]))
    post(client, batch(project.slug, rollouts=[rollout(1, 0, 1, completion="changed", reward=0.0)]))

    rows = {r.sample_index: r for r in Rollout.objects.filter(step=1)}
    assert sorted(rows) == [0, 1]
    assert (rows[1].completion, rows[1].reward, rows[0].reward) == ("changed", 0.0, 1.0)


def test_the_token_view_reads_an_outside_rollouts_arrays(alice: User, project: Project) -> None:
    post(token_client(alice), batch(project.slug, rollouts=[rollout(1, n_tokens=3)]))
    row = Rollout.objects.get()

    detail = rollout_detail(run=row.run, rollout_id=row.pk)

    assert detail.token_ids == [10, 11, 12]
    assert detail.channels["advantage"] == pytest.approx([0.5] * 3)
    assert detail.channels["entropy"] is None  # not sent: absent, never a 0
    assert row.correct is None and row.rewards["accuracy"] == 1.0 and row.rewards.get("format") is None


def test_finish_sets_the_outcome_once(alice: User, project: Project) -> None:
    client = token_client(alice)
    post(client, batch(project.slug, finish={"status": "failed", "error_message": "CUDA out of memory"}))
    post(client, batch(project.slug, finish={"status": "succeeded"}))

    run = Run.objects.get()
    assert (run.status, run.error_message) == (RunStatus.FAILED, "CUDA out of memory")
    assert run.finished_at is not None


def test_a_gzipped_batch_is_read(alice: User, project: Project) -> None:
    response = post(
        token_client(alice), batch(project.slug, metrics=[{"step": 3, "values": {"a": 1.0}}]), gzipped=True
    )
    assert response.status_code == 201
    assert MetricPoint.objects.get().step == 3


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b["rollouts"][0]["token_values"].update(logprob=[0.0]), "rollouts.0"),
        (lambda b: b["rollouts"][0]["token_values"].update(surprise=[0.0, 0.0, 0.0]), "rollouts.0"),
        (lambda b: b["rollouts"].append(rollout(1)), "(body)"),
        (lambda b: b["run"].update(key="../../etc"), "run.key"),
        (lambda b: b["run"].update(source="wandb"), "run.source"),
        (lambda b: b["metrics"].append({"step": -1, "values": {}}), "metrics.0.step"),
        (lambda b: b.update(finish={"status": "exploded"}), "finish.status"),
    ],
)
def test_a_bad_batch_is_refused_naming_the_field_and_stores_nothing(
    alice: User, project: Project, change: Callable[[dict], None], field: str
) -> None:
    body = batch(project.slug, rollouts=[rollout(1)], metrics=[])
    change(body)

    response = post(token_client(alice), body)

    assert response.status_code == 400
    data = response.json()
    assert set(data) == {"message", "extra"}
    assert any(path.startswith(field) for path in data["extra"]["fields"]), data
    assert not Run.objects.exists()


def test_nan_is_not_json_and_is_refused(alice: User, project: Project) -> None:
    raw = b'{"version": 1, "run": {"project": "lab", "key": "k", "name": "n"}, "metrics": [{"step": 1, "values": {"a": NaN}}]}'
    response = token_client(alice).generic(
        "POST", "/api/ingest/batches/", raw, content_type="application/json"
    )
    assert response.status_code == 400 and "message" in response.json()


def test_a_gzip_bomb_is_refused_once_it_inflates_past_the_limit(
    alice: User, project: Project, settings: SettingsWrapper
) -> None:
    settings.RLVR_MAX_INGEST_MB = 1
    bomb = gzip.compress(b" " * (3 * 2**20))  # 3 MB of spaces: ~3 KB on the wire
    response = token_client(alice).generic(
        "POST", "/api/ingest/batches/", bomb, content_type="application/json", HTTP_CONTENT_ENCODING="gzip"
    )
    assert response.status_code == 413
    assert "RLVR_MAX_INGEST_MB" in response.json()["message"]


def test_a_batch_over_the_normal_body_limit_is_taken_up_to_the_ingest_limit(
    alice: User, project: Project, settings: SettingsWrapper
) -> None:
    settings.RLVR_MAX_BODY_KB = 64
    body = batch(project.slug, rollouts=[rollout(1, sample_index=i, n_tokens=400) for i in range(8)])
    response = post(token_client(alice), body)
    assert response.status_code == 201, response.json()
    assert Rollout.objects.count() == 8


@pytest.mark.parametrize(
    ("role", "status"), [(None, 404), ("viewer", 403), ("annotator", 403), ("admin", 201)]
)
def test_only_members_who_operate_runs_may_send_runs(
    bob: User, project: Project, join: Callable[[User, str | None], User], role: str | None, status: int
) -> None:
    join(bob, role)
    response = post(token_client(bob), batch(project.slug))
    assert response.status_code == status
    assert ("run_id" in response.json()) if status == 201 else (set(response.json()) == {"message", "extra"})


def test_a_key_names_a_run_within_its_project_only(alice: User, project: Project, bob: User) -> None:
    from webapp.teams.services import project_create

    other = project_create(name="Other", owner=bob)
    post(token_client(alice), batch(project.slug, key="same"))
    post(token_client(bob), batch(other.slug, key="same"))

    assert Run.objects.filter(external_key="same").count() == 2
    assert {r.experiment.project_id for r in Run.objects.all()} == {project.pk, other.pk}


def test_no_token_is_a_401_in_the_error_shape(project: Project) -> None:
    from rest_framework.test import APIClient

    response = post(APIClient(), batch(project.slug))
    assert response.status_code == 401


def test_a_batch_over_djangos_own_body_limit_is_read_up_to_the_ingest_limit(
    alice: User, project: Project, settings: SettingsWrapper
) -> None:
    settings.RLVR_MAX_BODY_KB = 64  # DATA_UPLOAD_MAX_MEMORY_SIZE follows it (webapp/settings.py)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    body = batch(project.slug, rollouts=[rollout(1, sample_index=i, n_tokens=2_000) for i in range(4)])
    response = post(token_client(alice), body)
    assert response.status_code == 201, response.json()
    assert Rollout.objects.count() == 4


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda b: b["rollouts"][0].update(step="3"), "rollouts.0.step"),
        (lambda b: b["rollouts"][0].update(group=True), "rollouts.0.group"),
        (lambda b: b["rollouts"][0].update(sample_index=1.0), "rollouts.0.sample_index"),
        (lambda b: b["rollouts"][0].update(reward="0.5"), "rollouts.0.reward"),
        (lambda b: b["rollouts"][0].update(correct=1), "rollouts.0.correct"),
        (
            lambda b: b["rollouts"][0]["token_values"].update(logprob=["-0.1"] * 3),
            "rollouts.0.token_values.logprob.0",
        ),
        (lambda b: b["rollouts"][0].update(token_ids=[1, 2, 3.5]), "rollouts.0.token_ids.2"),
        (lambda b: b["run"].update(max_steps="10"), "run.max_steps"),
        (lambda b: b.update(metrics=[{"step": "1", "values": {"a": 1.0}}]), "metrics.0.step"),
        (lambda b: b.update(metrics=[{"step": 1, "values": {"a": False}}]), "metrics.0.values.a"),
        (lambda b: b.update(rollouts_dropped="1"), "rollouts_dropped"),
    ],
)
def test_numbers_are_strict_a_string_bool_or_float_where_an_integer_belongs_is_refused(
    alice: User, project: Project, change: Callable[[dict], None], field: str
) -> None:
    body = batch(project.slug, rollouts=[rollout(1)])
    change(body)

    response = post(token_client(alice), body)

    assert response.status_code == 400, response.json()
    assert set(response.json()) == {"message", "extra"}
    assert field in response.json()["extra"]["fields"], response.json()
    assert not Run.objects.exists()


def test_an_integer_is_taken_where_a_float_is_asked(alice: User, project: Project) -> None:
    body = batch(project.slug, rollouts=[rollout(1, reward=1)], metrics=[{"step": 1, "values": {"a": 2}}])
    assert post(token_client(alice), body).status_code == 201
    assert Rollout.objects.get().reward == 1.0


def test_nan_in_a_float_field_is_refused_by_the_schema_itself() -> None:
    from webapp.core.errors import InvalidInput
    from webapp.ingest.schema import parse_batch

    with pytest.raises(InvalidInput) as refused:
        parse_batch(batch("lab", rollouts=[rollout(1, reward=float("nan"))]))
    assert "rollouts.0.reward" in refused.value.extra["fields"]


def test_the_count_of_dropped_rollouts_is_kept_and_a_resent_count_adds_nothing(
    alice: User, project: Project
) -> None:
    client = token_client(alice)
    post(client, batch(project.slug, rollouts_dropped=2))
    post(client, batch(project.slug, rollouts_dropped=2))
    post(client, batch(project.slug, rollouts_dropped=1))  # an older batch, resent late

    run = Run.objects.get()
    assert run.rollouts_dropped == 2
    assert run.events.filter(kind="rollouts_dropped").count() == 1
    assert client.get(f"/api/runs/{run.pk}/").json()["rollouts_dropped"] == 2


def test_a_success_with_dropped_rollouts_ends_with_a_warning_that_counts_them(
    alice: User, project: Project
) -> None:
    post(token_client(alice), batch(project.slug, rollouts_dropped=1, finish={"status": "succeeded"}))

    run = Run.objects.get()
    ended = run.events.get(kind="succeeded")
    assert run.status == RunStatus.SUCCEEDED and run.rollouts_dropped == 1
    assert ended.level == "warning" and "1 rollout could not be delivered" in ended.message


def test_a_secret_in_the_reported_command_is_redacted_before_it_is_stored(
    alice: User, project: Project
) -> None:
    body = batch(project.slug)
    body["run"]["source_info"]["command"] = "train.py --hub_token hf_secret_value --api-key=abc"
    post(token_client(alice), body)

    assert Run.objects.get().source_info["command"] == "train.py --hub_token *** --api-key=***"
