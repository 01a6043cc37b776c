"""Metrics, rollouts, checkpoints and events of a run over the API."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.webapp.helpers import record_steps, rollout_record
from trainer.sinks import TOKEN_CHANNELS
from webapp.experiments.models import Rollout, Run
from webapp.experiments.services import run_log_event, run_record_checkpoint, run_record_step

Api = Callable[[User | None], APIClient]


@pytest.fixture
def stored(run: Run) -> Run:
    record_steps(run, range(1, 6), groups=3, samples=2)
    return run


def test_metrics_come_as_columns_per_key_with_the_runs_last_step(api: Api, stored: Run, alice: User) -> None:
    body = api(alice).get(f"/api/runs/{stored.pk}/metrics/").json()
    assert (body["step"], body["status"]) == (5, "queued")
    assert sorted(body["metrics"]) == ["actor/pg_loss", "rollout/reward_mean"]
    series = body["metrics"]["rollout/reward_mean"]
    assert series["step"] == [1, 2, 3, 4, 5]
    assert series["value"] == series["min"] == series["max"] == [0.1, 0.2, 0.3, 0.4, 0.5]


def test_metrics_take_keys_and_since_step_to_catch_up(api: Api, stored: Run, alice: User) -> None:
    body = api(alice).get(f"/api/runs/{stored.pk}/metrics/?keys=rollout/reward_mean&since_step=3").json()
    assert list(body["metrics"]) == ["rollout/reward_mean"]
    assert body["metrics"]["rollout/reward_mean"]["step"] == [4, 5]


def test_metrics_downsample_on_request(api: Api, stored: Run, alice: User) -> None:
    record_steps(stored, range(6, 101), groups=1, samples=1)
    body = api(alice).get(f"/api/runs/{stored.pk}/metrics/?max_points=10").json()
    assert {column: len(values) for column, values in body["metrics"]["actor/pg_loss"].items()} == {
        "step": 10, "value": 10, "min": 10, "max": 10,
    }  # fmt: skip


def test_rollouts_are_paginated_and_filtered(api: Api, stored: Run, alice: User) -> None:
    client = api(alice)
    page = client.get(f"/api/runs/{stored.pk}/rollouts/?page_size=4").json()
    assert (page["count"], len(page["results"])) == (30, 4)
    assert "token_data" not in page["results"][0] and "tokens" not in page["results"][0]
    filtered = client.get(f"/api/runs/{stored.pk}/rollouts/?step=2&correct=false").json()
    assert {(r["step"], r["correct"]) for r in filtered["results"]} == {(2, False)}
    assert filtered["count"] == 3


def test_one_rollout_comes_with_its_token_arrays(api: Api, run: Run, alice: User) -> None:
    original = rollout_record(1, n_tokens=6)
    run_record_step(run_id=run.pk, step=1, max_steps=20, metrics={}, rollouts=[original])
    rollout = Rollout.objects.get(run=run)
    body = api(alice).get(f"/api/runs/{run.pk}/rollouts/{rollout.pk}/").json()
    assert body["token_ids"] == original.token_ids
    assert body["tokens"] == original.tokens
    assert set(body["channels"]) == set(TOKEN_CHANNELS)
    assert body["channels"]["ref_logprob"] is None
    assert body["channels"]["logprob"] == pytest.approx(original.token_values["logprob"], rel=1e-6)
    assert body["details"] == {"exact": {"extracted": "4"}}
    assert (body["reward"], body["advantage"], body["length"]) == (1.0, 0.5, 6)


def test_a_rollout_id_from_another_run_is_404(api: Api, stored: Run, experiment: object, alice: User) -> None:
    other = api(alice).post(f"/api/experiments/{stored.experiment_id}/runs/").json()["id"]
    rollout = Rollout.objects.filter(run=stored).first()
    assert rollout is not None
    assert api(alice).get(f"/api/runs/{other}/rollouts/{rollout.pk}/").status_code == 404


def test_checkpoints_are_listed_by_step_with_the_reference_a_config_uses_and_no_server_path(
    api: Api, run: Run, alice: User
) -> None:
    run_record_checkpoint(run_id=run.pk, step=20, path="/c/20")
    run_record_checkpoint(run_id=run.pk, step=10, path="/c/10")
    body = api(alice).get(f"/api/runs/{run.pk}/checkpoints/").json()
    assert [(c["step"], c["ref"]) for c in body] == [
        (10, f"checkpoint:{body[0]['id']}"),
        (20, f"checkpoint:{body[1]['id']}"),
    ]
    assert all("path" not in c for c in body)


def test_events_can_be_tailed_after_an_id(api: Api, run: Run, alice: User) -> None:
    client = api(alice)
    first = client.get(f"/api/runs/{run.pk}/events/").json()["results"]
    assert [e["kind"] for e in first] == ["launched"]
    run_log_event(run_id=run.pk, level="info", kind="start", message="training steps 1..20", step=0)
    later = client.get(f"/api/runs/{run.pk}/events/?after_id={first[-1]['id']}").json()["results"]
    assert [(e["kind"], e["message"]) for e in later] == [("start", "training steps 1..20")]
