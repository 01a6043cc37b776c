"""What a Tinker model's worker writes: each call's outcome, and the run's metrics, rollouts and checkpoints.

Steps follow the optimizer: step ``n`` is the ``n``-th ``optim_step``. Its metrics are that step's (the summed loss
of the forward_backward calls before it, as Tinker sums losses, the gradient norm, the learning rate); its
rollouts are the samples drawn, and the datums trained, before it (what step ``n`` learned from), stored through
the native trainer's write path (``experiments/rollout_writes.store_rollouts``) so the rollout browser and the
token view show their tokens, logprobs and advantages. Saved weights are checkpoints of the run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db import transaction
from django.utils import timezone

from trainer.sinks import RolloutRecord
from webapp.experiments.metric_summaries import forget_stored_summaries
from webapp.experiments.models import MetricPoint, Run
from webapp.experiments.rollout_writes import store_rollouts
from webapp.experiments.services import SUMMARIES_PER_STEP, run_record_checkpoint
from webapp.experiments.storable import clean_json, finite_or_none
from webapp.realtime.publish import publish_run_event
from webapp.training_api.models import RequestStatus, TinkerCheckpoint, TinkerModel, TinkerRequest

# At most this many rollouts are kept per sample or forward_backward call (the rest are trained, not shown).
MAX_ROLLOUTS_PER_CALL = 64
MAX_ERROR_CHARS = 4000
NEW_CLIENT = "create a new training client to train again."
# The run's metric keys, named as the native trainer's (actor/..., perf/...) so charts line up with native runs.
# actor/loss_sum is Tinker's summed loss (over tokens and datums), not the native trainer's mean.
PENDING_KEYS = {"loss": "actor/loss_sum", "datums": "perf/datums", "tokens": "perf/step_tokens"}
STEP_KEYS = {"grad_norm:mean": "actor/grad_norm", "learning_rate:mean": "actor/lr"}


def call_done(*, call_id: str, result: Any = None, proto: bytes | None = None) -> None:
    TinkerRequest.objects.filter(pk=call_id, status=RequestStatus.PENDING).update(
        status=RequestStatus.DONE, result=result, result_proto=proto, finished_at=timezone.now()
    )


def call_failed(*, call_id: str, message: str, category: str) -> None:
    """A failed call: ``category`` ``user`` (the request was wrong; the SDK does not retry) or ``server``."""
    TinkerRequest.objects.filter(pk=call_id, status=RequestStatus.PENDING).update(
        status=RequestStatus.FAILED, error=message[:MAX_ERROR_CHARS], error_category=category,
        finished_at=timezone.now(),
    )  # fmt: skip


def fail_pending(*, model_id: str, message: str) -> int:
    """Every call still queued on the model fails with ``message`` (the run was cancelled or ended)."""
    return TinkerRequest.objects.filter(model_id=model_id, status=RequestStatus.PENDING).update(
        status=RequestStatus.FAILED, error=message, error_category="user", finished_at=timezone.now()
    )


def next_call(*, model_id: str) -> TinkerRequest | None:
    return (
        TinkerRequest.objects.filter(model_id=model_id, status=RequestStatus.PENDING).order_by("seq").first()
    )


def model_described(*, model_id: str, tokenizer_dir: str, vocab_size: int) -> None:
    TinkerModel.objects.filter(pk=model_id).update(tokenizer_dir=tokenizer_dir, vocab_size=vocab_size)


def forward_backward_done(*, model_id: str, loss_sum: float, datums: int, tokens: int) -> None:
    """Add one forward_backward's loss and sizes to what the next optim_step reports."""
    with transaction.atomic():
        model = TinkerModel.objects.select_for_update().get(pk=model_id)
        pending = dict(model.pending_metrics or {})
        pending["loss"] = float(pending.get("loss", 0.0)) + loss_sum
        pending["datums"] = int(pending.get("datums", 0)) + datums
        pending["tokens"] = int(pending.get("tokens", 0)) + tokens
        model.pending_metrics = pending
        model.save(update_fields=["pending_metrics"])


