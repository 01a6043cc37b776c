"""The worker that holds a Tinker API model: it lets go when idle (its state saved) and the next call's worker
reloads exactly that state; a call queued while no worker runs is taken when one starts. Driven by the official
SDK against the real web server (daphne) and real Celery worker processes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import make_project, make_user, wait_for
from tests.workers.tinker_helpers import sft_datum, tinker_clients, tinker_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
tinker = pytest.importorskip("tinker")


@pytest.fixture
def open_client(
    real_services: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Any]]:
    with tinker_server(tmp_path, monkeypatch, idle_s=5) as url, tinker_clients(url + "/tinker") as opener:
        yield opener


def test_an_idle_model_is_saved_let_go_and_reloaded_by_the_next_call(
    open_client: Callable[..., Any], start_worker: Any
) -> None:
    from tinker import types

    from webapp.experiments.models import RunStatus
    from webapp.experiments.run_lease import run_lease_held
    from webapp.training_api.models import TinkerModel

    worker = start_worker("tinker-idle@%h")
    owner = make_user("idler")
    project = make_project(owner, "idle-lab")
    service = open_client(owner, project)
    training = service.create_lora_training_client(base_model="tiny:addition", rank=8, seed=3).result()
    tokenizer = training.get_tokenizer()
    datum = sft_datum(tokenizer, "40+2=42")
    training.forward_backward([datum], "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    before = training.forward([datum], "cross_entropy").result()

    model = TinkerModel.objects.get()
    wait_for(lambda: run_lease_held(run_id=model.run_id) is False, 60, "the idle worker to let go", worker)
    model.refresh_from_db()
    assert model.state_dir and Path(model.state_dir).is_dir()

    asked = time.monotonic()
    after = training.forward([datum], "cross_entropy").result()  # a new serve_model reloads the saved state
    # sent at the call: not left waiting for the resend after RESEND_AFTER (60 s) because the first task was
    # sent less than a minute before
    assert time.monotonic() - asked < 30
    assert after.metrics["loss:sum"] == pytest.approx(before.metrics["loss:sum"], abs=1e-5)
    logprobs = [o["logprobs"].tolist() for o in (before.loss_fn_outputs[0], after.loss_fn_outputs[0])]
    assert logprobs[1] == pytest.approx(logprobs[0], abs=1e-5)
    model.run.refresh_from_db()
    assert (
        model.run.status == RunStatus.RUNNING and model.run.step == 1
    )  # the client is alive: the run goes on


def test_save_state_and_load_state_round_trip_through_the_sdk(
    open_client: Callable[..., Any], start_worker: Any
) -> None:
    """save_state, two more steps, load_state_with_optimizer: the model is back where it was saved, and the
    step after the load equals the step after the save (optimizer moments restored too)."""
    from tinker import types

    from webapp.experiments.models import Checkpoint
    from webapp.training_api.models import TinkerModel

    start_worker("tinker-state@%h")
    owner = make_user("saver")
    project = make_project(owner, "state-lab")
    service = open_client(owner, project)
    training = service.create_lora_training_client(base_model="tiny:addition", rank=8, seed=4).result()
    tokenizer = training.get_tokenizer()
    datum = sft_datum(tokenizer, "13+29=42")
    adam = types.AdamParams(learning_rate=1e-2)

    def step() -> float:
        loss = training.forward_backward([datum], "cross_entropy").result().metrics["loss:sum"]
        training.optim_step(adam).result()
        return float(loss)

    step()
    path = training.save_state("after-one").result().path
    assert path == f"tinker://{TinkerModel.objects.get().pk}/weights/after-one"
    first_after_save = step()
    step()
    training.load_state_with_optimizer(path).result()
    assert step() == pytest.approx(first_after_save, abs=1e-5)
    assert Checkpoint.objects.filter(run=TinkerModel.objects.get().run).exists()

    with pytest.raises(Exception, match="not a checkpoint path of this server"):
        training.load_state("tinker://elsewhere/weights/x").result()
