"""The ingest client against a live server: it batches, spools, retries and resends without doubling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from rlvr_client import IngestError, start_run, sync_spool
from rlvr_client.spool import RunSpool
from rlvr_client.transport import Transport
from rlvr_client.wire import ROLLOUT_FIELDS, TOKEN_CHANNELS
from webapp.accounts.tokens import issue_token
from webapp.experiments.models import MetricPoint, Rollout, Run, RunStatus
from webapp.teams.models import Project


def test_the_wire_names_agree_with_the_trainers_rollout_record() -> None:
    from dataclasses import fields

    from trainer.sinks import TOKEN_CHANNELS as TRAINER_CHANNELS
    from trainer.sinks import RolloutRecord

    assert set(ROLLOUT_FIELDS) == {f.name for f in fields(RolloutRecord)} - {"step"}
    assert TOKEN_CHANNELS == TRAINER_CHANNELS


def test_a_bad_rollout_is_refused_before_it_is_queued(tmp_path: Path) -> None:
    transport = Transport("http://127.0.0.1:9", "t")  # nothing listens: the run stays offline
    run = start_run(
        project="lab", name="x", transport=transport, spool_dir=tmp_path, flush_interval_s=0.05, attempts=1
    )
    try:
        with pytest.raises(IngestError, match=r"token_values\.logprob has 1 values for 2 tokens"):
            run.log_rollouts(
                1, [{"group": 0, "sample_index": 0, "tokens": ["a", "b"], "token_values": {"logprob": [0.1]}}]
            )
        with pytest.raises(IngestError, match="unknown field"):
            run.log_rollouts(1, [{"group": 0, "sample_index": 0, "text": "?"}])
        with pytest.raises(IngestError, match="step must be"):
            run.log_metrics(-1, {"a": 1.0})
    finally:
        run.close()


@pytest.fixture
def server(live_server: Any, alice: User, project: Project) -> tuple[str, str]:
    return str(live_server.url), issue_token(alice).token


@pytest.mark.django_db(transaction=True)
def test_a_script_logs_a_run_in_a_few_calls(
    server: tuple[str, str], project: Project, tmp_path: Path
) -> None:
    url, token = server
    run = start_run(
        project=project.slug,
        name="my-script",
        config={"lr": 1e-6},
        url=url,
        token=token,
        spool_dir=tmp_path,
        max_steps=3,
        flush_interval_s=0.05,
    )
    assert run.run_id is not None and run.page_url == f"{url}/runs/{run.run_id}/"
    for step in (1, 2, 3):
        run.log_metrics(step, {"rollout/reward_mean": step / 10, "actor/kl": float("nan")})
        run.log_rollouts(
            step,
            [
                {
                    "group": 0,
                    "sample_index": i,
                    "prompt": "2+2=",
                    "completion": " 4",
                    "tokens": [" 4"],
                    "token_ids": [19],
                    "reward": 1.0,
                    "token_values": {"advantage": [0.25]},
                }
                for i in range(4)
            ],
        )
    run.log_checkpoint(3, "/ckpt/3")
    assert run.finish("succeeded", {"rollout/reward_mean": 0.3}) is True

    stored = Run.objects.get(pk=run.run_id)
    assert (stored.status, stored.step, stored.source) == (RunStatus.SUCCEEDED, 3, "script")
    assert MetricPoint.objects.filter(run=stored, key="rollout/reward_mean").count() == 3
    assert (
        MetricPoint.objects.get(run=stored, key="actor/kl", step=2).value is None
    )  # NaN travels as "not recorded"
    assert Rollout.objects.filter(run=stored).count() == 12
    assert RunSpool(tmp_path, run.key).is_empty()


@pytest.mark.django_db(transaction=True)
def test_batches_made_while_the_server_is_down_are_sent_by_sync(
    server: tuple[str, str], project: Project, tmp_path: Path
) -> None:
    url, token = server
    offline = start_run(
        project=project.slug,
        name="offline",
        transport=Transport("http://127.0.0.1:9", token),
        spool_dir=tmp_path,
        key="offline-run",
        flush_interval_s=0.05,
        attempts=1,
    )
    for step in range(1, 6):
        offline.log_metrics(step, {"rollout/reward_mean": 0.1 * step})
    assert offline.finish("succeeded", timeout_s=1) is False
    assert offline.run_id is None and not Run.objects.exists()
    assert len(RunSpool(tmp_path, "offline-run").pending()) >= 1

    left = sync_spool(spool_dir=tmp_path, url=url, token=token)

    assert left == {"offline-run": 0}
    stored = Run.objects.get(external_key="offline-run")
    assert stored.status == RunStatus.SUCCEEDED
    rewards = MetricPoint.objects.filter(run=stored, key="rollout/reward_mean")
    assert sorted(rewards.values_list("step", flat=True)) == [1, 2, 3, 4, 5]


@pytest.mark.django_db(transaction=True)
def test_a_batch_sent_again_after_a_lost_answer_changes_nothing(
    server: tuple[str, str], project: Project, tmp_path: Path
) -> None:
    url, token = server
    body = {
        "version": 1,
        "run": {"project": project.slug, "key": "twice", "name": "n", "source": "script"},
        "metrics": [{"step": 1, "values": {"a": 1.0}}],
        "rollouts": [{"step": 1, "group": 0, "sample_index": 0, "completion": "x", "tokens": ["x"]}],
    }
    transport = Transport(url, token)
    first, second = transport.send(body), transport.send(json.loads(json.dumps(body)))

    assert first["run_id"] == second["run_id"] and first["created"] and not second["created"]
    assert (MetricPoint.objects.count(), Rollout.objects.count()) == (1, 1)


@pytest.mark.django_db(transaction=True)
def test_a_refused_batch_is_kept_with_the_servers_reason(
    server: tuple[str, str], project: Project, tmp_path: Path
) -> None:
    url, token = server
    run = start_run(
        project="no-such-project",
        name="x",
        url=url,
        token=token,
        spool_dir=tmp_path,
        key="lost",
        flush_interval_s=0.05,
    )
    run.finish("succeeded", timeout_s=5)

    rejected = RunSpool(tmp_path, "lost").rejected()
    assert rejected, "the refused batch must stay on disk"
    reason = rejected[0].with_name(rejected[0].stem + ".error.txt").read_text()
    assert "No project 'no-such-project'" in reason
    assert run.rejections and not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_rollout_with_a_bad_value_is_set_aside_and_the_others_are_sent(
    server: tuple[str, str], project: Project, tmp_path: Path
) -> None:
    url, token = server
    run = start_run(
        project=project.slug,
        name="mixed",
        url=url,
        token=token,
        spool_dir=tmp_path,
        key="mixed",
        flush_interval_s=0.05,
    )
    good = {"group": 0, "sample_index": 0, "tokens": ["a"], "token_values": {"logprob": [-0.5]}}
    bad = {"group": 0, "sample_index": 1, "tokens": ["b"], "token_values": {"logprob": ["not a number"]}}
    run.log_rollouts(1, [good, bad])  # the shape is right: the value is found on the sender thread
    run.finish("succeeded")

    assert list(Rollout.objects.values_list("sample_index", flat=True)) == [0]
    [kept] = RunSpool(tmp_path, "mixed").rejected()
    assert "must be a number" in kept.with_name(kept.stem + ".error.txt").read_text()
    assert "not a number" in kept.read_text()


@pytest.mark.django_db(transaction=True)
def test_a_step_larger_than_a_batch_goes_in_several_and_odd_values_travel_as_json(
    server: tuple[str, str], project: Project, tmp_path: Path
) -> None:
    url, token = server
    run = start_run(
        project=project.slug,
        name="big",
        url=url,
        token=token,
        spool_dir=tmp_path,
        key="big",
        config={"lr": float("nan"), "betas": (0.9, 0.99)},
        flush_interval_s=0.05,
    )
    rollouts = [
        {
            "group": i // 8,
            "sample_index": i % 8,
            "tokens": ["x"],
            "details": {"judge": {"score": float("inf")}},
        }
        for i in range(1500)
    ]  # over the server's 1,024 rollouts a batch
    run.log_rollouts(1, rollouts)
    assert run.finish("succeeded")

    stored = Run.objects.get(pk=run.run_id)
    assert Rollout.objects.filter(run=stored).count() == 1500 and stored.status == RunStatus.SUCCEEDED
    assert stored.config == {"lr": None, "betas": [0.9, 0.99]}
    assert Rollout.objects.filter(run=stored).first().details == {"judge": {"score": None}}
    assert not RunSpool(tmp_path, "big").rejected()
