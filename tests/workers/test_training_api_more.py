"""The Tinker SDK's calls beyond one training client, end to end (the official tinker 0.38.0 client against the
real web server and real Celery workers): a base model's sampling client, create_training_client_from_state with
and without the optimizer, a sampling client from a model_path alone, the REST client's listings, a script's own
metrics sent to its training client's run through the ingest client, ``with ServiceClient(...)`` ending every run
it opened, and a client that vanishes without closing: its run ends (succeeded) once the session is gone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import make_project, make_user, wait_for
from tests.workers.tinker_helpers import sft_datum, tinker_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
tinker = pytest.importorskip("tinker")


@pytest.fixture
def server(real_services: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The web server; its workers (which copy this environment) let go after 5 idle seconds and end a run
    whose client sent no heartbeat for 12 (the SDK beats every 10 s, so only a vanished client is gone)."""
    with tinker_server(tmp_path, monkeypatch, idle_s=5, session_gone_s=12) as url:
        yield url


def test_base_sampling_training_from_a_state_rest_listings_metrics_and_close(
    server: str, start_worker: Any, tmp_path: Path
) -> None:
    from tinker import types

    from rlvr_client import start_run
    from webapp.accounts.tokens import issue_token
    from webapp.experiments.models import MetricPoint, Rollout, RunStatus
    from webapp.training_api.models import ModelKind, TinkerModel

    workers = [start_worker("tinker-a@%h"), start_worker("tinker-b@%h")]
    owner = make_user("reuser")
    project = make_project(owner, "more-lab")
    token = issue_token(owner).token
    adam = types.AdamParams(learning_rate=1e-2)
    seeded = types.SamplingParams(max_tokens=4, temperature=1.0, seed=11)
    with tinker.ServiceClient(
        base_url=server + "/tinker", api_key="tml-" + token, project_id=project.slug
    ) as svc:
        base = svc.create_sampling_client(base_model="tiny:addition").result()
        training = svc.create_lora_training_client(base_model="tiny:addition", rank=8, seed=2).result()
        tokenizer = training.get_tokenizer()
        prompt = types.ModelInput.from_ints(tokenizer.encode("12+7="))
        from_base = base.sample(prompt, 4, seeded).result().sequences
        untrained = training.save_weights_and_get_sampling_client().result()
        same = untrained.sample(prompt, 4, seeded).result().sequences  # LoRA starts at zero: the base model
        assert [list(s.tokens) for s in from_base] == [list(s.tokens) for s in same]
        flat = [[lp for s in seqs for lp in s.logprobs or []] for seqs in (from_base, same)]
        assert flat[0] == pytest.approx(flat[1], abs=1e-5)

        sft = sft_datum(tokenizer, "12+7=19")
        training.forward_backward([sft], "cross_entropy").result()
        training.optim_step(adam).result()
        path = training.save_state("one").result().path
        at_save = training.forward([sft], "cross_entropy").result().metrics["loss:sum"]
        training.forward_backward([sft], "cross_entropy").result()
        training.optim_step(adam).result()
        moved_on = training.forward([sft], "cross_entropy").result().metrics["loss:sum"]

        resumed = svc.create_training_client_from_state_with_optimizer(path).result()
        fresh = svc.create_training_client_from_state(path).result()
        losses = []
        for client in (resumed, fresh):
            assert client.forward([sft], "cross_entropy").result().metrics["loss:sum"] == pytest.approx(
                at_save, abs=1e-5
            )
            client.forward_backward([sft], "cross_entropy").result()
            client.optim_step(adam).result()
            losses.append(client.forward([sft], "cross_entropy").result().metrics["loss:sum"])
        assert losses[0] == pytest.approx(moved_on, abs=1e-5)  # the optimizer's moments came along
        assert abs(losses[1] - moved_on) > 1e-4  # weights only: a fresh AdamW takes another step

        snapshot = training.save_weights_for_sampler("snap").result().path
        by_path = svc.create_sampling_client(model_path=snapshot).result()  # asks GET samplers/<id>
        assert by_path.get_base_model() == "tiny:addition"
        assert len(by_path.sample(prompt, 2, seeded).result().sequences) == 2

        rest = svc.create_rest_client()
        kinds = {
            c.checkpoint_id: c.checkpoint_type
            for c in rest.list_checkpoints(training.model_id).result().checkpoints
        }
        assert kinds["weights/one"] == "training" and kinds["sampler_weights/snap"] == "sampler"
        listed = rest.list_training_runs().result()
        assert {r.training_run_id for r in listed.training_runs} == {
            training.model_id,
            resumed.model_id,
            fresh.model_id,
        }
        assert rest.get_training_run(resumed.model_id).result().lora_rank == 8

        key = resumed.model_id.replace(":", "-")  # the run's ingest key (docs/tinker.md)
        own = start_run(
            project=project.slug, name="rewards", key=key, url=server, token=token, spool_dir=tmp_path
        )
        own.log_metrics(2, {"rollout/reward_mean": 0.75})
        assert own.flush(30)
        own.close()

    runs = {m.pk: m.run for m in TinkerModel.objects.select_related("run")}
    resumed_run = runs[resumed.model_id]
    assert MetricPoint.objects.get(run=resumed_run, step=2, key="rollout/reward_mean").value == 0.75
    assert MetricPoint.objects.filter(run=resumed_run, step=2, key="actor/grad_norm").exists()
    sampler = TinkerModel.objects.get(kind=ModelKind.SAMPLER)
    assert Rollout.objects.filter(run=sampler.run, details__tinker__call="sample").count() == 4

    def all_ended() -> bool:
        return all(m.run.status == RunStatus.SUCCEEDED for m in TinkerModel.objects.select_related("run"))

    wait_for(all_ended, 60, "the closed session's runs to end", workers[0])  # `with` closed the session
    assert len(runs) == 4


def test_a_client_that_vanishes_without_closing_ends_its_run_once_its_session_is_gone(
    server: str, start_worker: Any
) -> None:
    from webapp.accounts.tokens import issue_token
    from webapp.experiments.models import RunStatus
    from webapp.training_api.models import TinkerModel

    worker = start_worker("tinker-gone@%h")
    owner = make_user("vanisher")
    project = make_project(owner, "gone-lab")
    script = (
        "import os, sys, tinker\n"
        "svc = tinker.ServiceClient(base_url=sys.argv[1], api_key=sys.argv[2], project_id=sys.argv[3])\n"
        "training = svc.create_lora_training_client(base_model='tiny:addition', rank=4).result()\n"
        "print(training.model_id, flush=True)\n"
        "os._exit(0)  # no close(), no more heartbeats\n"
    )
    args = [server + "/tinker", "tml-" + issue_token(owner).token, project.slug]
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    model = TinkerModel.objects.get(pk=done.stdout.strip())
    assert model.run.status == RunStatus.RUNNING

    wait_for(
        lambda: _status(model.run_id) == RunStatus.SUCCEEDED, 60, "the gone session's run to end", worker
    )
    model.refresh_from_db()
    assert model.state_dir and Path(model.state_dir).is_dir()  # saved before it ended


def _status(run_id: int) -> str:
    from webapp.experiments.models import Run

    return str(Run.objects.get(pk=run_id).status)