def optim_step_done(*, model_id: str, step: int, metrics: dict[str, float]) -> None:
    """Step ``step``'s metrics on the run (forward_backward sums, grad norm, learning rate), published live."""
    with transaction.atomic():
        model = TinkerModel.objects.select_for_update().get(pk=model_id)
        pending = model.pending_metrics or {}
        values = {PENDING_KEYS[k]: float(v) for k, v in pending.items() if k in PENDING_KEYS}
        values.update({STEP_KEYS[k]: float(v) for k, v in metrics.items() if k in STEP_KEYS})
        rows = [
            MetricPoint(run_id=model.run_id, step=step, key=k, value=finite_or_none(v))
            for k, v in values.items()
        ]
        forget_stored_summaries(run_id=model.run_id)
        MetricPoint.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["run", "step", "key"], update_fields=["value"]
        )
        # A Tinker client never says how many steps it will take: the run's length is the steps taken so far.
        Run.objects.filter(pk=model.run_id).update(step=step, max_steps=step)
        model.pending_metrics, model.sampled_groups = {}, 0
        model.save(update_fields=["pending_metrics", "sampled_groups"])
        payload = {"step": step, "max_steps": step, "metrics": {r.key: r.value for r in rows}, "rollouts": []}
        publish_run_event(run_id=model.run_id, event="run.step", payload=payload)


def rollouts_done(*, model_id: str, records: list[RolloutRecord]) -> int:
    """Store one call's rollouts at the step they feed (the run's next step), each call its own group."""
    records = records[:MAX_ROLLOUTS_PER_CALL]
    if not records:
        return 0
    with transaction.atomic():
        model = TinkerModel.objects.select_for_update().select_related("run").get(pk=model_id)
        step, group = model.run.step + 1, model.sampled_groups
        placed = [replace(r, step=step, group=group) for r in records]
        store_rollouts(run_id=model.run_id, step=step, records=placed, replace_step=False)
        model.sampled_groups += 1
        model.save(update_fields=["sampled_groups"])
        summaries = [clean_json(r.summary()) for r in placed[:SUMMARIES_PER_STEP]]
        payload = {"step": step, "max_steps": model.run.max_steps, "metrics": {}, "rollouts": summaries}
        transaction.on_commit(
            lambda: publish_run_event(run_id=model.run_id, event="run.step", payload=payload)
        )
    return len(placed)


def checkpoint_done(*, model_id: str, kind: str, name: str, directory: str, step: int) -> None:
    model = TinkerModel.objects.get(pk=model_id)
    TinkerCheckpoint.objects.update_or_create(
        model=model, kind=kind, name=name, defaults={"directory": directory}
    )
    run_record_checkpoint(run_id=model.run_id, step=step, path=directory)


def checkpoint_directory(*, model_id: str, kind: str, name: str) -> str | None:
    found = TinkerCheckpoint.objects.filter(model_id=model_id, kind=kind, name=name).first()
    return found.directory if found is not None else None


# How a client's ServiceClient.close(status) ends its runs; "" is a client that stopped its heartbeats.
CLOSED_AS = {"": "succeeded", "success": "succeeded", "interrupted": "cancelled", "errored": "failed"}


def end_run(*, model_id: str, closed: str) -> None:
    """End the model's run as its session ended (once: a finished run stays as it is); a call still queued
    fails saying the session is over."""
    from webapp.experiments.models import FINISHED_STATUSES
    from webapp.experiments.services import run_fail, run_finish

    model = TinkerModel.objects.select_related("run").get(pk=model_id)
    fail_pending(model_id=model_id, message=f"The Tinker session was closed; {NEW_CLIENT}")
    if model.run.status in FINISHED_STATUSES:
        return
    status = CLOSED_AS.get(closed, "succeeded")
    if status == "failed":
        run_fail(
            run_id=model.run_id, message="The client closed its Tinker session as errored.", traceback_text=""
        )
    else:
        run_finish(run_id=model.run_id, status=status, final_metrics={})


def state_saved(*, model_id: str, directory: str) -> None:
    TinkerModel.objects.filter(pk=model_id).update(state_dir=directory)
