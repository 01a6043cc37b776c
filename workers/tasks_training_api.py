"""``serve_model(model_id)``: the one worker that holds a Tinker API model and runs its calls in order.

The web process queues each call as a row (webapp/training_api/services.py) and sends this task when no worker
holds the model. The task claims the model's run lease (workers/lease.py: a second delivery is dropped while
this one lives), then takes the model's pending calls lowest ``seq`` first (woken by a push to a Redis list when one is queued), runs each on its
``trainer.training_api.TrainingSession``, writes the result to the call's row and the run's records
(webapp/training_api/records.py). It ends when the run is cancelled (queued calls fail, saying so), or after
``RLVR_TINKER_IDLE_S`` without a call: the model's state is saved first and the next call's worker reloads it.
A session whose client stopped its heartbeats for ``RLVR_TINKER_SESSION_GONE_S`` (and is idle) ends its run
(succeeded); one the client closed (``ServiceClient.close``) ends it once its queued calls ran. A sampler of a
bare base model (``kind`` sampler) is served the same way, with nothing to save.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from celery import Task

from workers.celery_app import app

logger = logging.getLogger(__name__)
POLL_S = 0.2
WAIT_S = 1
CANCELLED = "The run was cancelled on its page; create a new training client to train again."  # as NEW_CLIENT


@app.task(
    bind=True, acks_late=True, reject_on_worker_lost=True, name="workers.tasks_training_api.serve_model"
)
def serve_model(self: Task[Any, Any], model_id: str) -> str:
    """Run the model's calls until it is cancelled or idle; 'skipped' when another worker holds it."""
    from webapp.experiments.models import FINISHED_STATUSES
    from webapp.training_api.models import TinkerModel
    from webapp.training_api.records import fail_pending, next_call
    from webapp.training_api.services import wake
    from workers.lease import Heartbeat, claim, redis_client

    model = TinkerModel.objects.select_related("run").filter(pk=model_id).first()
    if model is None:
        return "skipped"
    if model.run.status in FINISHED_STATUSES:
        fail_pending(
            model_id=model_id, message=f"The run is {model.run.status}; create a new training client."
        )
        return "skipped"
    me = str(self.request.hostname or "")
    client = redis_client()
    if claim(model.run_id, me, client) is None:
        logger.info("tinker model %s: another worker holds it", model_id)
        return "skipped"
    # The task sent has started: once this worker lets go, the next call sends another at once (a call that found
    # the model "dispatched lately" waited up to RESEND_AFTER for a worker that had come and gone).
    TinkerModel.objects.filter(pk=model_id).update(dispatched_at=None)
    with Heartbeat(model.run_id, me, client):
        outcome = ModelServer(model).serve()
    if outcome == "idle" and next_call(model_id=model_id) is not None:  # a call came as the lease was let go
        wake(model=TinkerModel.objects.get(pk=model_id), force=True)
    return outcome


@app.task(acks_late=True, name="workers.tasks_training_api.end_if_gone")
def end_if_gone(model_id: str) -> str:
    """A model let go while its client was alive: end its run (succeeded) once the client's heartbeats have
    stopped for ``RLVR_TINKER_SESSION_GONE_S``, looking again that often while no worker holds the model (a
    worker that takes it looks at its own let-go). Nothing is loaded: this only reads rows."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from webapp.experiments.models import FINISHED_STATUSES
    from webapp.experiments.run_lease import run_lease_held
    from webapp.training_api.models import TinkerModel
    from webapp.training_api.records import end_run, next_call

    model = TinkerModel.objects.select_related("run", "session").filter(pk=model_id).first()
    if model is None or model.run.status in FINISHED_STATUSES:
        return "finished"
    if run_lease_held(run_id=model.run_id) is not False or next_call(model_id=model_id) is not None:
        return "held"  # a worker holds it, or one will take its queued call
    gone_s = float(settings.RLVR_TINKER_SESSION_GONE_S)
    if timezone.now() - model.session.last_heartbeat_at > timedelta(seconds=gone_s):
        end_run(model_id=model_id, closed="")
        return "ended"
    schedule_gone_check(model_id, gone_s)
    return "alive"


def schedule_gone_check(model_id: str, gone_s: float) -> None:
    """``end_if_gone`` after ``gone_s`` (and a second); a broker outage only delays the end to the next call."""
    try:
        end_if_gone.apply_async((model_id,), countdown=gone_s + 1, queue="training")
    except Exception as err:  # kombu/redis errors: the run ends when a later worker lets the model go
        logger.warning("tinker model %s: could not schedule its session check (%s)", model_id, err)


class ModelServer:
    """One model's session and the loop over its calls (a class: the session and snapshot cache are state)."""

    def __init__(self, model: Any) -> None:
        from django.conf import settings

        from webapp.training_api.services import api_limits
        from workers.lease import redis_client

        self.model_id: str = model.pk
        self.run_id: int = model.run_id
        self.idle_s = float(settings.RLVR_TINKER_IDLE_S)
        self.gone_s = float(settings.RLVR_TINKER_SESSION_GONE_S)
        self.trains = model.kind == "training"  # a base model's sampler has no state to save
        self.limits = api_limits()
        self.session: Any = None
        self.snapshot: str | None = None  # the sampler weights path equal to the live weights, if any
        self.samplers: dict[str, Any] = {}  # one loaded snapshot at a time
        self.folder = Path(settings.RLVR_RUNS_DIR) / f"run-{model.run_id}" / "tinker"
        self.redis = redis_client()

    def serve(self) -> str:
        from webapp.experiments.models import FINISHED_STATUSES, Run
        from webapp.training_api.records import next_call

        last_call = time.monotonic()
        while True:
            run = Run.objects.only("status", "cancel_requested").get(pk=self.run_id)
            if run.cancel_requested or run.status in FINISHED_STATUSES:
                return self._cancel()
            call = next_call(model_id=self.model_id)
            if call is not None:
                self._run_call(call)
                last_call = time.monotonic()
                continue
            closed = self._closed_as()
            if closed:
                return self._let_go(closed=closed)
            if time.monotonic() - last_call > self.idle_s:
                return self._let_go()
            self._wait()

    def _closed_as(self) -> str:
        """How the client closed its session (``ServiceClient.close``), '' while it is open."""
        from webapp.training_api.models import TinkerSession

        found = TinkerSession.objects.filter(models__pk=self.model_id).values_list("finish_status", flat=True)
        return str(found.first() or "")

    def _wait(self) -> None:
        """Until the web side pushes to the model's wake list (a call was queued), at most WAIT_S; the database
        stays the source of truth, so a lost push only costs that second."""
        from webapp.training_api.services import wake_key

        try:
            if self.redis.blpop([wake_key(self.model_id)], timeout=WAIT_S) is not None:
                self.redis.delete(
                    wake_key(self.model_id)
                )  # one look at the database serves every push so far
        except Exception:  # Redis unreachable: look at the database every POLL_S instead
            time.sleep(POLL_S)

    def _run_call(self, call: Any) -> None:
        from trainer.errors import RLVRError
        from webapp.training_api.records import call_done, call_failed
        from workers.tasks_training_api_calls import run_call

        try:
            result, proto = run_call(self, call)
        except RLVRError as err:
            # the request was wrong for this model (ApiInputError, a bad checkpoint, a diverged step)
            call_failed(call_id=call.pk, message=f"{call.kind}: {err}", category="user")
        except Exception as err:
            logger.exception("tinker model %s: %s failed", self.model_id, call.kind)
            call_failed(
                call_id=call.pk, message=f"{call.kind} failed on the worker: {type(err).__name__}: {err}",
                category="server",
            )  # fmt: skip
        else:
            call_done(call_id=call.pk, result=result, proto=proto)

    def ensure_session(self) -> Any:
        """The live session: created by create_model, or reloaded from the state saved when a worker let go."""
        if self.session is None:
            from trainer.training_api.session import TrainingSession
            from webapp.experiments.services import run_log_event
            from webapp.training_api.models import TinkerModel

            model = TinkerModel.objects.select_related("run__experiment__project").get(pk=self.model_id)
            if self.trains and model.state_dir and Path(model.state_dir).is_dir():
                self.session = TrainingSession.from_state(model.state_dir, limits=self.limits)
            else:
                self.session = self.create_session(model)
                if self.trains and model.next_seq > 2:  # calls ran before: their worker was lost unsaved
                    start = (
                        "the state it was opened from" if model.source_state else "the base model's weights"
                    )
                    run_log_event(
                        run_id=self.run_id, level="warning", kind="tinker_restart",
                        message="The worker that held this model was lost before saving it: training goes on "
                        f"from {start}.", step=None,
                    )  # fmt: skip
        return self.session

    def create_session(self, model: Any) -> Any:
        """The model's session: a sampler of its base model, a training session from the saved state it was
        opened from (a fresh optimizer unless asked for the state's), or a new one of its base model."""
        from trainer.training_api.sampler import Sampler
        from trainer.training_api.session import TrainingSession, new_optimizer
        from webapp.experiments.config_paths import confine_model
        from webapp.training_api.records import model_described

        if model.source_state:
            session = TrainingSession.from_state(model.source_state, limits=self.limits)
            if not model.source_optimizer:  # create_training_client_from_state: the weights, Adam anew
                session.optimizer = new_optimizer(session.model)
        else:
            resolved = confine_model(model.base_model, project=model.run.experiment.project, resolve=True)
            if not self.trains:
                sampler = Sampler.from_base_model(resolved, seed=int(model.seed), limits=self.limits)
                model_described(model_id=self.model_id, tokenizer_dir=resolved, vocab_size=sampler.vocab)
                return sampler
            session = TrainingSession.create(
                base_model=resolved, lora_rank=model.lora_rank, seed=int(model.seed), limits=self.limits
            )
        info = session.info()
        model_described(
            model_id=self.model_id,
            tokenizer_dir=str(info.get("base_path", "")),
            vocab_size=int(info["vocab_size"]),
        )
        return session

    def _let_go(self, closed: str = "") -> str:
        """Idle (or its session closed): save the model for the next worker; end the run when its client closed
        the session, or stopped its heartbeats ``RLVR_TINKER_SESSION_GONE_S`` ago."""
        from datetime import timedelta

        from django.utils import timezone

        from webapp.training_api.models import TinkerModel
        from webapp.training_api.records import end_run, state_saved

        if self.session is not None and self.trains:
            directory = self.folder / "state"
            self.session.save_state(directory)
            state_saved(model_id=self.model_id, directory=str(directory))
        model = TinkerModel.objects.select_related("session").get(pk=self.model_id)
        if closed:
            end_run(model_id=self.model_id, closed=closed)
            return "ended"
        if timezone.now() - model.session.last_heartbeat_at > timedelta(seconds=self.gone_s):
            end_run(model_id=self.model_id, closed="")
            return "ended"
        schedule_gone_check(self.model_id, self.gone_s)
        return "idle"

    def _cancel(self) -> str:
        from webapp.experiments.models import FINISHED_STATUSES, Run
        from webapp.experiments.services import run_finish
        from webapp.training_api.records import fail_pending

        fail_pending(model_id=self.model_id, message=CANCELLED)
        if self.session is not None and self.trains:
            self.session.save_state(self.folder / "state")
        if Run.objects.get(pk=self.run_id).status not in FINISHED_STATUSES:
            run_finish(run_id=self.run_id, status="cancelled", final_metrics={})
        return "cancelled"
